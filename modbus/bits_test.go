package modbus

import (
	"encoding/binary"
	"errors"
	"io"
	"log"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	smodbus "github.com/simonvetter/modbus"
)

// bitServer is a simonvetter Modbus TCP server with bitCount coils and
// discrete inputs and as many input registers; addresses past them answer
// exception 2 (illegal data address), holding registers exception 1.
type bitServer struct {
	addr string

	mu     sync.Mutex
	coils  [bitCount]bool
	inputs [bitCount]bool
	fcs    []byte // function codes of the requests seen, in order
}

const bitCount = 2048

// inputRegValue is what input register r reads as.
func inputRegValue(r uint16) uint16 { return 0x4000 | r }

func startBitServer(tb testing.TB) *bitServer {
	tb.Helper()
	s := &bitServer{}
	for i := range s.inputs {
		s.inputs[i] = i%3 == 0
	}
	var lastErr error
	for range 20 {
		addr := freeAddr(tb)
		srv, err := smodbus.NewServer(&smodbus.ServerConfiguration{
			URL: "tcp://" + addr, Timeout: 30 * time.Second, MaxClients: 8, Logger: log.New(io.Discard, "", 0),
		}, s)
		if err != nil {
			tb.Fatalf("simonvetter NewServer: %v", err)
		}
		if err := srv.Start(); err != nil {
			lastErr = err
			continue
		}
		s.addr = addr
		tb.Cleanup(func() { _ = srv.Stop() })
		return s
	}
	tb.Fatalf("start simonvetter server: %v", lastErr)
	return nil
}

func (s *bitServer) seen(fc byte) {
	s.mu.Lock()
	s.fcs = append(s.fcs, fc)
	s.mu.Unlock()
}

func (s *bitServer) functions() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.fcs)
}

// HandleCoils implements smodbus.RequestHandler (functions 1, 5, 15).
func (s *bitServer) HandleCoils(req *smodbus.CoilsRequest) ([]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !req.IsWrite:
		s.fcs = append(s.fcs, fcReadCoils)
	case req.Quantity == 1 && len(req.Args) == 1:
		// simonvetter tells 5 from a one-coil 15 by nothing; both count as 5.
		s.fcs = append(s.fcs, fcWriteSingleCoil)
	default:
		s.fcs = append(s.fcs, fcWriteMultipleCoils)
	}
	if int(req.Addr)+int(req.Quantity) > bitCount {
		return nil, smodbus.ErrIllegalDataAddress
	}
	if req.IsWrite {
		copy(s.coils[req.Addr:], req.Args)
		return nil, nil
	}
	return slices.Clone(s.coils[req.Addr : req.Addr+req.Quantity]), nil
}

// HandleDiscreteInputs implements smodbus.RequestHandler (function 2).
func (s *bitServer) HandleDiscreteInputs(req *smodbus.DiscreteInputsRequest) ([]bool, error) {
	s.seen(fcReadDiscreteInputs)
	if int(req.Addr)+int(req.Quantity) > bitCount {
		return nil, smodbus.ErrIllegalDataAddress
	}
	return slices.Clone(s.inputs[req.Addr : req.Addr+req.Quantity]), nil
}

// HandleInputRegisters implements smodbus.RequestHandler (function 4).
func (s *bitServer) HandleInputRegisters(req *smodbus.InputRegistersRequest) ([]uint16, error) {
	s.seen(fcReadInputRegisters)
	if int(req.Addr)+int(req.Quantity) > bitCount {
		return nil, smodbus.ErrIllegalDataAddress
	}
	out := make([]uint16, req.Quantity)
	for i := range out {
		out[i] = inputRegValue(req.Addr + uint16(i))
	}
	return out, nil
}

// HandleHoldingRegisters implements smodbus.RequestHandler.
func (s *bitServer) HandleHoldingRegisters(*smodbus.HoldingRegistersRequest) ([]uint16, error) {
	return nil, smodbus.ErrIllegalFunction
}

