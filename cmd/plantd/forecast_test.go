package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
)

// TestForecastDemo is the short version of scripts/forecast-mae: plantd
// demo from midnight at 2880× (a simulated day in 30 s) fits its forecast
// to the first day, records the third day's forecast at noon of the
// second, and judges it an hour after its end; GET /gateway/v1/forecast
// and /metrics show the day's MAE, beside the naive forecasts.
func TestForecastDemo(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
	if testing.Short() {
		t.Skip("runs plantd demo over two simulated days (~75 s)")
	}
	dir := t.TempDir()
	d := proctest.Start(t, exec.Command(binPath, "demo", "--interval", "250ms", "--speed", "2880", "--start", "2026-05-01T00:00",
		"--listen", "127.0.0.1:0", "--db", filepath.Join(dir, "demo.db"), "--mqtt", "off", "--sunspec", "off", "--ocpp", "off"))
	base := "http://" + listenRE.FindStringSubmatch(d.WaitLog(listenRE, 20*time.Second))[1]
	token := ""
	for _, l := range strings.Split(d.Stdout.String(), "\n") {
		if s, ok := strings.CutPrefix(l, "demo token (installer role): "); ok {
			token = s
		}
	}
	get := func(path string) []byte {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return b
	}
	type day struct {
		Date            string
		MAEW            float64 `json:"maeW"`
		MAERelative     float64
		PersistenceMaeW *float64
		Slots           int
	}
	var a struct {
		Forecasts []struct {
			PlantID     string
			HistoryDays int
			Slots       []struct{ PowerW float64 }
			Accuracy    []day
		}
	}
	judged := proctest.WaitValue(t, "a judged day", 4*time.Minute, func() (day, bool) {
		if err := json.Unmarshal(get("/gateway/v1/forecast"), &a); err != nil || len(a.Forecasts) != 1 {
			t.Fatalf("forecasts %+v: %v", a, err)
		}
		if acc := a.Forecasts[0].Accuracy; len(acc) > 0 {
			return acc[0], true
		}
		return day{}, false
	})
	f := a.Forecasts[0]
	if f.PlantID != "demo" || f.HistoryDays < 2 || len(f.Slots) != 144 {
		t.Errorf("forecast of %s: %d history days, %d slots", f.PlantID, f.HistoryDays, len(f.Slots))
	}
	// The demo's days differ by their clouds (at most 45 % cover): the
	// day-ahead forecast is off by at most a fifth of the peak.
	if judged.Date != "2026-05-03" || judged.Slots < 50 || judged.MAEW <= 0 || judged.MAERelative > 0.2 || judged.PersistenceMaeW == nil {
		t.Fatalf("judged %+v, want 2026-05-03 within 20 %% of the peak, with the persistence baseline", judged)
	}
	t.Logf("%s judged: MAE %.0f W (%.1f %% of peak) over %d slots, persistence %.0f W", judged.Date, judged.MAEW, 100*judged.MAERelative, judged.Slots, *judged.PersistenceMaeW)
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`plantd_forecast_mae_watts{plant="demo"} `, `plantd_forecast_days_judged_total{plant="demo"} `} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
