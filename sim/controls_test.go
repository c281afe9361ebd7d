package sim

import (
	"math"
	"testing"
	"time"

	mb "github.com/simonvetter/modbus"

	"plantd/sunspec"
)

// pv is shorthand for a point value.
func pv(name string, v float64) sunspec.PointValue { return sunspec.PointValue{Point: name, Value: v} }

// writeIn writes one point anywhere in a model, repeating groups included,
// named as in TracePoint.Name ("PFWInj.PF", "curve[2].V1"), in the point's
// units with the scale factors the device reports.
func writeIn(t *testing.T, c *mb.ModbusClient, d *Device, model uint16, name string, v float64) {
	t.Helper()
	m := readModel(t, c, d, model)
	var gi *sunspec.GroupInstance
	idx := -1
	walkNamed(&m.Root, "", func(g *sunspec.GroupInstance, i int, n string) {
		if n == name {
			gi, idx = g, i
		}
	})
	if idx < 0 {
		t.Fatalf("model %d has no point %s", model, name)
	}
	p := &gi.Group.Points[idx]
	if err := m.SetIn(gi, p.Name, v); err != nil {
		t.Fatalf("model %d %s = %v: %v", model, name, v, err)
	}
	off := gi.Offset + int(p.Offset)
	if err := c.WriteRegisters(m.Addr+uint16(off), m.Regs[off:off+int(p.Size)]); err != nil {
		t.Fatalf("write model %d %s = %v: %v", model, name, v, err)
	}
}

// readIn reads one point anywhere in a model (see writeIn).
func readIn(t *testing.T, c *mb.ModbusClient, d *Device, model uint16, name string) float64 {
	t.Helper()
	m := readModel(t, c, d, model)
	var out *float64
	walkNamed(&m.Root, "", func(g *sunspec.GroupInstance, i int, n string) {
		if n == name {
			v := m.ValueAt(g, i)
			if !v.OK {
				t.Fatalf("model %d %s not implemented", model, name)
			}
			out = &v.Float
		}
	})
	if out == nil {
		t.Fatalf("model %d has no point %s", model, name)
	}
	return *out
}

// acW reads an inverter's AC power over Modbus (103 or 701 W).
func acW(t *testing.T, c *mb.ModbusClient, d *Device) float64 {
	t.Helper()
	if d.DER() {
		return num(t, readModel(t, c, d, 701), "W")
	}
	return num(t, readModel(t, c, d, 103), "W")
}

// wantLimited checks that an inverter's AC power over Modbus is what a
// limit of pct % of its rating lets through now, and that the plant says
// the same limit.
func wantLimited(t *testing.T, p *Plant, c *mb.ModbusClient, d *Device, pct float64) {
	t.Helper()
	w := acW(t, c, d)
	s := d.State()
	want := math.Min(s.AvailableW, pct/100*d.cfg.RatedW)
	if math.Abs(w-want) > 1.5 || math.Abs(s.EffectiveLimitPct-pct) > 0.01 {
		t.Errorf("%s at %s: W %v, effective limit %v%%; want W %.0f (limit %v%%, available %.0f)",
			d.ID(), p.Now().Format(time.TimeOnly), w, s.EffectiveLimitPct, want, pct, s.AvailableW)
	}
	if got, ok := p.EffectiveLimitPct(d.ID()); !ok || math.Abs(got-pct) > 0.01 {
		t.Errorf("EffectiveLimitPct(%s) = %v, %v; want %v", d.ID(), got, ok, pct)
	}
}

// sunnyPlant is the default plant at a clear summer noon on a manual clock.
func sunnyPlant(t *testing.T, mod func(*Config)) (*Plant, *manualClock) {
	t.Helper()
	clk := newClock(summerNoon)
	cfg := testConfig(clk)
	cfg.ClearSky = true
	if mod != nil {
		mod(&cfg)
	}
	p := startPlant(t, cfg)
	for _, id := range []string{"inv1", "inv2"} {
		if s := p.Device(id).State(); s.AvailableW < 0.8*s.PowerW || s.AvailableW < 6000 {
			t.Fatalf("%s: available %v W; want a sunny noon", id, s.AvailableW)
		}
	}
	return p, clk
}

