package sim

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"plantd/modbus"
)

// An endpoint is one public TCP port. Each client connection gets a
// goroutine that reads MBAP frames, applies the fault of the unit a frame
// is for, and answers the rest through modbus.ServePDU (plantd's request
// decoder, the one every Modbus server of plantd's answers with) and
// handler.

// MBAP framing.
const (
	mbapHeader = 7 // transaction id, protocol id, length, unit id
	// maxFrame is the largest Modbus TCP frame: the header and a PDU of at
	// most 253 bytes (the length field counts the unit id too).
	maxFrame  = mbapHeader + 253
	maxLength = maxFrame - 6
)

// acceptBackoff is the pause after a failed accept.
const acceptBackoff = 50 * time.Millisecond

var errBadFrame = errors.New("sim: malformed MBAP frame")

type endpoint struct {
	plant *Plant
	name  string
	port  int // configured public port, 0 = any
	units [256]*Device
	devs  []*Device
	log   *slog.Logger
	done  chan struct{} // closed by close

	mu     sync.Mutex
	addr   string // public host:port once started
	ln     net.Listener
	conns  map[*proxyConn]struct{}
	seq    uint64
	closed bool
	rtu    *rtuFront // RTU over TCP (rtutcp.go); nil: Modbus TCP
}

func newEndpoint(p *Plant, name string) *endpoint {
	return &endpoint{
		plant: p, name: name, log: p.log.With("endpoint", name),
		done: make(chan struct{}), conns: map[*proxyConn]struct{}{},
	}
}

// address returns the public host:port, "" before start.
func (ep *endpoint) address() string {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.addr
}

// start binds the public port.
func (ep *endpoint) start(host string) error {
	if ep.rtu != nil {
		return ep.startRTU(host)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(ep.port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	ep.mu.Lock()
	if ep.closed {
		ep.mu.Unlock()
		_ = ln.Close()
		return ErrClosed
	}
	ep.ln, ep.addr = ln, ln.Addr().String()
	ep.plant.wg.Add(1)
	ep.mu.Unlock()
	go ep.acceptLoop(ln)
	return nil
}

// close stops accepting and closes every connection.
func (ep *endpoint) close() {
	ep.mu.Lock()
	if ep.closed {
		ep.mu.Unlock()
		return
	}
	ep.closed = true
	close(ep.done)
	ln := ep.ln
	for pc := range ep.conns {
		pc.close()
	}
	ep.mu.Unlock()
	if ep.rtu != nil {
		ep.rtu.closeConns()
	}
	if ln != nil {
		_ = ln.Close()
	}
}

// allOffline reports whether every device of the endpoint is offline.
func (ep *endpoint) allOffline() bool {
	for _, d := range ep.devs {
		if d.faultKind() != FaultOffline {
			return false
		}
	}
	return true
}

// oneClient reports whether the endpoint keeps a single connection.
func (ep *endpoint) oneClient() bool {
	for _, d := range ep.devs {
		if d.faultKind() == FaultOneClient {
			return true
		}
	}
	return false
}

// faultChanged applies a device's new fault to the open connections: a
// dead endpoint drops them all.
func (ep *endpoint) faultChanged() {
	if !ep.allOffline() {
		return
	}
	ep.mu.Lock()
	for pc := range ep.conns {
		pc.close()
	}
	ep.mu.Unlock()
}

func (ep *endpoint) acceptLoop(ln net.Listener) { ep.accept(ln, ep.serve) }

// accept hands every connection ln accepts to serve until ln is closed;
// a failed accept waits acceptBackoff (or the endpoint's end). It is the
// one accept loop of the TCP endpoints, Modbus TCP and RTU over TCP.
func (ep *endpoint) accept(ln net.Listener, serve func(net.Conn)) {
	defer ep.plant.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			ep.log.Warn("accept failed", "err", err)
			t := time.NewTimer(acceptBackoff)
			select {
			case <-t.C:
			case <-ep.done:
				t.Stop()
				return
			}
			continue
		}
		serve(c)
	}
}

