package consumer

import (
	"math"
	"testing"
	"time"

	"plantd/plant"
)

// auto is an Auto consumer of rated power w, off, whose guard allows.
func auto(w float64) slot {
	return slot{auto: true, ratedW: w, drawW: w, onW: w, offW: 0.9 * w, mayOn: true, mayOff: true}
}

func running(s slot) slot { s.on = true; return s }

func TestDecide(t *testing.T) {
	held := func(s slot, why string) slot { s.mayOn, s.mayOff, s.whyNot = false, false, why; return s }
	tests := []struct {
		name              string
		slots             []slot
		export, curtailed float64
		gridOK, probe     bool
		want              []bool
		reasons           []string
		probed            bool
	}{
		{"surplus switches on in priority order", []slot{auto(3000), auto(2000), auto(1000)}, 4500, 0, true, true,
			[]bool{true, false, true}, []string{plant.ReasonSurplus, plant.ReasonNoSurplus, plant.ReasonSurplus}, false},
		{"no surplus", []slot{auto(1000)}, 500, 0, true, true, []bool{false}, []string{plant.ReasonNoSurplus}, false},
		{"importing", []slot{auto(1000)}, -200, 0, true, true, []bool{false}, []string{plant.ReasonNoSurplus}, false},
		// A running 3 kW heater with 200 W export sees 3200 W: it stays on.
		{"own draw counts", []slot{running(auto(3000))}, 200, 0, true, true, []bool{true}, []string{plant.ReasonSurplus}, false},
		// 3 kW running, importing 400 W: it sees 2600 W, below 2700: off.
		{"hysteresis off", []slot{running(auto(3000))}, -400, 0, true, true, []bool{false}, []string{plant.ReasonNoSurplus}, false},
		// ... importing 250 W: 2750 W ≥ 2700: stays on.
		{"hysteresis holds", []slot{running(auto(3000))}, -250, 0, true, true, []bool{true}, []string{plant.ReasonSurplus}, false},
		{"min on time holds", []slot{held(running(auto(3000)), plant.ReasonMinOnTime)}, -2000, 0, true, true,
			[]bool{true}, []string{plant.ReasonMinOnTime}, false},
		{"min off time holds", []slot{held(auto(1000), plant.ReasonMinOffTime)}, 5000, 0, true, true,
			[]bool{false}, []string{plant.ReasonMinOffTime}, false},
		// A higher-priority consumer that stays on by its guard still
		// takes its share.
		{"held consumer takes its share", []slot{held(running(auto(3000)), plant.ReasonMinOnTime), auto(1000)}, -500, 0, true, true,
			[]bool{true, false}, []string{plant.ReasonMinOnTime, plant.ReasonNoSurplus}, false},
		{"no meter switches off", []slot{running(auto(1000))}, 5000, 0, false, true, []bool{false}, []string{plant.ReasonNoMeter}, false},
		{"curtailed PV, one probe", []slot{auto(3000), auto(2000)}, 0, 10000, true, true,
			[]bool{true, false}, []string{plant.ReasonSurplus, plant.ReasonProbing}, true},
		{"curtailed PV, probe used", []slot{auto(3000)}, 0, 10000, true, false, []bool{false}, []string{plant.ReasonProbing}, false},
		// Export carries the first; curtailment the second (probe).
		{"export then probe", []slot{auto(1000), auto(2000)}, 1200, 5000, true, true,
			[]bool{true, true}, []string{plant.ReasonSurplus, plant.ReasonSurplus}, true},
		{"manual slots are skipped", []slot{{want: true, reason: plant.ReasonManual}, auto(1000)}, 1500, 0, true, true,
			[]bool{true, true}, []string{plant.ReasonManual, plant.ReasonSurplus}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			probed := decide(tt.slots, tt.export, tt.curtailed, tt.gridOK, tt.probe)
			for i, s := range tt.slots {
				if s.want != tt.want[i] || s.reason != tt.reasons[i] {
					t.Errorf("slot %d: want=%v reason=%s, expected %v %s", i, s.want, s.reason, tt.want[i], tt.reasons[i])
				}
			}
			if probed != tt.probed {
				t.Errorf("probed = %v, want %v", probed, tt.probed)
			}
		})
	}
}

func TestGuard(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	g := newGuard(10*time.Minute, 5*time.Minute, 3)
	if ok, _ := g.allows(false, t0); !ok {
		t.Fatal("a fresh guard holds")
	}
	steps := []struct {
		at      time.Duration
		on      bool // the output before the switch asked
		ok      bool
		why     string
		switch_ bool
	}{
		{0, false, true, "", true},                                   // on at 0
		{9 * time.Minute, true, false, plant.ReasonMinOnTime, false}, // min on 10m
		{10 * time.Minute, true, true, "", true},                     // off at 10m
		{14 * time.Minute, false, false, plant.ReasonMinOffTime, false},
		{15 * time.Minute, false, true, "", true}, // on at 15m: 3 in the hour
		{30 * time.Minute, true, false, plant.ReasonMaxSwitches, false},
		{60 * time.Minute, true, true, "", true}, // the first left the hour
	}
	for _, s := range steps {
		now := t0.Add(s.at)
		ok, why := g.allows(s.on, now)
		if ok != s.ok || why != s.why {
			t.Fatalf("at %v: allows = %v %q, want %v %q", s.at, ok, why, s.ok, s.why)
		}
		if s.switch_ {
			g.switched(now)
		}
	}
	if n := g.lastHour(t0.Add(61 * time.Minute)); n != 3 {
		t.Errorf("switches in the last hour = %d, want 3", n)
	}
}

