package forecast

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"plantd/internal/solar"
	"plantd/metrics"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/store"
)

// plantRig records a simulated plant (an inverter giving clearness ×
// 9 W per W/m² of the clear sky, a weather sensor reading clearness × the
// clear sky) into a real store every 5 minutes.
type plantRig struct {
	tb   testing.TB
	path string
	zone *time.Location
	now  atomic.Int64 // the data clock, Unix ms
}

func (r *plantRig) clock() time.Time { return time.UnixMilli(r.now.Load()) }

// record stores the plant from from to to with clearness(t), in a store
// opened for it and closed after (its Run rolls everything up at its end).
func (r *plantRig) record(from, to time.Time, clearness func(time.Time) float64) {
	r.tb.Helper()
	r.now.Store(to.UnixMilli())
	st := r.open()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	for t := from; t.Before(to); t = t.Add(5 * time.Minute) {
		cs := solar.ClearSkyGHIAt(munich.Lat, munich.Lon, t)
		c := clearness(t)
		for _, m := range []store.Measurement{
			{PlantID: "p1", DeviceID: "inv", Kind: kind.Inverter, Time: t, Readings: []plant.Reading{
				{Channel: plant.ActivePower, Value: 9 * c * cs}, {Channel: plant.PVGeneration, Value: 9 * c * cs}}},
			{PlantID: "p1", DeviceID: "wx", Kind: kind.Sensor, Time: t, Readings: []plant.Reading{
				{Channel: plant.ExternalInsolation, Value: c * cs}}},
		} {
			for !st.Record(m) {
				if err := st.Flush(r.tb.Context()); err != nil {
					r.tb.Fatal(err)
				}
			}
		}
	}
	cancel()
	if err := <-done; err != nil {
		r.tb.Fatal(err)
	}
	if err := st.Close(); err != nil {
		r.tb.Fatal(err)
	}
}

func (r *plantRig) open() *store.Store {
	r.tb.Helper()
	st, err := store.Open(r.tb.Context(), store.Config{Path: r.path, QueueLen: 1 << 14, Now: r.clock,
		Plants: []store.PlantInfo{{ID: "p1", Location: r.zone}}}, slog.New(slog.DiscardHandler))
	if err != nil {
		r.tb.Fatal(err)
	}
	return st
}

