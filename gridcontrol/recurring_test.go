package gridcontrol_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"plantd/gridcontrol"
)

// recurringCmd is a recurring limit command of a schedule body.
func recurringCmd(spec, duration string, pct float64) string {
	return fmt.Sprintf(`{"command":"opModMaxLimW","repeat":%q,"duration":%q,"value":%g,"unit":"%%"}`, spec, duration, pct)
}

// TestRecurringDailyWindow: a daily window runs on the injected clock
// over three simulated days: each day both simulated inverters take the
// limit at its start (registers) and ramp back at its end, each window is
// logged and filed under the command's finished windows with its writes
// and read-back; the listing shows the current window and the next ones;
// a restart keeps the audit; cancelling the schedule inside the fourth
// window ends it and no further window starts.
func TestRecurringDailyWindow(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{stepped: true, clockAt: noon.UTC(), cfg: gridcontrol.Config{RampPctPerSecond: 100, Cycle: 200 * time.Millisecond}})
	clk := r.clk
	first := clk.Now().Add(10 * time.Minute)
	spec := fmt.Sprintf("%d %d * * *", first.Minute(), first.Hour())
	sched := r.mustSubmit(body(recurringCmd(spec, "1h", 40)))
	c := r.command(sched.ScheduleID, 0)
	if !c.Start.Equal(first) || !c.End.Equal(first.Add(time.Hour)) || c.Status != gridcontrol.StatusPending {
		t.Fatalf("first window %s to %s (%s), want %s to %s pending", c.Start, c.End, c.Status, first, first.Add(time.Hour))
	}
	if len(c.Next) != 3 || !c.Next[0].Start.Equal(first.Add(24*time.Hour)) || !c.Next[0].End.Equal(first.Add(25*time.Hour)) {
		t.Fatalf("next windows: %+v", c.Next)
	}
	if c.Repeat != spec || c.Duration != "1h" {
		t.Fatalf("listed repeat %q duration %q", c.Repeat, c.Duration)
	}

	for day := range 3 {
		start := first.Add(time.Duration(day) * 24 * time.Hour)
		end := start.Add(time.Hour)
		r.step(clk, start.Sub(clk.Now())-time.Second)
		if l := r.limitOf("inv1"); l != 100 {
			t.Fatalf("day %d: inv1 at %g %% before the window", day+1, l)
		}
		r.step(clk, time.Second)
		r.await(fmt.Sprintf("40 %% on both on day %d", day+1), 3*time.Second, func() bool { return r.limitOf("inv1") == 40 && r.limitOf("inv2") == 40 })
		if c := r.command(sched.ScheduleID, 0); !c.Start.Equal(start) || c.Status != gridcontrol.StatusActive {
			t.Fatalf("day %d: listed window %s (%s), want %s active", day+1, c.Start, c.Status, start)
		}
		r.step(clk, end.Sub(clk.Now()))
		for range 5 {
			r.step(clk, 200*time.Millisecond)
		}
		r.await(fmt.Sprintf("100 %% after day %d's window", day+1), 3*time.Second, func() bool { return r.limitOf("inv1") == 100 && r.limitOf("inv2") == 100 })
		r.await(fmt.Sprintf("day %d's window logged as ended", day+1), 3*time.Second, func() bool {
			return r.logHas("RecurringWindowEnded", sched.ScheduleID, start.UTC().Format(time.RFC3339), "done", "applied at")
		})
		if c := r.command(sched.ScheduleID, 0); !c.Start.Equal(start.Add(24*time.Hour)) || c.Status != gridcontrol.StatusPending {
			t.Fatalf("after day %d: listed window %s (%s), want the next day's pending", day+1, c.Start, c.Status)
		}
	}

	checkAudit := func(when string) {
		t.Helper()
		if c := r.command(sched.ScheduleID, 0); len(c.Finished) != 0 || len(c.Writes) != 0 {
			t.Fatalf("%s: the default list shows the audit (%d finished, %d writes)", when, len(c.Finished), len(c.Writes))
		}
		list, err := r.controller().Schedules("demo", gridcontrol.IncludeFinished(true))
		if err != nil {
			t.Fatal(err)
		}
		var cm gridcontrol.ScheduledCmd
		for _, s := range list {
			if s.ScheduleID == sched.ScheduleID {
				cm = s.Commands[0]
			}
		}
		if len(cm.Finished) != 3 {
			t.Fatalf("%s: %d finished windows, want 3", when, len(cm.Finished))
		}
		for day, o := range cm.Finished {
			if want := first.Add(time.Duration(day) * 24 * time.Hour); !o.Start.Equal(want) || o.Status != gridcontrol.StatusDone || o.AppliedAt == nil {
				t.Fatalf("%s: finished window %d: %+v, want start %s, done and applied", when, day, o, want)
			}
			for _, dev := range []string{"inv1", "inv2"} {
				found := false
				for _, w := range o.Writes {
					for _, p := range w.Points {
						if w.DeviceID == dev && p.Point == "WMaxLimPct" && p.Value == 40 && p.ReadBack != nil && *p.ReadBack == 40 && !w.ReadBackAt.Before(o.Start) {
							found = true
						}
					}
				}
				if !found {
					t.Fatalf("%s: finished window %d: no write of WMaxLimPct 40 read back on %s: %+v", when, day, dev, o.Writes)
				}
			}
		}
	}
	checkAudit("after three days")

	// A restart on the same store keeps the audit.
	r.stop()
	r.start()
	r.await("the schedule loaded again", 5*time.Second, func() bool {
		list, _ := r.controller().Schedules("demo")
		return len(list) == 1
	})
	checkAudit("after a restart")

	// The fourth window, cancelled inside: it ends now, no fifth starts.
	start := first.Add(3 * 24 * time.Hour)
	r.step(clk, start.Sub(clk.Now()))
	r.await("40 % on both in the fourth window", 3*time.Second, func() bool { return r.limitOf("inv1") == 40 && r.limitOf("inv2") == 40 })
	if err := r.controller().Cancel(context.Background(), "demo", sched.ScheduleID, gridOperator); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		r.step(clk, 200*time.Millisecond)
	}
	r.await("100 % after the cancel", 3*time.Second, func() bool { return r.limitOf("inv1") == 100 && r.limitOf("inv2") == 100 })
	c = r.command(sched.ScheduleID, 0)
	if !c.Cancelled || c.Status != gridcontrol.StatusDone || len(c.Next) != 0 {
		t.Fatalf("after the cancel: %+v", c)
	}
	before := r.controller().Stats().Writes
	r.step(clk, 24*time.Hour)
	r.step(clk, time.Minute)
	if l := r.limitOf("inv1"); l != 100 {
		t.Fatalf("the fifth day: inv1 at %g %% after the cancel", l)
	}
	if w := r.controller().Stats().Writes; w != before {
		t.Fatalf("the fifth day: %d writes after the cancel", w-before)
	}
	r.await("the cancel logged", 3*time.Second, func() bool { return r.logHas("ScheduleCancelled", sched.ScheduleID) })
}

