package modbus

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"

	gmodbus "github.com/goburrow/modbus"
)

// benchServer is a loopback Modbus server for benchmarks that allocates
// nothing per request, so that a benchmark's allocations are the client's.
// It answers every request with one prepared answer: registers 0..qty-1 of
// a read of function 3 (TCP: the request's transaction id patched in).
type benchServer struct {
	ln     net.Listener
	rtu    bool
	answer []byte
	wg     sync.WaitGroup
}

// startBenchServer serves on 127.0.0.1:0 until the benchmark ends: Modbus
// TCP, or RTU frames (RTU over TCP) when rtu is set.
func startBenchServer(tb testing.TB, rtu bool, unit byte, qty uint16) *benchServer {
	tb.Helper()
	data := []byte{byte(2 * qty)}
	for i := range qty {
		data = binary.BigEndian.AppendUint16(data, i)
	}
	pdu := &gmodbus.ProtocolDataUnit{FunctionCode: fcReadHoldingRegisters, Data: data}
	var p gmodbus.Packager
	if rtu {
		h := gmodbus.NewRTUClientHandler("")
		h.SlaveId = unit
		p = h
	} else {
		h := gmodbus.NewTCPClientHandler("")
		h.SlaveId = unit
		p = h
	}
	answer, err := p.Encode(pdu)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &benchServer{ln: ln, rtu: rtu, answer: answer}
	s.wg.Add(1)
	go s.serve()
	tb.Cleanup(func() {
		_ = ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *benchServer) addr() string { return s.ln.Addr().String() }

func (s *benchServer) serve() {
	defer s.wg.Done()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		conns = append(conns, c)
		s.wg.Add(1)
		go s.handle(c)
	}
}

// handle answers the read requests of one connection. A read request is 12
// bytes (TCP) or 8 bytes (RTU).
func (s *benchServer) handle(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	n := 12
	if s.rtu {
		n = 8
	}
	var req [12]byte
	out := append([]byte(nil), s.answer...)
	for {
		if _, err := io.ReadFull(c, req[:n]); err != nil {
			return
		}
		if !s.rtu {
			copy(out, req[:2])
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}
