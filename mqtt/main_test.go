package mqtt

import (
	"os"
	"testing"

	"github.com/gin-gonic/gin"

	"plantd/internal/proctest"
)

// TestMain runs up to 16 parallel tests at a time rather than one per core
// (unless -parallel is given): they mostly wait for their own brokers and
// outages, taking little CPU. gin (the HTTP API that answers schedules in
// the tests that run it) is in release mode, as in plantd.
func TestMain(m *testing.M) {
	gin.SetMode(gin.ReleaseMode)
	os.Exit(proctest.RunParallel(m, 16))
}
