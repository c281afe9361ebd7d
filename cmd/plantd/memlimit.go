package main

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"plantd/config"
)

// setMemoryLimit applies the config's soft memory limit to the Go runtime
// (debug.SetMemoryLimit, as GOMEMLIMIT would), unless the GOMEMLIMIT
// environment variable is set: then the runtime took that at start and it
// stays. It returns the limit in effect.
func setMemoryLimit(cfg *config.Config) int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1)
	}
	limit := cfg.MemoryLimit()
	debug.SetMemoryLimit(limit)
	return limit
}

// startupGOGC is the GC percent from the start of plantd run until the
// start-up is over (endStartupGC), unless GOGC is set. Start-up builds
// the whole live heap at once (configuration, the store's catalog of every
// series, the discovery of every device, grid control's first load of the
// inverters' defaults) and leaves garbage behind while it does: 1,000
// devices at 1 s on 50 addresses (scripts/scale 1000 50) grew the heap
// from 7 to 21 MB in the first half second and to 26 MB in use in the
// first two, against a live heap of 18 MB after, and the pages the runtime
// took for it stayed resident. A collection at every tenth grown of the
// heap instead of every quarter keeps that overshoot small, for the few
// seconds that start-up takes.
const startupGOGC = 10

// startupGC is set while startupGOGC is in effect.
var startupGC atomic.Bool

// beginStartupGC applies startupGOGC unless the environment sets GOGC.
func beginStartupGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(startupGOGC)
		startupGC.Store(true)
	}
}

// endStartupGC ends the start-up's GC percent: back to defaultGOGC, and
// the heap's free pages are returned to the system at once rather than by
// the background scavenger over the next minutes. It does nothing when
// beginStartupGC did not apply, or after the first call.
func endStartupGC() {
	if startupGC.CompareAndSwap(true, false) {
		debug.SetGCPercent(defaultGOGC)
		debug.FreeOSMemory()
	}
}

// gcHeadroom is the least the heap may grow by between collections once
// start-up is over: GOGC is defaultGOGC (a quarter of the live heap) for
// a heap of more than 4 × gcHeadroom live, and up to 100 below that, so
// that a small plant's collector does not run four times as often as a
// large one's for the same garbage: the live API's requests (net/http
// allocates per request) then cost a small gateway as little as they cost
// a bare net/http server at Go's default, while 1,000 devices (a live
// heap of about 25 MB) keep GOGC 25 and their memory. Each collection's
// marking costs about the live heap, so a fixed headroom keeps the
// collector's share of the CPU per allocated byte bounded by
// live/headroom instead of 4 at any size. Measured side by side (load
// 9-12, scripts/livebench 100 and scripts/scale 100, packaged builds):
// the live API's CPU per request over a bare net/http server's fell from
// 1.53 to 1.31 (balance) and 1.34 to 1.15 (device list), medians of 3
// rounds; 100 devices' RSS rose from 20.3 to 23.8 MB at the same CPU
// (0.53 and 0.54 % of a core); 1,000 devices keep GOGC 25.
const gcHeadroom = 6 << 20

// adaptGOGC sets GOGC from the live heap every period until ctx ends
// (gcHeadroom), unless the environment sets GOGC. It changes the setting
// only in steps of 5 (debug.SetGCPercent stops the world for a moment).
func adaptGOGC(ctx context.Context, period time.Duration) {
	if os.Getenv("GOGC") != "" {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	cur := -1
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if startupGC.Load() {
			continue // start-up's own GOGC
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		want := gogcFor(sample[0].Value.Uint64())
		if want != cur {
			debug.SetGCPercent(want)
			cur = want
		}
	}
}

// gogcFor is the GOGC for a live heap of live bytes: gcHeadroom of it,
// in steps of 5, between defaultGOGC and 100.
func gogcFor(live uint64) int {
	if live == 0 {
		return 100
	}
	pct := int(gcHeadroom * 100 / live)
	pct -= pct % 5
	return max(defaultGOGC, min(100, pct))
}
