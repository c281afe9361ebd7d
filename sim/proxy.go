package sim

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"plantd/modbus"
)

// An endpoint is one public TCP port, served by plantd/modbus's Server
// (accept, MBAP framing, a goroutine per connection, ServePDU and
// handler: the server every Modbus TCP server of plantd's runs) with the
// endpoint as its Front: each connection's proxyConn applies the fault of
// the unit a frame is for before the handler answers.

// MBAP framing.
const (
	mbapHeader = 7 // transaction id, protocol id, length, unit id
	// maxFrame is the largest Modbus TCP frame: the header and a PDU of at
	// most 253 bytes (the length field counts the unit id too).
	maxFrame = mbapHeader + 253
)

// acceptBackoff is the pause after a failed accept (RTU over TCP).
const acceptBackoff = 50 * time.Millisecond

// Bounds of an endpoint's server: a simulated device keeps its clients
// as long as they like, as many from one address as in all (the tests'
// clients all come from 127.0.0.1).
const (
	endpointMaxConns = 4096
	endpointIdle     = 24 * time.Hour
)

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
	stop   context.CancelFunc // ends the server
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
	ctx, stop := context.WithCancel(context.Background())
	ep.ln, ep.addr, ep.stop = ln, ln.Addr().String(), stop
	ep.plant.wg.Add(1)
	ep.mu.Unlock()
	srv := modbus.NewServer(modbus.ServerConfig{MaxConns: endpointMaxConns, MaxConnsPerClient: endpointMaxConns,
		IdleTimeout: endpointIdle, Front: ep},
		&handler{ep: ep}, ep.log)
	go func() {
		defer ep.plant.wg.Done()
		if err := srv.Serve(ctx, ln); err != nil {
			ep.log.Warn("endpoint stopped", "err", err)
		}
	}()
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
	ln, stop := ep.ln, ep.stop
	for pc := range ep.conns {
		pc.close()
	}
	ep.mu.Unlock()
	if ep.rtu != nil {
		ep.rtu.closeConns()
	}
	if stop != nil {
		stop() // the server closes ln
	} else if ln != nil {
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

// accept hands every connection ln accepts to serve until ln is closed;
// a failed accept waits acceptBackoff (or the endpoint's end). It is the
// accept loop of the RTU over TCP endpoints (rtutcp.go); the Modbus TCP
// endpoints' is modbus.Server's.
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

var _ modbus.Front = (*endpoint)(nil)

// Connect takes a new client connection (modbus.Front): a dead endpoint
// resets it at once, an endpoint that keeps one client closes the others.
func (ep *endpoint) Connect(c net.Conn) modbus.FrontConn {
	if ep.allOffline() {
		// A dead device: reset the connection at once.
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		return nil
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.closed {
		return nil
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
	ep.log.Debug("client connected", "remote", c.RemoteAddr().String())
	return pc
}

func (ep *endpoint) remove(pc *proxyConn) {
	ep.mu.Lock()
	delete(ep.conns, pc)
	ep.mu.Unlock()
}

// proxyConn is one client connection's fault front (modbus.FrontConn),
// with the buffers below reused for every frame.
type proxyConn struct {
	ep     *endpoint
	client net.Conn
	done   chan struct{}
	once   sync.Once
	timer  *time.Timer // FaultSlow, made on first use
	rng    *rand.Rand  // FaultGarbage

	req, resp, held [maxFrame]byte
	heldLen         int // FaultWrongTID: the answer held back, 0 = none
}

var _ modbus.FrontConn = (*proxyConn)(nil)

func newProxyConn(ep *endpoint, client net.Conn, seq uint64) *proxyConn {
	return &proxyConn{
		ep: ep, client: client,
		done: make(chan struct{}),
		rng:  rand.New(rand.NewPCG(seq, 0x706c616e7464)),
	}
}

// close closes the connection; the server's goroutine for it then ends.
func (pc *proxyConn) close() {
	pc.once.Do(func() {
		close(pc.done)
		_ = pc.client.Close()
	})
}

// Closed forgets the connection once the server closed it.
func (pc *proxyConn) Closed() {
	pc.close()
	pc.ep.remove(pc)
}

// Request applies the fault of the unit the request frame req is for
// (modbus.FrontConn): the handler's answer (answer), late, under another
// transaction id, or instead an exception, garbage or a closed
// connection.
func (pc *proxyConn) Request(req []byte, answer func() []byte) ([]byte, bool) {
	ep := pc.ep
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
		return nil, false
	case FaultOffline:
		if ep.allOffline() {
			return nil, false
		}
		return pc.exception(req, exGatewayTarget), true
	case FaultException:
		return pc.exception(req, f.Code), true
	case FaultGarbage:
		return pc.garbage(req), true
	case FaultWrongTID:
	default:
		pc.heldLen = 0
	}
	resp := answer()
	switch kind {
	case FaultSlow:
		if !pc.wait(f.Delay) {
			return nil, false
		}
	case FaultWrongTID:
		resp = pc.behind(resp, binary.BigEndian.Uint16(req[0:2]))
	}
	return resp, true
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
