package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
	"plantd/store"
)

// seedDatabase writes a database with a day of one inverter's samples at
// path, as plantd would, and closes it.
func seedDatabase(t *testing.T, path string) {
	t.Helper()
	s, err := store.Open(t.Context(), store.Config{Path: path, Plants: []store.PlantInfo{{ID: "p1"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t0 := time.Now().Add(-24 * time.Hour)
	for i := range 24 * 12 {
		s.Record(store.Measurement{PlantID: "p1", DeviceID: "inv1", Kind: kind.Inverter, Time: t0.Add(time.Duration(i) * 5 * time.Minute),
			Readings: []plant.Reading{{Channel: plant.ActivePower, Value: float64(i)}, {Channel: plant.PVGeneration, Value: float64(i)}}})
	}
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// damageTable overwrites the root page of a table (or index) of the
// database at path with garbage.
func damageTable(name string) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		t.Helper()
		db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		var root, size int64
		err = db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = ?`, name).Scan(&root)
		if err == nil {
			err = db.QueryRow(`PRAGMA page_size`).Scan(&size)
		}
		db.Close()
		if err != nil {
			t.Fatalf("root page of %s: %v", name, err)
		}
		garbage := []byte(strings.Repeat("\x55", int(size)))
		overwrite(t, path, (root-1)*size, garbage)
	}
}

func overwrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptDatabase (issue 25, item 7) runs the real binary on damaged
// databases. Damage that SQLite finds while plantd loads the catalogue or
// the writer's state used to make "plantd run" exit 1, which the unit
// restarts every 5 s for ever, where store/doc.go says it serves what can
// be read: now it serves and /healthz says Error (corrupt). A database
// that cannot be opened at all (its header damaged) or that a newer plantd
// wrote exits 78, which the unit does not restart, saying how to recover.
func TestCorruptDatabase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
		serves bool           // plantd runs and reports the damage; else it exits 78
		want   *regexp.Regexp // in the log
	}{
		{"device table", damageTable("device"), true, regexp.MustCompile(`database corrupt: writing stopped.*plantd backup`)},
		{"series table", damageTable("series"), true, regexp.MustCompile(`database corrupt: writing stopped.*plantd backup`)},
		{"watermark", damageTable("meta"), true, regexp.MustCompile(`database corrupt: writing stopped.*plantd backup`)},
		{"raw samples", damageTable("raw_chunk"), true, regexp.MustCompile(`database corrupt: writing stopped.*plantd backup`)},
		{"header", func(t *testing.T, path string) { overwrite(t, path, 0, []byte("not SQLite at all")) }, false,
			regexp.MustCompile(`cannot start: database: .*database corrupt: file is not a database.*plantd backup.*aside`)},
		{"newer schema", func(t *testing.T, path string) {
			db, err := sql.Open("sqlite3", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`PRAGMA user_version = 999`); err != nil {
				t.Fatal(err)
			}
		}, false, regexp.MustCompile(`newer than this plantd`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "plantd.db")
			seedDatabase(t, path)
			tc.damage(t, path)
			d := startDaemonConfig(t, noDevicesConfig("127.0.0.1:0", "", path))
			if !tc.serves {
				err := d.Wait(30 * time.Second)
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != exitConfig {
					t.Errorf("plantd: %v, want exit status %d (the unit does not restart it)", err, exitConfig)
				}
				if log := strings.Join(d.Stderr(), "\n"); !tc.want.MatchString(log) {
					t.Errorf("the log does not say %s:\n%s", tc.want, log)
				}
				return
			}
			d.waitAPI(30 * time.Second)
			resp, err := http.Get("http://" + d.api + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var h struct {
				Status  string
				Storage struct{ Status, Error string }
			}
			if err := json.Unmarshal(body, &h); err != nil {
				t.Fatalf("/healthz: %v: %s", err, body)
			}
			if resp.StatusCode != http.StatusServiceUnavailable || h.Status != "Error" || h.Storage.Status != "Error" ||
				!strings.Contains(h.Storage.Error, "corrupt") {
				t.Errorf("/healthz %d %s, want 503 with the storage in Error (corrupt)", resp.StatusCode, body)
			}
			if log := strings.Join(d.Stderr(), "\n"); !tc.want.MatchString(log) {
				t.Errorf("the log does not say %s:\n%s", tc.want, log)
			}
			d.stop()
		})
	}
}

// TestDatabaseDeletedWhileRunning (issue 25, item 5) runs the real binary
// and deletes its database file: /healthz says Error naming the file and
// what to do, and SIGTERM (a clean stop, exit 0) writes the database back
// to its path, with what was stored before and after the deletion, and
// logs an Error. It used to stay Ok and leave no file after the stop.
func TestDatabaseDeletedWhileRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "plantd.db")
	seedDatabase(t, path)
	d := startDaemonConfig(t, noDevicesConfig("127.0.0.1:0", "", path))
	d.waitAPI(30 * time.Second)
	// Deleted once plantd is ready: grid control reads its schedules from
	// the file at its start (a start into a deleted file fails).
	d.WaitLines("plantd ready", 30*time.Second, func(lines []string) bool {
		return slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, `msg="ready: `) })
	})
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get("http://" + d.api + "/healthz")
		if err != nil {
			t.Fatalf("%v; the daemon's last lines:\n%s", err, d.Tail(40))
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			if !strings.Contains(string(body), "was deleted while plantd runs") || !strings.Contains(string(body), "restart plantd") {
				t.Errorf("/healthz %s, want the deleted file and what to do", body)
			}
			break
		}
		select {
		case <-deadline:
			t.Fatalf("/healthz still %d %s 10 s after the database file was deleted", resp.StatusCode, body)
		case <-tick.C:
		}
	}
	d.stop()
	if log := strings.Join(d.Stderr(), "\n"); !regexp.MustCompile(`level=ERROR msg="the database file was deleted while plantd ran: plantd wrote its data back`).MatchString(log) {
		t.Errorf("the stop does not log the write-back as an Error:\n%s", log)
	}
	s, err := store.Open(t.Context(), store.Config{Path: path, Plants: []store.PlantInfo{{ID: "p1"}}}, nil)
	if err != nil {
		t.Fatalf("no database after the stop: %v", err)
	}
	defer s.Close()
	if err := s.Health(); err != nil {
		t.Errorf("health of the file written back: %v", err)
	}
	logs, _, err := s.Logs(t.Context(), plant.LogQuery{PlantID: "p1"})
	if err != nil || len(logs) == 0 || logs[0].Code != "GatewayStarted" {
		t.Errorf("the file written back lacks the daemon's GatewayStarted entry: %+v, %v", logs, err)
	}
	res, err := s.DeviceSets(t.Context(), "inv1")
	if err != nil || len(res) == 0 {
		t.Errorf("the file written back lacks the seeded device: %v, %v", res, err)
	}
}
