package modbus

import (
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"plantd/internal/proctest"
)

// memHandler is a Handler over 100 holding registers (0..99) and 16 coils
// of unit 1; registers 50..99 are read-only. It records every request it
// is called with.
type memHandler struct {
	mu    sync.Mutex
	regs  [100]uint16
	coils [16]bool
	calls []Request
}

func (h *memHandler) Registers(req *Request) ([]uint16, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, *req)
	if req.Unit != 1 {
		return nil, Exception(ExceptionGatewayTargetDeviceFailedToRespond)
	}
	if req.Function == 4 {
		return nil, Exception(ExceptionIllegalFunction)
	}
	if int(req.Addr)+int(req.Quantity) > len(h.regs) {
		return nil, Exception(ExceptionIllegalDataAddress)
	}
	if req.IsWrite() {
		if int(req.Addr)+len(req.Regs) > 50 {
			return nil, Exception(ExceptionIllegalDataAddress)
		}
		copy(h.regs[req.Addr:], req.Regs)
		return nil, nil
	}
	return slices.Clone(h.regs[req.Addr : req.Addr+req.Quantity]), nil
}

func (h *memHandler) Bits(req *Request) ([]bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, *req)
	if int(req.Addr)+int(req.Quantity) > len(h.coils) {
		return nil, Exception(ExceptionIllegalDataAddress)
	}
	if req.IsWrite() {
		copy(h.coils[req.Addr:], req.Bits)
		return nil, nil
	}
	return slices.Clone(h.coils[req.Addr : req.Addr+req.Quantity]), nil
}

func (h *memHandler) ncalls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.calls)
}

// TestServePDUMalformed: requests malformed for their function answer
// the exception the spec names, without reaching the handler.
func TestServePDUMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		pdu  []byte
		ex   byte
	}{
		{"read 0 registers", []byte{3, 0, 0, 0, 0}, ExceptionIllegalDataValue},
		{"read 126 registers", []byte{3, 0, 0, 0, 126}, ExceptionIllegalDataValue},
		{"read short", []byte{3, 0, 0, 0}, ExceptionIllegalDataValue},
		{"read past 65535", []byte{3, 0xFF, 0xFF, 0, 2}, ExceptionIllegalDataAddress},
		{"coils 2001", []byte{1, 0, 0, 0x07, 0xD1}, ExceptionIllegalDataValue},
		{"write coil 0x1234", []byte{5, 0, 0, 0x12, 0x34}, ExceptionIllegalDataValue},
		{"write 16 byte count wrong", []byte{16, 0, 0, 0, 1, 4, 0, 1}, ExceptionIllegalDataValue},
		{"write 16 missing bytes", []byte{16, 0, 0, 0, 2, 4, 0, 1}, ExceptionIllegalDataValue},
		{"write 124 registers", append([]byte{16, 0, 0, 0, 124, 248}, make([]byte, 248)...), ExceptionIllegalDataValue},
		{"write 15 byte count wrong", []byte{15, 0, 0, 0, 9, 1, 0xFF}, ExceptionIllegalDataValue},
		{"function 43", []byte{43, 14, 1, 0}, ExceptionIllegalFunction},
		{"function 6 short", []byte{6, 0, 1}, ExceptionIllegalDataValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &memHandler{}
			req := Request{Unit: 1}
			out := ServePDU(h, &req, tc.pdu, nil)
			if want := []byte{tc.pdu[0] | 0x80, tc.ex}; !slices.Equal(out, want) {
				t.Errorf("answer % x, want % x", out, want)
			}
			if n := h.ncalls(); n != 0 {
				t.Errorf("the handler was called %d times", n)
			}
		})
	}
}

// startServer serves h on a loopback port until the test ends.
func startServer(t *testing.T, cfg ServerConfig, h Handler) (*Server, string) {
	t.Helper()
	s := NewServer(cfg, h, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() {
		// Runs after ServeTCP's cleanup: Serve has returned.
		if st := s.Stats(); st.Open != 0 {
			t.Errorf("%d connections open after Serve returned", st.Open)
		}
	})
	return s, proctest.ServeTCP(t, s.Serve)
}