// serve starts serving a new client connection.
func (ep *endpoint) serve(c net.Conn) {
	if ep.allOffline() {
		// A dead device: reset the connection at once.
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = c.Close()
		return
	}
	ep.mu.Lock()
	if ep.closed {
		ep.mu.Unlock()
		_ = c.Close()
		return
	}
	if ep.oneClient() {
		for old := range ep.conns {
			old.close()
			ep.log.Debug("connection kicked by a new one", "remote", old.client.RemoteAddr().String())
		}
	}
	ep.seq++
	pc := newProxyConn(ep, c, ep.seq)
	ep.conns[pc] = struct{}{}
	ep.plant.wg.Add(1)
	ep.mu.Unlock()
	ep.log.Debug("client connected", "remote", c.RemoteAddr().String())
	go pc.run()
}

func (ep *endpoint) remove(pc *proxyConn) {
	ep.mu.Lock()
	delete(ep.conns, pc)
	ep.mu.Unlock()
}

// proxyConn is one client connection. One goroutine serves it: it reads a
// request, answers it and writes the answer back, with the buffers below
// reused for every frame.
type proxyConn struct {
	ep     *endpoint
	h      handler
	client net.Conn
	cr     *bufio.Reader
	mreq   modbus.Request // the request being served
	done   chan struct{}
	once   sync.Once
	timer  *time.Timer // FaultSlow, made on first use
	rng    *rand.Rand  // FaultGarbage

	req, resp, held [maxFrame]byte
	heldLen         int // FaultWrongTID: the answer held back, 0 = none
}

func newProxyConn(ep *endpoint, client net.Conn, seq uint64) *proxyConn {
	return &proxyConn{
		ep: ep, h: handler{ep: ep}, client: client,
		cr:   bufio.NewReaderSize(client, 2*maxFrame),
		done: make(chan struct{}),
		rng:  rand.New(rand.NewPCG(seq, 0x706c616e7464)),
	}
}

// close closes the connection; the serving goroutine then ends.
func (pc *proxyConn) close() {
	pc.once.Do(func() {
		close(pc.done)
		_ = pc.client.Close()
	})
}

// readFrame reads one MBAP frame into buf and returns its length.
func readFrame(r *bufio.Reader, buf *[maxFrame]byte) (int, error) {
	if _, err := io.ReadFull(r, buf[:mbapHeader]); err != nil {
		return 0, err
	}
	n := int(binary.BigEndian.Uint16(buf[4:6]))
	if n < 2 || n > maxLength {
		return 0, errBadFrame
	}
	if _, err := io.ReadFull(r, buf[mbapHeader:6+n]); err != nil {
		return 0, err
	}
	return 6 + n, nil
}

func (pc *proxyConn) run() {
	ep := pc.ep
	defer ep.plant.wg.Done()
	defer ep.remove(pc)
	defer pc.close()
	for {
		n, err := readFrame(pc.cr, &pc.req)
		if err != nil {
			return
		}
		req := pc.req[:n]
		var f *Fault
		if d := ep.units[req[6]]; d != nil {
			f = d.fault.Load()
		}
		kind := FaultNone
		if f != nil {
			kind = f.Kind
		}
		switch kind {
		case FaultDrop:
			return
		case FaultOffline:
			if ep.allOffline() {
				return
			}
			if !pc.reply(pc.exception(req, exGatewayTarget)) {
				return
			}
			continue
		case FaultException:
			if !pc.reply(pc.exception(req, f.Code)) {
				return
			}
			continue
		case FaultGarbage:
			if !pc.reply(pc.garbage(req)) {
				return
			}
			continue
		case FaultWrongTID:
		default:
			pc.heldLen = 0
		}
		resp := pc.answer(req)
		switch kind {
		case FaultSlow:
			if !pc.wait(f.Delay) {
				return
			}
		case FaultWrongTID:
			resp = pc.behind(resp, binary.BigEndian.Uint16(req[0:2]))
		}
		if !pc.reply(resp) {
			return
		}
	}
}

