package sunspecserver

import (
	"context"
	"testing"
	"time"

	"plantd/internal/proctest"
)

// BenchmarkRead103 reads model 103 (52 registers) from the server over
// loopback with plantd's Modbus client, one request at a time, as a SCADA
// master polls: reads/s, and the CPU of the whole process (client and
// server, user and system) per read, as % of a core per 100 reads/s.
func BenchmarkRead103(b *testing.B) {
	s, c := serve(b, Config{}, testLive(b, demoReadings()), nil)
	var addr uint16
	for _, m := range s.Models() {
		if m.ID == modelInverter {
			addr = m.Addr
		}
	}
	ctx := context.Background()
	buf := make([]uint16, 0, 52)
	if _, err := c.ReadHoldingRegisters(ctx, addr, 52, buf); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0, t0 := proctest.CPUTime(), time.Now()
	for b.Loop() {
		if _, err := c.ReadHoldingRegisters(ctx, addr, 52, buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
	cpu, wall := proctest.CPUTime()-cpu0, time.Since(t0)
	b.ReportMetric(float64(b.N)/wall.Seconds(), "reads/s")
	// CPU per read × 100 reads per second, as a share of one core.
	b.ReportMetric(100*cpu.Seconds()/float64(b.N)*100, "%core/100reads/s")
}
