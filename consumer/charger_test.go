package consumer

import (
	"testing"
	"time"

	"plantd/plant"
)

// car is an Auto charger, 6..16 A on 3 phases (690 W per ampere), off,
// with evcc's delays, deciding at t0 plus at.
func car(d *delays, at time.Duration) slot {
	return slot{auto: true, amps: true, minA: 6, maxA: 16, wPerA: 690, ratedW: 11040, onW: 4140, offW: 4140,
		plugged: true, mayOn: true, mayOff: true, delays: d, enableDelay: time.Minute, disableDelay: 3 * time.Minute,
		now: t0.Add(at)}
}

var t0 = time.Date(2026, 6, 21, 12, 0, 0, 0, time.UTC)

// charging is car charging at a amperes, drawing them.
func charging(s slot, a float64) slot {
	s.on, s.curA, s.drawW = true, a, a*s.wPerA
	return s
}

// TestDecideCharger walks a charger through the modes and delays, one
// decision after the other on one set of timers.
func TestDecideCharger(t *testing.T) {
	type step struct {
		name   string
		at     time.Duration
		slot   func(*delays, time.Duration) slot
		export float64 // the meter's export with the charger as it is
		gridOK bool
		want   bool
		wantA  float64
		reason string
	}
	off := func(d *delays, at time.Duration) slot { return car(d, at) }
	at := func(a float64) func(*delays, time.Duration) slot {
		return func(d *delays, t time.Duration) slot { return charging(car(d, t), a) }
	}
	minPV := func(base func(*delays, time.Duration) slot) func(*delays, time.Duration) slot {
		return func(d *delays, t time.Duration) slot { s := base(d, t); s.minPV = true; return s }
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"PV: enable delay, follow, disable delay", []step{
			{"5 kW surplus: waits its enable delay", 0, off, 5000, true, false, 0, plant.ReasonEnableDelay},
			{"still waiting at 59 s", 59 * time.Second, off, 5000, true, false, 0, plant.ReasonEnableDelay},
			{"starts at 1 min with 7 A (5000/690)", time.Minute, off, 5000, true, true, 7, plant.ReasonSurplus},
			{"more sun: 10.5 kW seen → 15 A", 70 * time.Second, at(7), 10500 - 7*690, true, true, 15, plant.ReasonSurplus},
			{"capped at 16 A", 80 * time.Second, at(15), 20000, true, true, 16, plant.ReasonSurplus},
			{"a cloud: 3 kW seen → minimum during the disable delay", 90 * time.Second, at(16), 3000 - 16*690, true, true, 6, plant.ReasonDisableDelay},
			{"back: the delay resets", 100 * time.Second, at(6), 1000, true, true, 7, plant.ReasonSurplus},
			{"gone again", 110 * time.Second, at(7), -3000, true, true, 6, plant.ReasonDisableDelay},
			{"still within 3 min", 110*time.Second + 179*time.Second, at(6), -3000, true, true, 6, plant.ReasonDisableDelay},
			{"stops after 3 min", 110*time.Second + 3*time.Minute, at(6), -3000, true, false, 0, plant.ReasonNoSurplus},
		}},
		{"MinPV: 6 A always, more with surplus", []step{
			{"no surplus: 6 A at once", 0, minPV(off), -500, true, true, 6, plant.ReasonMinPV},
			{"surplus on top: 6 A + 2760 W = 10 A", 10 * time.Second, minPV(at(6)), 2760, true, true, 10, plant.ReasonSurplus},
			{"no meter: still 6 A", 20 * time.Second, minPV(at(10)), 0, false, true, 6, plant.ReasonMinPV},
		}},
		{"no car, no meter", []step{
			{"no car plugged in: off", 0, func(d *delays, t time.Duration) slot { s := car(d, t); s.plugged = false; return s }, 20000, true, false, 0, plant.ReasonNoVehicle},
			{"no meter: off", time.Hour, at(8), 20000, false, false, 0, plant.ReasonNoMeter},
		}},
		{"a guard holds it", []step{
			{"min on time keeps the current", 0, func(d *delays, t time.Duration) slot {
				s := charging(car(d, t), 8)
				s.mayOff, s.whyNot = false, plant.ReasonMinOnTime
				d.short = t0.Add(-time.Hour)
				return s
			}, -10000, true, true, 8, plant.ReasonMinOnTime},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d delays
			for _, st := range tc.steps {
				s := []slot{st.slot(&d, st.at)}
				decide(s, st.export, 0, st.gridOK, true)
				if s[0].want != st.want || s[0].want && s[0].wantA != st.wantA || s[0].reason != st.reason {
					t.Fatalf("%s: want %v %v A (%s), got %v %v A (%s)", st.name, st.want, st.wantA, st.reason, s[0].want, s[0].wantA, s[0].reason)
				}
			}
		})
	}
}

