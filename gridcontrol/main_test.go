package gridcontrol_test

import (
	"os"
	"testing"

	"plantd/internal/proctest"
)

// TestMain runs 12 tests at a time under -race (16 without) rather than
// one per core (unless -parallel is given): the real-plant rigs left (the
// tamper ones) mostly wait for polls on the wall clock, and their
// cycle-bound checks must not starve behind the stepped rigs, which wait
// for nothing and only take CPU.
func TestMain(m *testing.M) {
	n := 16
	if proctest.Race() {
		n = 12
	}
	os.Exit(proctest.RunParallel(m, n))
}
