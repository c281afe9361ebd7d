package gridcontrol_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"plantd/gridcontrol"
	"plantd/plant"
	"plantd/sim"
	"plantd/sim/simtest"
)

// limitWrites are the values of WMaxLimPct an inverter received from since
// on, with their times, from the simulator's register trace.
func (r *rig) limitWrites(id string, since time.Time) []sim.TraceEntry {
	var out []sim.TraceEntry
	for _, e := range r.limitTrace(id, since) {
		if p, ok := e.Point("WMaxLimPct"); ok {
			e.LimitPct = p.Value // the register, not the effect
			out = append(out, e)
		}
	}
	return out
}

// TestRestartContinuesFromTheHeldLimit: plantd restarted inside a limit
// window reads what each inverter holds and continues from there: the
// same value stays (renewed, never lowered to a guess), a looser one
// another client wrote meanwhile is tightened at once, a tighter one
// rises to the window's value at the ramp rate, never in one jump.
func TestRestartContinuesFromTheHeldLimit(t *testing.T) {
	t.Parallel()
	const ramp = 25.0 // % per s, 5 % per 200 ms cycle
	cases := []struct {
		name   string
		window float64
		// held is what another client writes while plantd is down (0:
		// nothing, the device keeps the window's value).
		held float64
	}{
		{name: "same", window: 15},
		{name: "looser held", window: 40, held: 60},
		{name: "tighter held", window: 40, held: 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{stepped: true, cfg: gridcontrol.Config{RampPctPerSecond: ramp}})
			start, end := r.window(time.Second, 30*time.Second)
			r.mustSubmit(body(limitCmd("opModMaxLimW", start, end, tc.window)))
			r.await("the window's limit on both", start.Sub(r.now())+3*time.Second, func() bool {
				return r.limitOf("inv1") == tc.window && r.limitOf("inv2") == tc.window
			})
			r.stop()
			if tc.held > 0 {
				r.write("inv1", 123, map[string]float64{"WMaxLimPct": tc.held, "WMaxLim_Ena": 1})
				r.write("inv2", 704, map[string]float64{"WMaxLimPct": tc.held, "WMaxLimPctEna": 1})
			}
			r.step(r.clk, r.cfg.Cycle) // the writes above before the restart
			restarted := r.now()
			r.start()
			r.await("the window's limit back on both, written", 5*time.Second, func() bool {
				return r.limitOf("inv1") == tc.window && r.limitOf("inv2") == tc.window &&
					len(r.limitWrites("inv1", restarted)) > 0 && len(r.limitWrites("inv2", restarted)) > 0
			})
			t.Logf("%s: the window's %g %% in effect on both %s after the restart", tc.name, tc.window, r.now().Sub(restarted).Round(10*time.Millisecond))
			for _, id := range []string{"inv1", "inv2"} {
				ws := r.limitWrites(id, restarted)
				if len(ws) == 0 {
					t.Errorf("%s: nothing written after the restart (the reversion timer is not renewed)", id)
					continue
				}
				var seq []string
				prev, prevAt := tc.held, restarted
				if tc.held == 0 {
					prev = tc.window
				}
				for i, w := range ws {
					seq = append(seq, fmt.Sprintf("%g@+%s", w.LimitPct, w.WallTime.Sub(restarted).Round(time.Millisecond)))
					switch {
					case tc.held == 0 && w.LimitPct != tc.window:
						t.Errorf("%s: wrote %g %% after the restart, while the device held the window's %g %%", id, w.LimitPct, tc.window)
					case tc.held > tc.window && i == 0 && w.LimitPct != tc.window:
						t.Errorf("%s: first write after the restart %g %%; a looser %g %% must be tightened to %g %% at once", id, w.LimitPct, tc.held, tc.window)
					case w.LimitPct > prev && w.LimitPct-prev > ramp*0.2+0.05:
						t.Errorf("%s: rose from %g to %g %% in one step (%g %% per cycle at most)", id, prev, w.LimitPct, ramp*0.2)
					case w.LimitPct > prev && w.WallTime.Sub(prevAt) < 200*time.Millisecond:
						t.Errorf("%s: rose to %g %% %s after the last change (one cycle at least)", id, w.LimitPct, w.WallTime.Sub(prevAt))
					}
					if w.LimitPct != prev {
						prev, prevAt = w.LimitPct, w.WallTime
					}
				}
				t.Logf("%s after the restart: %s", id, strings.Join(seq, " "))
			}
		})
	}
}

