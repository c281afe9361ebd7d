package store

import (
	"os"
	"testing"

	"plantd/internal/proctest"
)

// TestMain runs up to 12 parallel tests at a time rather than one per
// core (unless -parallel is given). Parallel tests start in source order:
// with a few slots the longest (TestSimPlant's days, TestCoarseAndFrozen
// Counters, in files late in the alphabet) began only once the short ones
// were done and ran on alone at the end; started with the rest, they share
// the cores from the beginning. The tests also wait for SQLite's writes to
// the disk, a child process (TestCrash) or the simulator's Modbus answers.
func TestMain(m *testing.M) { os.Exit(proctest.RunParallel(m, 12)) }