// TestServiceOnStore runs the forecast on a real store: four clear days
// of history and a cloudy hour before noon make a forecast scaled down
// now and clear tomorrow, recorded as tomorrow's day-ahead forecast; the
// next day, half as clear, is judged after its end by a second start (the
// state file carries the record), and /metrics shows its MAE.
func TestServiceOnStore(t *testing.T) {
	zone, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rig := &plantRig{tb: t, path: filepath.Join(dir, "plantd.db"), zone: zone}
	d0 := time.Date(2026, 6, 1, 0, 0, 0, 0, zone)
	noon4 := time.Date(2026, 6, 5, 12, 0, 0, 0, zone)
	rig.record(d0, noon4.Add(time.Minute), func(t time.Time) float64 {
		if t.After(noon4.Add(-time.Hour)) {
			return 0.3 // the cloudy hour before noon
		}
		return 1
	})
	cfg := Config{Plants: []PlantConfig{{ID: "p1", Site: Site{Lat: munich.Lat, Lon: munich.Lon, PeakW: 9000}, Zone: zone, Sensor: func() string { return "wx" }}},
		StateFile: filepath.Join(dir, StateFile), Now: rig.clock}

	st := rig.open()
	svc, err := New(cfg, st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	svc.Update(t.Context(), noon4)
	f, days, ok := svc.Forecast("p1")
	if !ok || f.Made.IsZero() || len(days) != 0 {
		t.Fatalf("forecast made %v at %v, %d days judged", ok, f.Made, len(days))
	}
	if f.HistoryDays != 4 || math.Abs(f.Clearness-1) > 0.05 {
		t.Errorf("history: %d days, clearness %.3f; want 4 clear days", f.HistoryDays, f.Clearness)
	}
	if f.Recent == nil || math.Abs(*f.Recent-0.3) > 0.05 {
		t.Fatalf("recent clearness %v, want 0.3", f.Recent)
	}
	clearAt := func(s Slot) float64 { return 9 * munich.clearSky(s.Start) }
	if r := f.Slots[0].PowerW / clearAt(f.Slots[0]); r > 0.4 {
		t.Errorf("now: %.2f of the clear sky, want about 0.3 (the cloudy hour)", r)
	}
	tomorrowNoon := f.Slots[24*4]
	if r := tomorrowNoon.PowerW / clearAt(tomorrowNoon); math.Abs(r-1) > 0.1 {
		t.Errorf("tomorrow at %v: %.2f of the clear sky, want about 1 (the history)", tomorrowNoon.Start, r)
	}
	// The plan's view: 15-minute powers from a time, within the forecast.
	for _, tc := range []struct {
		name string
		from time.Time
		n    int
		want []float64
		ok   bool
	}{
		{"from now", noon4, 3, []float64{f.Slots[0].PowerW, f.Slots[1].PowerW, f.Slots[2].PowerW}, true},
		{"from within a slot", noon4.Add(20 * time.Minute), 2, []float64{f.Slots[1].PowerW, f.Slots[2].PowerW}, true},
		{"beyond the horizon: what there is", noon4.Add(35*time.Hour + 30*time.Minute), 8, []float64{f.Slots[142].PowerW, f.Slots[143].PowerW}, true},
		{"before the forecast", noon4.Add(-time.Minute), 2, nil, false},
	} {
		got, ok := svc.Power("p1", tc.from, tc.n)
		if ok != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("Power %s: %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := svc.Power("p9", noon4, 1); ok {
		t.Error("Power of an unknown plant")
	}
	st.Close()

	// The next day half as clear; judged at 01:30 the day after.
	day5 := time.Date(2026, 6, 6, 0, 0, 0, 0, zone)
	judgeAt := day5.AddDate(0, 0, 1).Add(90 * time.Minute)
	rig.record(noon4.Add(5*time.Minute), judgeAt, func(time.Time) float64 { return 0.5 })
	st = rig.open()
	defer st.Close()
	svc, err = New(cfg, st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	svc.Update(t.Context(), judgeAt)
	_, days, _ = svc.Forecast("p1")
	if len(days) != 1 || days[0].Date != "2026-06-06" || !days[0].Made.Equal(noon4) {
		t.Fatalf("days judged %+v, want 2026-06-06 as forecast at %v", days, noon4)
	}
	a := days[0]
	// The forecast was clear and the day half as clear: every daylight
	// slot off by half its forecast.
	if ratio := a.ActualWh / a.ForecastWh; math.Abs(ratio-0.5) > 0.05 {
		t.Errorf("actual %.0f Wh against forecast %.0f Wh: %.2f, want 0.5", a.ActualWh, a.ForecastWh, ratio)
	}
	if want := (a.ForecastWh - a.ActualWh) / (float64(a.Slots) * SlotLength.Hours()); math.Abs(a.MAEW-want) > 0.05*want {
		t.Errorf("MAE %.0f W, want %.0f", a.MAEW, want)
	}
	if a.MAERelative != a.MAEW/9000 || a.Slots < 60 {
		t.Errorf("MAE over the peak %.4f, %d slots", a.MAERelative, a.Slots)
	}
	// The forecast was the clear sky, as the fit; the day before was half
	// as clear from noon on: "tomorrow = today" did better.
	if a.PersistenceMAEW == nil || *a.PersistenceMAEW > 0.7*a.MAEW || math.Abs(a.ClearSkyMAEW-a.MAEW) > 0.1*a.MAEW {
		t.Errorf("baselines: persistence %v, clear sky %.0f; want below and about the MAE %.0f", a.PersistenceMAEW, a.ClearSkyMAEW, a.MAEW)
	}

	reg := metrics.NewRegistry()
	reg.MustRegister(svc)
	out := string(reg.Gather())
	for _, want := range []string{
		`plantd_forecast_mae_watts{plant="p1"} ` + strconv.FormatFloat(a.MAEW, 'g', -1, 64),
		`plantd_forecast_mae_ratio{plant="p1"} `,
		`plantd_forecast_mae_7d_watts{plant="p1"} ` + strconv.FormatFloat(a.MAEW, 'g', -1, 64),
		`plantd_forecast_days_judged_total{plant="p1"} 1`,
		`plantd_forecast_failures_total 0`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(cfg.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc stateDoc
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Plants["p1"].Days) != 1 {
		t.Errorf("state file %s: %v", b, err)
	}
}

// TestServiceKeepsLastGoodAnswer: open-meteo (a local server serving its
// documented minutely_15 answer) says half the clear sky for the next
// hours, then fails: its last answer stays in the forecast, the failure
// is counted and said.
func TestServiceKeepsLastGoodAnswer(t *testing.T) {
	zone := time.UTC
	dir := t.TempDir()
	rig := &plantRig{tb: t, path: filepath.Join(dir, "plantd.db"), zone: zone}
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, zone)
	now := start.AddDate(0, 0, 4).Add(6 * time.Hour)
	rig.record(start, now, func(time.Time) float64 { return 1 })
	var fail atomic.Bool
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, `{"error":true,"reason":"overloaded"}`, http.StatusServiceUnavailable)
			return
		}
		var times []string
		var ghi []float64
		for i := 1; i <= 6*4; i++ {
			end := now.Add(time.Duration(i) * SlotLength)
			times = append(times, strconv.FormatInt(end.Unix(), 10))
			ghi = append(ghi, 0.5*munich.meanClearSky(end.Add(-SlotLength), SlotLength))
		}
		b, _ := json.Marshal(ghi)
		fmt.Fprintf(w, `{"latitude":48.1,"longitude":11.6,"utc_offset_seconds":0,"timezone":"GMT","minutely_15_units":{"time":"unixtime","shortwave_radiation":"W/m²"},"minutely_15":{"time":[%s],"shortwave_radiation":%s}}`,
			strings.Join(times, ","), b)
	}))
	defer srv.Close()
	st := rig.open()
	defer st.Close()
	wall := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := New(Config{Plants: []PlantConfig{{ID: "p1", Site: munich, Zone: zone,
		Service: OpenMeteo{URL: srv.URL, Lat: munich.Lat, Lon: munich.Lon, Client: srv.Client()}}},
		Now: rig.clock, WallNow: func() time.Time { return wall }}, st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for i, failing := range []bool{false, true} {
		fail.Store(failing)
		wall = wall.Add(2 * time.Hour) // past the refresh
		s.Update(t.Context(), now)
		f, _, _ := s.Forecast("p1")
		sl := f.Slots[8] // 08:00 UTC
		if sl.Source != SourceService {
			t.Errorf("run %d: slot 8 from %s, want the service's (last good) answer", i, sl.Source)
		}
		if c := sl.PowerW / (9 * munich.clearSky(sl.Start)); math.Abs(c-0.5) > 0.05 {
			t.Errorf("run %d: slot 8 at %.2f of the clear sky, want the service's 0.5", i, c)
		}
		if (f.ServiceError != "") != failing || (failing && !strings.Contains(f.ServiceError, "overloaded")) {
			t.Errorf("run %d: service error %q", i, f.ServiceError)
		}
	}
	if s.failures != 1 {
		t.Errorf("%d failures counted, want 1", s.failures)
	}
}
