package modbus

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	gmodbus "github.com/goburrow/modbus"

	"plantd/internal/logthrottle"
)

// The server side: plantd answering as a Modbus slave. ServePDU decodes
// one request PDU, calls a Handler and encodes the answer or the
// exception; it is the one request decoder of plantd's servers (the
// simulator's Modbus TCP endpoints and RTU slaves, the SunSpec aggregate
// server). Server is a Modbus TCP listener around it: accept, MBAP
// framing, an allow-list of client addresses, bounds on connections (in
// all and per client address, an idle one closed to make room) and the
// idle close.

// Request is one decoded request. ServePDU fills Function, Addr,
// Quantity and the written values; the caller sets Client and Unit.
type Request struct {
	// Client is the address of the client (zero on a serial line).
	Client netip.Addr
	// Unit is the unit id the request is for.
	Unit byte
	// Function is the function code: 1, 2, 3, 4, 5, 6, 15 or 16.
	Function byte
	// Addr and Quantity are the first register (coil, input) and how many.
	Addr, Quantity uint16
	// Regs are the registers a write (6, 16) stores.
	Regs []uint16
	// Bits are the coils a write (5, 15) stores.
	Bits []bool
}

// IsWrite reports whether the request writes (functions 5, 6, 15, 16).
func (r *Request) IsWrite() bool {
	switch r.Function {
	case 5, 6, 15, 16:
		return true
	}
	return false
}

// Handler answers the requests of a server. Its methods run concurrently
// for different connections. An error that is (or wraps) an
// [*ExceptionError] answers with its code (see [Exception]); any other
// error answers exception 4 (server device failure).
type Handler interface {
	// Registers reads (functions 3 and 4: Quantity registers) or writes
	// (6 and 16: Regs) registers.
	Registers(req *Request) ([]uint16, error)
	// Bits reads (1: coils, 2: discrete inputs) or writes (5 and 15: Bits)
	// bits.
	Bits(req *Request) ([]bool, error)
}

// Exception returns the error a Handler returns to answer with code.
func Exception(code byte) error { return &ExceptionError{Code: code} }

// ExceptionCode is the exception code an error of a Handler answers with.
func ExceptionCode(err error) byte {
	var ex *ExceptionError
	if errors.As(err, &ex) {
		return ex.Code
	}
	return ExceptionServerDeviceFailure
}

