package gridcontrol_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"plantd/gridcontrol"
	"plantd/sim"
	"plantd/sim/simtest"
)

// installer70 sets a permanent 70 % limit on both inverters before plantd
// first sees them, as an installer does for a grid connection capped
// below the plant's rating.
func installer70(r *rig) {
	r.write("inv1", 123, map[string]float64{"WMaxLimPct": 70, "WMaxLim_Ena": 1})
	r.write("inv2", 704, map[string]float64{"WMaxLimPct": 70, "WMaxLimPctEna": 1})
	r.await("the installer's 70 %", 5*time.Second, func() bool { return r.limitOf("inv1") == 70 && r.limitOf("inv2") == 70 })
}

// TestDeadGatewayRevertsToTheDefault: plantd dies inside a 40 % window.
// The DER inverter's own reversion timer takes over after the timeout and
// goes back to the installer's 70 % that plantd programmed as its stored
// reversion value, never to 100 %; the classic one, whose 123 would revert
// to no limit, keeps the window's 40 %. plantd started again inside the window
// has the limit back within one cycle; started again after the window
// closed, it does not replay it and restores the default.
func TestDeadGatewayRevertsToTheDefault(t *testing.T) {
	t.Parallel()
	const rvrt = 3 * time.Second
	r := newRig(t, rigOpts{stepped: true, cfg: gridcontrol.Config{RevertTimeout: rvrt}, before: installer70})
	// Killed at 1.8 s, reverted about 3 s later, restarted and limited
	// again within 2 s: usually 6 s into the window, leaving 4 s to die
	// again inside it.
	start, end := r.window(time.Second, 10*time.Second)
	sched := r.mustSubmit(body(limitCmd("opModMaxLimW", start, end, 40)))
	r.await("40 % on both", start.Sub(r.now())+2*time.Second, func() bool { return r.limitOf("inv1") == 40 && r.limitOf("inv2") == 40 })
	// Past a renewal (at half the timeout), then plantd dies.
	r.stepTo(start.Add(rvrt/2 + 300*time.Millisecond))
	r.stop()
	killed := r.now()
	var peak float64
	lo1, hi1 := 100.0, 0.0
	r.await("inv2 back at the installer's 70 %", rvrt+2*time.Second, func() bool {
		peak = max(peak, r.limitOf("inv2"))
		l1 := r.limitOf("inv1")
		lo1, hi1 = min(lo1, l1), max(hi1, l1)
		return r.limitOf("inv2") == 70
	})
	t.Logf("inv2 reverted to 70 %% %s after plantd died (reversion timeout %s)", r.now().Sub(killed).Round(10*time.Millisecond), rvrt)
	if peak > 70 {
		t.Errorf("inv2 reached %g %% after plantd died", peak)
	}
	// The classic 123 reverts a limit to none, not to a default: with an
	// installer's limit plantd writes its windows without a reversion
	// time, so the dead gateway leaves it at the window's 40 %, inside
	// [window, installer's limit], and the plant log said so.
	r.stepTo(r.now().Add(rvrt))
	l1 := r.limitOf("inv1")
	lo1, hi1 = min(lo1, l1), max(hi1, l1)
	if lo1 < 40 || hi1 > 70 {
		t.Errorf("inv1 (model 123) between %g and %g %% after plantd died, want within [40, 70]", lo1, hi1)
	}
	r.await("LimitWithoutReversion for inv1 only", 2*time.Second, func() bool { return r.logHas("LimitWithoutReversion", "inv1") })
	if r.logHas("LimitWithoutReversion", "inv2") {
		t.Error("LimitWithoutReversion for inv2, whose 704 reverts to the programmed default")
	}

	// plantd starts again inside the window: the limit is back at once.
	restarted := r.now()
	r.start()
	r.await("40 % back on both", 2*time.Second, func() bool { return r.limitOf("inv1") == 40 && r.limitOf("inv2") == 40 })
	t.Logf("40 %% back on both inverters %s after the restart", r.now().Sub(restarted).Round(10*time.Millisecond))
	if c := r.command(sched.ScheduleID, 0); c.Status != gridcontrol.StatusActive {
		t.Errorf("status after the restart: %s", c.Status)
	}
	if end.Sub(r.now()) < 500*time.Millisecond {
		t.Fatalf("too slow: restarted %s after the start of a %s window", restarted.Sub(start).Round(10*time.Millisecond), end.Sub(start))
	}

	// Dies again; the window closes while it is down; on the next start
	// it is not replayed and the default is restored.
	r.stop()
	r.stepTo(end.Add(500 * time.Millisecond))
	r.start()
	r.await("both back at the installer's 70 %", 5*time.Second, func() bool {
		return r.limitOf("inv1") == 70 && r.limitOf("inv2") == 70 && r.logHas("GridControlRestored", "inv1", "limit")
	})
	r.stepTo(r.now().Add(time.Second))
	if l1, l2 := r.limitOf("inv1"), r.limitOf("inv2"); l1 != 70 || l2 != 70 {
		t.Errorf("after a restart past the window: %g %%, %g %%; want the default 70 %%", l1, l2)
	}
	if c := r.command(sched.ScheduleID, 0); c.Status != gridcontrol.StatusDone {
		t.Errorf("status after the window: %s", c.Status)
	}
}

