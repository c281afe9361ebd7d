package modbus

import (
	"encoding/binary"
	"errors"
	"io"
	"log"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	smodbus "github.com/simonvetter/modbus"

	"plantd/internal/proctest"
)

// regServer is a test Modbus TCP server built on github.com/simonvetter/modbus.
// Register r of unit u reads as u*1000+r until written. Addresses in
// exceptions answer with that exception.
type regServer struct {
	addr string
	srv  *smodbus.ModbusServer

	mu         sync.Mutex
	regs       map[uint8]map[uint16]uint16
	clients    map[string]int // remote address → requests
	units      map[uint8]int  // unit id → requests
	exceptions map[uint16]error
}

// regValue is the value of an unwritten register.
func regValue(unit byte, reg uint16) uint16 { return uint16(unit)*1000 + reg }

// startRegServer serves on 127.0.0.1 at a free port until the test ends.
// simonvetter's server does not report the port it bound, so it gets a port
// that was free a moment ago, retrying if another process took it meanwhile.
func startRegServer(tb testing.TB) *regServer {
	tb.Helper()
	s := &regServer{
		regs:       make(map[uint8]map[uint16]uint16),
		clients:    make(map[string]int),
		units:      make(map[uint8]int),
		exceptions: make(map[uint16]error),
	}
	var lastErr error
	for range 20 {
		addr := freeAddr(tb)
		srv, err := smodbus.NewServer(&smodbus.ServerConfiguration{
			URL:        "tcp://" + addr,
			Timeout:    30 * time.Second,
			MaxClients: 64,
			Logger:     log.New(io.Discard, "", 0),
		}, s)
		if err != nil {
			tb.Fatalf("simonvetter NewServer: %v", err)
		}
		if err := srv.Start(); err != nil {
			lastErr = err
			continue
		}
		s.addr, s.srv = addr, srv
		tb.Cleanup(func() { _ = srv.Stop() })
		return s
	}
	tb.Fatalf("start simonvetter server: %v", lastErr)
	return nil
}

// freeAddr returns a 127.0.0.1 address whose port was free just now
// (proctest.FreePort: below the ephemeral range, so no other test's ":0"
// listener takes it).
func freeAddr(tb testing.TB) string {
	tb.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(proctest.FreePort(tb)))
}

func (s *regServer) setException(reg uint16, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exceptions[reg] = err
}

// clientCount returns the number of distinct TCP connections seen.
func (s *regServer) clientCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

func (s *regServer) unitCount(unit uint8) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.units[unit]
}

// HandleHoldingRegisters implements smodbus.RequestHandler.
func (s *regServer) HandleHoldingRegisters(req *smodbus.HoldingRegistersRequest) ([]uint16, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[req.ClientAddr]++
	s.units[req.UnitId]++
	if err, ok := s.exceptions[req.Addr]; ok {
		return nil, err
	}
	regs := s.regs[req.UnitId]
	if req.IsWrite {
		if regs == nil {
			regs = make(map[uint16]uint16)
			s.regs[req.UnitId] = regs
		}
		for i, v := range req.Args {
			regs[req.Addr+uint16(i)] = v
		}
		return nil, nil
	}
	out := make([]uint16, req.Quantity)
	for i := range out {
		r := req.Addr + uint16(i)
		if v, ok := regs[r]; ok {
			out[i] = v
		} else {
			out[i] = regValue(req.UnitId, r)
		}
	}
	return out, nil
}

// HandleCoils implements smodbus.RequestHandler.
func (s *regServer) HandleCoils(*smodbus.CoilsRequest) ([]bool, error) {
	return nil, smodbus.ErrIllegalFunction
}

// HandleDiscreteInputs implements smodbus.RequestHandler.
func (s *regServer) HandleDiscreteInputs(*smodbus.DiscreteInputsRequest) ([]bool, error) {
	return nil, smodbus.ErrIllegalFunction
}

// HandleInputRegisters implements smodbus.RequestHandler.
func (s *regServer) HandleInputRegisters(*smodbus.InputRegistersRequest) ([]uint16, error) {
	return nil, smodbus.ErrIllegalFunction
}

// faultKind is how the fault server answers one request.
type faultKind int

const (
	faultNone          faultKind = iota // a correct answer
	faultWrongTxID                      // transaction id + 1
	faultWrongUnit                      // unit id + 1
	faultWrongFunc                      // function 4 instead of 3
	faultWrongProtocol                  // protocol id 1
	faultZeroLength                     // MBAP length 0
	faultHugeLength                     // MBAP length 300
	faultLengthOne                      // MBAP length 1: unit id, no PDU
	faultBadByteCount                   // byte count differs from the data
	faultShortCount                     // consistent frame, one register less than asked
	faultWriteEcho                      // write answer echoes another address
	faultTruncate                       // half a frame, then close
	faultDelay                          // a correct answer after delay
	faultSilent                         // no answer, connection kept
	faultClose                          // close without answering
	faultException                      // exception code
	faultTrailing                       // a correct answer and two more bytes in one write
	faultDribble                        // a correct answer, one byte per write
)

// fault is one scripted answer.
type fault struct {
	kind  faultKind
	code  byte          // faultException
	delay time.Duration // faultDelay
}

// faultRequest is a request as the fault server saw it.
type faultRequest struct {
	conn      int // index of the connection, from 1
	unit, fc  byte
	addr, qty uint16
	at        time.Time
}