// maxRiseIn returns the largest rise of an inverter's limit register over
// any interval of length d (the register holding each written value until
// the next write), with the interval's start.
func maxRiseIn(ws []sim.TraceEntry, from float64, d time.Duration) (float64, time.Time) {
	var worst float64
	var at time.Time
	for i := range ws {
		// An interval starting just before write i: the value before it
		// is the one written last before.
		base := from
		if i > 0 {
			base = ws[i-1].LimitPct
		}
		top := base
		for j := i; j < len(ws) && ws[j].WallTime.Sub(ws[i].WallTime) < d; j++ {
			top = max(top, ws[j].LimitPct)
		}
		if top-base > worst {
			worst, at = top-base, ws[i].WallTime
		}
	}
	return worst, at
}

// TestRampNeverExceedsItsRate: the ramp at a window's end (to the default)
// and from one window to a looser one never rises faster than the
// configured rate over any interval of a second (the rate's unit): the
// first step comes a cycle after the end, not at it, and steps come at
// least a cycle apart, whatever woke the cycle in between.
func TestRampNeverExceedsItsRate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		cycle time.Duration
		ramp  float64
		first float64
		// second follows first back to back (0: the window ends, the
		// limit ramps to the default).
		second float64
	}{
		{name: "1 s cycle, 10 %/s, 50 % to the default", cycle: time.Second, ramp: 10, first: 50},
		{name: "200 ms cycle, 25 %/s, 20 % to 60 %", cycle: 200 * time.Millisecond, ramp: 25, first: 20, second: 60},
		{name: "200 ms cycle, 50 %/s, 30 % to the default", cycle: 200 * time.Millisecond, ramp: 50, first: 30},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{stepped: true, cfg: gridcontrol.Config{Cycle: tc.cycle, RampPctPerSecond: tc.ramp}})
			start, mid := r.window(time.Second, 3*time.Second)
			cmds := []string{limitCmd("opModMaxLimW", start, mid, tc.first)}
			target := 100.0
			if tc.second > 0 {
				cmds = append(cmds, limitCmd("opModMaxLimW", mid, mid.Add(20*time.Second), tc.second))
				target = tc.second
			}
			r.mustSubmit(body(cmds...))
			r.await("the first window on both", start.Sub(r.now())+2*time.Second, func() bool {
				return r.limitOf("inv1") == tc.first && r.limitOf("inv2") == tc.first
			})
			r.await("the ramp's end on both", mid.Sub(r.now())+time.Duration((target-tc.first)/tc.ramp*float64(time.Second))+5*time.Second, func() bool {
				return r.limitOf("inv1") == target && r.limitOf("inv2") == target
			})
			for _, id := range []string{"inv1", "inv2"} {
				ws := r.limitWrites(id, mid.Add(-tc.cycle))
				var seq []string
				for _, w := range ws {
					seq = append(seq, fmt.Sprintf("%g@+%s", w.LimitPct, w.WallTime.Sub(mid).Round(time.Millisecond)))
				}
				t.Logf("%s from the boundary: %s", id, strings.Join(seq, " "))
				if len(ws) == 0 {
					t.Fatalf("%s: no writes", id)
				}
				rise, at := maxRiseIn(ws, tc.first, time.Second)
				if rise > tc.ramp+0.05 {
					t.Errorf("%s: rose %.1f %% within one second from +%s (rate %g %%/s)", id, rise, at.Sub(mid).Round(time.Millisecond), tc.ramp)
				}
				for _, w := range ws {
					if w.LimitPct > tc.first && w.WallTime.Sub(mid) < tc.cycle-5*time.Millisecond {
						t.Errorf("%s: rose to %g %% %s after the boundary, before a cycle (%s) passed", id, w.LimitPct, w.WallTime.Sub(mid), tc.cycle)
					}
				}
			}
		})
	}
}

