package modbus

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	gmodbus "github.com/goburrow/modbus"
)

// The socket of an endpoint. plantd builds and checks frames itself and
// leaves to goburrow only the check that an answer's MBAP header matches the
// request (tcpPackager.Verify). goburrow's transport (tcpTransporter.Send)
// is not used, because per request it allocates the answer buffer, sets
// both deadlines, reads the MBAP header and the PDU with a system call each
// and takes no context for its connect.
//
// [Endpoint.roundTrip] costs a write, one wait for the socket to become
// readable and usually one read, and allocates nothing. It writes the
// request from inside the socket's read callback (syscall.RawConn.Read): the
// answer cannot have come yet, so the callback asks to wait for readability
// at once instead of trying a read that would find nothing (Go's net.Conn
// tries that read first, a wasted system call per request). Readiness is
// reset before the callback runs, so an answer that comes right after the
// write still wakes the wait. Only the read deadline is set: a request is
// at most 260 bytes and at most one is unanswered, so the write never waits
// for the peer; a full send buffer fails the request like any I/O error.

// framing checks that an answer's MBAP header (transaction, protocol and unit
// id) matches its request. Its Verify keeps no state.
var framing = gmodbus.NewTCPClientHandler("")

// dial opens the endpoint's socket. The caller holds sem.
func (e *Endpoint) dial(ctx context.Context, timeout time.Duration) error {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", e.cfg.Address)
	if err != nil {
		return err
	}
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		_ = conn.Close()
		return err
	}
	e.conn, e.raw = conn, raw
	return nil
}

// roundTrip writes one request frame and reads its answer into e.rbuf,
// within timeout. The answer is valid until the next request. The caller
// holds sem and has checked that the socket is open.
func (e *Endpoint) roundTrip(adu []byte, timeout time.Duration) ([]byte, error) {
	if err := e.conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	x := &e.exchange
	*x = exchange{req: adu, buf: e.rbuf[:]}
	if err := e.raw.Read(e.step); err != nil {
		return nil, err // the deadline passed, or the socket was closed
	}
	if x.err != nil {
		return nil, x.err
	}
	return x.buf[:x.n], nil
}

// exchange is the state of one request on the socket, kept in the Endpoint
// so that the read callback (e.step, bound once) allocates nothing.
type exchange struct {
	req     []byte // request frame, written on the first call
	written bool
	buf     []byte // answer buffer, maxADU bytes
	n, want int    // bytes read; frame length once the header is in
	err     error
}

// step is the socket's read callback of roundTrip: it reports true when the
// exchange is over (x.err says how) and false to wait for readability.
func (x *exchange) step(fd uintptr) bool {
	if !x.written {
		x.written = true
		n, err := ignoringEINTR(func() (int, error) { return syscall.Write(int(fd), x.req) })
		switch {
		case err != nil:
			x.err = os.NewSyscallError("write", err)
			return true
		case n != len(x.req):
			x.err = fmt.Errorf("write: %d of %d bytes sent: send buffer full", n, len(x.req))
			return true
		}
		return false // the answer cannot be there yet
	}
	for {
		m, err := ignoringEINTR(func() (int, error) { return syscall.Read(int(fd), x.buf[x.n:]) })
		if err == syscall.EAGAIN {
			return false
		}
		if err != nil {
			x.err = os.NewSyscallError("read", err)
			return true
		}
		if m == 0 {
			x.err = io.EOF
			if x.n > 0 {
				x.err = io.ErrUnexpectedEOF
			}
			return true
		}
		x.n += m
		if done, err := frameDone(x.buf[:x.n], &x.want); done || err != nil {
			x.err = err
			return true
		}
	}
}

// frameDone reports whether got holds one whole Modbus TCP frame. *want is
// the frame's length once its MBAP header is in (0 before). Bytes past the
// frame are an error: the stream is out of step, and the caller closes the
// socket.
func frameDone(got []byte, want *int) (bool, error) {
	if *want == 0 {
		if len(got) < mbapSize {
			return false, nil
		}
		// The MBAP length counts the unit id and the PDU.
		length := int(binary.BigEndian.Uint16(got[4:]))
		if length < 2 || length > maxADU-mbapSize+1 {
			return false, fmt.Errorf("%w: length %d in response header, want 2..%d", ErrMalformed, length, maxADU-mbapSize+1)
		}
		*want = mbapSize - 1 + length
	}
	switch {
	case len(got) < *want:
		return false, nil
	case len(got) > *want:
		return false, fmt.Errorf("%w: %d bytes after the %d-byte answer", ErrMalformed, len(got)-*want, *want)
	}
	return true, nil
}

// ignoringEINTR retries a system call interrupted by a signal.
func ignoringEINTR(call func() (int, error)) (int, error) {
	for {
		n, err := call()
		if err != syscall.EINTR {
			return n, err
		}
	}
}
