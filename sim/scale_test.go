package sim

import (
	"errors"
	"io"
	"log"
	"testing"
	"time"

	mb "github.com/simonvetter/modbus"

	"plantd/plant/kind"
)

func TestScaleConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n, gateways int
		endpoints   int
		maxUnit     byte
	}{
		{1, 0, 1, 1},
		{100, 0, 100, 1},
		{1000, 50, 50, 20},
		{5000, 25, 25, 200},
		{7, 3, 3, 3},
	} {
		cfg, err := ScaleConfig(tc.n, tc.gateways)
		if err != nil {
			t.Fatalf("ScaleConfig(%d, %d): %v", tc.n, tc.gateways, err)
		}
		c, err := cfg.withDefaults()
		if err != nil {
			t.Fatalf("ScaleConfig(%d, %d) is not a valid config: %v", tc.n, tc.gateways, err)
		}
		eps := map[string]bool{}
		var maxUnit byte
		for _, d := range c.Devices {
			eps[d.endpointName()] = true
			maxUnit = max(maxUnit, d.Unit)
		}
		if len(c.Devices) != tc.n || len(eps) != tc.endpoints || maxUnit != tc.maxUnit {
			t.Errorf("ScaleConfig(%d, %d): %d devices, %d endpoints, units up to %d; want %d, %d, %d",
				tc.n, tc.gateways, len(c.Devices), len(eps), maxUnit, tc.n, tc.endpoints, tc.maxUnit)
		}
		if c.Devices[0].Kind != kind.Meter {
			t.Errorf("ScaleConfig(%d, %d): first device %s, want the meter", tc.n, tc.gateways, c.Devices[0].Kind)
		}
	}
	for _, bad := range [][2]int{{0, 0}, {10, 11}, {10, -1}, {1000, 4}} {
		if _, err := ScaleConfig(bad[0], bad[1]); !errors.Is(err, ErrConfig) {
			t.Errorf("ScaleConfig(%d, %d): %v, want ErrConfig", bad[0], bad[1], err)
		}
	}
}

// TestScalePlantServes reads every device of a 60-device plant behind
// three gateways and checks the read statistics count them.
func TestScalePlantServes(t *testing.T) {
	t.Parallel()
	cfg, err := ScaleConfig(60, 3)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CountReads = true
	p, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	clients := map[string]*mb.ModbusClient{}
	for _, d := range p.Devices() {
		c := clients[d.Addr()]
		if c == nil {
			c, err = mb.NewClient(&mb.ClientConfiguration{URL: "tcp://" + d.Addr(), Timeout: 2 * time.Second, Logger: log.New(io.Discard, "", 0)})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Open(); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			clients[d.Addr()] = c
		}
		if err := c.SetUnitId(d.Unit()); err != nil {
			t.Fatal(err)
		}
		regs, err := c.ReadRegisters(40000, 2, mb.HOLDING_REGISTER)
		if err != nil {
			t.Fatalf("%s at %s unit %d: %v", d.ID(), d.Addr(), d.Unit(), err)
		}
		if regs[0] != 0x5375 || regs[1] != 0x6e53 {
			t.Fatalf("%s: %04x %04x, want SunS", d.ID(), regs[0], regs[1])
		}
	}
	if len(clients) != 3 {
		t.Errorf("%d addresses, want 3", len(clients))
	}
	if s := p.TakeReadStats(); s.Reads != 60 || s.Polls != 60 {
		t.Errorf("read stats %d reads in %d polls, want 60 in 60", s.Reads, s.Polls)
	}
	if s := p.TakeReadStats(); s.Reads != 0 {
		t.Errorf("read stats not reset: %d reads", s.Reads)
	}
}
