package plant

import (
	"flag"
	"os"
	"testing"

	"plantd/internal/proctest"
)

// TestMain runs up to 16 parallel tests at a time rather than one per core
// (unless -parallel is given): the hostile-device cases mostly wait for
// timeouts of their own simulated devices.
func TestMain(m *testing.M) {
	flag.Parse()
	proctest.DefaultParallel(16)
	os.Exit(m.Run())
}
