package gridcontrol_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"plantd/gridcontrol"
	"plantd/sim"
)

// TestFeedInLimitSteps: FeedInLimit at 20 % of the plant's 18 kW on the
// demo plant without its battery, the default 1 s cycle and 10 %/s ramp.
// The export reaches the limit within 3 cycles of the start and stays
// within 2 % of nominal; a 2 kW load step up and down and a cloud recover
// within 3 cycles, never above the limit after the cycle that saw the step
// (the first that began after the meter answered with it).
// Each step runs on a plant of its own, in parallel, after the start
// (the step down from a plant started with the 2 kW load on).
func TestFeedInLimitSteps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		before func(r *rig) // before the window starts
		step   feedInStep
	}{
		{"load up", func(*rig) {}, feedInStep{"load +2kW", func(r *rig) { r.sim.SetLoadOffset(2000) }}},
		{"load down", func(r *rig) { r.sim.SetLoadOffset(2000) }, feedInStep{"load -2kW", func(r *rig) { r.sim.SetLoadOffset(0) }}},
		{"cloud", func(*rig) {}, feedInStep{"cloud 0.6", func(r *rig) { r.sim.SetCloudFactor(0.6) }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a plant of its own
			feedInSteps(t, tc.before, []feedInStep{{"start", func(*rig) {}}, tc.step})
		})
	}
}

// feedInStep is a change of the plant under FeedInLimit.
type feedInStep struct {
	what string
	do   func(r *rig)
}

// feedInSteps runs a FeedInLimit window as TestFeedInLimitSteps says and
// checks how the export settles after each step.
func feedInSteps(t *testing.T, before func(r *rig), steps []feedInStep) {
	devs := sim.DefaultConfig().Devices
	devs = []sim.DeviceConfig{devs[0], devs[1], devs[2]} // inv1, inv2, meter
	const cycle = time.Second
	r := newRig(t, rigOpts{stepped: true, devices: devs, cfg: gridcontrol.Config{Cycle: cycle, RampPctPerSecond: 10}})
	const nominal, limitPct = 18000.0, 20.0
	limitW := nominal * limitPct / 100
	tol := 0.02 * nominal
	export := func() float64 { return -r.sim.Balance().GridW }

	var trace []string
	// settle steps n control cycles from a change and returns how many
	// it took to come within tol of the limit (and stay), and the largest
	// excess over the limit after the first (the one that saw the
	// change: the loop reads the meter in its cycle).
	settle := func(what string, n int) (int, float64) {
		in := -1
		excess := 0.0
		var line []string
		for k := 1; k <= n; k++ {
			r.step(r.clk, cycle)
			e := export()
			if math.Abs(e-limitW) <= tol {
				if in < 0 {
					in = k
				}
			} else {
				in = -1
			}
			excess = max(excess, e-limitW)
			line = append(line, fmt.Sprintf("%.0f", e))
		}
		trace = append(trace, fmt.Sprintf("%-10s export W every cycle: %s", what, strings.Join(line, " ")))
		return in, excess
	}

	before(r)
	start, _ := r.window(time.Second, 0)
	r.mustSubmit(body(limitCmd("FeedInLimit", start, start.Add(10*time.Minute), limitPct)))
	r.stepTo(start.Add(-cycle))
	for _, step := range steps {
		step.do(r)
		in, excess := settle(step.what, 6)
		switch {
		case in < 0:
			t.Errorf("%s: the export did not settle within 2 %% of nominal of %.0f W in 6 cycles", step.what, limitW)
		case in > 3:
			t.Errorf("%s: settled in %d cycles, want at most 3", step.what, in)
		}
		if excess > tol {
			t.Errorf("%s: export %.0f W above the limit after the first cycle", step.what, excess)
		}
		t.Logf("%s: within 2 %% of nominal after %d cycle(s); largest excess after the first cycle %.0f W", step.what, in, excess)
	}
	for _, l := range trace {
		t.Log(l)
	}
}

// TestFeedInLimitPct: the feed-in limit in force in % of the rating of
// the inverters carrying limits (10 + 8 kW): 100 without one, a limit in
// % as given, one in W converted, the newest
// window of a role governing.
func TestFeedInLimitPct(t *testing.T) {
	t.Parallel()
	devs := sim.DefaultConfig().Devices
	r := newRig(t, rigOpts{stepped: true, devices: []sim.DeviceConfig{devs[0], devs[1], devs[2]}}) // inv1, inv2, meter
	pct := func() float64 {
		v, err := r.controller().FeedInLimitPct("demo")
		if err != nil {
			t.Fatalf("FeedInLimitPct: %v", err)
		}
		return v
	}
	if v := pct(); v != 100 {
		t.Fatalf("without a window: %g %%, want 100", v)
	}
	if _, err := r.controller().FeedInLimitPct("nowhere"); err == nil {
		t.Error("an unknown plant: no error")
	}
	start, _ := r.window(0, 0)
	end := start.Add(10 * time.Minute)
	inW := func(w float64) string {
		return fmt.Sprintf(`{"command":"FeedInLimit","start":%q,"end":%q,"value":%g,"unit":"W"}`, ts(start), ts(end), w)
	}
	for _, tc := range []struct {
		what, cmd string
		want      float64
	}{
		{"40 %", limitCmd("FeedInLimit", start, end, 40), 40},
		{"3600 W", inW(3600), 20},
		{"the rating", inW(18000), 100},
		{"another command", limitCmd("opModMaxLimW", start, end, 30), 100},
	} {
		r.mustSubmit(body(tc.cmd))
		r.await(fmt.Sprintf("after %s, the limit in force %g %%", tc.what, tc.want), 10*time.Second, func() bool { return math.Abs(pct()-tc.want) < 1e-9 })
	}
}
