package gridcontrol

import (
	"slices"
	"sort"
	"time"

	"github.com/robfig/cron/v3"
)

// Clock is the controller's time: what time it is, and a timer on it. The
// control cycle, the ramp, renewals and the window edges all run on it,
// so that a test can step a window through in simulated time and the
// demo's simulated clock governs the demo's schedules.
type Clock interface {
	Now() time.Time
	// After delivers once d has passed on the clock.
	After(d time.Duration) <-chan time.Time
}

// wallClock is the system's clock, the default. The run loop treats it as
// any other clock (see edges).
type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// FuncClock is a clock that reads the time from now and whose timers run
// on the system's: the demo's simulated plant clock (its timers then wait
// at most a cycle, in which the control cycle looks at now again).
func FuncClock(now func() time.Time) Clock { return funcClock(now) }

type funcClock func() time.Time

func (f funcClock) Now() time.Time                         { return f() }
func (f funcClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// once is a cron schedule that fires at one time.
type once time.Time

func (o once) Next(t time.Time) time.Time {
	if time.Time(o).After(t) {
		return time.Time(o)
	}
	return time.Time{}
}

// edge is a window edge armed on the controller's clock: sched names its
// times (robfig/cron's Schedule: once for a window's start or end), next
// the first not yet fired, job what runs then (with the time it was due;
// called with c.mu held).
type edge struct {
	plant string
	sched cron.Schedule
	next  time.Time
	job   func(due time.Time)
}

// edges are the controller's armed edges, sorted by next: the one mechanism
// for window edges on every clock. The run loop arms one timer on the
// controller's clock for the nearest (never longer than a cycle, so a
// wall clock stepped or suspended is looked at again within a cycle) and,
// at every wake, fires each edge the clock passed: once, in time order,
// however far the clock jumped (a spec passed several times fires once,
// then waits for its next time after now: its job wakes the cycle, which
// judges the windows at now). No goroutine, no timer per edge. Guarded by
// c.mu.
type edges struct{ list []edge }

// replace arms a plant's edges anew: add replaces every edge of plant,
// and those whose schedule names no time after now are dropped.
func (e *edges) replace(plant string, now time.Time, add []edge) {
	e.list = slices.DeleteFunc(e.list, func(x edge) bool { return x.plant == plant })
	for _, x := range add {
		if x.next = x.sched.Next(now); !x.next.IsZero() {
			e.list = append(e.list, x)
		}
	}
	e.sort()
}

func (e *edges) sort() {
	l := e.list // sort.SliceStable: no sort instantiated for edge (binary size)
	sort.SliceStable(l, func(i, j int) bool { return l[i].next.Before(l[j].next) })
}

// nearest is the time of the next edge (false: none armed).
func (e *edges) nearest() (time.Time, bool) {
	if len(e.list) == 0 {
		return time.Time{}, false
	}
	return e.list[0].next, true
}

// fire runs, in time order, the job of every edge due at or before now,
// each once, and moves it on to its schedule's next time after now (an
// edge with none is dropped). It returns how many fired.
func (e *edges) fire(now time.Time) int {
	n := 0
	for n < len(e.list) && !e.list[n].next.After(now) {
		n++
	}
	if n == 0 {
		return 0
	}
	for i := range n {
		x := &e.list[i]
		x.job(x.next)
		x.next = x.sched.Next(now)
	}
	e.list = slices.DeleteFunc(e.list, func(x edge) bool { return x.next.IsZero() })
	e.sort()
	return n
}
