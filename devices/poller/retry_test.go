package poller

import (
	"testing"
	"time"
)

// TestRetryWait checks the wait after consecutive failed polls: the
// interval twice, then doubling up to MaxRetryWait, never below the
// interval.
func TestRetryWait(t *testing.T) {
	const s = time.Second
	tests := []struct {
		interval time.Duration
		failures int
		want     time.Duration
	}{
		{5 * s, 1, 5 * s},
		{5 * s, 2, 5 * s},
		{5 * s, 3, 10 * s},
		{5 * s, 4, 20 * s},
		{5 * s, 5, MaxRetryWait},
		{5 * s, 1000, MaxRetryWait},
		{MinInterval, 1, MinInterval},
		{MinInterval, 3, 2 * MinInterval},
		{MinInterval, 7, 32 * MinInterval},
		{MinInterval, 8, 64 * MinInterval},
		{MinInterval, 9, MaxRetryWait},
		{time.Minute, 1, time.Minute}, // an interval above the cap: the interval
		{time.Minute, 9, time.Minute},
	}
	for _, tt := range tests {
		d := &device{cfg: DeviceConfig{Interval: tt.interval}, failures: tt.failures}
		if got := d.retryWait(); got != tt.want {
			t.Errorf("interval %v, %d failures: wait %v, want %v", tt.interval, tt.failures, got, tt.want)
		}
	}
}