// BenchmarkDecide50: the surplus decision for 50 consumers (target < 1 ms
// per cycle, no allocation).
func BenchmarkDecide50(b *testing.B) {
	slots := make([]slot, 50)
	b.ReportAllocs()
	for b.Loop() {
		for i := range slots {
			slots[i] = auto(float64(500 + 50*i))
			slots[i].on = i%3 == 0
		}
		decide(slots, 12000, 3000, true, true)
	}
}

func TestMinPower14a(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want float64
	}{
		{0, 4200}, {1, 4200}, {2, 4200 + 0.8*4200}, {3, 4200 + 2*0.75*4200}, {8, 4200 + 7*0.5*4200},
		{9, 4200 + 8*0.45*4200}, {20, 4200 + 19*0.45*4200},
	} {
		if got := MinPower14a(tt.n); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("MinPower14a(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
}

// TestDim: §14a dimming keeps the controllable consumers' counted draw
// within the limit, switching off from the last in priority order; an
// SG-Ready pump in normal operation counts its rated power and is locked.
func TestDim(t *testing.T) {
	// ctl marks a slot controllable, sg an SG-Ready pump; want: the
	// decision before dimming.
	ctl := func(s slot) slot { s.ctl = true; return s }
	sg := func(s slot) slot { s.sg = true; return s }
	want := func(s slot, on bool) slot {
		s.want, s.reason = on, plant.ReasonManual
		return s
	}
	heater, pump, plug := auto(6000), auto(3000), auto(1200)
	const pmin2 = 7560
	tests := []struct {
		name   string
		slots  []slot
		limit  float64
		want   []bool
		dimmed []bool
		leftW  float64
	}{
		{"heater 6 kW and pump 3 kW forced: the pump, last, locked", []slot{want(ctl(heater), true), want(ctl(sg(pump)), true)}, pmin2,
			[]bool{true, false}, []bool{false, true}, 6000},
		{"pump first in priority: the heater off", []slot{want(ctl(sg(pump)), true), want(ctl(heater), true)}, pmin2,
			[]bool{true, false}, []bool{false, true}, 3000},
		{"within the limit: nothing", []slot{want(ctl(heater), true), want(ctl(plug), true)}, pmin2,
			[]bool{true, true}, []bool{false, false}, 7200},
		{"a pump in normal operation counts its rating: locked", []slot{want(ctl(heater), true), want(ctl(sg(pump)), false)}, pmin2,
			[]bool{true, false}, []bool{false, true}, 6000},
		{"a heater that is off counts nothing", []slot{want(ctl(heater), false), want(ctl(sg(pump)), true)}, pmin2,
			[]bool{false, true}, []bool{false, false}, 3000},
		{"not controllable: not counted, not switched", []slot{want(heater, true), want(ctl(sg(pump)), true)}, 4200,
			[]bool{true, true}, []bool{false, false}, 3000},
		{"a consumer switched on a moment ago counts its rating, not the 0 W read", []slot{want(ctl(heater), true), func() slot {
			s := want(ctl(sg(pump)), true)
			s.on, s.starting, s.drawW = true, true, 0
			return s
		}()}, pmin2, []bool{true, false}, []bool{false, true}, 6000},
		{"a measured draw counts as measured", []slot{want(ctl(heater), true), func() slot { s := want(ctl(sg(pump)), true); s.on, s.drawW = true, 1500; return s }()}, pmin2,
			[]bool{true, true}, []bool{false, false}, 7500},
		{"one unit at 4.2 kW: the heater off, the pump, which fits, runs", []slot{want(ctl(heater), true), want(ctl(sg(pump)), true)}, 4200,
			[]bool{false, true}, []bool{true, false}, 3000},
		{"a pump in normal operation that fits stays in it", []slot{want(ctl(heater), true), want(ctl(sg(pump)), false)}, 4200,
			[]bool{false, false}, []bool{true, false}, 3000},
		{"nothing fits: all off", []slot{want(ctl(heater), true), want(ctl(auto(5000)), true)}, 4200,
			[]bool{false, false}, []bool{true, true}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			left := dim(tt.slots, tt.limit)
			for i, s := range tt.slots {
				if s.want != tt.want[i] || (s.reason == plant.ReasonDimmed) != tt.dimmed[i] {
					t.Errorf("slot %d: want %v reason %s; want %v, dimmed %v", i, s.want, s.reason, tt.want[i], tt.dimmed[i])
				}
			}
			if left != tt.leftW {
				t.Errorf("left %v W, want %v", left, tt.leftW)
			}
		})
	}
}