// TestClassicRamp follows 123 WMaxLimPct_RmpTms: the limit moves linearly
// from the old to the new value, down and up; RmpTms 0 is at once.
func TestClassicRamp(t *testing.T) {
	p, clk := sunnyPlant(t, nil)
	inv := p.Device("inv1")
	c := dial(t, inv)
	type step struct {
		after time.Duration
		pct   float64
	}
	cases := []struct {
		name   string
		writes []sunspec.PointValue
		steps  []step
	}{
		{"down over 10 s", []sunspec.PointValue{pv("WMaxLimPct", 30), pv("WMaxLimPct_RmpTms", 10), pv("WMaxLim_Ena", 1)},
			[]step{{0, 100}, {2500 * time.Millisecond, 82.5}, {2500 * time.Millisecond, 65}, {5 * time.Second, 30}, {time.Minute, 30}}},
		{"up over 4 s", []sunspec.PointValue{pv("WMaxLimPct_RmpTms", 4), pv("WMaxLimPct", 70)},
			[]step{{0, 30}, {time.Second, 40}, {2 * time.Second, 60}, {time.Second, 70}}},
		{"disable ramps to 100", []sunspec.PointValue{pv("WMaxLimPct_RmpTms", 3), pv("WMaxLim_Ena", 0)},
			[]step{{0, 70}, {1500 * time.Millisecond, 85}, {1500 * time.Millisecond, 100}}},
		{"RmpTms 0 is at once", []sunspec.PointValue{pv("WMaxLimPct_RmpTms", 0), pv("WMaxLimPct", 20), pv("WMaxLim_Ena", 1)},
			[]step{{0, 20}}},
		{"a new target mid-ramp starts from where the ramp is", []sunspec.PointValue{pv("WMaxLimPct_RmpTms", 10), pv("WMaxLimPct", 60)},
			[]step{{0, 20}, {5 * time.Second, 40}}},
		{"", []sunspec.PointValue{pv("WMaxLimPct_RmpTms", 2), pv("WMaxLimPct", 20)},
			[]step{{0, 40}, {time.Second, 30}, {time.Second, 20}}},
	}
	for _, tc := range cases {
		writePoints(t, c, inv, 123, tc.writes...)
		for _, s := range tc.steps {
			clk.Add(s.after)
			wantLimited(t, p, c, inv, s.pct)
		}
	}
}

// TestClassicPowerFactor sets 123 OutPFSet and follows its ramp and
// reversion in the rendered 103 VAr and PF.
func TestClassicPowerFactor(t *testing.T) {
	p, clk := sunnyPlant(t, nil)
	inv := p.Device("inv1")
	c := dial(t, inv)
	check := func(pf float64) {
		t.Helper()
		m := readModel(t, c, inv, 103)
		w, q, gotPF := num(t, m, "W"), num(t, m, "VAr"), num(t, m, "PF")
		want := w * pfRatio(pf)
		if math.Abs(q-want) > 2 || math.Abs(gotPF-100*pf) > 0.11 {
			t.Errorf("%s: W %v VAr %v PF %v; want VAr %.0f PF %v", p.Now().Format(time.TimeOnly), w, q, gotPF, want, 100*pf)
		}
	}
	check(1)
	writePoints(t, c, inv, 123, pv("OutPFSet", 0.9), pv("OutPFSet_RvrtTms", 30), pv("OutPFSet_Ena", 1))
	check(0.9)
	if s := inv.State(); s.ReactiveVAr <= 0 {
		t.Errorf("state VAr %v, want injected", s.ReactiveVAr)
	}
	clk.Add(29 * time.Second)
	check(0.9)
	clk.Add(2 * time.Second)
	check(1)
	if ena := num(t, readModel(t, c, inv, 123), "OutPFSet_Ena"); ena != 0 {
		t.Errorf("OutPFSet_Ena %v after the reversion", ena)
	}
	// Absorbing, ramped over 10 s: the reactive/active ratio moves linearly.
	writePoints(t, c, inv, 123, pv("OutPFSet", -0.95), pv("OutPFSet_RvrtTms", 0), pv("OutPFSet_RmpTms", 10), pv("OutPFSet_Ena", 1))
	clk.Add(5 * time.Second)
	m := readModel(t, c, inv, 103)
	if w, q := num(t, m, "W"), num(t, m, "VAr"); math.Abs(q-w*pfRatio(-0.95)/2) > 2 || q >= 0 {
		t.Errorf("half way: W %v VAr %v; want VAr %.0f", w, q, w*pfRatio(-0.95)/2)
	}
	clk.Add(5 * time.Second)
	check(-0.95)
	clk.Add(time.Hour)
	check(-0.95)
}

