package mqtt

import (
	"flag"
	"os"
	"testing"

	"plantd/internal/proctest"
)

// TestMain runs up to 16 parallel tests at a time rather than one per core
// (unless -parallel is given): they mostly wait for their own brokers and
// outages, taking little CPU.
func TestMain(m *testing.M) {
	flag.Parse()
	proctest.DefaultParallel(16)
	os.Exit(m.Run())
}
