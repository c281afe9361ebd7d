//go:build unix

package modbus

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
)

// plantd's own socket loop, for Modbus TCP and RTU over TCP on unix.
// goburrow's transport (tcpTransporter.Send) is not used: per request it
// allocates the answer buffer, sets both deadlines, reads the MBAP header
// and the PDU with a system call each and takes no context for its connect
// (the measurement is in doc.go).
//
// [rawLink.exchange] costs a write, one wait for the socket to become
// readable and usually one read, and allocates nothing. It writes the
// request from inside the socket's read callback (syscall.RawConn.Read): the
// answer cannot have come yet, so the callback asks to wait for readability
// at once instead of trying a read that would find nothing (Go's net.Conn
// tries that read first, a wasted system call per request). Readiness is
// reset before the callback runs, so an answer that comes right after the
// write still wakes the wait. Only the read deadline is set: a request is
// at most 260 bytes and at most one is unanswered, so the write never waits
// for the peer; a full send buffer fails the request like any I/O error.

// newTCPLink returns plantd's own socket loop on conn.
func newTCPLink(conn *net.TCPConn) (link, error) {
	if portableTCP {
		return &connLink{conn: conn}, nil
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	l := &rawLink{conn: conn, raw: raw}
	l.step = l.stepFD
	return l, nil
}

// rawLink is a socket read and written with system calls from inside
// syscall.RawConn.Read.
type rawLink struct {
	conn *net.TCPConn
	raw  syscall.RawConn
	// x is the exchange in flight, written whether its request was
	// written, err how it ended; step is stepFD, bound once so that a
	// request allocates nothing.
	x       *exchange
	written bool
	err     error
	step    func(fd uintptr) bool
}

func (l *rawLink) exchange(x *exchange) error {
	if err := l.conn.SetReadDeadline(x.deadline); err != nil {
		return err
	}
	l.x, l.written, l.err = x, false, nil
	err := l.raw.Read(l.step)
	l.x = nil
	if err != nil {
		return err // the deadline passed, or the socket was closed
	}
	return l.err
}

// keep is false: a socket is closed after any failure, so that a late
// answer is never read as the next request's.
func (l *rawLink) keep(error) bool { return false }

func (l *rawLink) close() error { return l.conn.Close() }

// stepFD is the socket's read callback of exchange: it reports true when
// the exchange is over (l.err says how) and false to wait for readability.
func (l *rawLink) stepFD(fd uintptr) bool {
	x := l.x
	if !l.written {
		l.written = true
		n, err := ignoringEINTR(func() (int, error) { return syscall.Write(int(fd), x.req) })
		switch {
		case err != nil:
			l.err = os.NewSyscallError("write", err)
			return true
		case n != len(x.req):
			l.err = fmt.Errorf("write: %d of %d bytes sent: send buffer full", n, len(x.req))
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
			l.err = os.NewSyscallError("read", err)
			return true
		}
		if m == 0 {
			l.err = io.EOF
			if x.n > 0 {
				l.err = io.ErrUnexpectedEOF
			}
			return true
		}
		if done, err := x.received(m); done || err != nil {
			l.err = err
			return true
		}
	}
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