// TestDERControls writes each 704 control and follows its effect on the
// rendered 701 W or Var, its RvrtRem and its reversion values.
func TestDERControls(t *testing.T) {
	cases := []struct {
		name   string
		writes func(t *testing.T, c *mb.ModbusClient, d *Device)
		rem    string  // RvrtRem point
		rvrt   float64 // seconds
		during func(t *testing.T, p *Plant, c *mb.ModbusClient, d *Device)
		after  func(t *testing.T, p *Plant, c *mb.ModbusClient, d *Device)
	}{
		{
			name: "WMaxLimPct reverts to the stored reversion values",
			writes: func(t *testing.T, c *mb.ModbusClient, d *Device) {
				writePoints(t, c, d, 704, pv("WMaxLimPct", 25), pv("WMaxLimPctRvrt", 60), pv("WMaxLimPctEnaRvrt", 1),
					pv("WMaxLimPctRvrtTms", 40), pv("WMaxLimPctEna", 1))
			},
			rem: "WMaxLimPctRvrtRem", rvrt: 40,
			during: func(t *testing.T, p *Plant, c *mb.ModbusClient, d *Device) { wantLimited(t, p, c, d, 25) },
			after: func(t *testing.T, p *Plant, c *mb.ModbusClient, d *Device) {
				wantLimited(t, p, c, d, 60)
				m := readModel(t, c, d, 704)
				if num(t, m, "WMaxLimPct") != 60 || num(t, m, "WMaxLimPctEna") != 1 {
					t.Errorf("704 after reversion: WMaxLimPct %v Ena %v", num(t, m, "WMaxLimPct"), num(t, m, "WMaxLimPctEna"))
				}
			},
		},
		{
			name: "WSetPct limits like a limit and reverts",
			writes: func(t *testing.T, c *mb.ModbusClient, d *Device) {
				writePoints(t, c, d, 704, pv("WSetMod", 0), pv("WSetPct", 30), pv("WSetPctRvrt", 100), pv("WSetEnaRvrt", 0),
					pv("WSetRvrtTms", 20), pv("WSetEna", 1))
			},
			rem: "WSetRvrtRem", rvrt: 20,
			during: func(t *testing.T, p *Plant, c *mb.ModbusClient, d *Device) { wantLimited(t, p, c, d, 30) },
			after: func(t *testing.T, p *Plant, c *mb.ModbusClient, d *Device) {
				wantLimited(t, p, c, d, 100)
				if m := readModel(t, c, d, 704); num(t, m, "WSetEna") != 0 || num(t, m, "WSetPct") != 100 {
					t.Errorf("704 after reversion: WSetEna %v WSetPct %v", num(t, m, "WSetEna"), num(t, m, "WSetPct"))
				}
			},
		},
		{
			name: "WSet in watts, the lower of WSet and WMaxLimPct acts",
			writes: func(t *testing.T, c *mb.ModbusClient, d *Device) {
				writePoints(t, c, d, 704, pv("WMaxLimPct", 50), pv("WMaxLimPctEna", 1))
				writePoints(t, c, d, 704, pv("WSetMod", 1), pv("WSet", 2000), pv("WSetRvrt", 6000), pv("WSetEnaRvrt", 1),
					pv("WSetRvrtTms", 30), pv("WSetEna", 1))
			},
			rem: "WSetRvrtRem", rvrt: 30,
			during: func(t *testing.T, p *Plant, c *mb.ModbusClient, d *Device) { wantLimited(t, p, c, d, 25) },
			after: func(t *testing.T, p *Plant, c *mb.ModbusClient, d *Device) {
				wantLimited(t, p, c, d, 50) // WSet 6000 W = 75 %, above the 50 % limit
				if m := readModel(t, c, d, 704); num(t, m, "WSet") != 6000 || num(t, m, "WSetEna") != 1 {
					t.Errorf("704 after reversion: WSet %v WSetEna %v", num(t, m, "WSet"), num(t, m, "WSetEna"))
				}
			},
		},
		{
			name: "PFWInj sets the reactive power and reverts",
			writes: func(t *testing.T, c *mb.ModbusClient, d *Device) {
				writeIn(t, c, d, 704, "PFWInj.PF", 0.9)
				writeIn(t, c, d, 704, "PFWInj.Ext", 1) // under-excited: absorbs
				writeIn(t, c, d, 704, "PFWInjRvrt.PF", 0.98)
				writePoints(t, c, d, 704, pv("PFWInjEnaRvrt", 1), pv("PFWInjRvrtTms", 16), pv("PFWInjEna", 1))
			},
			rem: "PFWInjRvrtRem", rvrt: 16,
			during: func(t *testing.T, p *Plant, c *mb.ModbusClient, d *Device) { wantPF(t, p, c, d, -0.9) },
			after: func(t *testing.T, p *Plant, c *mb.ModbusClient, d *Device) {
				wantPF(t, p, c, d, 0.98) // the reversion group: PF 0.98, Ext 0 (over-excited)
				if got := readIn(t, c, d, 704, "PFWInj.PF"); got != 0.98 {
					t.Errorf("PFWInj.PF %v after reversion", got)
				}
			},
		},
		{
			name: "PFWAbs is stored and reverts (no effect while generating)",
			writes: func(t *testing.T, c *mb.ModbusClient, d *Device) {
				writeIn(t, c, d, 704, "PFWAbs.PF", 0.8)
				writeIn(t, c, d, 704, "PFWAbsRvrt.PF", 0.95)
				writePoints(t, c, d, 704, pv("PFWAbsEnaRvrt", 0), pv("PFWAbsRvrtTms", 10), pv("PFWAbsEna", 1))
			},
			rem: "PFWAbsRvrtRem", rvrt: 10,
			during: func(t *testing.T, p *Plant, c *mb.ModbusClient, d *Device) {
				wantPF(t, p, c, d, 1)
				if got := readIn(t, c, d, 704, "PFWAbs.PF"); got != 0.8 {
					t.Errorf("PFWAbs.PF %v", got)
				}
			},
			after: func(t *testing.T, p *Plant, c *mb.ModbusClient, d *Device) {
				if got, ena := readIn(t, c, d, 704, "PFWAbs.PF"), readIn(t, c, d, 704, "PFWAbsEna"); got != 0.95 || ena != 0 {
					t.Errorf("after reversion PFWAbs.PF %v Ena %v", got, ena)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, clk := sunnyPlant(t, nil)
			d := p.Device("inv2")
			c := dial(t, d)
			tc.writes(t, c, d)
			rem := func() float64 { return num(t, readModel(t, c, d, 704), tc.rem) }
			if got := rem(); got != tc.rvrt {
				t.Errorf("%s %v right after the write, want %v", tc.rem, got, tc.rvrt)
			}
			tc.during(t, p, c, d)
			clk.Add(secs(tc.rvrt / 2))
			if got := rem(); got != tc.rvrt/2 {
				t.Errorf("%s %v half way, want %v", tc.rem, got, tc.rvrt/2)
			}
			tc.during(t, p, c, d)
			clk.Add(secs(tc.rvrt/2) - time.Second)
			if got := rem(); got != 1 {
				t.Errorf("%s %v a second before, want 1", tc.rem, got)
			}
			tc.during(t, p, c, d)
			clk.Add(time.Second)
			if got := rem(); got != 0 {
				t.Errorf("%s %v at expiry, want 0", tc.rem, got)
			}
			tc.after(t, p, c, d)
			clk.Add(time.Hour)
			tc.after(t, p, c, d)
		})
	}
}

// wantPF checks a DER inverter's rendered 701 Var and PF.
func wantPF(t *testing.T, p *Plant, c *mb.ModbusClient, d *Device, pf float64) {
	t.Helper()
	m := readModel(t, c, d, 701)
	w, q, got := num(t, m, "W"), num(t, m, "Var"), num(t, m, "PF")
	if want := w * pfRatio(pf); math.Abs(q-want) > 2 || math.Abs(got-pf) > 0.0011 {
		t.Errorf("%s: W %v Var %v PF %v; want Var %.0f PF %v", p.Now().Format(time.TimeOnly), w, q, got, want, pf)
	}
}

// TestReversionPerControl checks that each classic control reverts on its
// own timer, and only it.
func TestReversionPerControl(t *testing.T) {
	p, clk := sunnyPlant(t, nil)
	inv := p.Device("inv1")
	c := dial(t, inv)
	writePoints(t, c, inv, 123, pv("WMaxLimPct", 40), pv("WMaxLimPct_RvrtTms", 10), pv("WMaxLim_Ena", 1))
	writePoints(t, c, inv, 123, pv("OutPFSet", 0.95), pv("OutPFSet_RvrtTms", 20), pv("OutPFSet_Ena", 1))
	// WinTms is accepted and ignored.
	writePoints(t, c, inv, 123, pv("WMaxLimPct_WinTms", 5), pv("OutPFSet_WinTms", 5), pv("Conn_WinTms", 5))
	steps := []struct {
		after     time.Duration
		limEna    float64
		pfEna     float64
		effective float64
	}{
		{9 * time.Second, 1, 1, 40},
		{time.Second, 0, 1, 100},
		{9 * time.Second, 0, 1, 100},
		{time.Second, 0, 0, 100},
	}
	for _, s := range steps {
		clk.Add(s.after)
		m := readModel(t, c, inv, 123)
		if num(t, m, "WMaxLim_Ena") != s.limEna || num(t, m, "OutPFSet_Ena") != s.pfEna {
			t.Errorf("%s: WMaxLim_Ena %v OutPFSet_Ena %v; want %v %v", p.Now().Format(time.TimeOnly),
				num(t, m, "WMaxLim_Ena"), num(t, m, "OutPFSet_Ena"), s.limEna, s.pfEna)
		}
		wantLimited(t, p, c, inv, s.effective)
	}
	// Conn with its reversion.
	writePoints(t, c, inv, 123, pv("Conn_RvrtTms", 5), pv("Conn", 0))
	if w := acW(t, c, inv); w != 0 || inv.State().Connected {
		t.Errorf("disconnected: W %v", w)
	}
	clk.Add(5 * time.Second)
	if w := acW(t, c, inv); w < 1000 || !inv.State().Connected || num(t, readModel(t, c, inv, 123), "Conn") != 1 {
		t.Errorf("reconnected after Conn_RvrtTms: W %v", w)
	}
}

// curveHeader is how a test enables a curve model with a reversion time.
type curveHeader struct {
	model uint16
	der   bool
}

var curveHeaders = []curveHeader{
	{126, false}, {129, false}, {130, false}, {132, false}, {134, false}, {135, false}, {136, false},
	{705, true}, {706, true}, {711, true},
}

// TestCurveReversion enables every curve model with a reversion time and
// watches the mode switch itself off when it expires, curves kept.
func TestCurveReversion(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		p, clk := sunnyPlant(t, func(c *Config) {
			for i := range c.Devices {
				c.Devices[i].IgnoreRevert = ignore && (c.Devices[i].ID == "inv1" || c.Devices[i].ID == "inv2")
			}
		})
		inv1, inv2 := p.Device("inv1"), p.Device("inv2")
		c1, c2 := dial(t, inv1), dial(t, inv2)
		dev := func(h curveHeader) (*Device, *mb.ModbusClient) {
			if h.der {
				return inv2, c2
			}
			return inv1, c1
		}
		for _, h := range curveHeaders {
			d, c := dev(h)
			if h.der {
				writePoints(t, c, d, h.model, pv("RvrtTms", 30), pv("Ena", 1))
			} else {
				writePoints(t, c, d, h.model, pv("ActCrv", 1), pv("RvrtTms", 30), pv("ModEna", 1))
			}
		}
		enabled := func(h curveHeader) float64 {
			d, c := dev(h)
			if h.der {
				return readIn(t, c, d, h.model, "Ena")
			}
			return readIn(t, c, d, h.model, "ModEna")
		}
		clk.Add(12 * time.Second)
		for _, h := range curveHeaders {
			if enabled(h) != 1 {
				t.Errorf("ignore %v: model %d disabled before its reversion", ignore, h.model)
			}
			if d, c := dev(h); h.der {
				want := 18.0
				if ignore {
					want = 30
				}
				if got := readIn(t, c, d, h.model, "RvrtRem"); got != want {
					t.Errorf("ignore %v: model %d RvrtRem %v, want %v", ignore, h.model, got, want)
				}
			}
		}
		clk.Add(18 * time.Second)
		for _, h := range curveHeaders {
			want := 0.0
			if ignore {
				want = 1
			}
			if got := enabled(h); got != want {
				t.Errorf("ignore %v: model %d enable %v after its reversion time, want %v", ignore, h.model, got, want)
			}
		}
	}
}

