package modbus

import (
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	const (
		minWait = 200 * time.Millisecond
		maxWait = 30 * time.Second
	)
	tests := []struct {
		failures int
		r        float64
		want     time.Duration
	}{
		{0, 0.5, 0},
		{1, 0.5, 0}, // the first reconnect is immediate
		{1, 0.99, 0},
		{2, 0.5, 200 * time.Millisecond},
		{3, 0.5, 400 * time.Millisecond},
		{4, 0.5, 800 * time.Millisecond},
		{9, 0.5, 25600 * time.Millisecond},
		{10, 0.5, maxWait}, // 51.2s capped
		{1000, 0.5, maxWait},
		{2, 0, 160 * time.Millisecond}, // -20%
		{2, 0.75, 220 * time.Millisecond},
		{4, 0, 640 * time.Millisecond},
		{1000, 0, 24 * time.Second}, // jitter below the cap
		{1000, 0.999, maxWait},      // never above the cap
	}
	for _, tt := range tests {
		got := backoffDelay(tt.failures, minWait, maxWait, tt.r)
		if diff := got - tt.want; diff < -time.Microsecond || diff > time.Microsecond {
			t.Errorf("backoffDelay(%d, r=%v) = %v, want %v", tt.failures, tt.r, got, tt.want)
		}
	}
	// Jitter stays within ±20% over the whole range of r.
	for r := 0.0; r < 1; r += 0.01 {
		got := backoffDelay(3, minWait, maxWait, r)
		if got < 320*time.Millisecond || got > 480*time.Millisecond {
			t.Errorf("backoffDelay(3, r=%v) = %v, want 400ms ±20%%", r, got)
		}
	}
	if got := backoffDelay(80, time.Hour, 1<<62, 0.5); got != 1<<62 {
		t.Errorf("huge max: %v", got)
	}
}
