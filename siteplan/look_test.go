package siteplan

import (
	"testing"
	"time"
)

// TestLookWait: the runner looks every lookEvery of the plan's clock, so
// that on a demo's fast clock (--speed 288: 10 s of wall clock were 48
// simulated minutes, and a slot's setpoint, ending a minute after its
// slot, lapsed for two slots in three: scripts/plan-days) the next slot's
// plan still comes in time; never more often than minLook of the wall
// clock, never less often than lookEvery.
func TestLookWait(t *testing.T) {
	for _, tc := range []struct {
		name        string
		wall, clock time.Duration
		want        time.Duration
	}{
		{"the wall clock", 10 * time.Second, 10 * time.Second, lookEvery},
		{"a slower clock", 10 * time.Second, 5 * time.Second, lookEvery},
		{"a stopped clock", 10 * time.Second, 0, lookEvery},
		{"no wall time yet", 0, time.Minute, lookEvery},
		{"10 times the wall clock", time.Second, 10 * time.Second, time.Second},
		{"--speed 60", time.Second, time.Minute, lookEvery / 60},
		{"--speed 288: bounded by minLook", 10 * time.Second, 48 * time.Minute, minLook},
		{"a clock stepped back", time.Second, -time.Hour, lookEvery},
	} {
		if got := lookWait(tc.wall, tc.clock); got != tc.want {
			t.Errorf("%s: lookWait(%v, %v) = %v, want %v", tc.name, tc.wall, tc.clock, got, tc.want)
		}
	}
}