// ServePDU executes one request PDU (function code and data) through h
// and appends the answer PDU, or an exception (function | 0x80, code), to
// out. req carries Client and Unit; ServePDU sets the rest. A request
// malformed for its function (a length, quantity or byte count that does
// not fit) answers exception 3, a range past register 65535 exception 2
// and an unknown function exception 1, as the spec says (V1.1b3, §6 and
// figure 9 of §7); none of these reach h.
func ServePDU(h Handler, req *Request, pdu []byte, out []byte) []byte {
	if len(pdu) == 0 {
		return out
	}
	fc := pdu[0]
	data := pdu[1:]
	*req = Request{Client: req.Client, Unit: req.Unit, Function: fc}
	ex := func(code byte) []byte { return append(out, fc|0x80, code) }
	fail := func(err error) []byte { return ex(ExceptionCode(err)) }
	u16 := func(i int) uint16 { return binary.BigEndian.Uint16(data[i:]) }
	span := func(addr, n uint16) bool { return int(addr)+int(n) <= 0x10000 }
	switch fc {
	case 1, 2: // read coils, read discrete inputs
		if len(data) != 4 || u16(2) == 0 || u16(2) > MaxReadBits {
			return ex(ExceptionIllegalDataValue)
		}
		req.Addr, req.Quantity = u16(0), u16(2)
		if !span(req.Addr, req.Quantity) {
			return ex(ExceptionIllegalDataAddress)
		}
		bits, err := h.Bits(req)
		if err == nil && len(bits) != int(req.Quantity) {
			err = Exception(ExceptionServerDeviceFailure)
		}
		if err != nil {
			return fail(err)
		}
		nb := (len(bits) + 7) / 8
		out = append(out, fc, byte(nb))
		at := len(out)
		for range nb {
			out = append(out, 0)
		}
		for i, on := range bits {
			if on {
				out[at+i/8] |= 1 << (i % 8)
			}
		}
		return out
	case 3, 4: // read holding registers, read input registers
		if len(data) != 4 || u16(2) == 0 || u16(2) > MaxReadRegisters {
			return ex(ExceptionIllegalDataValue)
		}
		req.Addr, req.Quantity = u16(0), u16(2)
		if !span(req.Addr, req.Quantity) {
			return ex(ExceptionIllegalDataAddress)
		}
		regs, err := h.Registers(req)
		if err == nil && len(regs) != int(req.Quantity) {
			err = Exception(ExceptionServerDeviceFailure)
		}
		if err != nil {
			return fail(err)
		}
		out = append(out, fc, byte(2*len(regs)))
		for _, r := range regs {
			out = binary.BigEndian.AppendUint16(out, r)
		}
		return out
	case 5: // write single coil
		if len(data) != 4 || (u16(2) != coilOn && u16(2) != 0) {
			return ex(ExceptionIllegalDataValue)
		}
		req.Addr, req.Quantity, req.Bits = u16(0), 1, []bool{u16(2) == coilOn}
		if _, err := h.Bits(req); err != nil {
			return fail(err)
		}
		return append(out, pdu...)
	case 6: // write single register
		if len(data) != 4 {
			return ex(ExceptionIllegalDataValue)
		}
		req.Addr, req.Quantity, req.Regs = u16(0), 1, []uint16{u16(2)}
		if _, err := h.Registers(req); err != nil {
			return fail(err)
		}
		return append(out, pdu...)
	case 15: // write multiple coils
		if len(data) < 5 {
			return ex(ExceptionIllegalDataValue)
		}
		addr, n, bc := u16(0), u16(2), int(data[4])
		if n == 0 || n > MaxWriteBits || bc != (int(n)+7)/8 || len(data) != 5+bc {
			return ex(ExceptionIllegalDataValue)
		}
		if !span(addr, n) {
			return ex(ExceptionIllegalDataAddress)
		}
		req.Addr, req.Quantity, req.Bits = addr, n, make([]bool, n)
		for i := range req.Bits {
			req.Bits[i] = data[5+i/8]&(1<<(i%8)) != 0
		}
		if _, err := h.Bits(req); err != nil {
			return fail(err)
		}
		return append(out, pdu[:5]...)
	case 16: // write multiple registers
		if len(data) < 5 {
			return ex(ExceptionIllegalDataValue)
		}
		addr, n, bc := u16(0), u16(2), int(data[4])
		if n == 0 || n > MaxWriteRegisters || bc != 2*int(n) || len(data) != 5+bc {
			return ex(ExceptionIllegalDataValue)
		}
		if !span(addr, n) {
			return ex(ExceptionIllegalDataAddress)
		}
		req.Addr, req.Quantity, req.Regs = addr, n, make([]uint16, n)
		for i := range req.Regs {
			req.Regs[i] = u16(5 + 2*i)
		}
		if _, err := h.Registers(req); err != nil {
			return fail(err)
		}
		return append(out, pdu[:5]...)
	}
	return ex(ExceptionIllegalFunction)
}

// Server defaults.
const (
	DefaultMaxConns          = 32
	DefaultMaxConnsPerClient = 4
	DefaultIdleTimeout       = 60 * time.Second
)