// TestExportOf: the export a decision starts from, from the plant's
// balance (W; grid > 0 import, battery powers ≥ 0).
func TestExportOf(t *testing.T) {
	bat := func(gridW, chaW, disW, soc float64) plant.Surplus {
		return plant.Surplus{GridW: gridW, GridOK: true, BatteryOK: true, BatteryChargeW: chaW, BatteryDischargeW: disW,
			BatterySoCPct: soc, BatterySoCOK: true}
	}
	noSoC := bat(0, 2000, 0, 0)
	noSoC.BatterySoCOK = false
	prio50 := Battery{PrioritySoC: 50}
	buf := Battery{PrioritySoC: 20, BufferSoC: 60}
	tests := []struct {
		name string
		s    plant.Surplus
		b    Battery
		want float64
	}{
		{"no battery: the meter", plant.Surplus{GridW: -1500, GridOK: true}, Battery{}, 1500},
		{"no battery, importing", plant.Surplus{GridW: 800, GridOK: true}, Battery{}, -800},
		// The demo's blind spot: the meter at 0, the battery giving 2 kW.
		{"discharge is never surplus", bat(0, 0, 2000, 74), Battery{}, -2000},
		{"discharge beside export", bat(-300, 0, 1000, 74), Battery{}, -700},
		{"charging at the default priority is surplus", bat(0, 3000, 0, 40), Battery{}, 3000},
		{"charging above priority is surplus", bat(-500, 3000, 0, 60), prio50, 3500},
		{"charging at priority is surplus", bat(0, 3000, 0, 50), prio50, 3000},
		{"charging below priority is not", bat(-500, 3000, 0, 49.9), prio50, 500},
		{"charging without a SoC is not", noSoC, Battery{}, 0},
		// Above bufferSoc a running consumer may keep drawing from it.
		{"discharge above buffer", bat(0, 0, 2000, 61), buf, 0},
		{"discharge at buffer", bat(0, 0, 2000, 60), buf, -2000},
		{"discharge, buffer off", bat(0, 0, 2000, 99), Battery{PrioritySoC: 20}, -2000},
	}
	for _, tt := range tests {
		if got := exportOf(tt.s, tt.b); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: %.0f W, want %.0f", tt.name, got, tt.want)
		}
	}
}

// TestDecideOnBattery: decisions on what exportOf gives. A 3 kW heater
// running with the meter at 0 while the battery gives 1.5 kW sees 1.5 kW
// (3000 − 1500) and goes off (below 2700); with the battery charging
// 1 kW above its priority it sees 4 kW and stays; the heater off, a
// 4 kW battery charge carries it (4000 ≥ 3000), a 2 kW one does not.
// With bufferSoc 60 at 70 %, the running heater keeps drawing 1.5 kW from
// the battery (it sees its own 3 kW), one that is off does not start on
// the battery; at 60 % the running one goes off.
func TestDecideOnBattery(t *testing.T) {
	buf := Battery{PrioritySoC: 20, BufferSoC: 60}
	dis := func(soc float64) plant.Surplus {
		return plant.Surplus{GridOK: true, BatteryOK: true, BatteryDischargeW: 1500, BatterySoCPct: soc, BatterySoCOK: true}
	}
	tests := []struct {
		name   string
		s      slot
		sur    plant.Surplus
		bat    Battery
		want   bool
		reason string
	}{
		{"running, above bufferSoc", running(auto(3000)), dis(70), buf, true, plant.ReasonSurplus},
		{"off, above bufferSoc", auto(3000), dis(70), buf, false, plant.ReasonNoSurplus},
		{"running, at bufferSoc", running(auto(3000)), dis(60), buf, false, plant.ReasonNoSurplus},
		{"running, battery discharging", running(auto(3000)), plant.Surplus{GridOK: true, BatteryOK: true, BatteryDischargeW: 1500, BatterySoCPct: 74, BatterySoCOK: true}, Battery{}, false, plant.ReasonNoSurplus},
		{"running, battery charging", running(auto(3000)), plant.Surplus{GridOK: true, BatteryOK: true, BatteryChargeW: 1000, BatterySoCPct: 74, BatterySoCOK: true}, Battery{}, true, plant.ReasonSurplus},
		{"off, battery charging 4 kW", auto(3000), plant.Surplus{GridOK: true, BatteryOK: true, BatteryChargeW: 4000, BatterySoCPct: 74, BatterySoCOK: true}, Battery{}, true, plant.ReasonSurplus},
		{"off, battery charging 2 kW", auto(3000), plant.Surplus{GridOK: true, BatteryOK: true, BatteryChargeW: 2000, BatterySoCPct: 74, BatterySoCOK: true}, Battery{}, false, plant.ReasonNoSurplus},
	}
	for _, tt := range tests {
		slots := []slot{tt.s}
		decide(slots, exportOf(tt.sur, tt.bat), 0, true, true)
		if slots[0].want != tt.want || slots[0].reason != tt.reason {
			t.Errorf("%s: want=%v %s, expected %v %s", tt.name, slots[0].want, slots[0].reason, tt.want, tt.reason)
		}
	}
}
