//go:build unix

package proctest

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time (user and system) this process has used,
// for benchmarks that report CPU per operation (0 where not measured).
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