// pattern returns n bits of a pattern that is not periodic in 8.
func pattern(n, seed int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = (i*7+seed)%5 < 2
	}
	return out
}

func TestCoilsAndInputs(t *testing.T) {
	srv := startBitServer(t)
	c := newTestPool(t).Endpoint(EndpointConfig{Address: srv.addr}).Unit(1, 0)
	ctx := t.Context()
	wantInputs := func(addr, n int) []bool { return slices.Clone(srv.inputs[addr : addr+n]) }

	tests := []struct {
		name    string
		single  map[uint16]bool   // WriteCoil before the read
		multi   map[uint16][]bool // WriteCoils before the read
		addr    uint16
		qty     uint16
		want    []bool
		wantFCs []byte
	}{
		{name: "one coil on", single: map[uint16]bool{3: true}, addr: 3, qty: 1, want: []bool{true},
			wantFCs: []byte{5, 1}},
		{name: "one coil off", single: map[uint16]bool{3: false}, addr: 2, qty: 3, want: []bool{false, false, false},
			wantFCs: []byte{5, 1}},
		{name: "nine coils across a byte", multi: map[uint16][]bool{16: pattern(9, 1)}, addr: 16, qty: 9,
			want: pattern(9, 1), wantFCs: []byte{15, 1}},
		{name: "eight coils at an odd address", multi: map[uint16][]bool{101: pattern(8, 2)}, addr: 101, qty: 8,
			want: pattern(8, 2), wantFCs: []byte{15, 1}},
		{name: "1968 coils, 2000 read", multi: map[uint16][]bool{0: pattern(MaxWriteBits, 3)}, addr: 0, qty: MaxReadBits,
			want: append(pattern(MaxWriteBits, 3), make([]bool, MaxReadBits-MaxWriteBits)...), wantFCs: []byte{15, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(srv.functions())
			for addr, on := range tt.single {
				if err := c.WriteCoil(ctx, addr, on); err != nil {
					t.Fatalf("WriteCoil: %v", err)
				}
			}
			for addr, vals := range tt.multi {
				if err := c.WriteCoils(ctx, addr, vals); err != nil {
					t.Fatalf("WriteCoils: %v", err)
				}
			}
			got, err := c.ReadCoils(ctx, tt.addr, tt.qty, nil)
			if err != nil {
				t.Fatalf("ReadCoils: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("coils %d+%d = %v, want %v", tt.addr, tt.qty, got, tt.want)
			}
			if fcs := srv.functions()[before:]; !slices.Equal(fcs, tt.wantFCs) {
				t.Errorf("server saw functions %v, want %v", fcs, tt.wantFCs)
			}
		})
	}

	for _, tt := range []struct {
		addr, qty uint16
	}{{0, 1}, {5, 8}, {7, 17}, {40, MaxReadBits}} {
		got, err := c.ReadDiscreteInputs(ctx, tt.addr, tt.qty, nil)
		if err != nil {
			t.Fatalf("ReadDiscreteInputs %d+%d: %v", tt.addr, tt.qty, err)
		}
		if want := wantInputs(int(tt.addr), int(tt.qty)); !slices.Equal(got, want) {
			t.Errorf("discrete inputs %d+%d = %v, want %v", tt.addr, tt.qty, got, want)
		}
	}

	got, err := c.ReadInputRegisters(ctx, 10, 3, nil)
	if want := []uint16{inputRegValue(10), inputRegValue(11), inputRegValue(12)}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ReadInputRegisters = %v, %v; want %v", got, err, want)
	}
	got, err = c.ReadInputRegisters(ctx, 0, MaxReadRegisters, got)
	if err != nil || len(got) != MaxReadRegisters || got[124] != inputRegValue(124) {
		t.Errorf("ReadInputRegisters 0+125 = %d registers, %v", len(got), err)
	}

	t.Run("dst reused", func(t *testing.T) {
		buf := make([]bool, 2, 16)
		got, err := c.ReadDiscreteInputs(ctx, 0, 9, buf)
		if err != nil {
			t.Fatal(err)
		}
		if &got[0] != &buf[0] || !slices.Equal(got, wantInputs(0, 9)) {
			t.Errorf("result %v does not reuse dst", got)
		}
	})
}

