package gridcontrol

import "time"

// Clock is the controller's time: what time it is, and a timer on it. The
// control cycle, the ramp, renewals and the window boundaries all run on
// it, so that a test can step a window through in simulated time and the
// demo's simulated clock governs the demo's schedules.
type Clock interface {
	Now() time.Time
	// After delivers once d has passed on the clock.
	After(d time.Duration) <-chan time.Time
}

// wallClock is the system's clock. On it robfig/cron fires the window
// boundaries; on any other clock the run loop fires them itself from
// the same cron entries (see Controller.Run).
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
