package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, content := range []string{`{"a":1}`, `{"a":2,"b":3}`} {
		if err := Write(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v, %v; want 0600", st.Mode().Perm(), err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("directory holds %d entries (%v), want the file alone", len(entries), err)
	}
}

func TestWriteMissingDirectory(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "no", "state.json"), []byte("x")); err == nil {
		t.Error("no error for a missing directory")
	}
}
