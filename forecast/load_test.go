package forecast

import (
	"context"
	"log/slog"
	"math"
	"path/filepath"
	"testing"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
	"plantd/store"
)

// recordHouse stores a house from from to to every 5 minutes into a real
// store at path (through its write path, Record): a grid meter drawing
// houseW(t) + pumpW(t) (no PV, no battery: the total consumption is the
// meter's draw) and a heat pump (a consumer) metering pumpW(t).
func recordHouse(tb testing.TB, path string, zone *time.Location, from, to time.Time, houseW, pumpW func(time.Time) float64) {
	tb.Helper()
	st, err := store.Open(tb.Context(), store.Config{Path: path, QueueLen: 1 << 14, Now: func() time.Time { return to },
		Plants: []store.PlantInfo{{ID: "p1", Location: zone}}}, slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	for t := from; t.Before(to); t = t.Add(5 * time.Minute) {
		hp := pumpW(t)
		for _, m := range []store.Measurement{
			{PlantID: "p1", DeviceID: "meter", Kind: kind.Meter, Time: t, Readings: []plant.Reading{
				{Channel: plant.ActivePower, Value: houseW(t) + hp}, {Channel: plant.GridConsumption, Value: houseW(t) + hp},
				{Channel: plant.GridFeedIn, Value: 0}}},
			{PlantID: "p1", DeviceID: "hp", Kind: kind.Consumer, Time: t, Readings: []plant.Reading{
				{Channel: plant.Consumption, Value: hp}}},
		} {
			for !st.Record(m) {
				if err := st.Flush(tb.Context()); err != nil {
					tb.Fatal(err)
				}
			}
		}
	}
	cancel()
	if err := <-done; err != nil {
		tb.Fatal(err)
	}
	if err := st.Close(); err != nil {
		tb.Fatal(err)
	}
}

// house is a household of 300 W with an evening of 2 kW from 18:00 to
// 21:00 on weekdays; on weekends weekendW all day (0: as weekdays).
func house(zone *time.Location, weekendW float64) func(time.Time) float64 {
	return func(t time.Time) float64 {
		l := t.In(zone)
		if wd := l.Weekday(); weekendW > 0 && (wd == time.Saturday || wd == time.Sunday) {
			return weekendW
		}
		if h := l.Hour(); h >= 18 && h < 21 {
			return 2000
		}
		return 300
	}
}

// TestLoadOnStore: the base-load profile from a real store's energy
// balance: the median per quarter-hour of the local day, weekdays and
// weekends apart when they differ, the planned heat pump's metered draw
// left out, an odd evening ignored, nothing from too little history.
func TestLoadOnStore(t *testing.T) {
	zone, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	d0 := time.Date(2026, 6, 1, 0, 0, 0, 0, zone) // a Monday
	now := d0.AddDate(0, 0, 14).Add(12 * time.Hour)
	noPump := func(time.Time) float64 { return 0 }
	nightPump := func(t time.Time) float64 { // 1.5 kW from 02:00 to 04:00
		if h := t.In(zone).Hour(); h >= 2 && h < 4 {
			return 1500
		}
		return 0
	}
	at := func(day, h, m int) time.Time { return time.Date(2026, 6, day, h, m, 0, 0, zone) }
	for _, tc := range []struct {
		name     string
		days     int // of history before now's day
		houseW   func(time.Time) float64
		pumpW    func(time.Time) float64
		flexible []string
		ok       bool
		split    bool
		want     map[time.Time]float64 // slot start → base load
	}{
		{name: "every day alike", days: 14, houseW: house(zone, 0), pumpW: noPump, ok: true,
			want: map[time.Time]float64{at(15, 12, 0): 300, at(15, 19, 30): 2000, at(20, 19, 30): 2000, at(16, 3, 0): 300}},
		{name: "weekends differ: their own profile", days: 14, houseW: house(zone, 800), pumpW: noPump, ok: true, split: true,
			want: map[time.Time]float64{at(15, 12, 0): 300, at(15, 19, 30): 2000, at(20, 12, 0): 800, at(21, 19, 30): 800}},
		{name: "one odd evening: the median keeps out", days: 14, houseW: func(t time.Time) float64 {
			if l := t.In(zone); l.Day() == 10 && l.Hour() >= 18 && l.Hour() < 21 {
				return 6000 // a sauna
			}
			return house(zone, 0)(t)
		}, pumpW: noPump, ok: true, want: map[time.Time]float64{at(15, 19, 30): 2000, at(17, 19, 0): 2000}},
		{name: "the planned heat pump's metered draw is not base load", days: 14, houseW: house(zone, 0), pumpW: nightPump, flexible: []string{"hp"}, ok: true,
			want: map[time.Time]float64{at(16, 3, 0): 300, at(16, 12, 0): 300}},
		{name: "a heat pump the plan does not place is base load", days: 14, houseW: house(zone, 0), pumpW: nightPump, ok: true,
			want: map[time.Time]float64{at(16, 3, 0): 1800, at(16, 12, 0): 300}},
		{name: "one day of history: no profile", days: 1, houseW: house(zone, 0), pumpW: noPump, ok: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plantd.db")
			recordHouse(t, path, zone, now.Truncate(24*time.Hour).Add(-time.Duration(tc.days)*24*time.Hour).In(zone), now, tc.houseW, tc.pumpW)
			st, err := store.Open(t.Context(), store.Config{Path: path, Now: func() time.Time { return now },
				Plants: []store.PlantInfo{{ID: "p1", Location: zone}}}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			svc, err := New(Config{Plants: []PlantConfig{{ID: "p1", Site: munich, Zone: zone, Flexible: func() []string { return tc.flexible }}},
				Now: func() time.Time { return now }}, st, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			svc.Update(t.Context(), now)
			w, ok := svc.Load("p1", now, 7*96) // the profile answers for any day
			if ok != tc.ok {
				t.Fatalf("Load ok %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			svc.mu.Lock()
			split, days := svc.byID["p1"].load.Split(), svc.byID["p1"].load.Days()
			svc.mu.Unlock()
			if split != tc.split || days < tc.days-1 || days > tc.days+1 {
				t.Errorf("split %v from %d days; want %v from %d", split, days, tc.split, tc.days)
			}
			for start, want := range tc.want {
				i := int(start.Sub(now) / SlotLength)
				if math.Abs(w[i]-want) > 1 {
					t.Errorf("%v: %.0f W, want %.0f", start, w[i], want)
				}
			}
		})
	}
}

// TestJudgeLoad: the day's MAE against the measured base load, beside
// the flat load; too few measured slots are not judged.
func TestJudgeLoad(t *testing.T) {
	day := time.Date(2026, 6, 2, 0, 0, 0, 0, time.UTC)
	var slots []Slot
	var measured, previous []Sample
	for i := range 96 {
		start := day.Add(time.Duration(i) * SlotLength)
		w := 300.0
		if i >= 72 && i < 84 {
			w = 2000
		}
		f := w + 100 // off by 100 W everywhere
		slots = append(slots, Slot{Start: start, LoadW: &f})
		measured = append(measured, Sample{Start: start, W: w})
		previous = append(previous, Sample{Start: start.Add(-24 * time.Hour), W: w + 50})
	}
	// The day before's mean: (84 × 350 + 12 × 2050) / 96 = 562.5 W.
	dayMean := (84*(562.5-300) + 12*(2000-562.5)) / 96
	for _, tc := range []struct {
		name               string
		measured, previous []Sample
		flat               float64
		ok                 bool
		mae, flatMAE       float64
		forecastWh, real   float64
		dayMean, persisted *float64
	}{
		{"the whole day", measured, previous, 500, true, 100, (84*200 + 12*1500) / 96.0, (84*400 + 12*2100) / 4.0, (84*300 + 12*2000) / 4.0,
			&dayMean, ptr(50)},
		{"the day before not measured", measured, previous[:40], 500, true, 100, (84*200 + 12*1500) / 96.0, (84*400 + 12*2100) / 4.0, (84*300 + 12*2000) / 4.0,
			nil, nil},
		{"the evening only measured", measured[70:], previous, 500, false, 0, 0, 0, 0, nil, nil},
	} {
		a, ok := JudgeLoad(slots, tc.measured, tc.previous, tc.flat)
		if ok != tc.ok {
			t.Fatalf("%s: ok %v", tc.name, ok)
		}
		if !ok {
			continue
		}
		if math.Abs(a.MAEW-tc.mae) > 1e-9 || math.Abs(a.FlatMAEW-tc.flatMAE) > 1e-9 || a.ForecastWh != tc.forecastWh || a.ActualWh != tc.real || a.Slots != 96 {
			t.Errorf("%s: %+v", tc.name, a)
		}
		for _, c := range []struct {
			name      string
			got, want *float64
		}{{"day mean", a.DayMeanMAEW, tc.dayMean}, {"persistence", a.PersistenceMAEW, tc.persisted}} {
			if (c.got == nil) != (c.want == nil) || (c.got != nil && math.Abs(*c.got-*c.want) > 1e-9) {
				t.Errorf("%s: %s MAE %v, want %v", tc.name, c.name, c.got, c.want)
			}
		}
	}
	// The flat load of a plan made at 12:00: the smoothed load before it.
	ramp := []Sample{}
	for i := range 48 {
		ramp = append(ramp, Sample{Start: day.Add(time.Duration(i) * SlotLength), W: 400})
	}
	if w, ok := flatLoad(ramp, day.Add(12*time.Hour)); !ok || math.Abs(w-400) > 1e-9 {
		t.Errorf("flat load %v %v, want 400", w, ok)
	}
	if _, ok := flatLoad(ramp, day.Add(15*time.Hour)); ok {
		t.Error("a flat load from samples 3 h old")
	}
}

func ptr(v float64) *float64 { return &v }