// TestOfflineAcrossTheStart: an inverter offline when its window starts
// gets the limit the moment it answers again, and the command says late.
//
// On the stepped rig: inv1's polls and the controller's requests fail
// from before the start until six seconds after it.
func TestOfflineAcrossTheStart(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{stepped: true})
	start := r.now().Truncate(time.Second).Add(2 * time.Second)
	end := start.Add(10 * time.Minute)
	sched := r.mustSubmit(body(limitCmd("opModMaxLimW", start, end, 30)))
	r.setOffline("inv1", true)
	// Offline as the daemon knows it (the poll's verdict) at the start.
	r.await("inv1 offline in the live state", time.Second, func() bool {
		d, _ := r.live.Device("inv1")
		return d.HealthReason == "offline"
	})
	r.stepTo(start)
	r.await("inv2 at 30 %", time.Second, func() bool { return r.limitOf("inv2") == 30 })
	r.stepTo(r.now().Add(6 * time.Second))
	if c := r.command(sched.ScheduleID, 0); c.AppliedAt != nil {
		t.Errorf("applied at %s while inv1 was offline", c.AppliedAt)
	}
	if l := r.limitOf("inv1"); l == 30 {
		t.Fatalf("inv1 at 30 %% while offline (the test's premise)")
	}
	// Back: the first poll that answers, then the cycle after it.
	r.setOffline("inv1", false)
	back := r.now()
	r.await("inv1 limited to 30 % within a second of its return", time.Second, func() bool { return r.limitOf("inv1") == 30 })
	t.Logf("inv1 limited %s after it answered again", r.now().Sub(back))
	if c := r.command(sched.ScheduleID, 0); c.AppliedAt == nil || !c.Late || !strings.Contains(c.Reason, "inv1") {
		t.Errorf("status after the late write: applied %v, late %v, reason %q", c.AppliedAt, c.Late, c.Reason)
	}
}

// TestMeterLossDuringFeedInLimit: the grid meter stops answering while
// FeedInLimit holds the export at 20 % of the plant's rating. The
// inverters are held at the last limit for the grace period, then stepped
// down to the export limit itself (as if the plant consumed nothing); at
// no time above the limit they had.
func TestMeterLossDuringFeedInLimit(t *testing.T) {
	t.Parallel()
	const grace = 2 * time.Second
	r := newRig(t, rigOpts{stepped: true, cfg: gridcontrol.Config{MeterGrace: grace}})
	start, end := r.window(time.Second, 30*time.Second)
	r.mustSubmit(body(limitCmd("FeedInLimit", start, end, 20)))
	// The loop settles with the household's load on top of 20 %.
	r.await("the feed-in at 20 % of 18 kW", start.Sub(r.now())+5*time.Second, func() bool {
		return -r.sim.Balance().GridW > 0.18*18000 && -r.sim.Balance().GridW < 0.22*18000
	})
	r.stepTo(r.now().Add(time.Second))
	held := r.limitOf("inv1")
	// The load and the charging battery are served first: the limit is
	// well above the 20 % exported.
	if held <= 25 {
		t.Fatalf("limit under FeedInLimit %g %%, want above 20 %% (load and battery on top)", held)
	}
	r.setOffline("meter", true)
	lost := r.now()
	var peak float64
	r.await("both inverters at the export limit itself", grace+3*time.Second, func() bool {
		peak = max(peak, r.limitOf("inv1"), r.limitOf("inv2"))
		return r.limitOf("inv1") == 20 && r.limitOf("inv2") == 20
	})
	stepped := r.now().Sub(lost)
	// The grace runs from the meter's last answer, up to a cycle (200 ms)
	// before the fault.
	if stepped < grace-250*time.Millisecond {
		t.Errorf("stepped down %s after the meter was lost, before the grace period %s", stepped, grace)
	}
	if peak > held+0.1 {
		t.Errorf("limit rose to %g %% without a meter (held %g %%)", peak, held)
	}
	t.Logf("held at %g %% for %s without the meter, then 20 %%", held, stepped.Round(10*time.Millisecond))
	r.await("the warning in the plant log", 5*time.Second, func() bool { return r.logHas("FeedInLimitMeterLost") })
	r.stepTo(r.now().Add(2 * time.Second))
	if l := max(r.limitOf("inv1"), r.limitOf("inv2")); l > 20 {
		t.Errorf("limit %g %% while the meter is still lost", l)
	}
}

