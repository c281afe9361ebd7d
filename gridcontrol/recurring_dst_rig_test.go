package gridcontrol_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"plantd/gridcontrol"
)

// TestRecurringOverDST: a daily 4 h window at 02:xx Berlin time, posted
// on the controller's clock two weeks before each clock change, is
// accepted and runs once on the change's day: on the fall-back day from
// the first 02:15 (CEST) through the second without a new window, on the
// spring-forward day from 03:00 CEST (the first valid time after the
// skipped 02:30); both inverters take the limit and ramp back at its end,
// the window is filed once, and the next one is the following day's.
func TestRecurringOverDST(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		posted time.Time
		spec   string
		start  time.Time // the change day's window (UTC)
		next   time.Time // the day after's
		second time.Time // inside the window: the repeated wall time, or the skipped one's own time
	}{
		{name: "fall back", posted: time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC), spec: "CRON_TZ=Europe/Berlin 15 2 * * *",
			start: time.Date(2026, 10, 25, 0, 15, 0, 0, time.UTC), next: time.Date(2026, 10, 26, 1, 15, 0, 0, time.UTC),
			second: time.Date(2026, 10, 25, 1, 15, 0, 0, time.UTC)},
		{name: "spring forward", posted: time.Date(2027, 3, 14, 12, 0, 0, 0, time.UTC), spec: "CRON_TZ=Europe/Berlin 30 2 * * *",
			start: time.Date(2027, 3, 28, 1, 0, 0, 0, time.UTC), next: time.Date(2027, 3, 29, 0, 30, 0, 0, time.UTC),
			second: time.Date(2027, 3, 28, 1, 30, 0, 0, time.UTC)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{stepped: true, clockAt: tc.posted, cfg: gridcontrol.Config{RampPctPerSecond: 100, Cycle: 200 * time.Millisecond}})
			clk := r.clk
			sched := r.mustSubmit(body(recurringCmd(tc.spec, "4h", 40)))

			// The day before the change: the window moved on to the
			// change's day, the listing's next is the day after's.
			r.step(clk, tc.start.Add(-time.Second).Sub(clk.Now()))
			c := r.command(sched.ScheduleID, 0)
			if !c.Start.Equal(tc.start) || !c.End.Equal(tc.start.Add(4*time.Hour)) || len(c.Next) == 0 || !c.Next[0].Start.Equal(tc.next) {
				t.Fatalf("before the change: window %s to %s, next %+v; want %s, next %s", c.Start, c.End, c.Next, tc.start, tc.next)
			}
			if l := r.limitOf("inv1"); l != 100 {
				t.Fatalf("inv1 at %g %% before the window", l)
			}
			r.step(clk, time.Second)
			r.await("40 % on both at the window's start", 3*time.Second, func() bool { return r.limitOf("inv1") == 40 && r.limitOf("inv2") == 40 })

			// The repeated (or skipped) wall time passes inside the
			// window: the same window, no new one.
			r.step(clk, tc.second.Sub(clk.Now()))
			r.step(clk, time.Second)
			if c := r.command(sched.ScheduleID, 0); !c.Start.Equal(tc.start) || c.Status != gridcontrol.StatusActive {
				t.Fatalf("at %s: window %s (%s), want %s active", clk.Now().UTC(), c.Start, c.Status, tc.start)
			}

			// Its end: back to 100 %, filed once, the next day's pending.
			r.step(clk, tc.start.Add(4*time.Hour).Sub(clk.Now()))
			for range 5 {
				r.step(clk, 200*time.Millisecond)
			}
			r.await("100 % after the window", 3*time.Second, func() bool { return r.limitOf("inv1") == 100 && r.limitOf("inv2") == 100 })
			r.await("the window logged as ended", 3*time.Second, func() bool {
				return r.logHas("RecurringWindowEnded", sched.ScheduleID, ts(tc.start), "done", "applied at", "next "+ts(tc.next))
			})
			list, err := r.controller().Schedules("demo", gridcontrol.IncludeFinished(true))
			if err != nil {
				t.Fatal(err)
			}
			cm := list[0].Commands[0]
			day := func(t time.Time) string { return t.In(mustLoc("Europe/Berlin")).Format(time.DateOnly) }
			var onDay []string
			for _, o := range cm.Finished {
				if day(o.Start) == day(tc.start) {
					onDay = append(onDay, fmt.Sprintf("%s %s", ts(o.Start), o.Status))
				}
			}
			if len(onDay) != 1 || onDay[0] != ts(tc.start)+" done" {
				t.Fatalf("finished windows on %s: %v, want the one at %s, done", day(tc.start), onDay, ts(tc.start))
			}
			if !cm.Start.Equal(tc.next) || cm.Status != gridcontrol.StatusPending {
				t.Fatalf("after the window: %s (%s), want %s pending", cm.Start, cm.Status, tc.next)
			}
			if err := r.controller().Cancel(context.Background(), "demo", sched.ScheduleID, installer); err != nil {
				t.Fatal(err)
			}
		})
	}
}
