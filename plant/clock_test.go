package plant

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"plantd/internal/proctest"
)

// TestClockJumps moves a Clock's wall clock both ways, beside a steady
// monotonic clock: small steps leave the stamps steady, jumps beyond the
// threshold are logged once each and followed.
func TestClockJumps(t *testing.T) {
	base := time.Date(1970, 1, 1, 0, 0, 10, 0, time.UTC) // a board without RTC
	var wallOff, mono atomic.Int64
	wall := func() time.Time { return base.Add(time.Duration(mono.Load() + wallOff.Load())) }
	var buf proctest.Buffer
	c := NewClock(ClockConfig{Wall: wall, Mono: func() time.Duration { return time.Duration(mono.Load()) },
		Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	step := func(d time.Duration) { mono.Add(int64(d)) }

	step(time.Second)
	if got := c.Now(); !got.Equal(base.Add(time.Second)) {
		t.Fatalf("now %v", got)
	}
	wallOff.Store(int64(2 * time.Second)) // an NTP step below the threshold
	step(time.Second)
	if got := c.Now(); !got.Equal(base.Add(2*time.Second)) || c.Jumps() != 0 {
		t.Fatalf("after a 2 s step: now %v, %d jumps; want the monotonic time", got, c.Jumps())
	}
	ntp := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	wallOff.Store(int64(ntp.Sub(base.Add(2 * time.Second)))) // NTP arrives
	if got := c.Now(); !got.Equal(ntp) || c.Jumps() != 1 {
		t.Fatalf("after NTP: now %v, %d jumps", got, c.Jumps())
	}
	step(5 * time.Second)
	if got := c.Now(); !got.Equal(ntp.Add(5 * time.Second)) {
		t.Fatalf("5 s after NTP: %v", got)
	}
	wallOff.Add(int64(-time.Hour)) // set back an hour
	if got := c.Now(); !got.Equal(ntp.Add(5*time.Second-time.Hour)) || c.Jumps() != 2 {
		t.Fatalf("after a jump back: now %v, %d jumps", got, c.Jumps())
	}
	for range 10 {
		step(time.Second)
		c.Now()
	}
	log := buf.String()
	if strings.Count(log, "wall clock jumped forward") != 1 || strings.Count(log, "wall clock jumped back") != 1 {
		t.Errorf("want one log line per jump:\n%s", log)
	}
}
