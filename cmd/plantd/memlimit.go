package main

import (
	"os"
	"runtime/debug"
	"sync/atomic"

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
