package gridcontrol_test

import (
	"sync"
	"testing"
	"time"

	"plantd/gridcontrol"
)

// stepClock is a clock a test moves by hand: its timers fire only when
// Advance passes them. Only the controller's run loop takes timers from
// it, and the loop waits on the latest one alone.
//
// Advance must not be lost on a loop that is not waiting when the clock
// moves (still in the cycle at the old time, or on its way into its
// select): a timer it takes later, from the new time, would never fire
// and the cycle at the new time would never run. So a timer's channel is
// unbuffered, and Advance hands the time over only to a loop receiving
// on it; a loop that was not is woken by its next timer, which fires at
// once. ran, closed at the loop's first timer after it was woken, tells
// the test that the cycle at the new time has run.
type stepClock struct {
	mu     sync.Mutex
	now    time.Time
	cur    *stepWaiter   // the latest timer: the one the loop waits on
	missed bool          // an Advance found the loop busy: its next timer fires at once
	woken  bool          // the loop was woken since the last Advance
	ran    chan struct{} // closed at the loop's first timer after it was woken
	stop   chan struct{} // closed when the test ends
}

type stepWaiter struct {
	at   time.Time
	ch   chan time.Time
	gone chan struct{} // closed when a later timer replaces this one
}

func newStepClock(tb testing.TB, t time.Time) *stepClock {
	c := &stepClock{now: t, ran: make(chan struct{}), stop: make(chan struct{})}
	close(c.ran)
	tb.Cleanup(func() { close(c.stop) })
	return c
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil {
		close(c.cur.gone)
		c.cur = nil
	}
	if c.woken {
		select {
		case <-c.ran:
		default:
			close(c.ran)
		}
	}
	if c.missed {
		// The loop was busy when the clock moved: wake it now, so it runs
		// a cycle at the new time.
		c.missed, c.woken = false, true
		d = 0
	}
	if d <= 0 {
		ch := make(chan time.Time, 1)
		ch <- c.now
		return ch
	}
	c.cur = &stepWaiter{at: c.now.Add(d), ch: make(chan time.Time), gone: make(chan struct{})}
	return c.cur.ch
}

// timer is when the loop's timer fires (false: the loop is not waiting
// on one).
func (c *stepClock) timer() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil {
		return time.Time{}, false
	}
	return c.cur.at, true
}

// Advance moves the clock by d and fires the loop's timer if the clock
// passed it. The returned channel is closed once the loop has run a
// cycle at the new time (see stepClock).
func (c *stepClock) Advance(d time.Duration) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.woken, c.missed = false, false
	c.ran = make(chan struct{})
	w := c.cur
	if w == nil {
		c.missed = true // busy in a cycle at the old time
		return c.ran
	}
	if w.at.After(c.now) {
		// Not due. A loop woken by a submit and busy in a cycle is woken
		// at its next timer; one that waits for a later time stays, and a
		// step that ends before that time is the test's mistake.
		c.missed = true
		return c.ran
	}
	select {
	case w.ch <- c.now:
		c.woken = true
		c.cur = nil
		return c.ran
	default:
	}
	// Not receiving yet: on its way into its select, or woken by a submit
	// and busy in a cycle. Hand the time over when it receives, and wake
	// it at its next timer in case it never does.
	c.missed = true
	now, ran := c.now, c.ran
	go func() {
		select {
		case w.ch <- now:
			c.mu.Lock()
			if c.ran == ran {
				c.woken, c.missed = true, false
			}
			c.mu.Unlock()
		case <-w.gone:
		case <-c.stop:
		}
	}()
	return c.ran
}

// step advances the clock by d and waits until the controller's run loop
// has run its cycle at the new time (its writes included; the bound only
// ends a test whose controller hangs); with the controller stopped it
// only moves the clock. A stepped rig then polls every device.
func (r *rig) step(clk *stepClock, d time.Duration) {
	r.t.Helper()
	ran := clk.Advance(d)
	r.mu.Lock()
	running := r.cancel != nil
	r.mu.Unlock()
	if running {
		select {
		case <-ran:
		case <-time.After(30 * time.Second):
			r.t.Fatalf("after 30s: still not the cycle at the new time (did the step pass the loop's next timer?)")
		}
	}
	if r.polled != nil {
		r.poll()
	}
}

// TestWindowSteppedOnInjectedClock: the controller on an injected clock
// runs an hour's window in a few seconds: the window's start and end (edges
// fired by the run loop on that clock, as on every clock), the renewals at half the
// reversion timeout and every step of the ramp happen when the clock is
// advanced, not before; statuses follow the clock.
func TestWindowSteppedOnInjectedClock(t *testing.T) {
	t.Parallel()
	clk := newStepClock(t, time.Now().Truncate(time.Second))
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
	r.await("40 % on both at the start on the injected clock", 3*time.Second, func() bool { return r.limitOf("inv1") == 40 && r.limitOf("inv2") == 40 })
	if c := r.command(sched.ScheduleID, 0); c.Status != gridcontrol.StatusActive {
		t.Errorf("status inside the window: %s", c.Status)
	}

	// Through the hour a minute at a time: every minute is past half the
	// reversion timeout (20 s), so each one renews both inverters.
	for i := range 59 {
		before := r.controller().Stats().Writes
		r.step(clk, time.Minute)
		if w := r.controller().Stats().Writes; w < before+2 {
			t.Fatalf("minute %d of the window: %d writes, want a renewal on both inverters (%d)", i+1, w-before, 2)
		}
	}
	if l1, l2 := r.limitOf("inv1"), r.limitOf("inv2"); l1 != 40 || l2 != 40 {
		t.Fatalf("at the end of the hour: %g and %g %%", l1, l2)
	}

	// The end: the ramp starts, and moves one cycle's step (20 %) each
	// time the clock passes a cycle, never on its own.
	r.step(clk, end.Sub(clk.Now()))
	for _, want := range []float64{60, 80, 100} {
		r.step(clk, 200*time.Millisecond)
		r.await("the next ramp step", 3*time.Second, func() bool { return r.limitOf("inv1") == want && r.limitOf("inv2") == want })
	}
	r.await("the limit restored on both", 3*time.Second, func() bool {
		return r.logHas("GridControlRestored", "inv1", "limit") && r.logHas("GridControlRestored", "inv2", "limit")
	})
	if c := r.command(sched.ScheduleID, 0); c.Status != gridcontrol.StatusDone {
		t.Errorf("status after the window: %s", c.Status)
	}
}

