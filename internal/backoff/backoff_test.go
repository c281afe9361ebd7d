package backoff

import (
	"testing"
	"time"
)

func TestExpWait(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name string
		b    Exp
		n    int
		r    float64
		want time.Duration
	}{
		{"no failure", Exp{First: s, Max: 30 * s}, 0, 0, 0},
		{"negative count", Exp{First: s, Max: 30 * s}, -3, 0, 0},
		{"first", Exp{First: s, Max: 30 * s}, 1, 0, s},
		{"second doubles", Exp{First: s, Max: 30 * s}, 2, 0, 2 * s},
		{"fifth", Exp{First: s, Max: 30 * s}, 5, 0, 16 * s},
		{"capped", Exp{First: s, Max: 30 * s}, 6, 0, 30 * s},
		{"capped for ever", Exp{First: s, Max: 30 * s}, 1 << 20, 0, 30 * s},
		{"first above the cap", Exp{First: time.Minute, Max: 30 * s}, 1, 0, 30 * s},
		{"cap near the largest duration", Exp{First: time.Hour, Max: 1 << 62}, 80, 0, 1 << 62},
		{"zero never waits", Exp{}, 5, 0, 0},
		{"no cap never waits", Exp{First: s}, 5, 0, 0},
		{"jitter at r=0 keeps the wait", Exp{First: s, Max: 30 * s, Jitter: 0.5}, 3, 0, 4 * s},
		{"jitter shortens", Exp{First: s, Max: 30 * s, Jitter: 0.5}, 3, 0.5, 3 * s},
		{"jitter at most by its fraction", Exp{First: s, Max: 30 * s, Jitter: 0.5}, 3, 0.999999, 2*s + 2*time.Microsecond},
		{"jitter below the cap", Exp{First: s, Max: 30 * s, Jitter: 0.2}, 100, 0.5, 27 * s},
		{"jitter above 1 counts as 1", Exp{First: s, Max: 30 * s, Jitter: 3}, 1, 0.25, 750 * time.Millisecond},
		{"r out of range is clamped", Exp{First: s, Max: 30 * s, Jitter: 0.5}, 1, 7, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.b.Wait(tt.n, tt.r)
			if diff := got - tt.want; diff < -time.Microsecond || diff > time.Microsecond {
				t.Errorf("%+v.Wait(%d, %v) = %v, want %v", tt.b, tt.n, tt.r, got, tt.want)
			}
		})
	}
}

// TestExpWaitBounds checks over many counts and the whole range of r that
// a wait never exceeds Max, never grows with r, and never shrinks as
// failures go on.
func TestExpWaitBounds(t *testing.T) {
	b := Exp{First: 200 * time.Millisecond, Max: 30 * time.Second, Jitter: 0.5}
	for n := 1; n < 40; n++ {
		prev := time.Duration(1 << 62)
		for r := 0.0; r < 1; r += 0.05 {
			got := b.Wait(n, r)
			if got > b.Max || got < 0 || got > prev {
				t.Fatalf("Wait(%d, %v) = %v (previous r: %v)", n, r, got, prev)
			}
			prev = got
			if lo, hi := b.Wait(n, 0), b.Wait(n+1, 0); hi < lo {
				t.Fatalf("Wait(%d) = %v > Wait(%d) = %v", n, lo, n+1, hi)
			}
		}
	}
}