// ServerConfig tunes a Server.
type ServerConfig struct {
	// MaxConns bounds the open connections (default DefaultMaxConns).
	MaxConns int
	// MaxConnsPerClient bounds the open connections of one client
	// address (default DefaultMaxConnsPerClient).
	//
	// A connection that would pass either bound closes an idle one to
	// make room: at the client's bound the client's own connection idle
	// the longest; at MaxConns the one idle the longest of the clients
	// holding the most connections. A connection is idle while no
	// request of it is being answered. Only when every connection that
	// could make room is busy is the newcomer closed at once. So a few
	// idle sockets never lock a master out.
	MaxConnsPerClient int
	// IdleTimeout closes a connection that sends no request for that long
	// (default DefaultIdleTimeout).
	IdleTimeout time.Duration
	// Allow decides which clients may connect (nil: every client); a
	// refused client's connection is closed at once.
	Allow func(netip.Addr) bool
	// Front, when set, stands between each connection and the Handler
	// (the simulator's fault injection): see Front.
	Front Front
	// Refusals rate-limits the log lines of the clients' refusals
	// (allow-list, full, evictions, frames that are no Modbus TCP); nil:
	// the server's own. A Handler that refuses requests shares it, so
	// that its lines are limited with the server's.
	Refusals *logthrottle.Limiter
}

// NewRefusals returns a limiter for the log lines of a Server's
// refusals and of a Handler sharing them (ServerConfig.Refusals): the
// source is the client's address, logged as client, one line a minute
// per client and reason after the first, 256 clients apart.
func NewRefusals(log *slog.Logger) *logthrottle.Limiter {
	return logthrottle.New(log, "client", 0, 0)
}

// Front sees a Server's connections and requests before its Handler.
type Front interface {
	// Connect is called for each connection the server keeps (after
	// Allow and the bounds); it returns the connection's FrontConn, or
	// nil to close it at once.
	Connect(c net.Conn) FrontConn
}

// FrontConn sees the requests of one connection. Request gets each
// request frame (MBAP header and PDU, checked) and answer, which returns
// the Handler's answer frame (valid until the next request); it returns
// the frame to write (nil: none) and false to close the connection after
// it. Closed is called once the connection is closed.
type FrontConn interface {
	Request(req []byte, answer func() []byte) (out []byte, keep bool)
	Closed()
}

// ServerStats counts what a Server did since it was made.
type ServerStats struct {
	// Open is the connections open now; Accepted, Refused (allow-list),
	// Full (over a bound with no idle connection to close), Evicted
	// (idle ones closed to make room for a new one) and Idle (closed for
	// idling) count connections.
	Open, Accepted, Refused, Full, Evicted, Idle int64
	// Requests is the requests answered, Exceptions those answered with
	// an exception, Malformed the frames that closed their connection.
	Requests, Exceptions, Malformed int64
}

// Server serves Modbus TCP: each connection gets a goroutine that reads an
// MBAP frame, checks it with goburrow's TCP packager (the one the client
// side frames with), answers it through ServePDU and writes the answer
// under the request's transaction and unit id. A frame that is no Modbus
// TCP (a protocol id other than 0, a length out of range) closes its
// connection: the stream is out of step.
type Server struct {
	cfg      ServerConfig
	h        Handler
	log      *slog.Logger
	refusals *logthrottle.Limiter

	mu        sync.Mutex
	conns     map[*srvConn]struct{}
	perClient map[netip.Addr]int
	seq       uint64 // orders the connections' turns to idle

	accepted, refused, full, evicted, idle atomic.Int64
	requests, exceptions, malformed        atomic.Int64
}

// srvConn is one open connection of a Server. Its fields but c and
// client are guarded by Server.mu.
type srvConn struct {
	c      net.Conn
	client netip.Addr
	busy   bool   // a request of it is being answered
	since  uint64 // Server.seq when it last turned idle
	gone   bool   // closed by the server to make room
}

