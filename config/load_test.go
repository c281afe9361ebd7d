package config

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestLoadSizeCap: a config file above MaxFileSize is refused at once,
// from its size, before it is read (a sparse 50 MB file: no 50 MB read,
// no parse); a pipe that streams more than the cap is refused after
// reading one byte past it; a file of exactly the cap still loads; and
// AddToken, which reads the file too, refuses it the same way.
func TestLoadSizeCap(t *testing.T) {
	const valid = "plants: [{id: p, name: P, timezone: UTC}]\n"
	padded := func(size int) []byte {
		b := []byte(valid)
		line := "# " + strings.Repeat("x", 77) + "\n"
		for len(b)+len(line) <= size {
			b = append(b, line...)
		}
		return append(b, strings.Repeat("#", size-len(b))...)
	}
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		ok   bool
	}{
		{"exactly the cap", func(t *testing.T, path string) { write(t, path, padded(MaxFileSize)) }, true},
		{"one byte above the cap", func(t *testing.T, path string) { write(t, path, padded(MaxFileSize+1)) }, false},
		{"a sparse 50 MB file", func(t *testing.T, path string) {
			write(t, path, []byte(valid))
			if err := os.Truncate(path, 50<<20); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a pipe streaming 3 MiB", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skip("no FIFO here:", err)
			}
			data := padded(3 << 20)
			go func() {
				f, err := os.OpenFile(path, os.O_WRONLY, 0)
				if err != nil {
					return
				}
				defer f.Close()
				f.Write(data) // ends with EPIPE once the reader stopped
			}()
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plantd.yaml")
			tc.make(t, path)
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			c, err := Load(path)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if tc.ok {
				if err != nil || c.Plants[0].ID != "p" {
					t.Fatalf("Load = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1 MiB") || !strings.HasPrefix(err.Error(), path+": ") {
				t.Fatalf("Load = %v, want %v naming the file and the cap", err, ErrTooLarge)
			}
			// Refused from its size or after 1 MiB + 1 byte: never
			// the whole file in memory.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
				t.Errorf("Load allocated %d bytes before refusing", alloc)
			}
			if tc.name == "a pipe streaming 3 MiB" {
				return // read once: a second open would wait for a writer
			}
			if err := AddToken(path, Token{Name: "t", SHA256: strings.Repeat("a", 64), Role: "standard"}); !errors.Is(err, ErrTooLarge) {
				t.Errorf("AddToken = %v, want %v", err, ErrTooLarge)
			}
		})
	}
	if _, err := Parse("big.yaml", padded(MaxFileSize+1)); err == nil || !strings.Contains(err.Error(), "1 MiB") {
		t.Errorf("Parse of MaxFileSize+1 bytes = %v, want the cap", err)
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