// TestEdgeArmedWhileTheLoopWaits: the run loop waits on one timer of the
// clock, here for a cycle of 10 s; a window submitted meanwhile that
// starts in 2 s re-arms it (the loop is kicked and waits for the new
// edge), so the clock reaching the start runs the cycle that writes the
// limit, 8 s before the cycle's own tick. A loop that kept its old timer
// would not run at 2 s (the step would hang); one that fired the edge late
// would write later.
func TestEdgeArmedWhileTheLoopWaits(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{stepped: true, cfg: gridcontrol.Config{Cycle: 10 * time.Second}})
	r.step(r.clk, 10*time.Second) // the loop waits for its next tick, 10 s ahead
	start := r.now().Add(2 * time.Second)
	r.mustSubmit(body(limitCmd("opModMaxLimW", start, start.Add(time.Hour), 30)))
	// The loop, kicked, waits on a timer for the start (the bound only
	// ends a test whose loop never does).
	look := time.NewTicker(time.Millisecond)
	defer look.Stop()
	for deadline := time.Now().Add(10 * time.Second); ; <-look.C {
		if at, ok := r.clk.timer(); ok && at.Equal(start) {
			break
		}
		if time.Now().After(deadline) {
			at, ok := r.clk.timer()
			t.Fatalf("the loop's timer at %v (waiting %v), want the window's start %v", at, ok, start)
		}
	}
	if l := r.limitOf("inv1"); l != 100 {
		t.Fatalf("inv1 at %g %% before the window", l)
	}
	r.step(r.clk, 2*time.Second)
	if l1, l2 := r.limitOf("inv1"), r.limitOf("inv2"); l1 != 30 || l2 != 30 {
		t.Fatalf("at the window's start: %g and %g %%, want 30 %% on both", l1, l2)
	}
	if st := r.controller().Stats(); st.Edges == 0 || len(st.EdgeToWrite) == 0 || st.EdgeToWrite[0] != 0 {
		t.Errorf("edges %d, edge to write %v: want the start's write in its cycle, at the edge's time on the clock", st.Edges, st.EdgeToWrite)
	}
}

// TestClockLeapsOverEdges: the clock leaps an hour (a stepped clock, a
// machine back from suspend) over two edges, the start of a 40 % window
// and the start of the 20 % one that follows it: the loop fires both,
// once, and the cycle at the new time writes the window open now, 20 %,
// never the 40 % the clock passed. Leaping past the end, the limit ramps
// back as at any end: no jump to the default.
func TestClockLeapsOverEdges(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{stepped: true, cfg: gridcontrol.Config{RampPctPerSecond: 10, Cycle: time.Second}})
	s1 := r.now().Add(time.Minute)
	s2, end := s1.Add(30*time.Minute), s1.Add(90*time.Minute)
	r.mustSubmit(body(limitCmd("opModMaxLimW", s1, s2, 40), limitCmd("opModMaxLimW", s2, end, 20)))
	r.stepTo(s1.Add(-time.Second))
	before := r.controller().Stats()
	r.step(r.clk, time.Hour) // to 29 min past s2
	if l1, l2 := r.limitOf("inv1"), r.limitOf("inv2"); l1 != 20 || l2 != 20 {
		t.Fatalf("after the leap: %g and %g %%, want the window open now, 20 %%", l1, l2)
	}
	for _, id := range []string{"inv1", "inv2"} {
		for _, w := range r.limitWrites(id, s1.Add(-time.Second)) {
			if w.LimitPct != 20 {
				t.Errorf("%s: %g %% written after the leap, want only 20 %%", id, w.LimitPct)
			}
		}
	}
	after := r.controller().Stats()
	if n := len(after.EdgeToWrite) - len(before.EdgeToWrite); n != 1 {
		t.Errorf("%d edge latencies from one leap over two edges, want 1 (the edges fire once, the write follows the later)", n)
	} else if d := after.EdgeToWrite[len(after.EdgeToWrite)-1]; d != r.now().Sub(s2) {
		t.Errorf("edge to write %s, want %s: from the later edge passed", d, r.now().Sub(s2))
	}
	// Past the end by an hour: one cycle's step of the ramp (10 % of a
	// second), not the default at once.
	r.step(r.clk, time.Hour)
	r.step(r.clk, time.Second)
	if l := r.limitOf("inv1"); l <= 20 || l > 30 {
		t.Errorf("a cycle after leaping past the end: %g %%, want one ramp step above 20 %%", l)
	}
}