// answer answers the request frame req through modbus.ServePDU, in the
// response buffer: the request's MBAP header, its length set to the
// answer's.
func (pc *proxyConn) answer(req []byte) []byte {
	pc.mreq.Unit = req[6]
	out := modbus.ServePDU(&pc.h, &pc.mreq, req[mbapHeader:], append(pc.resp[:0], req[:mbapHeader]...))
	binary.BigEndian.PutUint16(out[4:6], uint16(len(out)-6))
	return out
}

// reply writes a frame to the client.
func (pc *proxyConn) reply(b []byte) bool {
	_, err := pc.client.Write(b)
	return err == nil
}

// wait waits d, or until the connection is closed (false).
func (pc *proxyConn) wait(d time.Duration) bool {
	if pc.timer == nil {
		pc.timer = time.NewTimer(d)
	} else {
		pc.timer.Reset(d)
	}
	select {
	case <-pc.timer.C:
		return true
	case <-pc.done:
		pc.timer.Stop()
		return false
	}
}

// exception builds an exception answer to req in the response buffer.
func (pc *proxyConn) exception(req []byte, code byte) []byte {
	out := pc.resp[:mbapHeader+2]
	copy(out[:2], req[:2]) // transaction id
	out[2], out[3] = 0, 0
	binary.BigEndian.PutUint16(out[4:6], 3)
	out[6] = req[6]
	out[7] = req[7] | 0x80
	out[8] = code
	return out
}

// garbage builds a frame that is not a valid answer to req: random bytes,
// a header whose length disagrees with what follows, or a well-framed
// nonsense PDU.
func (pc *proxyConn) garbage(req []byte) []byte {
	out := pc.resp[:]
	random := func(b []byte) {
		for i := range b {
			b[i] = byte(pc.rng.Uint32())
		}
	}
	switch pc.rng.IntN(3) {
	case 0: // noise, protocol id not 0
		n := 3 + pc.rng.IntN(30)
		random(out[:n])
		out[2] |= 0x80
		return out[:n]
	case 1: // a length that promises more than comes
		copy(out[:2], req[:2])
		out[2], out[3] = 0, 0
		k := 1 + pc.rng.IntN(6)
		binary.BigEndian.PutUint16(out[4:6], uint16(2+k+10+pc.rng.IntN(200)))
		out[6], out[7] = req[6], req[7]
		random(out[8 : 8+k])
		return out[:8+k]
	default: // a function code that answers nothing that was asked
		copy(out[:2], req[:2])
		out[2], out[3] = 0, 0
		k := 1 + pc.rng.IntN(20)
		binary.BigEndian.PutUint16(out[4:6], uint16(2+k))
		out[6] = req[6]
		fc := byte(pc.rng.IntN(256))
		for fc == req[7] || fc == req[7]|0x80 {
			fc++
		}
		out[7] = fc
		random(out[8 : 8+k])
		return out[:8+k]
	}
}

// behind answers one request late: it returns the answer held back from
// the previous request (under that request's transaction id) and holds
// resp back instead. The first answer goes out at once under another
// transaction id. The returned frame never carries the transaction id of
// the request being answered.
func (pc *proxyConn) behind(resp []byte, tid uint16) []byte {
	if pc.heldLen == 0 {
		pc.heldLen = copy(pc.held[:], resp)
		binary.BigEndian.PutUint16(resp[0:2], tid-1)
		return resp
	}
	// Swap: the held answer goes out (through the request buffer, free
	// now), the new one is held.
	out := pc.req[:pc.heldLen]
	copy(out, pc.held[:pc.heldLen])
	pc.heldLen = copy(pc.held[:], resp)
	if binary.BigEndian.Uint16(out[0:2]) == tid {
		binary.BigEndian.PutUint16(out[0:2], tid-1)
	}
	return out
}
