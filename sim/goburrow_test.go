package sim

import (
	"testing"
	"time"

	"github.com/goburrow/modbus"
)

// BenchmarkSerialGoburrow reads 125 registers back to back with
// goburrow's RTU client (the one plantd's modbus package drives) on a pty
// pair, and reports the share of the line it reaches (line-%). goburrow
// v0.1.0 sleeps 15e6/baud µs per byte of request and expected answer
// (1.36 characters each) plus 35e6/baud µs before it reads, so it cannot
// pass about 73 % however fast the slave is: the whole system's 90 % needs
// a client that reads the answer as it comes.
func BenchmarkSerialGoburrow(b *testing.B) {
	for _, baud := range []int{9600, 19200} {
		b.Run(timingName(baud), func(b *testing.B) {
			a, path := ptyPair(b, b.TempDir())
			p, err := New(serialConfig(newClock(summerNoon), path, baud), nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Start(); err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			h := modbus.NewRTUClientHandler(a)
			h.BaudRate, h.DataBits, h.Parity, h.StopBits = baud, 8, "N", 1
			h.SlaveId = 1
			h.Timeout = 5 * time.Second
			if err := h.Connect(); err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			c := modbus.NewClient(h)
			bytes := 0
			start := time.Now()
			for b.Loop() {
				if _, err := c.ReadHoldingRegisters(40000, 125); err != nil {
					b.Fatal(err)
				}
				bytes += 8 + 255
			}
			b.ReportMetric(100*lineUse(bytes, time.Since(start), baud), "line-%")
		})
	}
}
