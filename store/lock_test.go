package store

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
)

// TestOneStorePerFile: a second Open of a database that is open refuses
// while the first is open (it does not wait for it), naming the holder's
// pid; once the first is closed it opens.
func TestOneStorePerFile(t *testing.T) {
	t.Parallel() // its own database files
	path := filepath.Join(t.TempDir(), "plantd.db")
	s1 := openTest(t, Config{Path: path})
	type opened struct {
		s   *Store
		err error
	}
	second := make(chan opened, 1)
	go func() {
		s, err := Open(t.Context(), Config{Path: path}, nil)
		second <- opened{s, err}
	}()
	var s2 *Store
	var err error
	select {
	case o := <-second:
		s2, err = o.s, o.err
	case <-time.After(30 * time.Second):
		t.Fatal("the second Open still waits 30 s later, want a refusal")
	}
	if err == nil {
		s2.Close()
		t.Fatal("second Open of an open database succeeded")
	}
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("second Open: %v; want ErrLocked naming pid %d", err, os.Getpid())
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s3, err := Open(t.Context(), Config{Path: path}, nil)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s3.Close()
}

// TestCleanCloseLeavesCompleteFile: after Run ends and Close returns, the
// main database file alone holds every table and every sample (the WAL is
// checkpointed and truncated), so copying plantd.db is a backup.
func TestCleanCloseLeavesCompleteFile(t *testing.T) {
	t.Parallel() // its own database files
	dir := t.TempDir()
	path := filepath.Join(dir, "plantd.db")
	s := openTest(t, Config{Path: path})
	stop := runStore(t, s)
	t0 := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	for i := range 100 {
		record(t, s, Measurement{PlantID: "p1", DeviceID: "inv", Kind: kind.Inverter, Time: t0.Add(time.Duration(i) * 5 * time.Second),
			Readings: []plant.Reading{{Channel: plant.PVGeneration, Value: 1000}}})
	}
	stop()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		t.Errorf("%s-wal holds %d bytes after a clean close", filepath.Base(path), fi.Size())
	}
	// Only the main file, copied elsewhere.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+cp+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT sum(n) FROM raw_chunk`).Scan(&n); err != nil || n != 100 {
		t.Errorf("the copy of plantd.db alone: %d raw rows, %v; want 100", n, err)
	}
}

// TestBackupWhileRunning copies a database with Backup while its store
// keeps writing: the copy opens as a store of its own and holds what was
// committed before the backup began.
func TestBackupWhileRunning(t *testing.T) {
	t.Parallel() // its own database files
	dir := t.TempDir()
	path := filepath.Join(dir, "plantd.db")
	s := openTest(t, Config{Path: path})
	runStore(t, s)
	t0 := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	rec := func(i int) {
		record(t, s, Measurement{PlantID: "p1", DeviceID: "inv", Kind: kind.Inverter, Time: t0.Add(time.Duration(i) * 5 * time.Second),
			Readings: []plant.Reading{{Channel: plant.PVGeneration, Value: 1000}}})
	}
	for i := range 200 {
		rec(i)
	}
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "backup.db")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 200; i < 400; i++ {
			rec(i)
		}
	}()
	if err := Backup(t.Context(), path, dst); err != nil {
		t.Fatalf("backup: %v", err)
	}
	<-done
	if err := Backup(t.Context(), path, dst); err == nil {
		t.Error("a second backup overwrote the first")
	}
	b, err := Open(t.Context(), Config{Path: dst, Plants: []PlantInfo{{ID: "p1"}}}, nil)
	if err != nil {
		t.Fatalf("open the backup: %v", err)
	}
	defer b.Close()
	var n int
	if err := b.rdb.Load().QueryRow(`SELECT sum(n) FROM raw_chunk`).Scan(&n); err != nil || n < 200 {
		t.Errorf("backup holds %d raw rows (%v), want at least 200", n, err)
	}
}
