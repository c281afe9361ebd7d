// Package simtest starts the simulated plant for a test, as httptest
// starts a server: on free loopback ports, stopped by the test's cleanup.
//
// Imports: plantd/internal/proctest, plantd/modbus, plantd/sim
package simtest

import (
	"log/slog"
	"testing"

	"plantd/internal/proctest"
	"plantd/modbus"
	"plantd/sim"
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
	return proctest.ServeTCP(tb, modbus.NewServer(modbus.ServerConfig{MaxConns: 4}, zeros{}, slog.New(slog.DiscardHandler)).Serve)
}

// zeros is the request handler of PlainModbus.
type zeros struct{}

func (zeros) Bits(*modbus.Request) ([]bool, error) {
	return nil, modbus.Exception(modbus.ExceptionIllegalFunction)
}

func (zeros) Registers(r *modbus.Request) ([]uint16, error) {
	if r.Function != 3 {
		return nil, modbus.Exception(modbus.ExceptionIllegalFunction)
	}
	return make([]uint16, r.Quantity), nil
}