func TestBitExceptions(t *testing.T) {
	srv := startBitServer(t)
	ep := newTestPool(t).Endpoint(EndpointConfig{Address: srv.addr})
	c := ep.Unit(4, 0)
	ctx := t.Context()
	const past = bitCount + 10
	tests := []struct {
		name  string
		fc    byte
		op    string
		table string // in the message
		do    func() error
	}{
		{"read coils", fcReadCoils, OpRead, "read coils 2058+2 ",
			func() error { _, err := c.ReadCoils(ctx, past, 2, nil); return err }},
		{"read discrete inputs", fcReadDiscreteInputs, OpRead, "read discrete inputs 2058+1 ",
			func() error { _, err := c.ReadDiscreteInputs(ctx, past, 1, nil); return err }},
		{"read input registers", fcReadInputRegisters, OpRead, "read input registers 2058+4 ",
			func() error { _, err := c.ReadInputRegisters(ctx, past, 4, nil); return err }},
		{"write coil", fcWriteSingleCoil, OpWrite, "write coil 2058+1 ",
			func() error { return c.WriteCoil(ctx, past, true) }},
		{"write coils", fcWriteMultipleCoils, OpWrite, "write coils 2058+3 ",
			func() error { return c.WriteCoils(ctx, past, []bool{true, false, true}) }},
		{"read holding registers", fcReadHoldingRegisters, OpRead, "read 2058+1 ",
			func() error { _, err := c.ReadHoldingRegisters(ctx, past, 1, nil); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			var ex *ExceptionError
			if !errors.As(err, &ex) || ex.Function != tt.fc {
				t.Fatalf("err = %v, want an exception on function %d", err, tt.fc)
			}
			wantCode := ExceptionIllegalDataAddress
			if tt.fc == fcReadHoldingRegisters {
				wantCode = ExceptionIllegalFunction
			}
			if ex.Code != wantCode || Classify(err) != ClassUnsupported {
				t.Errorf("exception %d (%v), want %d (unsupported)", ex.Code, Classify(err), wantCode)
			}
			var mbErr *Error
			if !errors.As(err, &mbErr) || mbErr.Op != tt.op || mbErr.Function != tt.fc || mbErr.Addr != past || mbErr.Unit != 4 {
				t.Errorf("err = %#v, want *Error naming the request", err)
			}
			if !strings.Contains(err.Error(), "modbus "+tt.table) {
				t.Errorf("message %q does not name %q", err, tt.table)
			}
		})
	}
	if st := ep.Stats(); st.Connects != 1 || !st.Connected || st.Exceptions != uint64(len(tests)) {
		t.Errorf("stats %+v: exceptions must keep the connection", st)
	}
}

