package store

import (
	"testing"
	"time"

	"plantd/internal/proctest"
)

// TestProgress: zero before Run, then advancing at least once a second
// while the writer is idle.
func TestProgress(t *testing.T) {
	s := openTest(t, Config{})
	if p := s.Progress(); !p.IsZero() {
		t.Fatalf("Progress before Run: %v", p)
	}
	runStore(t, s)
	proctest.WaitFor(t, "progress after Run", 10*time.Second, func() bool { return !s.Progress().IsZero() })
	first := s.Progress()
	proctest.WaitValue(t, "an idle writer going round (last: its progress)", 10*time.Second, func() (time.Time, bool) {
		p := s.Progress()
		return p, p.After(first.Add(500 * time.Millisecond))
	})
}
