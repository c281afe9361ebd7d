package siteplan

import (
	"math"
	"testing"
	"time"

	"plantd/plant"
	"plantd/tariffs"
)

// TestNegativeRuns: the runs of slots whose feed-in price is below the
// floor, joined when they touch, a run under way starting now, the
// lowest price kept.
func TestNegativeRuns(t *testing.T) {
	t0 := time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC)
	slot := func(h int, feedIn float64) tariffs.Slot {
		return tariffs.Slot{Start: t0.Add(time.Duration(h) * time.Hour), End: t0.Add(time.Duration(h+1) * time.Hour), FeedIn: feedIn}
	}
	at := func(h float64) time.Time { return t0.Add(time.Duration(h * float64(time.Hour))) }
	tests := []struct {
		name   string
		prices []tariffs.Slot
		floor  float64
		now    time.Time
		want   []window
	}{
		{"none below zero", []tariffs.Slot{slot(0, 0.08), slot(1, 0)}, 0, at(0), nil},
		{"two hours joined, the lower price kept", []tariffs.Slot{slot(0, 0.08), slot(1, -0.01), slot(2, -0.05), slot(3, 0.02)}, 0, at(0),
			[]window{{at(1), at(3), -0.05}}},
		{"two runs apart", []tariffs.Slot{slot(0, -0.01), slot(1, 0.03), slot(2, -0.02)}, 0, at(0),
			[]window{{at(0), at(1), -0.01}, {at(2), at(3), -0.02}}},
		{"a run under way starts now; one over is gone", []tariffs.Slot{slot(0, -0.01), slot(1, 0.03), slot(2, -0.02), slot(3, -0.02)}, 0, at(2.5),
			[]window{{at(2.5), at(4), -0.02}}},
		{"a floor above zero", []tariffs.Slot{slot(0, 0.02), slot(1, 0.05)}, 0.03, at(0), []window{{at(0), at(1), 0.02}}},
		{"a gap in the prices splits a run", []tariffs.Slot{slot(0, -0.01), slot(2, -0.01)}, 0, at(0),
			[]window{{at(0), at(1), -0.01}, {at(2), at(3), -0.01}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := negativeRuns(tt.prices, tt.floor, tt.now)
			if len(got) != len(tt.want) {
				t.Fatalf("runs %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if !got[i].start.Equal(tt.want[i].start) || !got[i].end.Equal(tt.want[i].end) || got[i].price != tt.want[i].price {
					t.Errorf("run %d %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestInput: the tariffs' slots (an hour and a quarter-hour market, a
// fixed window) become the planner's 15-minute slots from the slot of
// now, the plan ending where the known prices end; stale prices or less
// than an hour of them give no input but a reason.
func TestInput(t *testing.T) {
	t0 := time.Date(2026, 1, 15, 2, 0, 0, 0, time.UTC)
	live := plant.NewLive([]plant.Plant{{ID: "p1"}}, nil, func() time.Time { return t0 })
	r, err := New(Spec{PlantID: "p1", Now: func() time.Time { return t0 }}, Deps{Prices: &fixedPrices{}, Gate: nopGate{}, Live: live}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hour := func(h int, imp float64) tariffs.Slot {
		return tariffs.Slot{Start: t0.Add(time.Duration(h) * time.Hour), End: t0.Add(time.Duration(h+1) * time.Hour), Import: imp, FeedIn: 0.08}
	}
	quarter := tariffs.Slot{Start: t0.Add(3 * time.Hour), End: t0.Add(3*time.Hour + 15*time.Minute), Import: 0.5, FeedIn: -0.01}
	in, src, why := r.input(t0, 144, []tariffs.Slot{hour(0, 0.1), hour(1, 0.2), hour(2, 0.3), quarter}, false)
	if why != "" {
		t.Fatalf("no input: %s", why)
	}
	if len(in.Slots) != 13 {
		t.Fatalf("%d slots, want 13 (3 hours and a quarter)", len(in.Slots))
	}
	for i, want := range map[int]float64{0: 0.1, 3: 0.1, 4: 0.2, 11: 0.3, 12: 0.5} {
		if in.Slots[i].ImportEURPerKWh != want {
			t.Errorf("slot %d import %v, want %v", i, in.Slots[i].ImportEURPerKWh, want)
		}
	}
	if src != BaseLoadNone || in.Slots[0].BaseLoadW != 0 {
		t.Errorf("base load %v from %q, want 0 from none (no load known yet)", in.Slots[0].BaseLoadW, src)
	}
	if in.Slots[12].FeedInEURPerKWh != -0.01 || in.Battery != nil {
		t.Errorf("last slot %+v, battery %+v; want feed-in -0.01 and no battery (none in the live state)", in.Slots[12], in.Battery)
	}
	if _, _, why := r.input(t0, 144, []tariffs.Slot{hour(0, 0.1)}, true); why == "" {
		t.Error("stale prices gave a plan")
	}
	if _, _, why := r.input(t0, 144, []tariffs.Slot{hour(1, 0.1)}, false); why == "" {
		t.Error("prices from an hour on gave a plan now")
	}
}

// TestBaseLoad: the plan's base load is the forecast from the plant's
// history when there is one, its first two hours shifted by the live
// load's departure from it (compared smoothed, as the live load is), and
// else the smoothed live load flat over the horizon; the source is said
// in the input's snapshot.
func TestBaseLoad(t *testing.T) {
	t0 := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
	// The profile: 300 W, 2 kW from 18:00 to 21:00.
	profile := func(from time.Time, n int) ([]float64, bool) {
		w := make([]float64, n)
		for i := range w {
			if h := from.Add(time.Duration(i) * 15 * time.Minute).Hour(); h >= 18 && h < 21 {
				w[i] = 2000
			} else {
				w[i] = 300
			}
		}
		return w, true
	}
	none := func(time.Time, int) ([]float64, bool) { return nil, false }
	for _, tc := range []struct {
		name   string
		load   LoadForecast
		live   *float64
		source BaseLoadSource
		want   map[int]float64 // slot → W
	}{
		{"no forecast: the live load, flat", nil, ptr(600), BaseLoadLive, map[int]float64{0: 600, 4: 600, 28: 600, 143: 600}},
		{"a forecast without a profile: the live load, flat", none, ptr(600), BaseLoadLive, map[int]float64{0: 600, 28: 600}},
		{"nothing known yet", nil, nil, BaseLoadNone, map[int]float64{0: 0, 28: 0}},
		{"the forecast, the live load as it says", profile, ptr(300), BaseLoadHistory, map[int]float64{0: 300, 4: 300, 24: 2000, 35: 2000, 36: 300, 120: 2000}},
		{"the live load above it: the first two hours shifted", profile, ptr(900), BaseLoadHistory, map[int]float64{0: 900, 4: 600, 6: 450, 8: 300, 24: 2000}},
		{"the live load below it: never below 0", profile, ptr(0), BaseLoadHistory, map[int]float64{0: 0, 4: 150, 8: 300}},
		{"the forecast before the first load sample", profile, nil, BaseLoadHistory, map[int]float64{0: 300, 24: 2000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prices := &fixedPrices{slots: []tariffs.Slot{{Start: t0, End: t0.Add(36 * time.Hour), Import: 0.3, FeedIn: 0.08}}}
			live := plant.NewLive([]plant.Plant{{ID: "p1"}}, nil, func() time.Time { return t0 })
			r, err := New(Spec{PlantID: "p1", Now: func() time.Time { return t0 }}, Deps{Prices: prices, Gate: nopGate{}, Live: live, Load: tc.load}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.live != nil {
				r.loadW, r.loadOK = *tc.live, true
			}
			in, src, why := r.input(t0, 144, prices.slots, false)
			if why != "" || len(in.Slots) != 144 {
				t.Fatalf("no input: %q, %d slots", why, len(in.Slots))
			}
			if src != tc.source {
				t.Errorf("source %q, want %q", src, tc.source)
			}
			for i, want := range tc.want {
				if got := in.Slots[i].BaseLoadW; math.Abs(got-want) > 1e-6 {
					t.Errorf("slot %d (%v): %.1f W, want %.1f", i, t0.Add(time.Duration(i)*15*time.Minute).Format("15:04"), got, want)
				}
			}
		})
	}
}

func ptr(v float64) *float64 { return &v }

// fixedPrices and nopGate stand in for the tariffs and grid control in
// TestInput, which calls neither (cmd/plantd's TestPlanNegativePrice and
// TestPlanGridCharge run the runner against the real ones).
type fixedPrices struct{ slots []tariffs.Slot }

func (p *fixedPrices) Slots(from, to time.Time) []tariffs.Slot { return p.slots }
func (*fixedPrices) Status() tariffs.Status                    { return tariffs.Status{} }

type nopGate struct{ Gate }
