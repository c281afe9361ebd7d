package modbus_test

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/modbus"
	"plantd/sim"
	"plantd/sim/simtest"
)

// simInverter starts the simulated classic inverter alone.
func simInverter(b *testing.B) *sim.Device {
	cfg := sim.DefaultConfig()
	cfg.Devices = cfg.Devices[:1]
	return simtest.Start(b, cfg).Devices()[0]
}

// BenchmarkSimRawLoop is the ceiling of the simulator: a raw client loop
// reading 125 registers per request over one connection.
func BenchmarkSimRawLoop(b *testing.B) {
	d := simInverter(b)
	modbus.BenchRawLoop(b, d.Addr(), d.Unit())
}

// BenchmarkSimClientRead is the same read through the transport; compare
// its req/s with BenchmarkSimRawLoop's.
func BenchmarkSimClientRead(b *testing.B) {
	d := simInverter(b)
	modbus.BenchClientRead(b, d.Addr(), d.Unit())
}

// BenchmarkSerialLine reads 125 registers back to back through plantd's
// RTU client from the simulator's meter on a serial line (a socat pty
// pair), whose answers are paced at the baud, and reports the share of
// the line's capacity the reads used: bytes on the wire × 11 bits / baud
// over the elapsed time (the gaps between frames are the rest; the
// issue's target is ≥ 90 %).
func BenchmarkSerialLine(b *testing.B) {
	for _, baud := range []int{9600, 19200} {
		b.Run(strconv.Itoa(baud), func(b *testing.B) {
			a, line := ptyPairB(b)
			cfg := sim.DefaultConfig()
			cfg.Devices = cfg.Devices[2:3] // the meter
			cfg.Serial = []sim.SerialConfig{{Path: a, Baud: baud, Devices: []string{"meter"}}}
			simtest.Start(b, cfg)
			pool := modbus.NewPool(nil)
			defer pool.Close()
			c := pool.Endpoint(modbus.EndpointConfig{Address: line, Transport: modbus.TransportRTU,
				Serial: modbus.SerialConfig{Baud: baud}}).Unit(1, 2*time.Second)
			var regs []uint16
			var err error
			if regs, err = c.ReadHoldingRegisters(b.Context(), 40000, 125, regs); err != nil {
				b.Fatal(err) // the first read opens the port
			}
			const wire = 8 + 5 + 2*125 // request and answer bytes
			began := time.Now()
			for b.Loop() {
				if regs, err = c.ReadHoldingRegisters(b.Context(), 40000, 125, regs); err != nil {
					b.Fatal(err)
				}
			}
			onWire := float64(b.N*wire*11) / float64(baud) // seconds
			b.ReportMetric(100*onWire/time.Since(began).Seconds(), "%line")
		})
	}
}

// ptyPairB makes a pty pair with socat for a benchmark.
func ptyPairB(b *testing.B) (x, y string) {
	dir := b.TempDir()
	p := proctest.StartPTYPair(b, filepath.Join(dir, "a"), filepath.Join(dir, "b"))
	return p.A, p.B
}
