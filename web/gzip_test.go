package web

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// static is the page's source tree, which gz/ holds gzipped (the tests
// compare what is served with it).
var static = os.DirFS(".")

var update = flag.Bool("update", false, "rewrite gz/ from static/ (go generate ./web)")

// TestGzipped: gz/ holds every file of static/, gzipped, and nothing
// else. After an edit in static/, go generate ./web rewrites gz/.
func TestGzipped(t *testing.T) {
	want := map[string][]byte{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(static, p)
		want[p[len("static/"):]] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	err = fs.WalkDir(static, "gz", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		gz, err := fs.ReadFile(static, p)
		if err != nil {
			return err
		}
		un, err := gunzip(gz)
		got[p[len("gz/"):len(p)-len(".gz")]] = un
		return err
	})
	same := err == nil && len(got) == len(want)
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			same = false
			if !*update {
				t.Errorf("gz/%s.gz is not static/%s gzipped", name, name)
			}
		}
	}
	if same {
		return
	}
	if !*update {
		t.Fatalf("gz/ differs from static/ (%d files, want %d; %v): run go generate ./web", len(got), len(want), err)
	}
	if err := os.RemoveAll("gz"); err != nil {
		t.Fatal(err)
	}
	for name, b := range want {
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if err != nil {
			t.Fatal(err)
		}
		zw.Write(b)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join("gz", filepath.FromSlash(name)+".gz")
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote gz/: %d files", len(want))
}
