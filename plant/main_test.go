package plant

import (
	"os"
	"testing"

	"plantd/internal/proctest"
)

// TestMain runs up to 16 parallel tests at a time rather than one per core
// (unless -parallel is given): the hostile-device cases mostly wait for
// timeouts of their own simulated devices.
func TestMain(m *testing.M) { os.Exit(proctest.RunParallel(m, 16)) }
