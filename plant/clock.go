package plant

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultJumpThreshold is how far the wall clock may move against the
// monotonic clock before Clock calls it a jump.
const DefaultJumpThreshold = 5 * time.Second

// ClockConfig configures a Clock. Zero fields take the defaults.
type ClockConfig struct {
	// Wall is the wall clock (default time.Now).
	Wall func() time.Time
	// Mono is a monotonic clock: the time elapsed since some fixed
	// instant (default: time.Since of the Clock's creation, which Go
	// measures on the monotonic clock).
	Mono func() time.Duration
	// JumpThreshold (default DefaultJumpThreshold).
	JumpThreshold time.Duration
	// Logger gets one line per jump (nil: none).
	Logger *slog.Logger
}

// Clock stamps samples: the wall time of an anchor plus the monotonic time
// elapsed since, so that stamps advance steadily whatever small steps the
// wall clock takes. Every Now compares the two; when the wall clock has
// moved more than JumpThreshold away (a board without a real-time clock
// that started in 1970 and got NTP, an operator setting the date, a bad
// time server), the jump is logged and counted, and Clock re-anchors on
// the wall clock: the wall is the only source of the date. Now is safe for
// concurrent use.
type Clock struct {
	cfg   ClockConfig
	mu    sync.Mutex
	wall0 time.Time     // wall time at the anchor
	mono0 time.Duration // Mono at the anchor
	jumps atomic.Uint64
}

// NewClock returns a Clock anchored at the wall clock's now.
func NewClock(cfg ClockConfig) *Clock {
	if cfg.Wall == nil {
		cfg.Wall = time.Now
	}
	if cfg.Mono == nil {
		start := time.Now()
		cfg.Mono = func() time.Duration { return time.Since(start) }
	}
	if cfg.JumpThreshold <= 0 {
		cfg.JumpThreshold = DefaultJumpThreshold
	}
	c := &Clock{cfg: cfg}
	c.wall0, c.mono0 = cfg.Wall().Round(0), cfg.Mono()
	return c
}

// Now returns the anchored time (UTC), re-anchoring after a jump.
func (c *Clock) Now() time.Time {
	wall := c.cfg.Wall().Round(0) // the wall reading only
	mono := c.cfg.Mono()
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.wall0.Add(mono - c.mono0)
	off := wall.Sub(t)
	if off > c.cfg.JumpThreshold || off < -c.cfg.JumpThreshold {
		c.jumps.Add(1)
		if c.cfg.Logger != nil {
			dir := "forward"
			if off < 0 {
				dir = "back"
			}
			c.cfg.Logger.Warn("wall clock jumped "+dir+": samples follow it from now on",
				"from", t.UTC(), "to", wall.UTC(), "offset", off.String())
		}
		c.wall0, c.mono0, t = wall, mono, wall
	}
	return t.UTC()
}

// Jumps returns how many wall-clock jumps Now detected.
func (c *Clock) Jumps() uint64 { return c.jumps.Load() }