func TestBitInvalidRequests(t *testing.T) {
	srv := startFaultServer(t)
	ep := newTestPool(t).Endpoint(EndpointConfig{Address: srv.addr()})
	c := ep.Unit(1, 0)
	ctx := t.Context()
	tests := []struct {
		name string
		do   func() error
	}{
		{"read 0 coils", func() error { _, err := c.ReadCoils(ctx, 0, 0, nil); return err }},
		{"read 2001 coils", func() error { _, err := c.ReadCoils(ctx, 0, MaxReadBits+1, nil); return err }},
		{"read coils past 65535", func() error { _, err := c.ReadCoils(ctx, 65535, 2, nil); return err }},
		{"read 0 inputs", func() error { _, err := c.ReadDiscreteInputs(ctx, 0, 0, nil); return err }},
		{"read 2001 inputs", func() error { _, err := c.ReadDiscreteInputs(ctx, 0, MaxReadBits+1, nil); return err }},
		{"read 126 input registers", func() error { _, err := c.ReadInputRegisters(ctx, 0, 126, nil); return err }},
		{"read 0 input registers", func() error { _, err := c.ReadInputRegisters(ctx, 0, 0, nil); return err }},
		{"write 0 coils", func() error { return c.WriteCoils(ctx, 0, nil) }},
		{"write 1969 coils", func() error { return c.WriteCoils(ctx, 0, make([]bool, MaxWriteBits+1)) }},
		{"write coils past 65535", func() error { return c.WriteCoils(ctx, 65535, []bool{true, true}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if !errors.Is(err, ErrInvalid) || Classify(err) != ClassInvalid {
				t.Errorf("err = %v, want ErrInvalid", err)
			}
		})
	}
	if st := ep.Stats(); st.Requests != 0 || st.Connects != 0 || srv.accepts.Load() != 0 {
		t.Errorf("invalid requests did I/O: %+v", st)
	}
}

// cannedServer answers each request with the PDU answer returns for the
// request's PDU, under the request's transaction and unit id.
type cannedServer struct {
	ln     net.Listener
	answer func(req []byte) []byte
	mu     sync.Mutex
	pdus   [][]byte // request PDUs seen
	wg     sync.WaitGroup
}

func startCannedServer(tb testing.TB, answer func(req []byte) []byte) *cannedServer {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &cannedServer{ln: ln, answer: answer}
	s.wg.Add(1)
	go s.serve()
	tb.Cleanup(func() {
		_ = ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *cannedServer) requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pdus)
}

func (s *cannedServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			var hdr [mbapSize]byte
			for {
				if _, err := io.ReadFull(c, hdr[:]); err != nil {
					return
				}
				pdu := make([]byte, int(binary.BigEndian.Uint16(hdr[4:]))-1)
				if _, err := io.ReadFull(c, pdu); err != nil {
					return
				}
				s.mu.Lock()
				s.pdus = append(s.pdus, pdu)
				s.mu.Unlock()
				ans := s.answer(pdu)
				out := append([]byte(nil), hdr[:4]...)
				out = binary.BigEndian.AppendUint16(out, uint16(1+len(ans)))
				out = append(out, hdr[6])
				if _, err := c.Write(append(out, ans...)); err != nil {
					return
				}
			}
		}()
	}
}

