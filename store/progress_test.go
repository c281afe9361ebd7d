package store

import (
	"testing"
	"time"
)

// TestProgress: zero before Run, then advancing at least once a second
// while the writer is idle.
func TestProgress(t *testing.T) {
	s := openTest(t, Config{})
	if p := s.Progress(); !p.IsZero() {
		t.Fatalf("Progress before Run: %v", p)
	}
	runStore(t, s)
	deadline := time.Now().Add(10 * time.Second)
	for s.Progress().IsZero() {
		if time.Now().After(deadline) {
			t.Fatal("no progress 10 s after Run")
		}
		time.Sleep(10 * time.Millisecond)
	}
	first := s.Progress()
	for !s.Progress().After(first.Add(500 * time.Millisecond)) {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("an idle writer stopped going round: progress stuck at %v", first)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
