package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/sim"
	"plantd/sim/simtest"
)

// TestStorageWearMetrics: the real binary polling a simulated inverter
// shows the process's block-layer writes and the database's size at
// /metrics and in /healthz's storage section, and both grow as
// measurements are committed to the real database file.
func TestStorageWearMetrics(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
	if testing.Short() {
		t.Skip("waits for a running daemon's raw minute to be written (10-80 s)")
	}
	p := simtest.Start(t, sim.DefaultConfig())
	host, port, _ := net.SplitHostPort(simtest.Device(t, p, "inv1").Addr())
	d := startDaemonConfig(t, fmt.Sprintf(`http: {listen: 127.0.0.1:0}
database: {path: %s}
plants:
  - {id: p1, name: Wear, timezone: Europe/Berlin}
devices:
  - {id: inv1, host: %s, port: %s, pollInterval: 250ms}
`, filepath.Join(t.TempDir(), "plantd.db"), host, port))
	d.waitAPI(30 * time.Second)
	d.waitOnline(30*time.Second, "inv1")
	names := []string{"plantd_store_bytes_written_total", "plantd_store_database_bytes", "plantd_store_measurements_written_total"}
	scrape := func() map[string]float64 {
		m := map[string]float64{}
		for _, n := range names {
			if v, ok := metricValue(t, d.api, n); ok {
				m[n] = v
			}
		}
		return m
	}
	first := scrape()
	for _, k := range names {
		if _, ok := first[k]; !ok {
			t.Fatalf("/metrics lacks %s: %v", k, first)
		}
	}
	if first["plantd_store_database_bytes"] <= 0 {
		t.Errorf("plantd_store_database_bytes %v, want > 0", first["plantd_store_database_bytes"])
	}
	// A device's raw samples are written per minute once it is complete
	// (its first minute at every commit): more measurements written can
	// take the rest of this minute, the next one and a commit interval.
	var last map[string]float64
	proctest.WaitFor(t, "more measurements written and more bytes written", 150*time.Second, func() bool {
		last = scrape()
		return last["plantd_store_measurements_written_total"] > first["plantd_store_measurements_written_total"] &&
			last["plantd_store_bytes_written_total"] > first["plantd_store_bytes_written_total"]
	})
	if last["plantd_store_database_bytes"] < first["plantd_store_database_bytes"] {
		t.Errorf("database shrank from %v to %v bytes while recording", first["plantd_store_database_bytes"], last["plantd_store_database_bytes"])
	}
	resp, err := http.Get("http://" + d.api + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Storage struct {
			Status        string  `json:"status"`
			BytesWritten  *uint64 `json:"bytesWritten"`
			DatabaseBytes *int64  `json:"databaseBytes"`
		} `json:"storage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if h.Storage.Status != "Ok" || h.Storage.BytesWritten == nil || h.Storage.DatabaseBytes == nil ||
		float64(*h.Storage.BytesWritten) < last["plantd_store_bytes_written_total"] || *h.Storage.DatabaseBytes <= 0 {
		t.Errorf("/healthz storage %+v (bytesWritten %v, databaseBytes %v), want Ok with bytes written >= the last scrape's %v and a size",
			h.Storage, h.Storage.BytesWritten, h.Storage.DatabaseBytes, last["plantd_store_bytes_written_total"])
	}
	d.stop()
}

// TestKill9CommitInterval: the real binary with database.commitInterval
// 2s polls the simulated plant and stores a schedule (201), then is
// killed with SIGKILL in the middle of a commit interval. The database it
// leaves passes PRAGMA integrity_check, holds every measurement /metrics
// had counted as committed and the schedule, and its newest raw sample is
// at most the raw window README states (the open minute of a device and
// the commit interval, plus a poll, plus 2 s for a loaded machine) older
// than the kill; a restarted plantd serves the schedule.
func TestKill9CommitInterval(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
	p := simtest.Start(t, sim.DefaultConfig())
	cfgPath := gridConfig(t, p)
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	const commitInterval, poll = 2 * time.Second, 500 * time.Millisecond
	cfg := strings.Replace(string(b), "database:\n", "database:\n  commitInterval: 2s\n", 1)
	writeConfig(t, cfgPath, cfg)
	dbPath := regexp.MustCompile(`(?m)^  path: (\S+)$`).FindStringSubmatch(cfg)[1]

	d := startDaemon(t, cfgPath)
	d.waitAPI(15 * time.Second)
	d.waitOnline(10*time.Second, "inv1", "inv2")
	start := time.Now().Add(time.Hour).Truncate(time.Second)
	code, body := d.request("POST", "/gridcontrol/v1/plants/p1/schedules", tokInst, fmt.Sprintf(
		`{"commands":[{"command":"opModMaxLimW","start":%q,"end":%q,"value":40,"unit":"%%"}]}`,
		start.UTC().Format(time.RFC3339), start.Add(time.Hour).UTC().Format(time.RFC3339)))
	if code != 201 {
		t.Fatalf("POST schedule: %d %s", code, body)
	}
	var created struct {
		Schedule struct {
			ScheduleID string `json:"scheduleId"`
		} `json:"schedule"`
	}
	if err := json.Unmarshal(body, &created); err != nil || created.Schedule.ScheduleID == "" {
		t.Fatalf("POST schedule answer %s: %v", body, err)
	}

	written := func() float64 {
		v, ok := metricValue(t, d.api, "plantd_store_measurements_written_total")
		if !ok {
			t.Fatal("/metrics lacks plantd_store_measurements_written_total")
		}
		return v
	}
	// Two writes of raw samples seen (a device's minute is written at the
	// first commit after it is complete), then kill right after the
	// second: the next commit interval has begun, its polls are queued.
	var first float64
	proctest.WaitFor(t, "a first minute written", 90*time.Second, func() bool { first = written(); return first > 0 })
	var committed float64
	proctest.WaitFor(t, "a second minute written", 90*time.Second, func() bool { committed = written(); return committed > first })
	time.Sleep(commitInterval / 2) // not an assertion: kill in the middle of the interval
	committed = written()
	killed := time.Now()
	d.Kill()

	db, err := sql.Open("sqlite3", "file:"+dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ok string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check after kill -9: %q, %v", ok, err)
	}
	var n, maxT int64
	if err := db.QueryRow(`SELECT sum(n), max(tn) FROM raw_chunk`).Scan(&n, &maxT); err != nil {
		t.Fatal(err)
	}
	if float64(n) < committed {
		t.Errorf("%d raw samples after kill -9, but /metrics counted %v committed", n, committed)
	}
	lost := killed.Sub(time.UnixMilli(maxT))
	t.Logf("%d raw samples, %v committed before the kill; newest sample %v before it", n, committed, lost.Round(time.Millisecond))
	if window := time.Minute + commitInterval; lost > window+poll+2*time.Second {
		t.Errorf("newest raw sample %v before the kill, more than the raw window %v (a minute and the commit interval; + a poll + 2 s)", lost, window)
	}
	var sched int
	if err := db.QueryRow(`SELECT count(*) FROM schedule WHERE id = ?`, created.Schedule.ScheduleID).Scan(&sched); err != nil || sched != 1 {
		t.Errorf("schedule %s after kill -9: %d rows, %v", created.Schedule.ScheduleID, sched, err)
	}
	db.Close()

	d2 := startDaemon(t, cfgPath)
	d2.waitAPI(15 * time.Second)
	// Grid control loads the stored schedules once the devices answer.
	proctest.WaitFor(t, "the schedule served after the restart", 30*time.Second, func() bool {
		code, b := d2.request("GET", "/gridcontrol/v1/plants/p1/schedules", tokStd, "")
		return code == 200 && strings.Contains(string(b), created.Schedule.ScheduleID)
	})
	d2.stop()
}

// metricValue scrapes the daemon's /metrics at api and returns the value
// of the unlabelled series name.
func metricValue(t testing.TB, api, name string) (float64, bool) {
	t.Helper()
	resp, err := http.Get("http://" + api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatalf("%s: %v", m[0], err)
	}
	return v, true
}
