package store

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestParseWriteBytes(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     uint64
		ok       bool
	}{
		{"proc", "rchar: 4521\nwchar: 9000\nsyscr: 12\nsyscw: 3\nread_bytes: 0\nwrite_bytes: 1228800\ncancelled_write_bytes: 4096\n", 1228800, true},
		{"missing", "rchar: 4521\nwchar: 9000\n", 0, false},
		{"garbage", "write_bytes: lots\n", 0, false},
		{"empty", "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseWriteBytes([]byte(tc.in))
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("parseWriteBytes(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
}

// TestUsageGrows: after measurements are committed to a real database
// file, the database (file + WAL) is larger and the process's block-layer
// writes grew by at least what the files grew.
func TestUsageGrows(t *testing.T) {
	dir := t.TempDir()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	const tmpfsMagic = 0x01021994
	if fs.Type == tmpfsMagic {
		t.Skip("the temporary directory is tmpfs: the kernel counts no block-layer writes for it")
	}
	s := openTest(t, Config{Path: filepath.Join(dir, "plantd.db")})
	runStore(t, s)
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	before := s.Usage()
	if !before.BytesWrittenOK {
		t.Skip("no write_bytes in /proc/self/io on this kernel")
	}
	if before.FileBytes == 0 {
		t.Fatalf("database file size 0 after open: %+v", before)
	}
	syn := &synth{loc: mustZone(t, "Europe/Berlin")}
	t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	for i := range 3000 {
		for _, m := range syn.step(t0.Add(time.Duration(i) * time.Second)) {
			record(t, s, m)
		}
	}
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	after := s.Usage()
	grew := after.FileBytes + after.WALBytes - before.FileBytes - before.WALBytes
	if grew <= 0 {
		t.Fatalf("database did not grow: before %+v, after %+v", before, after)
	}
	if after.BytesWritten < before.BytesWritten+uint64(grew) {
		t.Errorf("write_bytes grew by %d, less than the database's %d bytes (before %+v, after %+v)",
			after.BytesWritten-before.BytesWritten, grew, before, after)
	}
}
