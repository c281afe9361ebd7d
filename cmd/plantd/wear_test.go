package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"plantd/devices/sim"
	"plantd/devices/sim/simtest"
)

// TestStorageWearMetrics: the real binary polling a simulated inverter
// shows the process's block-layer writes and the database's size at
// /metrics and in /healthz's storage section, and both grow as
// measurements are committed to the real database file.
func TestStorageWearMetrics(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
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
	re := regexp.MustCompile(`(?m)^(plantd_store_bytes_written_total|plantd_store_database_bytes|plantd_store_measurements_written_total) (\S+)$`)
	scrape := func() map[string]float64 {
		resp, err := http.Get("http://" + d.api + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := map[string]float64{}
		for _, s := range re.FindAllStringSubmatch(string(body), -1) {
			v, err := strconv.ParseFloat(s[2], 64)
			if err != nil {
				t.Fatalf("%s: %v", s[0], err)
			}
			m[s[1]] = v
		}
		return m
	}
	first := scrape()
	for _, k := range []string{"plantd_store_bytes_written_total", "plantd_store_database_bytes", "plantd_store_measurements_written_total"} {
		if _, ok := first[k]; !ok {
			t.Fatalf("/metrics lacks %s: %v", k, first)
		}
	}
	if first["plantd_store_database_bytes"] <= 0 {
		t.Errorf("plantd_store_database_bytes %v, want > 0", first["plantd_store_database_bytes"])
	}
	var last map[string]float64
	waitUntil(t, 60*time.Second, "20 more measurements committed and more bytes written", func() bool {
		last = scrape()
		return last["plantd_store_measurements_written_total"] >= first["plantd_store_measurements_written_total"]+20 &&
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
