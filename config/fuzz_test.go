package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: Parse never panics, and fails only with *Errors whose problems
// name the file.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/plantd.yaml")
	for _, file := range append(files, examplePath) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("devices: [&d {<<: *d}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parse("f.yaml", data, testHostname)
		if err == nil {
			if c == nil {
				t.Fatal("nil Config without error")
			}
			return
		}
		var problems *Errors
		if !errors.As(err, &problems) || len(problems.Problems) == 0 {
			t.Fatalf("error %T %v, want *Errors", err, err)
		}
		for _, p := range problems.Problems {
			if p.File != "f.yaml" || p.Message == "" {
				t.Fatalf("bad problem %+v", p)
			}
		}
	})
}
