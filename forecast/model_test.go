package forecast

import (
	"math"
	"testing"
	"time"

	"plantd/internal/solar"
)

// munich is the demo plant's site (sim.DefaultLatitude, DefaultLongitude).
var munich = Site{Lat: 48.1, Lon: 11.6}

// history makes days of 15-minute PV samples from start: on day i the
// plant gives clearness(i) × wPerGHI × the clear-sky GHI.
func history(start time.Time, days int, wPerGHI float64, clearness func(day int) float64) []Sample {
	var out []Sample
	for i := range days * slotsPerDay {
		t := start.Add(time.Duration(i) * SlotLength)
		cs := solar.ClearSkyGHIAt(munich.Lat, munich.Lon, t.Add(SlotLength/2))
		out = append(out, Sample{Start: t, W: clearness(i/slotsPerDay) * wPerGHI * cs})
	}
	return out
}

func TestFitAndForecast(t *testing.T) {
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	now := start.AddDate(0, 0, 30).Add(9 * time.Hour) // 11:00 in Munich
	cloudy := 0.3
	cases := []struct {
		name          string
		clearness     func(day int) float64
		recent        *float64
		wantClearness float64 // of the history
		// The forecast's power over the clear-sky PV: in the first slot and
		// at noon the next day (the recent hour's weight gone).
		wantFirst, wantTomorrow float64
	}{
		{"clear days: the clear-sky fit", func(int) float64 { return 1 }, nil, 1, 1, 1},
		{"every other day half cloudy: the fit from the clear ones, the mean below", func(d int) float64 { return 1 - 0.5*float64(d%2) }, nil, 0.75, 0.75, 0.75},
		{"clear days, a cloudy last hour: scaled down now, back to the mean tomorrow", func(int) float64 { return 1 }, &cloudy, 1, 0.3, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const wPerGHI = 9.0 // a 9 kW plant, 1000 W/m² on a clear noon giving about it
			fit, ok := FitHistory(munich, history(start, 30, wPerGHI, tc.clearness))
			if !ok {
				t.Fatal("no fit")
			}
			if c := fit.Clearness(); math.Abs(c-tc.wantClearness) > 0.02 {
				t.Errorf("history's clearness %.3f, want %.3f", c, tc.wantClearness)
			}
			if fit.Days() != 30 {
				t.Errorf("days %d, want 30", fit.Days())
			}
			noon := time.Date(2026, 7, 1, 11, 0, 0, 0, time.UTC)
			if got, want := fit.ClearSkyW(noon), wPerGHI*munich.clearSky(noon); math.Abs(got-want) > 0.01*want {
				t.Errorf("clear-sky PV at noon %.0f W, want %.0f W", got, want)
			}
			slots := fit.Forecast(nil, Inputs{Now: now, Horizon: DefaultHorizon, Recent: tc.recent})
			if len(slots) != 144 {
				t.Fatalf("%d slots, want 144 (36 h)", len(slots))
			}
			if !slots[0].Start.Equal(now.Truncate(SlotLength)) || slots[0].Source != SourceHistory {
				t.Errorf("first slot %v %s, want %v history", slots[0].Start, slots[0].Source, now)
			}
			ratio := func(s Slot) float64 { return s.PowerW / fit.ClearSkyW(s.Start) }
			if r := ratio(slots[0]); math.Abs(r-tc.wantFirst) > 0.05 {
				t.Errorf("first slot at %.2f of the clear sky, want %.2f", r, tc.wantFirst)
			}
			tomorrow := slots[(24+2)*4] // 11:00 UTC tomorrow
			if r := ratio(tomorrow); math.Abs(r-tc.wantTomorrow) > 0.02 {
				t.Errorf("tomorrow noon at %.2f of the clear sky, want %.2f", r, tc.wantTomorrow)
			}
			for _, s := range slots {
				if s.PowerW < 0 || s.PowerW > fit.PeakW() {
					t.Fatalf("slot %v: %.0f W outside 0..%.0f", s.Start, s.PowerW, fit.PeakW())
				}
				if el := solar.Elevation(munich.Lat, munich.Lon, s.Start.Add(SlotLength/2)); el < -1 && s.PowerW != 0 {
					t.Errorf("slot %v at night: %.0f W", s.Start, s.PowerW)
				}
			}
		})
	}
}

func TestForecastFromService(t *testing.T) {
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	fit, _ := FitHistory(munich, history(start, 10, 9, func(int) float64 { return 1 }))
	now := time.Date(2026, 6, 11, 4, 0, 0, 0, time.UTC)
	// The service says half the clear sky for the next 12 hours, hourly.
	var svc []ServiceSlot
	for h := range 12 {
		t0 := now.Add(time.Duration(h) * time.Hour)
		var mean float64 // the hour's clear sky, by minute
		for m := range 60 {
			mean += solar.ClearSkyGHIAt(munich.Lat, munich.Lon, t0.Add(time.Duration(m)*time.Minute+30*time.Second)) / 60
		}
		svc = append(svc, ServiceSlot{Start: t0, Length: time.Hour, GHI: 0.5 * mean})
	}
	slots := fit.Forecast(nil, Inputs{Now: now, Horizon: DefaultHorizon, Service: svc})
	for _, s := range slots {
		inService := s.Start.Before(now.Add(12 * time.Hour))
		cs := munich.clearSky(s.Start)
		switch {
		case cs < minClearSkyGHI:
		case inService && s.Source != SourceService, !inService && s.Source != SourceHistory:
			t.Errorf("slot %v: source %s", s.Start, s.Source)
		case inService:
			// Half of the hour's mean, against the slot's own clear sky.
			if r := s.PowerW / fit.ClearSkyW(s.Start); r < 0.4 || r > 0.6 {
				t.Errorf("slot %v at %.2f of the clear sky, want about 0.5", s.Start, r)
			}
		}
	}
}