// TestDeviceNeedingTheEnableToggle: inverters that take a new limit only
// when its enable goes from 0 to 1 (the register reads back right, the
// limit in effect stays) are detected by their output and toggled, from
// then on at every new value.
func TestDeviceNeedingTheEnableToggle(t *testing.T) {
	t.Parallel()
	devs := sim.DefaultConfig().Devices
	devs[0].NeedsEnableToggle, devs[1].NeedsEnableToggle = true, true
	r := newRig(t, rigOpts{stepped: true, devices: devs})
	s, mid := r.window(time.Second, 4*time.Second)
	end := mid.Add(4 * time.Second)
	r.mustSubmit(body(limitCmd("opModMaxLimW", s, mid, 60), limitCmd("opModMaxLimW", mid, end, 40)))
	r.await("60 % on both", s.Sub(r.now())+2*time.Second, func() bool { return r.limitOf("inv1") == 60 && r.limitOf("inv2") == 60 })
	r.stepTo(mid)
	r.await("40 % in effect on both", 3*time.Second, func() bool { return r.limitOf("inv1") == 40 && r.limitOf("inv2") == 40 })
	t.Logf("40 %% in effect %s after the boundary", r.now().Sub(mid).Round(10*time.Millisecond))
	r.await("the warning in the plant log", 5*time.Second, func() bool {
		return r.logHas("LimitNeedsEnableToggle", "inv1") && r.logHas("LimitNeedsEnableToggle", "inv2")
	})
}

// TestRefusedCommandFails: a command a device cannot take (here a volt-var
// curve of 10 points on inverters that hold 4, posted with the
// eligibility check skipped) is never half-written: the window is marked
// failed with the device's reason, the plant log says so, and the other
// commands of the schedule run.
func TestRefusedCommandFails(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{stepped: true})
	start, end := r.window(time.Second, 6*time.Second)
	var pts []string
	for i := range 10 {
		pts = append(pts, fmt.Sprintf(`{"x":%d,"y":%d}`, 90+2*i, 30-6*i))
	}
	curve := fmt.Sprintf(`{"command":"opModVoltVar","start":%q,"end":%q,"curve":{"points":[%s]}}`, ts(start), ts(end), strings.Join(pts, ","))
	b := body(curve, limitCmd("opModMaxLimW", start, end, 50))
	if _, err := r.submit(b); err == nil {
		t.Fatal("10 points on devices holding 4 accepted with the eligibility check")
	}
	s, err := r.controller().SubmitJSON(context.Background(), "demo", installer, []byte(b), gridcontrol.SkipEligibilityCheck(true))
	if err != nil {
		t.Fatal(err)
	}
	r.await("the curve marked failed", start.Sub(r.now())+3*time.Second, func() bool { return r.command(s.ScheduleID, 0).Status == gridcontrol.StatusFailed })
	if c := r.command(s.ScheduleID, 0); !strings.Contains(c.Reason, "at most 4 points") {
		t.Errorf("reason %q", c.Reason)
	}
	// The limit runs: the cycle that found the curve refused may mark it
	// failed before it writes inv1's limit (a full suite's load showed
	// 100 % when read at once).
	r.await("the schedule's limit of 50 % on inv1", 3*time.Second, func() bool { return r.limitOf("inv1") == 50 })
	v := r.read("inv1", 126)
	if got, _ := v.Float("ModEna"); got != 0 {
		t.Errorf("126 ModEna %g after a refused curve", got)
	}
	r.await("the failure in the plant log", 5*time.Second, func() bool { return r.logHas("GridControlWriteFailed", "at most 4 points") })
}

