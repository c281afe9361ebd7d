package gridcontrol_test

import (
	"os"
	"testing"

	"plantd/internal/proctest"
)

// TestMain lets the rig tests, which mostly wait for window boundaries on
// the wall clock (the package took 5.7 s of CPU in 36 s), run 12 at a time
// under -race rather than one per core (unless -parallel is given). Not
// all at once: all 17 under -race on a loaded 2-core machine delayed
// their controllers past the cycle-bound checks. Without -race a rig takes a fraction of the CPU, and 16 run at
// once.
func TestMain(m *testing.M) {
	n := 16
	if proctest.Race() {
		n = 12
	}
	os.Exit(proctest.RunParallel(m, n))
}
