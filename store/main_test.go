package store

import (
	"os"
	"testing"

	"plantd/internal/proctest"
)

// TestMain runs up to 4 parallel tests at a time rather than one per core
// (unless -parallel is given): besides computing, the long ones wait for
// SQLite's writes to the disk, a child process (TestCrash) or the
// simulator's Modbus answers, and on a 2-core machine two at a time left a
// core idle.
func TestMain(m *testing.M) { os.Exit(proctest.RunParallel(m, 4)) }
