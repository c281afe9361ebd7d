//go:build linux

package main

import (
	"bufio"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// rssKB reads a field of /proc/self/status in kB.
func rssKB(t *testing.T, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// TestReleaseCodePages: the test binary (as plantd's, a static-linked
// Go program with SQLite's C code) drops the resident pages of its own
// code, and then runs on: Go code, and C code through cgo (SQLite, whose
// calls go through relocated pointers, the pages left alone).
func TestReleaseCodePages(t *testing.T) {
	before := rssKB(t, "RssFile")
	n, err := releaseCodePages()
	if err != nil {
		t.Fatal(err)
	}
	after := rssKB(t, "RssFile")
	if n > 0 && after >= before && exeShared(t) {
		t.Skip("another process runs this test binary: the pages it maps too stay resident (MADV_PAGEOUT releases only pages no other process maps)")
	}
	if n <= 0 || after >= before {
		t.Fatalf("released %d bytes of mappings; RssFile %d kB → %d kB, want less", n, before, after)
	}
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow(`SELECT sqlite_version()`).Scan(&v); err != nil || v == "" {
		t.Fatalf("SQLite after the release: %q %v", v, err)
	}
	t.Logf("released %d kB of mappings: RssFile %d kB → %d kB (%d kB after SQLite ran)", n/1024, before, after, rssKB(t, "RssFile"))
}

// exeShared reports whether another process runs the same executable
// file as this one.
func exeShared(t *testing.T) bool {
	t.Helper()
	self, err := os.Stat("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	me := strconv.Itoa(os.Getpid())
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil || p.Name() == me {
			continue
		}
		if fi, err := os.Stat(filepath.Join("/proc", p.Name(), "exe")); err == nil && os.SameFile(fi, self) {
			return true
		}
	}
	return false
}