// TestCurvesStored writes curve points, headers and adopt requests of
// both generations and reads them back exactly.
func TestCurvesStored(t *testing.T) {
	p, _ := sunnyPlant(t, nil)
	inv1, inv2 := p.Device("inv1"), p.Device("inv2")
	c1, c2 := dial(t, inv1), dial(t, inv2)
	cases := []struct {
		d     *Device
		c     *mb.ModbusClient
		model uint16
		point string
		v     float64
	}{
		{inv1, c1, 126, "curve[2].V1", 93},
		{inv1, c1, 126, "curve[2].VAr1", 40},
		{inv1, c1, 126, "ActCrv", 2},
		{inv1, c1, 127, "WGra", 55},
		{inv1, c1, 127, "ModEna", 1},
		{inv1, c1, 129, "curve[1].Tms2", 0.75},
		{inv1, c1, 130, "curve[1].V3", 113},
		{inv1, c1, 132, "curve[1].W3", 45},
		{inv1, c1, 134, "curve[1].Hz2", 50.6},
		{inv1, c1, 135, "curve[1].Hz4", 49.2},
		{inv1, c1, 136, "curve[1].Tms1", 0.2},
		{inv2, c2, 705, "Crv[2].Pt[3].V", 104},
		{inv2, c2, 705, "Crv[2].Pt[3].Var", -20},
		{inv2, c2, 705, "RvrtCrv", 1},
		{inv2, c2, 706, "Crv[1].Pt[2].W", 80},
		{inv2, c2, 707, "Crv[1].MustTrip.Pt[2].V", 47},
		{inv2, c2, 708, "Crv[1].MayTrip.Pt[1].Tms", 0.3},
		{inv2, c2, 709, "Crv[1].MomCess.Pt[4].Hz", 47.2},
		{inv2, c2, 710, "Crv[1].MustTrip.Pt[3].Tms", 170},
		{inv2, c2, 711, "Ctl[1].KOf", 0.04},
		{inv2, c2, 711, "Ena", 1},
	}
	for _, tc := range cases {
		writeIn(t, tc.c, tc.d, tc.model, tc.point, tc.v)
	}
	for _, tc := range cases {
		if got := readIn(t, tc.c, tc.d, tc.model, tc.point); got != tc.v {
			t.Errorf("%d %s reads %v, want %v", tc.model, tc.point, got, tc.v)
		}
	}
	// Adopt requests: a stored curve completes, any other fails; 0 is no
	// request and keeps the result of the last one.
	for _, tc := range []struct {
		model     uint16
		req, rslt string
		v, want   float64
	}{
		{705, "AdptCrvReq", "AdptCrvRslt", 2, 1},
		{705, "AdptCrvReq", "AdptCrvRslt", 3, 2},
		{705, "AdptCrvReq", "AdptCrvRslt", 0, 2},
		{705, "AdptCrvReq", "AdptCrvRslt", 1, 1},
		{705, "AdptCrvReq", "AdptCrvRslt", 0, 1},
		{707, "AdptCrvReq", "AdptCrvRslt", 1, 1},
		{711, "AdptCtlReq", "AdptCtlRslt", 4, 2},
	} {
		writeIn(t, c2, inv2, tc.model, tc.req, tc.v)
		if r, got := readIn(t, c2, inv2, tc.model, tc.req), readIn(t, c2, inv2, tc.model, tc.rslt); r != tc.v || got != tc.want {
			t.Errorf("%d %s %v: reads %v, %s %v; want %v", tc.model, tc.req, tc.v, r, tc.rslt, got, tc.want)
		}
		if tc.model == 705 && tc.v == 2 {
			// Adopted: curve 2 is now curve 1, the curve in effect.
			if v, vr := readIn(t, c2, inv2, 705, "Crv[1].Pt[3].V"), readIn(t, c2, inv2, 705, "Crv[1].Pt[3].Var"); v != 104 || vr != -20 {
				t.Errorf("705 after adopting curve 2: curve 1 point 3 = (%v, %v), want (104, -20)", v, vr)
			}
		}
	}
}

