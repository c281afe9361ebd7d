package main

import (
	"os"
	"runtime/debug"

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