// TestCancelRoles: an installer cannot cancel a grid operator's schedule;
// an unknown schedule is named.
func TestCancelRoles(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{stepped: true, clockAt: noon.UTC()})
	s, err := r.controller().SubmitJSON(context.Background(), "demo", gridOperator, []byte(body(recurringCmd("0 11 * * *", "4h", 60))))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.controller().Cancel(context.Background(), "demo", s.ScheduleID, installer); !errors.Is(err, gridcontrol.ErrNotPermitted) {
		t.Fatalf("installer cancels the grid operator's schedule: %v", err)
	}
	if err := r.controller().Cancel(context.Background(), "demo", "nope", gridOperator); !errors.Is(err, gridcontrol.ErrUnknownSchedule) {
		t.Fatalf("unknown schedule: %v", err)
	}
	if err := r.controller().Cancel(context.Background(), "demo", s.ScheduleID, gridOperator); err != nil {
		t.Fatal(err)
	}
}

// TestRecurringAcrossDowntime: plantd down for longer than finished
// schedules are kept: the recurring schedule still stands after the
// restart (not pruned as finished), its window moved on to the next
// occurrence; the missed ones are not replayed nor listed as finished.
func TestRecurringAcrossDowntime(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{stepped: true, clockAt: noon.UTC(), cfg: gridcontrol.Config{KeepFinished: 24 * time.Hour}})
	clk := r.clk
	first := clk.Now().Add(10 * time.Minute)
	sched := r.mustSubmit(body(recurringCmd(fmt.Sprintf("%d %d * * *", first.Minute(), first.Hour()), "1h", 40)))
	r.stop()
	clk.Advance(3 * 24 * time.Hour) // no loop runs: nothing to wait for
	r.start()
	want := first.Add(3 * 24 * time.Hour)
	r.await("the schedule loaded and moved on", 5*time.Second, func() bool {
		list, _ := r.controller().Schedules("demo")
		return len(list) == 1 && list[0].Commands[0].Start.Equal(want)
	})
	list, err := r.controller().Schedules("demo", gridcontrol.IncludeFinished(true))
	if err != nil {
		t.Fatal(err)
	}
	if c := list[0].Commands[0]; list[0].ScheduleID != sched.ScheduleID || len(c.Finished) != 0 || c.Status != gridcontrol.StatusPending {
		t.Fatalf("after the downtime: %+v", c)
	}
	if l := r.limitOf("inv1"); l != 100 {
		t.Fatalf("a missed window replayed: inv1 at %g %%", l)
	}
}