// TestEnableToggleFoundLateAndRemembered: an inverter that takes a new
// limit only when its enable goes from 0 to 1, under clouds when its
// window tightens (its output below both the old and the new limit, so
// nothing shows), is found when the sun comes back and its output rises
// above the new limit: plantd toggles the enable and remembers it in the
// store, so that after a restart the next new limit is toggled with its
// first write and never runs at the old value.
func TestEnableToggleFoundLateAndRemembered(t *testing.T) {
	t.Parallel()
	devs := sim.DefaultConfig().Devices
	devs[0].NeedsEnableToggle, devs[1].NeedsEnableToggle = true, true
	r := newRig(t, rigOpts{stepped: true, devices: devs})
	r.sim.SetCloudFactor(0.2)
	s, mid := r.window(time.Second, 2*time.Second)
	end := mid.Add(20 * time.Second)
	r.mustSubmit(body(limitCmd("opModMaxLimW", s, mid, 60), limitCmd("opModMaxLimW", mid, end, 40)))
	r.await("40 % written on both", mid.Sub(r.now())+2*time.Second, func() bool {
		ws1, ws2 := r.limitWrites("inv1", mid), r.limitWrites("inv2", mid)
		return len(ws1) > 0 && ws1[len(ws1)-1].LimitPct == 40 && len(ws2) > 0 && ws2[len(ws2)-1].LimitPct == 40
	})
	// Under clouds: the registers say 40 %, the devices still act on 60 %.
	r.stepTo(r.now().Add(time.Second))
	if l1, l2 := r.limitOf("inv1"), r.limitOf("inv2"); l1 != 60 || l2 != 60 {
		t.Fatalf("the simulated devices act on %g and %g %%, want the old 60 %% (the test's premise)", l1, l2)
	}
	sun := r.now()
	r.sim.SetCloudFactor(1)
	r.await("40 % in effect on both once the output shows it", 6*time.Second, func() bool { return r.limitOf("inv1") == 40 && r.limitOf("inv2") == 40 })
	t.Logf("40 %% in effect on both %s after the sun came back", r.now().Sub(sun).Round(10*time.Millisecond))
	r.await("the warning in the plant log", 3*time.Second, func() bool {
		return r.logHas("LimitNeedsEnableToggle", "inv1") && r.logHas("LimitNeedsEnableToggle", "inv2")
	})

	// Restarted, with a tighter window: toggled with its first write, in
	// the cycle at the window's start (no later cycle could find the
	// toggle anew: that takes cycles of output above the limit).
	r.stop()
	r.step(r.clk, r.cfg.Cycle)
	restarted := r.now()
	r.start()
	s2 := r.now().Truncate(time.Second).Add(2 * time.Second)
	r.mustSubmit(body(limitCmd("opModMaxLimW", s2, s2.Add(10*time.Second), 25)))
	r.stepTo(s2.Add(-r.cfg.Cycle))
	r.step(r.clk, r.cfg.Cycle)
	ena := map[string]string{"inv1": "WMaxLim_Ena", "inv2": "WMaxLimPctEna"}
	// toggled is the enable's values written after the first 25 %.
	toggled := func(id string) []float64 {
		var vs []float64
		seen := false
		for _, e := range r.limitTrace(id, restarted) {
			if p, ok := e.Point("WMaxLimPct"); ok && p.Value == 25 {
				seen = true
			} else if p, ok := e.Point(ena[id]); ok && seen {
				vs = append(vs, p.Value)
			}
		}
		return vs
	}
	for _, id := range []string{"inv1", "inv2"} {
		if vs := toggled(id); len(vs) < 2 || vs[0] != 0 || vs[1] != 1 {
			t.Errorf("%s: enable written %v after the restart's first 25 %%, want 0 then 1", id, vs)
		}
	}
	if l1, l2 := r.limitOf("inv1"), r.limitOf("inv2"); l1 != 25 || l2 != 25 {
		t.Errorf("after the cycle at the start: %g and %g %% in effect, want 25 %% on both", l1, l2)
	}
	entries, _, err := r.st.Logs(t.Context(), plant.LogQuery{PlantID: "demo", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Code == "LimitNeedsEnableToggle" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("LimitNeedsEnableToggle logged %d times, want once per device", n)
	}
}

// slowStatusStore is a store whose first write of a grid operator's
// window marked applied (the control cycle's bookkeeping once every
// inverter took it) takes stall of the wall clock: an SD card's fsync, or
// the writer connection held by a long rollup. stalled is closed when it
// returns.
type slowStatusStore struct {
	gridcontrol.Store
	stall   time.Duration
	once    sync.Once
	began   chan struct{}
	stalled chan struct{}
}

func (s *slowStatusStore) PutSchedule(ctx context.Context, sc plant.Schedule) error {
	if sc.Role == "gridoperator" && sc.Commands[0].AppliedAt != nil {
		s.once.Do(func() {
			close(s.began)
			time.Sleep(s.stall)
			close(s.stalled)
		})
	}
	return s.Store.PutSchedule(ctx, sc)
}

// TestStoreStallKeepsLimit: the store stalls 5 s, longer than the
// inverters' reversion timeout (4 s), when grid control records a grid
// operator's 20 % as applied. The control cycle never waits for the store
// on its way to the devices: the 20 % is renewed meanwhile and never
// reverts, which the simulator's limit in effect shows at 10 Hz through
// the stall. (A cycle that waited for it let the inverters revert to no
// limit, and a FeedInLimit loop stop regulating, for as long as the store
// stalled.)
func TestStoreStallKeepsLimit(t *testing.T) {
	t.Parallel()
	slow := &slowStatusStore{stall: 5 * time.Second, began: make(chan struct{}), stalled: make(chan struct{})}
	r := newRig(t, rigOpts{cfg: gridcontrol.Config{RevertTimeout: 4 * time.Second, Cycle: time.Second},
		store: func(st gridcontrol.Store) gridcontrol.Store { slow.Store = st; return slow }})
	start, end := r.window(time.Second, 10*time.Minute)
	if _, err := r.controller().SubmitJSON(t.Context(), "demo", gridOperator, []byte(body(limitCmd("opModMaxLimW", start, end, 20)))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-slow.began:
	case <-time.After(30 * time.Second):
		t.Fatal("after 30 s: the operator's window was never recorded applied")
	}
	samples, hs := highestLimits(r, slow.stalled, "inv1", "inv2")
	highest := max(hs[0], hs[1])
	t.Logf("%d samples at 10 Hz through the store's stall: highest limit in effect %g %%", samples, highest)
	if highest > 20 {
		t.Errorf("the limit in effect rose to %g %% under the operator's 20 %% while the store stalled", highest)
	}
}

// TestLimitNotFollowedFails: an inverter that reads its limit back right
// and never acts on it, toggled or not, is reported (plant log, /metrics
// count) and its window marked failed, never done.
func TestLimitNotFollowedFails(t *testing.T) {
	t.Parallel()
	devs := sim.DefaultConfig().Devices
	devs[0].IgnoresLimit = true // inv1
	r := newRig(t, rigOpts{stepped: true, devices: devs})
	start, end := r.window(time.Second, 12*time.Second)
	sched := r.mustSubmit(body(limitCmd("opModMaxLimW", start, end, 40)))
	r.await("40 % in effect on inv2", start.Sub(r.now())+2*time.Second, func() bool { return r.limitOf("inv2") == 40 })
	r.await("the window failed", 10*time.Second, func() bool { return r.command(sched.ScheduleID, 0).Status == gridcontrol.StatusFailed })
	c := r.command(sched.ScheduleID, 0)
	if !strings.Contains(c.Reason, "inv1") || !strings.Contains(c.Reason, "does not follow") {
		t.Errorf("reason %q", c.Reason)
	}
	r.await("LimitNotFollowed in the plant log", 3*time.Second, func() bool { return r.logHas("LimitNotFollowed", "inv1") })
	if r.logHas("LimitNotFollowed", "inv2") {
		t.Error("LimitNotFollowed for inv2, which follows")
	}
	if n := r.controller().Stats().NotFollowing; n != 1 {
		t.Errorf("Stats().NotFollowing = %d, want 1", n)
	}
	r.stepTo(end.Add(500 * time.Millisecond))
	if c := r.command(sched.ScheduleID, 0); c.Status != gridcontrol.StatusFailed {
		t.Errorf("status after the window: %s, want failed", c.Status)
	}
}

// TestOperatorLimitHoldsAgainstInstaller: a grid operator's 20 % window,
// then an installer's newer 60 % overlapping it. The installer never
// loosens the operator's limit: register trace and simulated AC power stay
// at 20 % of rated while both are open, the installer's window is listed
// overridden by the operator's schedule, and it governs once the
// TestInstallerCannotCrowdOutTheOperator: an installer who fills the
// plant's schedules with windows to come (or a Modbus master writing
// value after value) leaves the grid operator room for its limit, which
// the inverters then hold; windows cancelled before their start make
// room again.
func TestInstallerCannotCrowdOutTheOperator(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{stepped: true, cfg: gridcontrol.Config{MaxSchedules: 8}})
	var pending []string
	start, end := r.window(2*time.Hour, time.Minute)
	for i := range 9 {
		start, end := r.window(time.Hour+time.Duration(i)*time.Minute, time.Minute)
		s, err := r.submit(body(limitCmd("opModMaxLimW", start, end, 90)))
		var verr *gridcontrol.ValidationError
		if errors.As(err, &verr) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, s.ScheduleID)
	}
	if len(pending) != 6 {
		t.Fatalf("the installer placed %d pending schedules of at most 8, want 6 (the rest is the operator's)", len(pending))
	}
	opStart, opEnd := r.window(time.Second, time.Hour)
	if _, err := r.controller().SubmitJSON(t.Context(), "demo", gridOperator, []byte(body(limitCmd("opModMaxLimW", opStart, opEnd, 20)))); err != nil {
		t.Fatalf("the operator's limit beside the installer's pending schedules: %v", err)
	}
	r.await("20 % on both", opStart.Sub(r.now())+3*time.Second, func() bool { return r.limitOf("inv1") == 20 && r.limitOf("inv2") == 20 })
	for _, id := range pending {
		if err := r.controller().Cancel(t.Context(), "demo", id, installer); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.submit(body(limitCmd("opModMaxLimW", start, end, 90))); err != nil {
		t.Errorf("an installer's schedule after cancelling its 6 pending ones: %v", err)
	}
}