// TestAdoptClearsRequest: a device that clears its adopt requests adopts
// the curve, answers COMPLETED and reads 0; writing 0 adopts nothing on
// either kind of device.
func TestAdoptClearsRequest(t *testing.T) {
	for _, clears := range []bool{false, true} {
		p, _ := sunnyPlant(t, func(c *Config) { c.Devices[1].AdoptClearsRequest = clears })
		inv2 := p.Device("inv2")
		c2 := dial(t, inv2)
		writeIn(t, c2, inv2, 705, "Crv[2].Pt[3].V", 104)
		writeIn(t, c2, inv2, 705, "AdptCrvReq", 2)
		want := 2.0
		if clears {
			want = 0
		}
		if r, res, v := readIn(t, c2, inv2, 705, "AdptCrvReq"), readIn(t, c2, inv2, 705, "AdptCrvRslt"), readIn(t, c2, inv2, 705, "Crv[1].Pt[3].V"); r != want || res != 1 || v != 104 {
			t.Errorf("clears %v: after adopting curve 2 AdptCrvReq %v, AdptCrvRslt %v, curve 1 point 3 V %v; want %v, 1, 104", clears, r, res, v, want)
		}
		// Curve 2 changes again; writing 0 must not adopt it.
		writeIn(t, c2, inv2, 705, "Crv[2].Pt[3].V", 105)
		writeIn(t, c2, inv2, 705, "AdptCrvReq", 0)
		if r, v := readIn(t, c2, inv2, 705, "AdptCrvReq"), readIn(t, c2, inv2, 705, "Crv[1].Pt[3].V"); r != 0 || v != 104 {
			t.Errorf("clears %v: after writing 0 AdptCrvReq %v, curve 1 point 3 V %v; want 0, 104", clears, r, v)
		}
		writeIn(t, c2, inv2, 711, "AdptCtlReq", 1)
		if r := readIn(t, c2, inv2, 711, "AdptCtlReq"); r != min(want, 1) {
			t.Errorf("clears %v: 711 AdptCtlReq reads %v after writing 1", clears, r)
		}
	}
}