// NewServer returns a server answering through h.
func NewServer(cfg ServerConfig, h Handler, log *slog.Logger) *Server {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxConnsPerClient <= 0 {
		cfg.MaxConnsPerClient = DefaultMaxConnsPerClient
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	s := &Server{cfg: cfg, h: h, log: log, refusals: cfg.Refusals,
		conns: map[*srvConn]struct{}{}, perClient: map[netip.Addr]int{}}
	if s.refusals == nil {
		s.refusals = NewRefusals(log)
	}
	return s
}

// Stats returns the server's counters.
func (s *Server) Stats() ServerStats {
	s.mu.Lock()
	open := int64(len(s.conns))
	s.mu.Unlock()
	return ServerStats{Open: open, Accepted: s.accepted.Load(), Refused: s.refused.Load(), Full: s.full.Load(),
		Evicted: s.evicted.Load(), Idle: s.idle.Load(), Requests: s.requests.Load(), Exceptions: s.exceptions.Load(),
		Malformed: s.malformed.Load()}
}

// acceptBackoff is the pause after a failed accept (too many open files).
const acceptBackoff = 50 * time.Millisecond

// Serve accepts connections on ln until ctx ends, then closes ln and
// every connection and returns nil once their goroutines have ended. It
// returns an error when ln fails otherwise. While it serves, the
// refusals' counts are logged every interval, and all that are left when
// it returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	endFlush := s.refusals.Start()
	defer func() {
		stop()
		_ = ln.Close()
		s.mu.Lock()
		for sc := range s.conns {
			_ = sc.c.Close()
		}
		s.mu.Unlock()
		wg.Wait()
		endFlush()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("modbus server %s: %w", ln.Addr(), err)
			}
			// Too many open files: whoever opens connections can bring
			// it about, so one line a minute with the count.
			s.refusals.Log(slog.LevelWarn, "listener "+ln.Addr().String(), "accept", "accept failed", "err", err)
			select {
			case <-time.After(acceptBackoff):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		client := remoteAddr(c)
		if s.cfg.Allow != nil && !s.cfg.Allow(client) {
			s.refused.Add(1)
			s.refusals.Log(slog.LevelInfo, client.String(), "allow", "connection refused: not in the allow-list")
			_ = c.Close()
			continue
		}
		sc := s.admit(c, client)
		if sc == nil {
			continue
		}
		s.accepted.Add(1)
		var fc FrontConn
		if s.cfg.Front != nil {
			if fc = s.cfg.Front.Connect(c); fc == nil {
				s.release(sc)
				continue
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serve(sc, fc)
			s.release(sc)
			if fc != nil {
				fc.Closed()
			}
		}()
	}
}

// admit keeps c, closing an idle connection when c would pass a bound
// (see ServerConfig.MaxConnsPerClient); nil when every connection that
// could make room is busy (c is closed).
func (s *Server) admit(c net.Conn, client netip.Addr) *srvConn {
	s.mu.Lock()
	var victim *srvConn
	bound := ""
	switch {
	case s.perClient[client] >= s.cfg.MaxConnsPerClient:
		bound = "maxConnsPerClient"
		victim = s.oldestIdle(func(o *srvConn) bool { return o.client == client })
	case len(s.conns) >= s.cfg.MaxConns:
		bound = "maxConns"
		victim = s.oldestIdle(nil)
	}
	if bound != "" && victim == nil {
		s.mu.Unlock()
		s.full.Add(1)
		s.refusals.Log(slog.LevelInfo, client.String(), "full", "connection refused: every connection is busy",
			"bound", bound, "maxConns", s.cfg.MaxConns, "maxConnsPerClient", s.cfg.MaxConnsPerClient)
		_ = c.Close()
		return nil
	}
	if victim != nil {
		s.remove(victim)
		victim.gone = true
	}
	s.seq++
	sc := &srvConn{c: c, client: client, since: s.seq}
	s.conns[sc] = struct{}{}
	s.perClient[client]++
	s.mu.Unlock()
	if victim != nil {
		_ = victim.c.Close()
		s.evicted.Add(1)
		s.refusals.Log(slog.LevelInfo, client.String(), "evict", "idle connection closed for a new one",
			"bound", bound, "closed", victim.client.String())
	}
	return sc
}

// oldestIdle returns the idle connection (of those match accepts; nil:
// all) of the clients holding the most, idle the longest of them; nil
// when none is idle. Call it under s.mu.
func (s *Server) oldestIdle(match func(*srvConn) bool) *srvConn {
	var best *srvConn
	for o := range s.conns {
		if o.busy || (match != nil && !match(o)) {
			continue
		}
		if best == nil {
			best = o
			continue
		}
		no, nb := s.perClient[o.client], s.perClient[best.client]
		if no > nb || (no == nb && o.since < best.since) {
			best = o
		}
	}
	return best
}

// remove forgets sc. Call it under s.mu.
func (s *Server) remove(sc *srvConn) {
	delete(s.conns, sc)
	if s.perClient[sc.client]--; s.perClient[sc.client] <= 0 {
		delete(s.perClient, sc.client)
	}
}

// release forgets sc (unless it was closed to make room) and closes it.
func (s *Server) release(sc *srvConn) {
	s.mu.Lock()
	if !sc.gone {
		s.remove(sc)
	}
	s.mu.Unlock()
	_ = sc.c.Close()
}

// setBusy marks sc busy (a request read) or idle (its answer written);
// false when the server closed sc to make room meanwhile.
func (s *Server) setBusy(sc *srvConn, busy bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc.gone {
		return false
	}
	sc.busy = busy
	if !busy {
		s.seq++
		sc.since = s.seq
	}
	return true
}

// remoteAddr is the client's IP address (zero when it has none).
func remoteAddr(c net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// serve answers the requests of one connection until it closes, idles or
// sends a frame that is not Modbus TCP (or fc closes it).
func (s *Server) serve(sc *srvConn, fc FrontConn) {
	c, client := sc.c, sc.client
	r := bufio.NewReaderSize(c, 2*(mbapSize+253))
	// goburrow's packager checks each request's MBAP length against the
	// frame and returns its PDU; its transaction counter and transporter
	// are not used (an answer carries the request's transaction id).
	pk := gmodbus.NewTCPClientHandler("")
	var frame [mbapSize + 253]byte
	out := make([]byte, 0, mbapSize+253)
	req := Request{Client: client}
	n := 0
	// answer answers the frame read last through the Handler.
	answer := func() []byte {
		req.Unit = frame[6]
		out = append(out[:0], frame[:mbapSize]...)
		out = ServePDU(s.h, &req, frame[mbapSize:6+n], out)
		binary.BigEndian.PutUint16(out[4:6], uint16(len(out)-6))
		s.requests.Add(1)
		if out[mbapSize]&0x80 != 0 {
			s.exceptions.Add(1)
		}
		return out
	}
	for {
		_ = c.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		if _, err := io.ReadFull(r, frame[:mbapSize]); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				s.idle.Add(1)
				s.log.Debug("idle connection closed", "client", client.String())
			}
			return
		}
		n = int(binary.BigEndian.Uint16(frame[4:6]))
		if binary.BigEndian.Uint16(frame[2:4]) != 0 || n < 2 || n > 254 {
			s.notModbus(client, frame[:mbapSize], nil)
			return
		}
		if _, err := io.ReadFull(r, frame[mbapSize:6+n]); err != nil {
			return
		}
		if _, err := pk.Decode(frame[:6+n]); err != nil {
			s.notModbus(client, frame[:mbapSize], err)
			return
		}
		if !s.setBusy(sc, true) {
			return
		}
		resp, keep := []byte(nil), true
		if fc != nil {
			resp, keep = fc.Request(frame[:6+n], answer)
		} else {
			resp = answer()
		}
		if resp != nil {
			_ = c.SetWriteDeadline(time.Now().Add(s.cfg.IdleTimeout))
			if _, err := c.Write(resp); err != nil {
				return
			}
		}
		if !keep || !s.setBusy(sc, false) {
			return
		}
	}
}

// notModbus counts and logs a frame that is no Modbus TCP (its MBAP
// header, and the packager's error if it found one).
func (s *Server) notModbus(client netip.Addr, mbap []byte, err error) {
	s.malformed.Add(1)
	args := []any{"mbap", fmt.Sprintf("% x", mbap)}
	if err != nil {
		args = append(args, "err", err)
	}
	s.refusals.Log(slog.LevelInfo, client.String(), "malformed", "connection closed: a frame that is no Modbus TCP", args...)
}
