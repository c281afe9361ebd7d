package poller_test

import (
	"os"
	"testing"

	"plantd/internal/proctest"
)

// TestMain runs up to 16 parallel tests at a time rather than one per core
// (unless -parallel is given): they mostly wait for polls of their own
// simulated plants, taking little CPU.
func TestMain(m *testing.M) { os.Exit(proctest.RunParallel(m, 16)) }
