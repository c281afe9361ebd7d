package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plantd/plant"
)

// waitHealth waits (on the store's own state, polled every 10 ms, at most
// 10 s) until ok(Health()) holds.
func waitHealth(t *testing.T, s *Store, what string, ok func(error) bool) error {
	t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		err := s.Health()
		if ok(err) {
			return err
		}
		select {
		case <-deadline:
			t.Fatalf("%s: not within 10 s, health %v", what, err)
		case <-tick.C:
		}
	}
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
			res, err := s2.QuerySet(t.Context(), SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: PeriodDay, Date: next})
			if err != nil || len(res.Rows) != 12 {
				t.Errorf("the hour recorded into the new file: %d rows, %v; want 12", len(res.Rows), err)
			}
		})
	}
}