// TestIgnoreRevert: the timeout is accepted and read back, RvrtRem stands
// still, nothing reverts.
func TestIgnoreRevert(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		p, clk := sunnyPlant(t, func(c *Config) {
			c.Devices[0].IgnoreRevert = ignore
			c.Devices[1].IgnoreRevert = ignore
		})
		inv1, inv2 := p.Device("inv1"), p.Device("inv2")
		c1, c2 := dial(t, inv1), dial(t, inv2)
		writePoints(t, c1, inv1, 123, pv("WMaxLimPct", 30), pv("WMaxLimPct_RvrtTms", 60), pv("WMaxLim_Ena", 1))
		writePoints(t, c1, inv1, 123, pv("OutPFSet", 0.9), pv("OutPFSet_RvrtTms", 60), pv("OutPFSet_Ena", 1))
		writePoints(t, c2, inv2, 704, pv("WMaxLimPct", 30), pv("WMaxLimPctRvrtTms", 60), pv("WMaxLimPctEna", 1))
		writePoints(t, c2, inv2, 704, pv("WSetPct", 20), pv("WSetRvrtTms", 60), pv("WSetEna", 1))
		writePoints(t, c2, inv2, 704, pv("PFWInjRvrtTms", 60), pv("PFWInjEna", 1))
		writePoints(t, c1, inv1, 123, pv("Conn_RvrtTms", 60), pv("Conn", 0))
		rems := []string{"WMaxLimPctRvrtRem", "WSetRvrtRem", "PFWInjRvrtRem"}
		var first []float64
		for _, r := range rems {
			first = append(first, num(t, readModel(t, c2, inv2, 704), r))
		}
		clk.Add(61 * time.Second)
		m123, m704 := readModel(t, c1, inv1, 123), readModel(t, c2, inv2, 704)
		if got := num(t, m123, "WMaxLimPct_RvrtTms"); got != 60 {
			t.Errorf("ignore %v: WMaxLimPct_RvrtTms reads %v", ignore, got)
		}
		for i, r := range rems {
			second := num(t, m704, r)
			switch {
			case ignore && (first[i] != 60 || second != 60):
				t.Errorf("ignore: %s %v then %v, want 60 twice", r, first[i], second)
			case !ignore && (first[i] != 60 || second != 0):
				t.Errorf("%s %v then %v, want 60 then 0", r, first[i], second)
			}
		}
		on := 0.0
		if ignore {
			on = 1
		}
		if num(t, m123, "WMaxLim_Ena") != on || num(t, m123, "OutPFSet_Ena") != on || num(t, m123, "Conn") != 1-on ||
			num(t, m704, "WMaxLimPctEna") != on || num(t, m704, "WSetEna") != on || num(t, m704, "PFWInjEna") != on {
			t.Errorf("ignore %v: after 61 s 123 %v %v Conn %v, 704 %v %v %v", ignore, num(t, m123, "WMaxLim_Ena"),
				num(t, m123, "OutPFSet_Ena"), num(t, m123, "Conn"), num(t, m704, "WMaxLimPctEna"), num(t, m704, "WSetEna"), num(t, m704, "PFWInjEna"))
		}
		if ignore {
			wantLimited(t, p, c2, inv2, 20)
		} else {
			wantLimited(t, p, c2, inv2, 100)
		}
	}
}

