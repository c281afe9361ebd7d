package gridcontrol_test

import (
	"flag"
	"os"
	"testing"

	"plantd/internal/proctest"
)

// TestMain lets the rig tests, which mostly wait for window boundaries on
// the wall clock, run 20 at a time (all of them) rather than one per core
// (unless -parallel is given): 1.9 s of CPU in all (5.5 s under -race).
func TestMain(m *testing.M) {
	flag.Parse()
	proctest.DefaultParallel(20)
	os.Exit(m.Run())
}
