package gridcontrol_test

import (
	"sync"
	"testing"
	"time"

	"plantd/gridcontrol"
)

// stepClock is a clock a test moves by hand: its timers fire only when
// Advance passes them.
type stepClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []stepWaiter
	calls   int // After calls: the run loop calls it when it waits again
}

type stepWaiter struct {
	at time.Time
	ch chan time.Time
}

func newStepClock(t time.Time) *stepClock { return &stepClock{now: t} }

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, stepWaiter{at: c.now.Add(d), ch: ch})
	return ch
}

// Advance moves the clock by d and fires the timers it passed.
func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = kept
}

func (c *stepClock) afterCalls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// step advances the clock by d and waits until the controller's run loop
// waits on it again: the cycle at the new time has run (its writes
// included; the bound only ends a test whose controller hangs).
func (r *rig) step(clk *stepClock, d time.Duration) {
	r.t.Helper()
	n := clk.afterCalls()
	clk.Advance(d)
	r.waitFor(30*time.Second, "the cycle at the new time", func() bool { return clk.afterCalls() > n })
}

// TestWindowSteppedOnInjectedClock: the controller on an injected clock
// runs an hour's window in a few seconds: the window's start and end (cron
// entries fired by the run loop on that clock), the renewals at half the
// reversion timeout and every step of the ramp happen when the clock is
// advanced, not before; statuses follow the clock.
func TestWindowSteppedOnInjectedClock(t *testing.T) {
	t.Parallel()
	clk := newStepClock(time.Now().Truncate(time.Second))
	r := newRig(t, rigOpts{cfg: gridcontrol.Config{Clock: clk, RampPctPerSecond: 100, Cycle: 200 * time.Millisecond}})
	start := clk.Now().Add(10 * time.Minute)
	end := start.Add(time.Hour)
	sched := r.mustSubmit(body(limitCmd("opModMaxLimW", start, end, 40)))
	if c := r.command(sched.ScheduleID, 0); c.Status != gridcontrol.StatusPending {
		t.Fatalf("status before the start: %s", c.Status)
	}

	// Up to a second before the start: nothing is written.
	r.step(clk, start.Sub(clk.Now())-time.Second)
	if l := r.limitOf("inv1"); l != 100 {
		t.Fatalf("inv1 at %g %% before the window", l)
	}
	r.step(clk, time.Second)
	r.waitFor(3*time.Second, "40 % on both at the start on the injected clock", func() bool { return r.limitOf("inv1") == 40 && r.limitOf("inv2") == 40 })
	if c := r.command(sched.ScheduleID, 0); c.Status != gridcontrol.StatusActive {
		t.Errorf("status inside the window: %s", c.Status)
	}

	// Through the hour a minute at a time: every minute is past half the
	// reversion timeout (20 s), so each one renews both inverters.
	for range 59 {
		before := r.controller().Stats().Writes
		clk.Advance(time.Minute)
		r.waitFor(3*time.Second, "a renewal on both inverters", func() bool { return r.controller().Stats().Writes >= before+2 })
	}
	if l1, l2 := r.limitOf("inv1"), r.limitOf("inv2"); l1 != 40 || l2 != 40 {
		t.Fatalf("at the end of the hour: %g and %g %%", l1, l2)
	}

	// The end: the ramp starts, and moves one cycle's step (20 %) each
	// time the clock passes a cycle, never on its own.
	r.step(clk, end.Sub(clk.Now()))
	for _, want := range []float64{60, 80, 100} {
		r.step(clk, 200*time.Millisecond)
		r.waitFor(3*time.Second, "the next ramp step", func() bool { return r.limitOf("inv1") == want && r.limitOf("inv2") == want })
	}
	r.waitFor(3*time.Second, "the limit restored on both", func() bool {
		return r.logHas("GridControlRestored", "inv1", "limit") && r.logHas("GridControlRestored", "inv2", "limit")
	})
	if c := r.command(sched.ScheduleID, 0); c.Status != gridcontrol.StatusDone {
		t.Errorf("status after the window: %s", c.Status)
	}
}