// TestBitFrames checks the bytes of the coil requests (LSB first, 0xFF00
// for on) and how answers that do not fit the request fail: each failure
// closes the socket, as for the register functions.
func TestBitFrames(t *testing.T) {
	u16 := func(v ...uint16) []byte {
		var b []byte
		for _, x := range v {
			b = binary.BigEndian.AppendUint16(b, x)
		}
		return b
	}
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	tests := []struct {
		name     string
		do       func(c *Client) (any, error)
		answer   []byte // PDU
		wantReq  []byte // PDU
		want     any
		wantIs   error
		wantText string
	}{
		{
			name:    "read coils LSB first",
			do:      func(c *Client) (any, error) { return c.ReadCoils(t.Context(), 20, 10, nil) },
			answer:  []byte{1, 2, 0b1100_0101, 0b10},
			wantReq: cat([]byte{1}, u16(20, 10)),
			want:    []bool{true, false, true, false, false, false, true, true, false, true},
		},
		{
			name:    "discrete inputs ignore padding",
			do:      func(c *Client) (any, error) { return c.ReadDiscreteInputs(t.Context(), 0, 3, nil) },
			answer:  []byte{2, 1, 0xFA},
			wantReq: cat([]byte{2}, u16(0, 3)),
			want:    []bool{false, true, false},
		},
		{
			name:    "write coil on",
			do:      func(c *Client) (any, error) { return nil, c.WriteCoil(t.Context(), 7, true) },
			answer:  cat([]byte{5}, u16(7, 0xFF00)),
			wantReq: cat([]byte{5}, u16(7, 0xFF00)),
		},
		{
			name:    "write coil off",
			do:      func(c *Client) (any, error) { return nil, c.WriteCoil(t.Context(), 7, false) },
			answer:  cat([]byte{5}, u16(7, 0)),
			wantReq: cat([]byte{5}, u16(7, 0)),
		},
		{
			name: "write coils packed",
			do: func(c *Client) (any, error) {
				return nil, c.WriteCoils(t.Context(), 19, []bool{true, false, true, true, false, false, true, true, true, false})
			},
			answer:  cat([]byte{15}, u16(19, 10)),
			wantReq: cat([]byte{15}, u16(19, 10), []byte{2, 0b1100_1101, 0b01}),
		},
		{
			name:   "read coils byte count short",
			do:     func(c *Client) (any, error) { return c.ReadCoils(t.Context(), 0, 9, nil) },
			answer: []byte{1, 1, 0xFF}, wantIs: ErrMalformed, wantText: "want 2 for 9 bits",
		},
		{
			name:   "read coils byte count differs from data",
			do:     func(c *Client) (any, error) { return c.ReadCoils(t.Context(), 0, 9, nil) },
			answer: []byte{1, 2, 0xFF}, wantIs: ErrMalformed, wantText: "byte count 2, but 1 data bytes",
		},
		{
			name:   "read input registers byte count short",
			do:     func(c *Client) (any, error) { return c.ReadInputRegisters(t.Context(), 0, 2, nil) },
			answer: []byte{4, 2, 0, 1}, wantIs: ErrMalformed,
		},
		{
			name:   "write coil echoes another value",
			do:     func(c *Client) (any, error) { return nil, c.WriteCoil(t.Context(), 7, true) },
			answer: cat([]byte{5}, u16(7, 0)), wantIs: ErrMismatch, wantText: "echoes coil 7",
		},
		{
			name:   "write coil echoes another coil",
			do:     func(c *Client) (any, error) { return nil, c.WriteCoil(t.Context(), 7, true) },
			answer: cat([]byte{5}, u16(8, 0xFF00)), wantIs: ErrMismatch,
		},
		{
			name:   "write coils echoes another quantity",
			do:     func(c *Client) (any, error) { return nil, c.WriteCoils(t.Context(), 3, []bool{true, true}) },
			answer: cat([]byte{15}, u16(3, 3)), wantIs: ErrMismatch, wantText: "echoes 3+3",
		},
		{
			name:   "write coils answer short",
			do:     func(c *Client) (any, error) { return nil, c.WriteCoils(t.Context(), 3, []bool{true, true}) },
			answer: cat([]byte{15}, u16(3)), wantIs: ErrMalformed,
		},
		{
			name:   "answer of another function",
			do:     func(c *Client) (any, error) { return c.ReadCoils(t.Context(), 0, 1, nil) },
			answer: []byte{2, 1, 1}, wantIs: ErrMismatch,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startCannedServer(t, func([]byte) []byte { return tt.answer })
			ep := newTestPool(t).Endpoint(EndpointConfig{Address: srv.ln.Addr().String()})
			got, err := tt.do(ep.Unit(1, 0))
			if tt.wantIs == nil {
				if err != nil {
					t.Fatal(err)
				}
				if tt.want != nil && !slices.Equal(got.([]bool), tt.want.([]bool)) {
					t.Errorf("got %v, want %v", got, tt.want)
				}
				if reqs := srv.requests(); len(reqs) != 1 || !slices.Equal(reqs[0], tt.wantReq) {
					t.Errorf("request PDUs % x, want % x", reqs, tt.wantReq)
				}
				return
			}
			if !errors.Is(err, tt.wantIs) || !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("err = %v, want %v with %q", err, tt.wantIs, tt.wantText)
			}
			if b, ok := got.([]bool); ok && len(b) != 0 {
				t.Errorf("a failed read returned %v", b)
			}
			if st := ep.Stats(); st.Connected || st.Failures != 1 || Classify(err) != ClassLink {
				t.Errorf("stats %+v, class %v: want the socket closed after the failure", st, Classify(err))
			}
		})
	}
}