// TestServerClient: plantd's own client reads, writes and gets the
// handler's exceptions through the server, every function of the client.
func TestServerClient(t *testing.T) {
	h := &memHandler{}
	_, addr := startServer(t, ServerConfig{}, h)
	ep := newTestPool(t).Endpoint(EndpointConfig{Address: addr})
	c := ep.Unit(1, time.Second)
	ctx := t.Context()
	if err := c.WriteRegisters(ctx, 10, []uint16{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	got, err := c.ReadHoldingRegisters(ctx, 9, 5, nil)
	if err != nil || !slices.Equal(got, []uint16{0, 1, 2, 3, 0}) {
		t.Fatalf("read %v %v", got, err)
	}
	if err := c.WriteCoils(ctx, 3, []bool{true, false, true}); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteCoil(ctx, 0, true); err != nil {
		t.Fatal(err)
	}
	bits, err := c.ReadCoils(ctx, 0, 6, nil)
	if err != nil || !slices.Equal(bits, []bool{true, false, false, true, false, true}) {
		t.Fatalf("coils %v %v", bits, err)
	}
	for _, tc := range []struct {
		name string
		do   func() error
		ex   byte
	}{
		{"write read-only", func() error { return c.WriteRegisters(ctx, 49, []uint16{1, 2}) }, ExceptionIllegalDataAddress},
		{"read outside", func() error { _, err := c.ReadHoldingRegisters(ctx, 99, 2, nil); return err }, ExceptionIllegalDataAddress},
		{"input registers", func() error { _, err := c.ReadInputRegisters(ctx, 0, 1, nil); return err }, ExceptionIllegalFunction},
		{"other unit", func() error { _, err := ep.Unit(2, time.Second).ReadHoldingRegisters(ctx, 0, 1, nil); return err },
			ExceptionGatewayTargetDeviceFailedToRespond},
	} {
		err := tc.do()
		var ex *ExceptionError
		if !errors.As(err, &ex) || ex.Code != tc.ex {
			t.Errorf("%s: %v, want exception %d", tc.name, err, tc.ex)
		}
	}
	// The exceptions kept the connection.
	if st := ep.Stats(); st.Connects != 1 {
		t.Errorf("%d connects, want 1", st.Connects)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.calls[0]; c.Client != netip.MustParseAddr("127.0.0.1") || c.Function != 16 || c.Addr != 10 {
		t.Errorf("first request %+v", c)
	}
}

// TestServerBounds: connections over MaxConns close the oldest idle one
// each, the rest close when they idle; a frame that is no Modbus TCP
// closes its connection; a client outside the allow-list is closed at
// once.
func TestServerBounds(t *testing.T) {
	const maxConns, clients = 8, 200
	h := &memHandler{}
	srv, addr := startServer(t, ServerConfig{MaxConns: maxConns, MaxConnsPerClient: maxConns, IdleTimeout: 300 * time.Millisecond}, h)
	conns := make([]net.Conn, clients)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	proctest.WaitFor(t, "every connection accepted", 10*time.Second, func() bool { return srv.Stats().Accepted == clients })
	if st := srv.Stats(); st.Evicted != clients-maxConns || st.Full != 0 || st.Open != maxConns {
		t.Fatalf("stats %+v, want %d evicted, %d open", st, clients-maxConns, maxConns)
	}
	// Every connection ends: the evicted ones at once, the last ones
	// after the idle timeout. A read sees the end (EOF or reset).
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatalf("connection %d: read data from an idle connection", i)
		} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection %d was not closed: %v", i, err)
		}
	}
	proctest.WaitFor(t, "no connection open", 5*time.Second, func() bool { return srv.Stats().Open == 0 })
	if st := srv.Stats(); st.Idle != maxConns {
		t.Errorf("stats %+v: want %d idle closes", st, maxConns)
	}

	// A free slot again: a frame with protocol id 1 closes the connection.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	frame := []byte{0, 1, 0, 1, 0, 6, 1, 3, 0, 0, 0, 1}
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 16)); err == nil || n != 0 {
		t.Errorf("answer to protocol id 1: %d bytes, %v", n, err)
	}
	if st := srv.Stats(); st.Malformed != 1 || h.ncalls() != 0 {
		t.Errorf("stats %+v, %d calls", st, h.ncalls())
	}

	// The allow-list.
	deny, daddr := startServer(t, ServerConfig{Allow: func(a netip.Addr) bool { return a == netip.MustParseAddr("192.0.2.1") }}, h)
	dc, err := net.Dial("tcp", daddr)
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	binary.BigEndian.PutUint16(frame[2:4], 0)
	_, _ = dc.Write(frame)
	_ = dc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(dc, make([]byte, 1)); err == nil {
		t.Error("a client outside the allow-list got an answer")
	}
	if st := deny.Stats(); st.Refused != 1 || st.Requests != 0 {
		t.Errorf("allow-list stats %+v", st)
	}
}
