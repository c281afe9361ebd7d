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
		configuredLimit.Store(0)
		return debug.SetMemoryLimit(-1)
	}
	limit := cfg.MemoryLimit()
	configuredLimit.Store(limit)
	debug.SetMemoryLimit(limit)
	return limit
}

// configuredLimit is the limit setMemoryLimit applied; adaptGOGC's burst
// limit never exceeds it. 0: the environment's GOMEMLIMIT, left as it is.
var configuredLimit atomic.Int64

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
		// adaptGOGC sets the live heap's GOGC now, not at its next
		// period: a small plant would run its first seconds after
		// start-up at defaultGOGC, four times the collections its
		// live API needs (2,100 answers per collection at 100 devices
		// after, 700 before).
		select {
		case adaptNow <- struct{}{}:
		default:
		}
	}
}

// adaptNow makes adaptGOGC adapt at once.
var adaptNow = make(chan struct{}, 1)

// gcHeadroom is how much the heap may grow between collections once
// start-up is over: GOGC is defaultGOGC (a quarter of the live heap) for
// a heap of more than 4 × gcHeadroom live, and more below that, up to
// maxGOGC, so that a small plant's collector does not run four times as
// often as a large one's for the same garbage: the live API's requests
// (net/http allocates per request) then cost a small gateway about what
// they cost a bare net/http server, while 1,000 devices (a live heap of
// about 25 MB) keep GOGC 25 and their memory. Each collection's marking
// costs about the live heap, so a fixed headroom keeps the collector's
// share of the CPU per allocated byte bounded by live/headroom instead of
// 4 at any size. Measured side by side (load 9-12, scripts/livebench 100
// and scripts/scale 100, packaged builds), a headroom instead of
// defaultGOGC: the live API's CPU per request over a bare net/http
// server's fell from 1.53 to 1.31 (balance) and 1.34 to 1.15 (device
// list), medians of 3 rounds; 100 devices' RSS rose from 20.3 to 23.8 MB
// at the same CPU (0.53 and 0.54 % of a core); 1,000 devices keep GOGC 25.
const gcHeadroom = 6 << 20

// maxGOGC caps GOGC for a small live heap: at 150, Go's own minimum heap
// goal (4 MB × GOGC/100) is gcHeadroom, and 2.5 × the live heap stays
// within the live heap and gcHeadroom up to 4 MB live, where the cap
// binds: no plant's heap goal exceeds its live data and gcHeadroom more.
// The cap was 100 (Go's default) before: a plant of 100
// devices (about 4 MB live) then collected after 4 MB of garbage, and its
// live API spent 16.2-17.4 µs of CPU per balance answer against 15.1-15.7
// at GOGC 160 (bare net/http: 12.0-12.7; scripts/livebench 100, 2 rounds
// each, load 1.1-1.9). A plant under 6 MB live holds up to 2 MB more.
const maxGOGC = 150

// adaptGOGC sets GOGC from the live heap every period until ctx ends
// (gcHeadroom), unless the environment sets GOGC, and with it the soft
// memory limit (burstLimit), unless the environment sets GOMEMLIMIT. It
// changes GOGC only in steps of 5 and the limit in steps of a MiB
// (debug.SetGCPercent stops the world for a moment).
func adaptGOGC(ctx context.Context, period time.Duration) {
	if os.Getenv("GOGC") != "" {
		return
	}
	sample := make([]metrics.Sample, len(memClasses)+1)
	sample[0].Name = "/gc/heap/live:bytes"
	for i, name := range memClasses {
		sample[i+1].Name = name
	}
	cur := -1
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-adaptNow:
		}
		if startupGC.Load() {
			continue // start-up's own GOGC
		}
		metrics.Read(sample)
		var vals [len(memClasses) + 1]uint64
		for i := range sample {
			if sample[i].Value.Kind() != metrics.KindUint64 {
				return
			}
			vals[i] = sample[i].Value.Uint64()
		}
		want := gogcFor(vals[0])
		if want != cur {
			debug.SetGCPercent(want)
			cur = want
		}
		if limitCap := configuredLimit.Load(); limitCap > 0 {
			limit := min(limitCap, burstLimit(vals[0], want, memUse{total: vals[1], objects: vals[2],
				unused: vals[3], free: vals[4], released: vals[5], stacks: vals[6]}))
			// Read back: a reload may have set the config's limit again.
			if d := limit - debug.SetMemoryLimit(-1); d > 1<<20 || d < -(1<<20) {
				debug.SetMemoryLimit(limit)
			}
		}
	}
}

// memClasses are the runtime's memory classes burstLimit reads, in the
// order of memUse's fields.
var memClasses = [...]string{
	"/memory/classes/total:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
}

// memUse is the runtime's memory by class (runtime/metrics).
type memUse struct {
	total, objects, unused, free, released, stacks uint64
}

// burstSlack is what burstLimit allows beyond the steady heap's size.
const burstSlack = 2 << 20

// burstLimit is the soft memory limit for a live heap of live bytes at
// GC percent gogc: what the heap takes at its goal (live × (1 +
// gogc/100)) with an eighth more for the room its spans leave unused, the
// goroutine stacks, the runtime's memory outside the heap (the GC's
// metadata, profiling buckets), and burstSlack. Between collections the
// heap stays below it, so the limit binds only in bursts: the store's
// rollup every 5 minutes allocates 16 MB within a second at 1,000
// devices, in objects of other sizes than the poll's, and the heap's
// resident memory rose by 6-7 MB above its steady size (the pages the
// last rollup's debug.FreeOSMemory gave back are faulted in again), which
// made the process's peak. Under the limit the collector runs more often
// for that second and the runtime returns free pages at once, so the peak
// stays near the steady size. A heap that grows for good raises the limit
// at the next period (adaptGOGC); until then the collector's CPU is
// bounded by the runtime's limiter (half of GOMAXPROCS).
func burstLimit(live uint64, gogc int, m memUse) int64 {
	goal := live * uint64(100+gogc) / 100
	heap := m.objects + m.unused + m.free + m.released + m.stacks
	var other uint64
	if m.total > heap {
		other = m.total - heap
	}
	return int64(goal + goal/8 + m.stacks + other + burstSlack)
}

// gogcFor is the GOGC for a live heap of live bytes: gcHeadroom of it,
// in steps of 5, between defaultGOGC and maxGOGC; Go's default (100)
// when the live heap is not known yet.
func gogcFor(live uint64) int {
	if live == 0 {
		return 100
	}
	pct := int(gcHeadroom * 100 / live)
	pct -= pct % 5
	return max(defaultGOGC, min(maxGOGC, pct))
}
