//go:build !pprof

package main

import (
	"context"
	"log/slog"
	"os"
	"runtime"
)

// Without the pprof build tag nothing can read a heap profile, so the
// runtime does not sample allocations for one: its bucket table held
// 1.5 MB at 1,000 devices (runtime.MemStats.BuckHashSys).
func init() { runtime.MemProfileRate = 0 }

// startPprof, without the pprof build tag, only says why PLANTD_PPROF
// does nothing.
func startPprof(_ context.Context, logger *slog.Logger) {
	if os.Getenv("PLANTD_PPROF") != "" {
		logger.Warn("PLANTD_PPROF ignored: this plantd was built without -tags pprof")
	}
}
