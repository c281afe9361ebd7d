package oauth2_test

import (
	"os"
	"testing"

	"github.com/gin-gonic/gin"
)

// TestMain runs the tests with gin in release mode, as plantd's main does
// (gin's mode is process-wide: the program sets it, not New).
func TestMain(m *testing.M) {
	gin.SetMode(gin.ReleaseMode)
	os.Exit(m.Run())
}
