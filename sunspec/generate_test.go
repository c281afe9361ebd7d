package sunspec

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedTablesUpToDate regenerates models_gen.go from models/*.json
// and fails when the committed file differs.
func TestGeneratedTablesUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("regenerating runs the generator; skipped with -short")
	}
	out := filepath.Join(t.TempDir(), "models_gen.go")
	cmd := exec.Command("go", "run", "./internal/sunspecgen", "-in", "models", "-out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generator: %v\n%s", err, b)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("models_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Fatal("models_gen.go is stale: run go generate ./sunspec")
	}
}