// faultServer is a raw Modbus TCP server on 127.0.0.1:0 that answers
// correctly unless its script says otherwise. Register r reads as r, except
// register 0 of each answer, which holds the request's sequence number (from
// 1), so a test can tell a fresh answer from a late one.
type faultServer struct {
	ln      net.Listener
	done    chan struct{}
	wg      sync.WaitGroup
	accepts atomic.Int64

	mu     sync.Mutex
	script []fault
	reqs   []faultRequest
	conns  map[net.Conn]struct{}
	seq    uint16
}

func startFaultServer(tb testing.TB, script ...fault) *faultServer {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &faultServer{ln: ln, done: make(chan struct{}), script: script, conns: make(map[net.Conn]struct{})}
	s.wg.Add(1)
	go s.serve()
	tb.Cleanup(s.close)
	return s
}

func (s *faultServer) addr() string { return s.ln.Addr().String() }

// push appends answers to the script.
func (s *faultServer) push(f ...fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, f...)
}

func (s *faultServer) requests() []faultRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

func (s *faultServer) close() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.done)
	_ = s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *faultServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		n := int(s.accepts.Add(1))
		s.mu.Lock()
		select {
		case <-s.done:
			s.mu.Unlock()
			_ = c.Close()
			return
		default:
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go s.handle(c, n)
	}
}

func (s *faultServer) handle(c net.Conn, n int) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	var buf [maxADU]byte
	for {
		if _, err := io.ReadFull(c, buf[:mbapSize]); err != nil {
			return
		}
		length := int(binary.BigEndian.Uint16(buf[4:]))
		if length < 2 || length > maxADU-mbapSize+1 {
			return
		}
		if _, err := io.ReadFull(c, buf[mbapSize:mbapSize+length-1]); err != nil {
			return
		}
		req := faultRequest{conn: n, unit: buf[6], fc: buf[7], at: time.Now()}
		if length >= 6 {
			req.addr = binary.BigEndian.Uint16(buf[8:])
			req.qty = binary.BigEndian.Uint16(buf[10:])
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.seq++
		seq := s.seq
		var f fault
		if len(s.script) > 0 {
			f = s.script[0]
			s.script = s.script[1:]
		}
		s.mu.Unlock()
		if !s.answer(c, buf[:mbapSize+length-1], req, seq, f) {
			return
		}
	}
}

// answer writes the answer to one request; false ends the connection.
func (s *faultServer) answer(c net.Conn, frame []byte, req faultRequest, seq uint16, f fault) bool {
	txID := binary.BigEndian.Uint16(frame)
	unit, fc := req.unit, req.fc
	var pdu []byte
	switch fc {
	case fcReadHoldingRegisters:
		qty := req.qty
		if f.kind == faultShortCount {
			qty--
		}
		pdu = append(pdu, fc, byte(2*qty))
		for i := range qty {
			v := req.addr + i
			if i == 0 {
				v = seq
			}
			pdu = binary.BigEndian.AppendUint16(pdu, v)
		}
	case fcWriteMultipleRegisters:
		addr := req.addr
		if f.kind == faultWriteEcho {
			addr++
		}
		pdu = append(pdu, fc)
		pdu = binary.BigEndian.AppendUint16(pdu, addr)
		pdu = binary.BigEndian.AppendUint16(pdu, req.qty)
	default:
		pdu = []byte{fc | 0x80, ExceptionIllegalFunction}
	}
	protocol := uint16(0)
	switch f.kind {
	case faultWrongTxID:
		txID++
	case faultWrongUnit:
		unit++
	case faultWrongFunc:
		pdu[0] = 4
	case faultWrongProtocol:
		protocol = 1
	case faultBadByteCount:
		pdu[1] += 2
	case faultException:
		pdu = []byte{fc | 0x80, f.code}
	case faultDelay:
		select {
		case <-time.After(f.delay):
		case <-s.done:
			return false
		}
	case faultSilent:
		select {
		case <-s.done:
		case <-s.readEOF(c):
		}
		return false
	case faultClose:
		return false
	}
	out := binary.BigEndian.AppendUint16(nil, txID)
	out = binary.BigEndian.AppendUint16(out, protocol)
	length := uint16(1 + len(pdu))
	switch f.kind {
	case faultZeroLength:
		length = 0
	case faultHugeLength:
		length = 300
	case faultLengthOne:
		length, pdu = 1, nil
	}
	out = binary.BigEndian.AppendUint16(out, length)
	out = append(out, unit)
	out = append(out, pdu...)
	switch f.kind {
	case faultTruncate:
		out = out[:len(out)/2]
	case faultTrailing:
		out = append(out, 0xde, 0xad)
	case faultDribble:
		for i := range out {
			if _, err := c.Write(out[i : i+1]); err != nil {
				return false
			}
			time.Sleep(time.Millisecond)
		}
		return true
	}
	if _, err := c.Write(out); err != nil {
		return false
	}
	return f.kind != faultTruncate
}

// readEOF returns a channel closed when the peer closes c (or c fails).
func (s *faultServer) readEOF(c net.Conn) <-chan struct{} {
	ch := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(ch)
		var b [64]byte
		for {
			if _, err := c.Read(b[:]); err != nil {
				return
			}
		}
	}()
	return ch
}

// isConnReset reports errors a client sees when the server drops the socket.
func isConnReset(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