// TestDecideChargerShares: a charger after a heater gets what the heater
// leaves; the heater after a charger gets what the charger does not take.
func TestDecideChargerShares(t *testing.T) {
	var d delays
	d.enough = t0.Add(-time.Hour) // its enable delay has passed
	s := []slot{auto(3000), car(&d, 0)}
	decide(s, 9000, 0, true, true)
	if !s[0].want || !s[1].want || s[1].wantA != 8 { // 9000 − 3000 = 6000 W = 8.7 A
		t.Fatalf("heater %v, charger %v at %v A: want both, the charger at 8 A", s[0].want, s[1].want, s[1].wantA)
	}
	s = []slot{charging(car(&d, 0), 16), auto(3000)}
	decide(s, 2000, 0, true, true) // 16 A = 11040 W + 2000 W: the charger takes 16 A, 2000 W are left
	if !s[0].want || s[0].wantA != 16 || s[1].want {
		t.Fatalf("charger %v at %v A, heater %v: want the charger at 16 A, the heater off", s[0].want, s[0].wantA, s[1].want)
	}
}

// TestDimCharger: a dimmed charger slows down to what fits before it
// stops.
func TestDimCharger(t *testing.T) {
	var d delays
	s := charging(car(&d, 0), 16)
	s.ctl, s.want, s.wantA = true, true, 16
	sl := []slot{s}
	dim(sl, 4200)
	if !sl[0].want || sl[0].wantA != 6 || sl[0].reason != plant.ReasonDimmed { // 4200/690 = 6.08
		t.Fatalf("dimmed to 4.2 kW: %v at %v A (%s), want 6 A (Dimmed)", sl[0].want, sl[0].wantA, sl[0].reason)
	}
	sl[0].wantA, sl[0].reason = 16, ""
	dim(sl, 3000)
	if sl[0].want {
		t.Fatalf("dimmed to 3 kW: still on at %v A, want off (6 A do not fit)", sl[0].wantA)
	}

	// Two 11 kW heat pumps before it in priority: taken off from the
	// last, the charger finds no room before they go; given back, it
	// comes back at the 6 A that fit (not 0 W under a 4.2 kW limit).
	hp := slot{on: true, want: true, ctl: true, sg: true, ratedW: 11000, drawW: 11000, plugged: true}
	s.wantA, s.reason = 16, ""
	sl = []slot{hp, hp, s}
	sum := dim(sl, 4200)
	if sl[0].want || sl[1].want || !sl[2].want || sl[2].wantA != 6 || sum != 6*690 {
		t.Fatalf("two heat pumps and a charger dimmed to 4.2 kW: %v, %v, charger %v at %v A (sum %v W); want the pumps off, the charger at 6 A",
			sl[0].want, sl[1].want, sl[2].want, sl[2].wantA, sum)
	}
}

// BenchmarkDecide50And10 is one site decision over 50 switches and 10
// chargers (the target: < 1 ms, no allocation), the surplus
// wobbling so that the chargers' currents change every cycle.
func BenchmarkDecide50And10(b *testing.B) {
	ds := make([]delays, 10)
	base := make([]slot, 0, 60)
	for range 50 {
		base = append(base, auto(1000))
	}
	for i := range ds {
		ds[i].enough = t0.Add(-time.Hour)
		base = append(base, charging(car(&ds[i], 0), 10))
	}
	slots := make([]slot, len(base))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		copy(slots, base)
		decide(slots, 60000+float64(i%7)*700, 0, true, true)
	}
}
