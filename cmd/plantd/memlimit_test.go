package main

import (
	"runtime/debug"
	"testing"

	"plantd/config"
)

// TestSetMemoryLimit: the config's limit reaches the runtime; GOMEMLIMIT
// in the environment wins. (Not parallel: the limit is the process's.)
func TestSetMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	cfg := config.Default()
	cfg.Gateway.MemoryLimitMB = 96
	t.Setenv("GOMEMLIMIT", "")
	if got := setMemoryLimit(cfg); got != 96<<20 || debug.SetMemoryLimit(-1) != 96<<20 {
		t.Errorf("limit %d, runtime %d, want 96 MiB", got, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(200 << 20) // as the runtime would have from GOMEMLIMIT=200MiB
	t.Setenv("GOMEMLIMIT", "200MiB")
	if got := setMemoryLimit(cfg); got != 200<<20 {
		t.Errorf("with GOMEMLIMIT set: limit %d, want the environment's 200 MiB", got)
	}
}

// TestGOGCFor: GOGC keeps gcHeadroom of growth for a small live heap, up
// to 100, and defaultGOGC for a large one, in steps of 5.
func TestGOGCFor(t *testing.T) {
	for _, tt := range []struct {
		live uint64
		want int
	}{
		{0, 100}, {1 << 20, 100}, {6 << 20, 100}, {8 << 20, 75}, {12 << 20, 50}, {20 << 20, 30}, {24 << 20, 25}, {200 << 20, defaultGOGC},
	} {
		if got := gogcFor(tt.live); got != tt.want {
			t.Errorf("gogcFor(%d MiB) = %d, want %d", tt.live>>20, got, tt.want)
		}
	}
}
