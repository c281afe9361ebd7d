// Package simtest starts the simulated plant for a test, as httptest
// starts a server: on free loopback ports, stopped by the test's cleanup.
package simtest

import (
	"io"
	"log"
	"log/slog"
	"net"
	"testing"

	mb "github.com/simonvetter/modbus"

	"plantd/devices/sim"
)

// Start runs the simulated plant of cfg until the test ends.
func Start(tb testing.TB, cfg sim.Config) *sim.Plant {
	tb.Helper()
	p, err := sim.New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatalf("simulated plant: %v", err)
	}
	if err := p.Start(); err != nil {
		tb.Fatalf("start simulated plant: %v", err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p
}

// Device returns the plant's device with the given id or fails the test.
func Device(tb testing.TB, p *sim.Plant, id string) *sim.Device {
	tb.Helper()
	d := p.Device(id)
	if d == nil {
		tb.Fatalf("no simulated device %q", id)
	}
	return d
}

// PlainModbus starts a Modbus TCP server that is not a SunSpec device, as
// a meter with a vendor register map is: it answers every holding register
// read with zeros and every other request with exception 1. It returns
// its host:port.
func PlainModbus(tb testing.TB) string {
	tb.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		srv, err := mb.NewServer(&mb.ServerConfiguration{URL: "tcp://" + addr, MaxClients: 4,
			Logger: log.New(io.Discard, "", 0)}, zeros{})
		if err != nil {
			tb.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			continue // another process took the port meanwhile
		}
		tb.Cleanup(func() { _ = srv.Stop() })
		return addr
	}
	tb.Fatal("no free port for a Modbus server")
	return ""
}

// zeros is the request handler of PlainModbus.
type zeros struct{}

func (zeros) HandleCoils(*mb.CoilsRequest) ([]bool, error) { return nil, mb.ErrIllegalFunction }
func (zeros) HandleDiscreteInputs(*mb.DiscreteInputsRequest) ([]bool, error) {
	return nil, mb.ErrIllegalFunction
}
func (zeros) HandleInputRegisters(*mb.InputRegistersRequest) ([]uint16, error) {
	return nil, mb.ErrIllegalFunction
}
func (zeros) HandleHoldingRegisters(r *mb.HoldingRegistersRequest) ([]uint16, error) {
	if r.IsWrite {
		return nil, mb.ErrIllegalFunction
	}
	return make([]uint16, r.Quantity), nil
}
