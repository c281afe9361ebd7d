package forecast

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkServiceOnStore is one forecast of 36 h from 30 days of history
// in a real store (an inverter and a weather sensor every 5 minutes):
// "daily" reads the 30 days (6 Week queries), fits and forecasts, as the
// first run of a day does; "every15min" is the other runs of the day: the
// sensor's last hour (a Recent query) and the forecast.
func BenchmarkServiceOnStore(b *testing.B) {
	zone, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		b.Fatal(err)
	}
	rig := &plantRig{tb: b, path: filepath.Join(b.TempDir(), "plantd.db"), zone: zone}
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, zone)
	now := start.AddDate(0, 0, 30).Add(11 * time.Hour)
	rig.record(start, now, func(t time.Time) float64 { return 0.6 + 0.4*float64(t.YearDay()%3)/2 })
	st := rig.open()
	defer st.Close()
	cfg := Config{Plants: []PlantConfig{{ID: "p1", Site: munich, Zone: zone, Sensor: func() string { return "wx" }}}, Now: rig.clock}
	b.Run("daily", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := New(cfg, st, slog.New(slog.DiscardHandler))
			if err != nil {
				b.Fatal(err)
			}
			s.Update(b.Context(), now)
			if f, _, _ := s.Forecast("p1"); len(f.Slots) != 144 || f.HistoryDays != 30 {
				b.Fatalf("%d slots from %d days", len(f.Slots), f.HistoryDays)
			}
		}
	})
	s, _ := New(cfg, st, slog.New(slog.DiscardHandler))
	s.Update(b.Context(), now)
	b.Run("every15min", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Update(b.Context(), now)
		}
	})
}

// BenchmarkFitLoad is the day's base-load computation: the profile from
// 14 days of 15-minute base load (weekdays and weekends differing, so
// both classes' medians are taken and compared) and the 36 h of the
// plan's slots from it.
func BenchmarkFitLoad(b *testing.B) {
	zone, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		b.Fatal(err)
	}
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, zone)
	houseW := house(zone, 800)
	var samples []Sample
	for t := start; t.Before(start.AddDate(0, 0, LoadHistoryDays)); t = t.Add(SlotLength) {
		samples = append(samples, Sample{Start: t, W: houseW(t) + float64(t.Unix()%97)})
	}
	now := start.AddDate(0, 0, LoadHistoryDays).Add(12 * time.Hour)
	out := make([]float64, 36*4)
	b.ReportAllocs()
	for b.Loop() {
		f, ok := FitLoad(zone, samples)
		if !ok || !f.Split() {
			b.Fatal("no split profile")
		}
		for i := range out {
			out[i] = f.At(now.Add(time.Duration(i) * SlotLength))
		}
	}
}