// TestReversionRenewedInLongWindows: windows several reversion timeouts
// long. The renewal at half the timeout must reach the devices (a write
// that changes no register is no write at all): the limit, the fixed
// power factor and a curve stay in effect on both generations to the end,
// never reverted by the inverters' own timers in between.
func TestReversionRenewedInLongWindows(t *testing.T) {
	t.Parallel()
	const rvrt = 2 * time.Second
	r := newRig(t, rigOpts{stepped: true, cfg: gridcontrol.Config{RevertTimeout: rvrt}})
	vv := tweak(points(t, r.read("inv1", 126), 0), -5)
	cv, _ := json.Marshal(gridcontrol.Curve{Points: vv})
	start, end := r.window(time.Second, 4*rvrt)
	r.mustSubmit(body(limitCmd("opModMaxLimW", start, end, 40),
		fmt.Sprintf(`{"command":"opModFixedPFInjectW","start":%q,"end":%q,"value":0.95}`, ts(start), ts(end)),
		fmt.Sprintf(`{"command":"opModVoltVar","start":%q,"end":%q,"curve":%s}`, ts(start), ts(end), cv)))
	held := func() string {
		var off []string
		for _, id := range []string{"inv1", "inv2"} {
			s := simtest.Device(t, r.sim, id).State()
			if s.EffectiveLimitPct != 40 {
				off = append(off, fmt.Sprintf("%s limit %g %%", id, s.EffectiveLimitPct))
			}
			if s.ReactiveVAr <= 0 {
				off = append(off, fmt.Sprintf("%s %g var (PF 0.95 injecting)", id, s.ReactiveVAr))
			}
		}
		if v, _ := r.read("inv1", 126).Float("ModEna"); v != 1 {
			off = append(off, "inv1 126 ModEna 0")
		}
		if v, _ := r.read("inv2", 705).Float("Ena"); v != 1 {
			off = append(off, "inv2 705 Ena 0")
		}
		return strings.Join(off, ", ")
	}
	r.await("every control in effect", start.Sub(r.now())+2*time.Second, func() bool { return held() == "" })
	var lapses []string
	for end.Sub(r.now()) > 300*time.Millisecond {
		h := held()
		// A sample is one of the window only if its reads ended inside it
		// (on a loaded machine the reads take long, and a sample that
		// straddles the window's end sees the restore).
		if h != "" && end.Sub(r.now()) > 0 {
			lapses = append(lapses, fmt.Sprintf("start+%s: %s", r.now().Sub(start).Round(10*time.Millisecond), h))
		}
		r.step(r.clk, r.cfg.Cycle)
	}
	if len(lapses) > 0 {
		t.Errorf("controls lapsed inside a window %s long with a reversion timeout of %s (%d samples): %s … %s",
			end.Sub(start), rvrt, len(lapses), lapses[0], lapses[len(lapses)-1])
	}
}

// A DER inverter that accepts WMaxLimPctRvrtTms but never counts it down
// keeps its limit if plantd dies: the controller finds it from RvrtRem at
// the first renewal and warns once (ReversionIgnored); one that counts
// down is not warned about.
func TestReversionIgnoredWarned(t *testing.T) {
	t.Parallel()
	for _, ignores := range []bool{true, false} {
		t.Run(fmt.Sprintf("ignores=%v", ignores), func(t *testing.T) {
			t.Parallel()
			// The renewal at half the timeout comes 6 s after the first
			// write, past the 5 s the check waits for.
			const rvrt = 12 * time.Second
			devs := sim.DefaultConfig().Devices
			for i := range devs {
				devs[i].IgnoreRevert = ignores && devs[i].ID == "inv2"
			}
			r := newRig(t, rigOpts{stepped: true, devices: devs, cfg: gridcontrol.Config{RevertTimeout: rvrt}})
			start, end := r.window(time.Second, rvrt)
			r.mustSubmit(body(limitCmd("opModMaxLimW", start, end, 40)))
			renewed := start.Add(rvrt/2 + 2*time.Second)
			if ignores {
				r.await("ReversionIgnored for inv2", renewed.Sub(r.now()), func() bool { return r.logHas("ReversionIgnored", "inv2") })
			} else {
				r.stepTo(renewed)
			}
			if !ignores && r.logHas("ReversionIgnored") {
				t.Error("ReversionIgnored logged for a device that counts its reversion timeout down")
			}
			if r.logHas("ReversionIgnored", "inv1") {
				t.Error("ReversionIgnored logged for inv1, whose model 123 has no RvrtRem")
			}
		})
	}
}
