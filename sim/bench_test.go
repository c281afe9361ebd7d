package sim

import (
	"io"
	"log"
	"testing"

	mb "github.com/simonvetter/modbus"
)

// BenchmarkRead reads the 52 registers of model 103 from an endpoint (its
// fault front and modbus.ServePDU).
func BenchmarkRead(b *testing.B) {
	p, err := New(DefaultConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	d := p.Device("inv1")
	for _, bc := range []struct {
		name, addr string
	}{
		{"proxy", d.Addr()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := mb.NewClient(&mb.ClientConfiguration{URL: "tcp://" + bc.addr, Logger: log.New(io.Discard, "", 0)})
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Open(); err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.ReadRegisters(40070, 52, mb.HOLDING_REGISTER); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
