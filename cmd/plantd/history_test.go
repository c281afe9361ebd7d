package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plantd/config"
	"plantd/httpapi"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/store"
)

// TestSetLabelsDST runs the history path end to end (a real SQLite store
// behind the adapter, the real HTTP server) over both Berlin DST changes
// of 2026: a Day of FiveMinutes keeps its 23 or 25 hours of rows under
// the cloud's labels (the END of each interval, 00:05 .. next day 00:00),
// and a Month of days carries the dates themselves.
func TestSetLabelsDST(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	days := []time.Time{time.Date(2026, 3, 29, 0, 0, 0, 0, berlin), time.Date(2026, 10, 25, 0, 0, 0, 0, berlin)}
	now := days[1].AddDate(0, 0, 2)
	db := filepath.Join(t.TempDir(), "plantd.db")
	st, err := store.Open(t.Context(), store.Config{Path: db, QueueLen: 1 << 16,
		Plants: []store.PlantInfo{{ID: "demo", Location: berlin}}, Now: func() time.Time { return now }}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	for _, d := range days {
		for tt := d.Add(-time.Hour); tt.Before(d.AddDate(0, 0, 1).Add(time.Hour)); tt = tt.Add(time.Minute) {
			m := store.Measurement{PlantID: "demo", DeviceID: "inv", Kind: kind.Inverter, Time: tt,
				Readings: []plant.Reading{{Channel: plant.ActivePower, Value: 1000}}}
			if !st.Record(m) {
				t.Fatalf("measurement at %v refused", tt)
			}
		}
	}
	cancel() // Run flushes and rolls up before it returns
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("store did not stop within 60 s")
	}
	// Reopened for reading, as the daemon would after a restart.
	st.Close()
	st, err = store.Open(t.Context(), store.Config{Path: db,
		Plants: []store.PlantInfo{{ID: "demo", Location: berlin}}, Now: func() time.Time { return now }}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	live := plant.NewLive([]plant.Plant{{ID: "demo", Name: "Demo", Location: berlin}},
		[]plant.DeviceInfo{{ID: "inv", PlantID: "demo", Name: "inv", Kind: kind.Inverter}}, func() time.Time { return now })
	srv, err := httpapi.New(httpapi.Config{Listen: "127.0.0.1:0",
		Plants: []config.Plant{{ID: "demo", Name: "Demo", Timezone: "Europe/Berlin"}},
		Tokens: []config.Token{{Name: "t", SHA256: config.TokenHash("tok"), Role: config.RoleStandard}}},
		httpapi.Deps{Live: live, History: storeHistory{st}, Now: func() time.Time { return now }}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	get := func(path string) []string {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Resolution string
			Set        []struct{ Time string }
		}
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(body.Set))
		for i, r := range body.Set {
			out[i] = r.Time
		}
		return out
	}
	count := func(labels []string, part string) int {
		n := 0
		for _, l := range labels {
			if strings.Contains(l, part) {
				n++
			}
		}
		return n
	}
	for _, tt := range []struct {
		date        string
		rows        int
		first, last string
		hour2, two0 int // labels in local hour 02, labels 02:00:00
	}{
		// 02:00 CET jumps to 03:00 CEST: the interval 01:55..03:00 ends
		// at 03:00, no label falls in hour 02.
		{"2026-03-29", 23 * 12, "2026-03-29T00:05:00", "2026-03-30T00:00:00", 0, 0},
		// 03:00 CEST falls back to 02:00 CET: the ends 02:00 .. 02:55 are
		// lived twice (CEST, then CET) and appear twice, in time order.
		{"2026-10-25", 25 * 12, "2026-10-25T00:05:00", "2026-10-26T00:00:00", 24, 2},
	} {
		labels := get("/monitoring/v1/devices/inv/measurements/sets/PowerAc/Day?Date=" + tt.date)
		if len(labels) != tt.rows {
			t.Errorf("%s: %d rows, want %d", tt.date, len(labels), tt.rows)
			continue
		}
		if labels[0] != tt.first || labels[len(labels)-1] != tt.last {
			t.Errorf("%s: rows %s .. %s, want %s .. %s", tt.date, labels[0], labels[len(labels)-1], tt.first, tt.last)
		}
		if n := count(labels, "T02:"); n != tt.hour2 {
			t.Errorf("%s: %d labels in hour 02, want %d", tt.date, n, tt.hour2)
		}
		if n := count(labels, "T02:00:00"); n != tt.two0 {
			t.Errorf("%s: 02:00:00 %d times, want %d", tt.date, n, tt.two0)
		}
		month := get("/monitoring/v1/devices/inv/measurements/sets/PowerAc/Month?Date=" + tt.date[:7])
		if count(month, tt.date+"T00:00:00") != 1 {
			t.Errorf("month %s: no row labelled %sT00:00:00: %v", tt.date[:7], tt.date, month)
		}
	}
}

// TestDemoInterval: the demo's poll interval shrinks with the speed so
// that polls stay at most 5 simulated minutes apart.
func TestDemoInterval(t *testing.T) {
	for _, tt := range []struct {
		interval time.Duration
		speed    float64
		want     time.Duration
	}{
		{2 * time.Second, 1, 2 * time.Second},
		{2 * time.Second, 100, 2 * time.Second},
		{2 * time.Second, 288, 1041 * time.Millisecond}, // 299.8 s apart, no warning
		{2 * time.Second, 600, 500 * time.Millisecond},
		{2 * time.Second, 1000, 300 * time.Millisecond},
		{2 * time.Second, 5000, 250 * time.Millisecond}, // the minimum; warns
		{250 * time.Millisecond, 600, 250 * time.Millisecond},
	} {
		var warn strings.Builder
		if got := demoInterval(tt.interval, tt.speed, &warn); got != tt.want {
			t.Errorf("interval %v speed %g: %v, want %v", tt.interval, tt.speed, got, tt.want)
		}
		if (warn.Len() > 0) != (tt.speed == 5000) {
			t.Errorf("speed %g: warning %q", tt.speed, warn.String())
		}
	}
}
