package store

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"plantd/plant"
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
// writes grew by at least what the files grew, less a page: the kernel
// counts a page when it becomes dirty, and the WAL's frames (4096 + 24
// bytes) go on in the page where the last commit ended, which may still
// be dirty and then is not counted again.
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
	if after.BytesWritten+4096 < before.BytesWritten+uint64(grew) {
		t.Errorf("write_bytes grew by %d, less than the database's %d bytes (before %+v, after %+v)",
			after.BytesWritten-before.BytesWritten, grew, before, after)
	}
}

// TestLogCommitsWithinASecond: with a commit interval of an hour, a
// measurement waits in the batch, but a log entry queued after it commits
// the batch within logCommitWithin (the test allows 10 s for a loaded
// machine; without the rule the batch would wait the hour). The
// measurement itself goes into its device's open chunk minute, written
// when the minute is complete (TestChunkMinuteWritten).
func TestLogCommitsWithinASecond(t *testing.T) {
	s := openTest(t, Config{BatchInterval: time.Hour})
	runStore(t, s)
	syn := &synth{loc: mustZone(t, "Europe/Berlin")}
	now := time.Now().Truncate(time.Second)
	record(t, s, syn.step(now)[0])
	if !s.Log(plant.LogEntry{PlantID: "p1", Code: "test", Message: "a log entry commits within a second"}) {
		t.Fatal("log entry refused")
	}
	queued := time.Now()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if st := s.Stats(); st.Logs == 1 && st.Batches == 1 {
			t.Logf("committed %v after the log entry was queued", time.Since(queued).Round(time.Millisecond))
			return
		}
		select {
		case <-deadline:
			t.Fatalf("not committed within 10 s of the log entry: %+v", s.Stats())
		case <-tick.C:
		}
	}
}
