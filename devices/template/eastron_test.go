package template_test

import (
	"log/slog"
	"math"
	"testing"
	"time"

	"plantd/devices/template"
	"plantd/modbus"
	"plantd/sim"
)

// TestEastronTwinsAnswerTheVendorMap reads, as mbmd does (function 4, two
// registers at each address), every input register of the vendor's map
// from the twins of the Eastron templates over Modbus TCP: each answers
// a finite value (0x0156 total kWh the sum of import and export, the
// template's registers as the template decodes them), and one read across
// the first run of registers (up to 40 values) answers too.
func TestEastronTwinsAnswerTheVendorMap(t *testing.T) {
	t.Parallel() // its own simulated plant
	p, _ := templatePlant(t, modbus.TransportTCP)
	pool := modbus.NewPool(slog.New(slog.DiscardHandler))
	t.Cleanup(func() { pool.Close() })
	f32 := func(w []uint16) float64 { return float64(math.Float32frombits(uint32(w[0])<<16 | uint32(w[1]))) }
	for _, tt := range []struct {
		name string
		want int // registers in the vendor's map
	}{
		{"sdm630", 85},
		{"sdm120", 22},
		{"sdm72", 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			regs := sim.EastronRegisters(tt.name)
			if len(regs) != tt.want {
				t.Fatalf("%d registers in the map, want %d", len(regs), tt.want)
			}
			var d *sim.Device
			for _, dev := range p.Devices() {
				if dev.ID() == "t-"+tt.name {
					d = dev
				}
			}
			c := pool.Endpoint(modbus.EndpointConfig{Address: d.Addr(), Timeout: 2 * time.Second}).Unit(d.Unit(), 2*time.Second)
			tpl, _ := template.Lookup(tt.name)
			values, _, _ := d.TemplateValues()
			got := map[uint16]float64{}
			for _, addr := range regs {
				w, err := c.ReadInputRegisters(t.Context(), addr, 2, nil)
				if err != nil {
					t.Errorf("register 0x%04X (3%04d): %v", addr, int(addr)+1, err)
					continue
				}
				v := f32(w)
				got[addr] = v
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Errorf("register 0x%04X: %v", addr, v)
				}
			}
			// The template's points read the same through the vendor's
			// registers (the clock stands still).
			for _, pt := range tpl.Points {
				if v, ok := got[pt.Address]; ok {
					want := values[pt.Name]
					if pt.Unit == "kWh" {
						want /= 1000
					}
					if math.Abs(v-want) > 1e-3*math.Max(1, math.Abs(want)) {
						t.Errorf("%s at 0x%04X: %v, the template decodes %v", pt.Name, pt.Address, v, want)
					}
				}
			}
			if imp, exp, sum := got[0x0048], got[0x004A], got[0x0156]; math.Abs(imp+exp-sum) > 1e-2*sum || sum == 0 {
				t.Errorf("total kWh %v, import %v + export %v", sum, imp, exp)
			}
			// One read over the first run of registers, up to 40 values.
			last := 0
			for last+1 < len(regs) && last < 39 && regs[last+1] == regs[last]+2 {
				last++
			}
			n := uint16(regs[last] + 2 - regs[0])
			w, err := c.ReadInputRegisters(t.Context(), regs[0], n, nil)
			if err != nil {
				t.Fatalf("read 0x%04X+%d: %v", regs[0], n, err)
			}
			if len(w) != int(n) {
				t.Errorf("read 0x%04X+%d: %d registers", regs[0], n, len(w))
			}
		})
	}
}
