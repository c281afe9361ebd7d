package proctest

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTB records a Fatalf instead of ending the test, so the failure path
// can be checked. Fatalf returns, unlike testing's: WaitValue returns
// after it.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestWaitFor(t *testing.T) {
	tests := []struct {
		name     string
		holdsAt  int64 // the call at which cond first holds; 0: never
		timeout  time.Duration
		wantFail string
	}{
		{name: "at once", holdsAt: 1, timeout: time.Second},
		{name: "after some polls", holdsAt: 5, timeout: 10 * time.Second},
		{name: "never", timeout: 20 * time.Millisecond, wantFail: "timed out after 20ms waiting for the thing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			tb := &fakeTB{TB: t}
			start := time.Now()
			WaitFor(tb, "the thing", tt.timeout, func() bool {
				n := calls.Add(1)
				return tt.holdsAt > 0 && n >= tt.holdsAt
			})
			if tb.failed != tt.wantFail {
				t.Errorf("failure %q, want %q", tb.failed, tt.wantFail)
			}
			if tt.holdsAt > 0 && calls.Load() != tt.holdsAt {
				t.Errorf("cond called %d times, want %d (no call after it held)", calls.Load(), tt.holdsAt)
			}
			if tt.wantFail != "" && time.Since(start) < tt.timeout {
				t.Errorf("gave up after %v, before the timeout %v", time.Since(start), tt.timeout)
			}
		})
	}
}

func TestWaitValue(t *testing.T) {
	var n atomic.Int64
	tb := &fakeTB{TB: t}
	got := WaitValue(tb, "three", 10*time.Second, func() (int64, bool) {
		v := n.Add(1)
		return v, v == 3
	})
	if got != 3 || tb.failed != "" {
		t.Errorf("got %d (failure %q), want 3", got, tb.failed)
	}

	tb = &fakeTB{TB: t}
	WaitValue(tb, "a big count", 10*time.Millisecond, func() (int, bool) { return 7, false })
	if !strings.Contains(tb.failed, "waiting for a big count; last 7") {
		t.Errorf("failure %q does not name the condition and the last value", tb.failed)
	}
}
