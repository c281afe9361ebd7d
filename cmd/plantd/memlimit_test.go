package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"plantd/config"
	"plantd/internal/proctest"
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
// to maxGOGC, and defaultGOGC for a large one, in steps of 5.
func TestGOGCFor(t *testing.T) {
	for _, tt := range []struct {
		live uint64
		want int
	}{
		{0, 100}, {1 << 20, maxGOGC}, {4 << 20, maxGOGC}, {5 << 20, 120}, {6 << 20, 100}, {8 << 20, 75}, {12 << 20, 50}, {20 << 20, 30}, {24 << 20, 25}, {200 << 20, defaultGOGC},
	} {
		if got := gogcFor(tt.live); got != tt.want {
			t.Errorf("gogcFor(%d MiB) = %d, want %d", tt.live>>20, got, tt.want)
		}
	}
}

// TestBurstLimit: the heap at its goal with an eighth more, the stacks,
// the runtime's memory outside the heap and burstSlack; the heap's free
// and released pages and its unused room do not raise it.
func TestBurstLimit(t *testing.T) {
	const mb = 1 << 20
	for _, tt := range []struct {
		name string
		live uint64
		gogc int
		m    memUse
		want int64
	}{
		{"1,000 devices", 20 * mb, 25, memUse{total: 50 * mb, objects: 22 * mb, unused: 4 * mb, free: 2 * mb, released: 14 * mb, stacks: 1 * mb}, (25 + 3.125 + 1 + 7 + 2) * mb},
		{"free pages do not count", 20 * mb, 25, memUse{total: 60 * mb, objects: 22 * mb, unused: 4 * mb, free: 12 * mb, released: 14 * mb, stacks: 1 * mb}, (25 + 3.125 + 1 + 7 + 2) * mb},
		{"small plant", 4 * mb, 100, memUse{total: 20 * mb, objects: 5 * mb, unused: 1 * mb, free: 1 * mb, released: 8 * mb, stacks: mb / 2}, (8 + 2 + 0.5 + 4.5 + 1) * mb},
		{"total below the heap's classes", 4 * mb, 100, memUse{total: 1 * mb, objects: 5 * mb}, (8 + 2 + 1) * mb},
	} {
		if got := burstLimit(tt.live, tt.gogc, tt.m); got != tt.want {
			t.Errorf("%s: burstLimit = %.2f MiB, want %.2f", tt.name, float64(got)/mb, float64(tt.want)/mb)
		}
	}
}

// TestAdaptGOGCLimit: adaptGOGC lowers the soft memory limit from the
// config's to the burst limit of the heap as it is, and leaves an
// environment's GOMEMLIMIT alone. (Not parallel: the limit is the
// process's.)
func TestAdaptGOGCLimit(t *testing.T) {
	old, oldPct := debug.SetMemoryLimit(-1), debug.SetGCPercent(-1)
	defer func() { debug.SetMemoryLimit(old); debug.SetGCPercent(oldPct) }()
	debug.SetGCPercent(oldPct)
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	cfg := config.Default()
	cfg.Gateway.MemoryLimitMB = 4096
	setMemoryLimit(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { adaptGOGC(ctx, 10*time.Millisecond); close(done) }()
	proctest.WaitFor(t, "the burst limit below the config's", 10*time.Second, func() bool {
		return debug.SetMemoryLimit(-1) < 4096<<20
	})
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(sample)
	inUse := int64(sample[0].Value.Uint64() - sample[1].Value.Uint64())
	if limit := debug.SetMemoryLimit(-1); limit < inUse/2 || limit > inUse*4 {
		t.Errorf("burst limit %d MiB, the runtime holds %d MiB", limit>>20, inUse>>20)
	}
	cancel()
	<-done

	// GOMEMLIMIT set: the runtime's limit stays.
	debug.SetMemoryLimit(300 << 20)
	t.Setenv("GOMEMLIMIT", "300MiB")
	setMemoryLimit(cfg)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go adaptGOGC(ctx, time.Millisecond)
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
		if got := debug.SetMemoryLimit(-1); got != 300<<20 {
			t.Fatalf("with GOMEMLIMIT set: limit %d MiB, want 300", got>>20)
		}
		runtime.Gosched()
	}
}

// TestEndStartupAdapts: the end of start-up sets the live heap's GOGC at
// once, not at adaptGOGC's next period (here an hour away). (Not
// parallel: GOGC is the process's.)
func TestEndStartupAdapts(t *testing.T) {
	oldPct := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(oldPct)
	debug.SetGCPercent(oldPct)
	t.Setenv("GOGC", "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	go func() { adaptGOGC(ctx, time.Hour); close(done) }()
	beginStartupGC()
	if got := gcPercent(); got != startupGOGC {
		t.Fatalf("GOGC %d during start-up, want %d", got, startupGOGC)
	}
	endStartupGC()
	// The test binary's live heap is small: the adapted GOGC is maxGOGC, far
	// from defaultGOGC, which endStartupGC sets first.
	runtime.GC()
	want := gogcFor(liveHeap())
	if want == defaultGOGC {
		t.Fatalf("the test binary's live heap (%d bytes) adapts to defaultGOGC; the test cannot tell", liveHeap())
	}
	proctest.WaitFor(t, "GOGC adapted to the live heap", 10*time.Second, func() bool { return gcPercent() == want })
}

// gcPercent is the runtime's GOGC.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// liveHeap is the runtime's live heap after the last collection.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
