//go:build !pprof

package main

import (
	"context"
	"log/slog"
	"os"
)

// startPprof, without the pprof build tag, only says why PLANTD_PPROF
// does nothing.
func startPprof(_ context.Context, logger *slog.Logger) {
	if os.Getenv("PLANTD_PPROF") != "" {
		logger.Warn("PLANTD_PPROF ignored: this plantd was built without -tags pprof")
	}
}
