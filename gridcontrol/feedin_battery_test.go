package gridcontrol_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"plantd/gridcontrol"
	"plantd/plant"
)

// TestFeedInLimitBattery: FeedInLimit 0 % on the demo plant with its
// battery (10 kWh / 5 kW at 50 %, self-consumption) at a summer noon
// (about 16 kW of PV to be had). Once the loop holds PV at the house's
// load and the battery's charging (about 6 kW), the house's load rises by
// 8 kW, more than the battery charges with: the battery discharges about
// 3 kW with PV curtailed and the meter at 0 (the demo's freeze, where the
// loop, reading the meter alone, kept PV where it was). The loop must
// raise PV until the battery no longer discharges and charges at 4.5 kW
// or more (its rating is 5 kW), while the export stays within 2 % of
// nominal of the limit.
func TestFeedInLimitBattery(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{stepped: true})
	const nominal = 18000.0
	tol := 0.02 * nominal
	start, _ := r.window(time.Second, 0)
	r.mustSubmit(body(limitCmd("FeedInLimit", start, start.Add(10*time.Minute), 0)))
	r.stepTo(start)
	r.await("the loop holding PV at the house and the battery's charging", 30*time.Second, func() bool {
		b := r.sim.Balance()
		return b.BatteryW < -4500 && -b.GridW < tol
	})
	before := r.sim.Balance()
	r.sim.SetLoadOffset(8000)
	var trace []string
	worst, discharged := 0.0, 0.0
	r.await("PV carrying the house and the battery charging at 4.5 kW or more again", 30*time.Second, func() bool {
		b := r.sim.Balance()
		trace = append(trace, fmt.Sprintf("%.0f/%+.0f/%.0f", b.PVW, b.BatteryW, b.GridW))
		worst, discharged = max(worst, -b.GridW), max(discharged, b.BatteryW)
		return b.BatteryW < -4500
	})
	after := r.sim.Balance()
	t.Logf("before the step: pv %.0f W, battery %+.0f W (+ discharging), grid %.0f W; after: pv %.0f W, battery %+.0f W, grid %.0f W, %d samples 0.2 s apart; largest discharge %.0f W, largest export %.0f W",
		before.PVW, before.BatteryW, before.GridW, after.PVW, after.BatteryW, after.GridW, len(trace), discharged, worst)
	t.Logf("pv/battery/grid W every 0.2 s: %s", strings.Join(trace, " "))
	if discharged < 1000 {
		t.Errorf("the battery discharged at most %.0f W after the step: the test did not make it cover the house", discharged)
	}
	if after.PVW < after.LoadW+4500 {
		t.Errorf("PV %.0f W, want the house's %.0f W and the battery's 4.5 kW or more", after.PVW, after.LoadW)
	}
	if worst > tol {
		t.Errorf("export %.0f W under a 0 %% FeedInLimit, want at most %.0f W", worst, tol)
	}
}

// surplusLog is an energy manager that keeps what each cycle tells it.
type surplusLog struct {
	mu   sync.Mutex
	last plant.Surplus
	n    int
}

func (l *surplusLog) Absorb(_ context.Context, _ string, s plant.Surplus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last, l.n = s, l.n+1
}

func (l *surplusLog) get() (plant.Surplus, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last, l.n
}