// TestNeedsEnableToggle: a new setpoint written while enabled changes the
// register, not the limit, until the enable goes 0 then 1.
func TestNeedsEnableToggle(t *testing.T) {
	type gen struct {
		id, ena string
		model   uint16
	}
	for _, g := range []gen{{"inv1", "WMaxLim_Ena", 123}, {"inv2", "WMaxLimPctEna", 704}} {
		for _, toggle := range []bool{false, true} {
			p, _ := sunnyPlant(t, func(c *Config) {
				for i := range c.Devices {
					c.Devices[i].NeedsEnableToggle = toggle && c.Devices[i].ID == g.id
				}
			})
			d := p.Device(g.id)
			c := dial(t, d)
			// Written while disabled, then enabled: a rising edge, applies.
			writePoints(t, c, d, g.model, pv("WMaxLimPct", 50))
			writePoints(t, c, d, g.model, pv(g.ena, 1))
			wantLimited(t, p, c, d, 50)
			// A new value alone while enabled.
			writePoints(t, c, d, g.model, pv("WMaxLimPct", 30))
			if got := num(t, readModel(t, c, d, g.model), "WMaxLimPct"); got != 30 {
				t.Errorf("%s toggle %v: register reads %v", g.id, toggle, got)
			}
			if toggle {
				wantLimited(t, p, c, d, 50)
			} else {
				wantLimited(t, p, c, d, 30)
			}
			// Enable written 1 again (no edge): still no change.
			writePoints(t, c, d, g.model, pv(g.ena, 1))
			if toggle {
				wantLimited(t, p, c, d, 50)
			}
			writePoints(t, c, d, g.model, pv(g.ena, 0))
			wantLimited(t, p, c, d, 100)
			writePoints(t, c, d, g.model, pv(g.ena, 1))
			wantLimited(t, p, c, d, 30)
		}
	}
}