func TestRecentClearness(t *testing.T) {
	noon := time.Date(2026, 6, 15, 11, 0, 0, 0, time.UTC)
	samples := func(at time.Time, f float64) []Sample {
		var out []Sample
		for m := range 60 {
			t := at.Add(-time.Duration(m) * time.Minute)
			out = append(out, Sample{Start: t, W: f * solar.ClearSkyGHIAt(munich.Lat, munich.Lon, t)})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		samples []Sample
		want    float64
		ok      bool
	}{
		{"clear", samples(noon, 1), 1, true},
		{"overcast", samples(noon, 0.2), 0.2, true},
		{"a sensor reading high is capped", samples(noon, 2), maxClearness, true},
		{"night", samples(noon.Add(12*time.Hour), 1), 0, false},
		{"no samples", nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := RecentClearness(munich, tc.samples)
			if ok != tc.ok || math.Abs(c-tc.want) > 0.01 {
				t.Errorf("clearness %.3f, %v; want %.3f, %v", c, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	day := time.Date(2026, 6, 15, 0, 0, 0, 0, time.UTC)
	munich9k := munich
	munich9k.PeakW = 5000
	fit, _ := FitHistory(munich9k, history(day.AddDate(0, 0, -10), 10, 5, func(int) float64 { return 1 }))
	var fc []Slot
	var measured, previous []Sample
	for i := range slotsPerDay {
		st := day.Add(time.Duration(i) * SlotLength)
		cs := munich.clearSky(st)
		fc = append(fc, Slot{Start: st, PowerW: 5 * cs})
		if i%10 != 0 { // a tenth unmeasured
			measured = append(measured, Sample{Start: st, W: 5*cs + 100*sign(cs)})
		}
		previous = append(previous, Sample{Start: st.Add(-24 * time.Hour), W: 5*cs + 300*sign(cs)})
	}
	a, ok := Judge(fit, fc, measured, previous)
	if !ok {
		t.Fatal("not judged")
	}
	if math.Abs(a.MAEW-100) > 1e-9 || math.Abs(a.MAERelative-0.02) > 1e-9 || a.PeakW != 5000 {
		t.Errorf("MAE %.3f W (%.4f of %v W), want 100 W (0.02 of 5000)", a.MAEW, a.MAERelative, a.PeakW)
	}
	if math.Abs(a.ActualWh-a.ForecastWh-100*0.25*float64(a.Slots)) > 1e-6 {
		t.Errorf("energies %.1f and %.1f Wh over %d slots", a.ForecastWh, a.ActualWh, a.Slots)
	}
	// The fit is the clear sky the forecast was; yesterday 200 W off.
	if a.PersistenceMAEW == nil || math.Abs(*a.PersistenceMAEW-200) > 1e-9 || math.Abs(a.ClearSkyMAEW-100) > 0.5 {
		t.Errorf("baselines: persistence %v, clear sky %.2f; want 200, 100", a.PersistenceMAEW, a.ClearSkyMAEW)
	}
	if a, ok := Judge(fit, fc, measured, previous[:20]); !ok || a.PersistenceMAEW != nil {
		t.Errorf("yesterday hardly measured: judged %v, persistence %v; want judged without it", ok, a.PersistenceMAEW)
	}
	if _, ok := Judge(fit, fc, measured[:len(measured)/2], previous); ok {
		t.Error("judged a day half measured")
	}
}

func sign(v float64) float64 {
	if v > 0 {
		return 1
	}
	return 0
}

// BenchmarkForecast is one forecast of 36 h from 30 days of history: the
// daily fit and the 15-minute forecast (as the service runs them: the fit
// once a day, the forecast every 15 minutes).
func BenchmarkForecast(b *testing.B) {
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	pv := history(start, 30, 9, func(d int) float64 { return 0.5 + 0.5*float64(d%3)/2 })
	now := start.AddDate(0, 0, 30).Add(9 * time.Hour)
	recent := 0.7
	b.Run("fit+forecast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fit, _ := FitHistory(munich, pv)
			_ = fit.Forecast(nil, Inputs{Now: now, Horizon: DefaultHorizon, Recent: &recent})
		}
	})
	fit, _ := FitHistory(munich, pv)
	dst := make([]Slot, 0, 144)
	b.Run("forecast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dst = fit.Forecast(dst[:0], Inputs{Now: now, Horizon: DefaultHorizon, Recent: &recent})
		}
	})
}
