package httpapi

import (
	"os"
	"testing"

	"github.com/gin-gonic/gin"

	"plantd/internal/proctest"
)

// TestMain runs the tests with gin in release mode, as plantd's main does
// (gin's mode is process-wide: the program sets it, not New), up to 4
// parallel tests at a time (unless -parallel is given): each builds its
// own simulated plant, store and server, and waits on their sockets and
// files part of the time.
func TestMain(m *testing.M) {
	gin.SetMode(gin.ReleaseMode)
	os.Exit(proctest.RunParallel(m, 4))
}