// TestSurplusBattery: what each cycle tells the energy manager on the
// demo plant at a summer noon: the battery's charging (about 5 kW, its
// rating, at 50 %) and SoC beside the meter's power; under a 30 %
// opModMaxLimW no curtailed PV (a cap holds it back whatever the plant
// consumes, so it is no surplus a consumer could try), where before the
// rating above the output (12.6 kW) was offered.
func TestSurplusBattery(t *testing.T) {
	t.Parallel()
	sl := &surplusLog{}
	r := newRig(t, rigOpts{stepped: true, cfg: gridcontrol.Config{Absorber: sl}})
	r.await("the battery charging in the energy manager's input", 10*time.Second, func() bool {
		s, _ := sl.get()
		return s.BatteryOK && s.BatterySoCOK && s.BatteryChargeW > 4000
	})
	s, _ := sl.get()
	t.Logf("no limit: grid %.0f W, battery charging %.0f W, discharging %.0f W, SoC %.1f %%, curtailed %.0f W", s.GridW, s.BatteryChargeW, s.BatteryDischargeW, s.BatterySoCPct, s.CurtailedW)
	if s.BatterySoCPct < 40 || s.BatterySoCPct > 60 || s.BatteryDischargeW != 0 || s.CurtailedW != 0 {
		t.Errorf("no limit: %+v, want SoC about 50 %%, no discharge, nothing curtailed", s)
	}
	start, _ := r.window(0, 0)
	r.mustSubmit(body(limitCmd("opModMaxLimW", start, start.Add(10*time.Minute), 30)))
	r.await("PV at the 30 % cap", 10*time.Second, func() bool { return r.sim.Balance().PVW <= 5400+100 })
	_, n0 := sl.get()
	r.await("five cycles at the cap", 10*time.Second, func() bool { _, n := sl.get(); return n >= n0+5 })
	s, _ = sl.get()
	t.Logf("30 %% cap: pv %.0f W, grid %.0f W, battery charging %.0f W, curtailed %.0f W", r.sim.Balance().PVW, s.GridW, s.BatteryChargeW, s.CurtailedW)
	if s.CurtailedW != 0 {
		t.Errorf("under a 30 %% opModMaxLimW the energy manager is offered %.0f W of curtailed PV, want 0", s.CurtailedW)
	}
}

// TestFeedInLimitBatteryRefuses: a battery that cannot charge although
// it reports room (its SocRsvMax set to 50 % at 50 %: it takes nothing)
// under FeedInLimit 0 %. Each raise of the loop for it shows as export,
// after which the loop stops raising for 30 s, then 60 s: from when PV
// is first curtailed to the house (the first raise is within that) to
// 40 s after the window's start, PV is raised once more (at about 30 s),
// not every other cycle: at most one episode of export above 2 % of
// nominal, sampled every 0.2 s, lasting at most 2 s (the ramp's and the
// meter's delay).
func TestFeedInLimitBatteryRefuses(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{stepped: true})
	const nominal = 18000.0
	tol := 0.02 * nominal
	r.write("bat", 802, map[string]float64{"SocRsvMax": 50})
	r.await("the battery no longer charging", 10*time.Second, func() bool { return r.sim.Balance().BatteryW > -100 })
	start, _ := r.window(time.Second, 0)
	r.mustSubmit(body(limitCmd("FeedInLimit", start, start.Add(10*time.Minute), 0)))
	r.stepTo(start)
	r.await("PV curtailed to the house", 10*time.Second, func() bool { return -r.sim.Balance().GridW < tol })
	curtailed := r.now().Sub(start)
	var episodes []string
	var from time.Time
	for r.now().Sub(start) < 40*time.Second {
		b := r.sim.Balance()
		switch {
		case -b.GridW > tol && from.IsZero():
			from = r.now()
			episodes = append(episodes, fmt.Sprintf("at %.1f s: pv %.0f W, export %.0f W", r.now().Sub(start).Seconds(), b.PVW, -b.GridW))
		case -b.GridW <= tol && !from.IsZero():
			episodes[len(episodes)-1] += fmt.Sprintf(" for %.1f s", r.now().Sub(from).Seconds())
			if d := r.now().Sub(from); d > 2*time.Second {
				t.Errorf("an export above %.0f W lasted %v", tol, d)
			}
			from = time.Time{}
		}
		r.step(r.clk, r.cfg.Cycle)
	}
	b := r.sim.Balance()
	t.Logf("PV curtailed %.1f s after the start; export episodes above %.0f W until 40 s: %d: %s; at the end pv %.0f W, battery %+.0f W, grid %.0f W", curtailed.Seconds(), tol, len(episodes), strings.Join(episodes, "; "), b.PVW, b.BatteryW, b.GridW)
	if len(episodes) > 1 || !from.IsZero() {
		t.Errorf("%d export episodes (the last still going: %v), want at most 1: the loop keeps raising PV for a battery that takes nothing", len(episodes), !from.IsZero())
	}
}