// TestCancelledAndLateStatus: a window cancelled before its start is
// listed as done (it will never run), not pending; a window sent after its
// start is due when it came, so applying it at once is not late.
func TestCancelledAndLateStatus(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{stepped: true, clockAt: noon.UTC(), cfg: gridcontrol.Config{LateAfter: 30 * time.Second}})
	clk := r.clk
	now := clk.Now()

	future := r.mustSubmit(body(limitCmd("opModMaxLimW", now.Add(time.Hour), now.Add(2*time.Hour), 50)))
	if err := r.controller().Cancel(context.Background(), "demo", future.ScheduleID, installer); err != nil {
		t.Fatal(err)
	}
	if c := r.command(future.ScheduleID, 0); c.Status != gridcontrol.StatusDone || !c.Cancelled || !strings.Contains(c.Reason, "cancelled by") {
		t.Fatalf("a window cancelled before its start: status %s, cancelled %v, reason %q", c.Status, c.Cancelled, c.Reason)
	}

	// Started ten minutes ago, ten times LateAfter: due when it came.
	begun := r.mustSubmit(body(limitCmd("opModMaxLimW", now.Add(-10*time.Minute), now.Add(time.Hour), 60)))
	r.await("the begun window applied", 15*time.Second, func() bool { return r.command(begun.ScheduleID, 0).AppliedAt != nil })
	if c := r.command(begun.ScheduleID, 0); c.Late || c.Status != gridcontrol.StatusActive {
		t.Fatalf("a window sent after its start and applied at once: status %s, late %v (%s)", c.Status, c.Late, c.Reason)
	}
}

// TestExtend: a renewing master moves its window's end instead of sending
// a new schedule: the list keeps one schedule, the end moves later (never
// earlier), a restart keeps it, a lower role may not extend, and a window
// over (or a recurring one) is not extended.
func TestExtend(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{stepped: true, clockAt: noon.UTC()})
	clk := r.clk
	now := clk.Now()
	s, err := r.controller().SubmitJSON(context.Background(), "demo", gridOperator, []byte(body(limitCmd("opModMaxLimW", now, now.Add(time.Minute), 30))))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	later := now.Add(10 * time.Minute)
	if err := r.controller().Extend(ctx, "demo", s.ScheduleID, later, installer); !errors.Is(err, gridcontrol.ErrNotPermitted) {
		t.Fatalf("an installer extends the grid operator's window: %v", err)
	}
	if err := r.controller().Extend(ctx, "demo", s.ScheduleID, later, gridOperator); err != nil {
		t.Fatal(err)
	}
	if err := r.controller().Extend(ctx, "demo", s.ScheduleID, now.Add(2*time.Minute), gridOperator); err != nil {
		t.Fatal(err)
	}
	list, err := r.controller().Schedules("demo")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || !list[0].Commands[0].End.Equal(later) {
		t.Fatalf("after extending to %s and then to an earlier end: %+v", later, list)
	}
	r.stop()
	r.start()
	r.await("the extended window loaded", 5*time.Second, func() bool {
		list, _ := r.controller().Schedules("demo")
		return len(list) == 1 && list[0].Commands[0].End.Equal(later)
	})

	clk.Advance(11 * time.Minute)
	if err := r.controller().Extend(ctx, "demo", s.ScheduleID, clk.Now().Add(time.Minute), gridOperator); !errors.Is(err, gridcontrol.ErrUnknownSchedule) {
		t.Fatalf("extending a window that is over: %v", err)
	}
	rec := r.mustSubmit(body(recurringCmd("0 11 * * *", "1h", 60)))
	if err := r.controller().Extend(ctx, "demo", rec.ScheduleID, clk.Now().Add(48*time.Hour), installer); !errors.Is(err, gridcontrol.ErrUnknownSchedule) {
		t.Fatalf("extending a recurring command: %v", err)
	}
}