// TestLimitMovesTheMeter: a limit shows in the meter's grid power, as do
// the load and cloud steps.
func TestLimitMovesTheMeter(t *testing.T) {
	p, _ := sunnyPlant(t, nil)
	inv, met := p.Device("inv1"), p.Device("meter")
	ci, cm := dial(t, inv), dial(t, met)
	gridW := func() float64 {
		t.Helper()
		w := num(t, readModel(t, cm, met, 203), "W")
		if b := p.Balance(); math.Abs(w-b.GridW) > 1 {
			t.Errorf("meter W %v, balance %+v", w, b)
		}
		return w
	}
	before := gridW()
	pvBefore := p.Balance().PVW
	writePoints(t, ci, inv, 123, pv("WMaxLimPct", 10), pv("WMaxLim_Ena", 1))
	after := gridW()
	b := p.Balance()
	if drop := pvBefore - b.PVW; drop < 4000 || after-before < 0.5*drop {
		t.Errorf("limit to 10 %%: PV %v -> %v W, grid %v -> %v W", pvBefore, b.PVW, before, after)
	}
	load := b.LoadW
	p.SetLoadOffset(2500)
	if b2 := p.Balance(); math.Abs(b2.LoadW-load-2500) > 1 {
		t.Errorf("load step: load %v -> %v", load, b2.LoadW)
	}
	if g := gridW(); g <= after {
		t.Errorf("load step: grid %v -> %v W", after, g)
	}
	p.SetLoadOffset(-1e6)
	if b2 := p.Balance(); b2.LoadW != 0 {
		t.Errorf("a negative offset beyond the load: load %v", b2.LoadW)
	}
	p.SetLoadOffset(0)
	ghi := inv.State().IrradianceWm2
	avail := p.Device("inv2").State().AvailableW
	p.SetCloudFactor(0.5)
	if s := p.Device("inv2").State(); math.Abs(s.IrradianceWm2-ghi/2) > 0.01 || s.AvailableW > 0.6*avail {
		t.Errorf("cloud 0.5: irradiance %v -> %v, available %v -> %v", ghi, s.IrradianceWm2, avail, s.AvailableW)
	}
	wx := p.Device("wx")
	if got := num(t, readModel(t, dial(t, wx), wx, 308), "GHI"); math.Abs(got-ghi/2) > 1 {
		t.Errorf("sensor GHI %v, want %v", got, ghi/2)
	}
	p.SetCloudFactor(7)
	if s := inv.State(); math.Abs(s.IrradianceWm2-ghi) > 0.01 {
		t.Errorf("cloud factor 7 (clamped to 1): irradiance %v, want %v", s.IrradianceWm2, ghi)
	}
}

// TestRevertWhileOffline: a device taken offline with FaultOffline keeps
// its clock; its limit reverts while nobody can reach it.
func TestRevertWhileOffline(t *testing.T) {
	p, clk := sunnyPlant(t, nil)
	inv := p.Device("inv2")
	c := dial(t, inv)
	writePoints(t, c, inv, 704, pv("WMaxLimPct", 20), pv("WMaxLimPctRvrt", 70), pv("WMaxLimPctEnaRvrt", 1),
		pv("WMaxLimPctRvrtTms", 30), pv("WMaxLimPctEna", 1))
	inv.SetFault(Fault{Kind: FaultOffline})
	clk.Add(31 * time.Second)
	if got, _ := p.EffectiveLimitPct("inv2"); got != 70 {
		t.Errorf("offline: limit %v after its reversion, want the stored 70", got)
	}
	inv.SetFault(Fault{})
	wantLimited(t, p, dial(t, inv), inv, 70)
}
