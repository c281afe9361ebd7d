package store

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/plant"
)

// waitHealth waits (on the store's own state, at most 10 s) until
// ok(Health()) holds, and returns that health.
func waitHealth(t *testing.T, s *Store, what string, ok func(error) bool) error {
	t.Helper()
	return proctest.WaitValue(t, what, 10*time.Second, func() (error, bool) {
		err := s.Health()
		return err, ok(err)
	})
}

// TestReadOnlyThenGone (issue 25, item 6): the storage is read-only at
// start, then writable with the database gone. The store used to create an
// empty file with an empty device table while its catalogue still held the
// old rows, so every batch failed "FOREIGN KEY constraint failed" until a
// restart. A new file gets the schema and the device catalogue, and
// recording goes on; another database put in its place is refused, clearly.
func TestReadOnlyThenGone(t *testing.T) {
	if !canMount(t) {
		t.Skip("cannot mount here (needs CAP_SYS_ADMIN)")
	}
	t.Parallel() // its own mounts
	loc := mustZone(t, "Europe/Berlin")
	day := time.Date(2026, 7, 1, 0, 0, 0, 0, loc)
	next := day.AddDate(0, 0, 1)
	for _, tc := range []struct {
		name     string
		replaced bool // another database is put at the path
	}{
		{"deleted", false},
		{"replaced", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := mountTmpfs(t, 64<<20)
			path := filepath.Join(dir, "plantd.db")
			seedDay(t, path, day)
			remount(t, dir, true)
			s := openTest(t, Config{Path: path})
			if !errors.Is(s.Health(), ErrReadOnly) {
				t.Fatalf("health %v, want ErrReadOnly", s.Health())
			}
			remount(t, dir, false)
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
			if tc.replaced {
				other := filepath.Join(dir, "other.db")
				seedDay(t, other, next)
				if err := os.Rename(other, path); err != nil {
					t.Fatal(err)
				}
			}
			s.retryRO = 10 * time.Millisecond
			stop := runStore(t, s)
			if tc.replaced {
				err := waitHealth(t, s, "refused", func(err error) bool { return errors.Is(err, ErrFileGone) })
				if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "restart plantd") {
					t.Errorf("health %q does not name the file and what to do", err)
				}
				if s.Record(Measurement{PlantID: "p1", DeviceID: "inv", Time: next,
					Readings: []plant.Reading{{Channel: plant.ActivePower, Value: 1}}}) {
					t.Error("Record accepted while the file is refused")
				}
				return
			}
			waitHealth(t, s, "writable again", func(err error) bool { return err == nil })
			sy := &synth{loc: loc}
			for x := next; x.Before(next.Add(time.Hour)); x = x.Add(time.Minute) {
				for _, m := range sy.step(x) {
					record(t, s, m)
				}
			}
			if err := s.Flush(t.Context()); err != nil {
				t.Fatalf("flush after the new file was created: %v", err)
			}
			if st := s.Stats(); st.Written != 180 || st.Failed != 0 {
				t.Errorf("stats %+v, want 180 written, none failed", st)
			}
			stop()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// The new file stands on its own: a restart reads what was
			// recorded.
			s2 := openTest(t, Config{Path: path})
			if err := s2.Health(); err != nil {
				t.Fatalf("health after restart: %v", err)
			}
			res, err := s2.QuerySet(t.Context(), plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodDay, Date: next})
			if err != nil || len(res.Rows) != 12 {
				t.Errorf("the hour recorded into the new file: %d rows, %v; want 12", len(res.Rows), err)
			}
		})
	}
}

// TestDeletedWhileRunning (issue 25, item 5): the database file is deleted
// (or replaced) under a running store. Health used to stay nil, the writes
// went into the deleted file, and after a clean stop there was no file and
// no warning. Health says ErrFileGone with what to do, and a clean stop
// writes everything recorded (before and after the deletion) back to the
// path, or beside the other file that is there now, and logs an Error.
func TestDeletedWhileRunning(t *testing.T) {
	t.Parallel() // its own database files
	loc := mustZone(t, "Europe/Berlin")
	day := time.Date(2026, 7, 1, 10, 0, 0, 0, loc)
	for _, tc := range []struct {
		name     string
		remove   []string // suffixes of the files removed
		replaced bool     // another file is put at the path
	}{
		{"db", []string{""}, false},
		{"db, wal and shm", []string{"", "-wal", "-shm"}, false},
		{"replaced", []string{"", "-wal", "-shm"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "plantd.db")
			var logs proctest.Buffer
			s, err := Open(t.Context(), Config{Path: path, QueueLen: 1 << 12, Plants: []PlantInfo{{ID: "p1", Location: loc}}},
				slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			stop := runStore(t, s)
			sy := &synth{loc: loc}
			recordSpan := func(from time.Time) {
				for x := from; x.Before(from.Add(30 * time.Minute)); x = x.Add(time.Minute) {
					for _, m := range sy.step(x) {
						record(t, s, m)
					}
				}
				if err := s.Flush(t.Context()); err != nil {
					t.Fatalf("flush: %v", err)
				}
			}
			recordSpan(day)
			if err := s.Health(); err != nil {
				t.Fatalf("health before the deletion: %v", err)
			}
			for _, suf := range tc.remove {
				if err := os.Remove(path + suf); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
			other := []byte("another file, not plantd's")
			if tc.replaced {
				if err := os.WriteFile(path, other, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err = waitHealth(t, s, "the deletion noticed", func(err error) bool { return errors.Is(err, ErrFileGone) })
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "restart plantd") && !strings.Contains(msg, "stop plantd") {
				t.Errorf("health %q does not name the file and what to do", msg)
			}
			recordSpan(day.Add(30 * time.Minute))
			stop()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			l := logs.String()
			if !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "path="+path) {
				t.Errorf("the stop does not log an Error naming the file:\n%s", l)
			}
			copyPath := path
			if tc.replaced {
				if b, err := os.ReadFile(path); err != nil || string(b) != string(other) {
					t.Errorf("the other file was not left as it was: %q, %v", b, err)
				}
				m, _ := filepath.Glob(path + ".recovered-*")
				if len(m) != 1 {
					t.Fatalf("recovery copies %v, want one", m)
				}
				copyPath = m[0]
			}
			if _, err := os.Stat(copyPath); err != nil {
				t.Fatalf("no database after the stop: %v", err)
			}
			// Everything recorded is in the file written back: the hour
			// before and after the deletion.
			s2 := openTest(t, Config{Path: copyPath, Plants: []PlantInfo{{ID: "p1", Location: loc}}})
			if err := s2.Health(); err != nil {
				t.Fatalf("health of the file written back: %v", err)
			}
			res, err := s2.QuerySet(t.Context(), plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodDay, Date: day})
			if err != nil || len(res.Rows) != 12 {
				t.Errorf("the file written back has %d rows of the hour, %v; want 12", len(res.Rows), err)
			}
			if tmp, _ := filepath.Glob(filepath.Join(dir, ".*writeback*")); len(tmp) != 0 {
				t.Errorf("temporary files left: %v", tmp)
			}
		})
	}
}