// operator's window ends (ramping up to 60 %).
func TestOperatorLimitHoldsAgainstInstaller(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{stepped: true})
	start, opEnd := r.window(time.Second, 6*time.Second)
	op, err := r.controller().SubmitJSON(t.Context(), "demo", gridOperator, []byte(body(limitCmd("opModMaxLimW", start, opEnd, 20))))
	if err != nil {
		t.Fatal(err)
	}
	r.await("20 % on both", start.Sub(r.now())+2*time.Second, func() bool { return r.limitOf("inv1") == 20 && r.limitOf("inv2") == 20 })
	posted := r.now()
	inst := r.mustSubmit(body(limitCmd("opModMaxLimW", start, opEnd.Add(6*time.Second), 60)))
	for opEnd.Sub(r.now()) > 200*time.Millisecond {
		for _, id := range []string{"inv1", "inv2"} {
			s := simtest.Device(t, r.sim, id).State()
			rated := map[string]float64{"inv1": 10000, "inv2": 8000}[id]
			if s.EffectiveLimitPct > 20 || s.PowerW > 0.2*rated*1.01+1 {
				t.Fatalf("%s at %g %% and %.0f W %s after the installer's 60 %%, over the operator's 20 %%", id, s.EffectiveLimitPct, s.PowerW, r.now().Sub(posted).Round(time.Millisecond))
			}
		}
		r.step(r.clk, r.cfg.Cycle)
	}
	for _, id := range []string{"inv1", "inv2"} {
		for _, w := range r.limitWrites(id, start) {
			if w.WallTime.Before(opEnd) && w.LimitPct > 20 {
				t.Errorf("%s: %g %% written at +%s, inside the operator's 20 %% window", id, w.LimitPct, w.WallTime.Sub(start).Round(time.Millisecond))
			}
		}
	}
	r.await("the installer's window governing", opEnd.Sub(r.now())+time.Second, func() bool { return r.command(inst.ScheduleID, 0).Status == gridcontrol.StatusActive })
	r.await("60 % on both after the operator's window", 8*time.Second, func() bool { return r.limitOf("inv1") == 60 && r.limitOf("inv2") == 60 })
	if c := r.command(op.ScheduleID, 0); c.Status != gridcontrol.StatusDone {
		t.Errorf("operator's window after its end: %s", c.Status)
	}
}

// TestSameValueWindowApplied: a newer window asking for the limit the
// inverters hold already is in effect at once: it is marked applied
// without waiting for the next renewal (half the reversion timeout, 10 s
// here), and nothing is written for it.
func TestSameValueWindowApplied(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{stepped: true})
	start, end := r.window(time.Second, 30*time.Second)
	r.mustSubmit(body(limitCmd("opModMaxLimW", start, end, 40)))
	r.await("40 % on both", start.Sub(r.now())+3*time.Second, func() bool { return r.limitOf("inv1") == 40 && r.limitOf("inv2") == 40 })
	posted := r.now()
	second := r.mustSubmit(body(limitCmd("opModMaxLimW", start, end, 40)))
	r.await("the newer 40 % window applied", 3*time.Second, func() bool { return r.command(second.ScheduleID, 0).AppliedAt != nil })
	t.Logf("applied %s after it was posted", r.now().Sub(posted).Round(10*time.Millisecond))
}
