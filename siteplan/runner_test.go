package siteplan

import (
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
	in, why := r.input(t0, 144, []tariffs.Slot{hour(0, 0.1), hour(1, 0.2), hour(2, 0.3), quarter}, false)
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
	if in.Slots[12].FeedInEURPerKWh != -0.01 || in.Battery != nil {
		t.Errorf("last slot %+v, battery %+v; want feed-in -0.01 and no battery (none in the live state)", in.Slots[12], in.Battery)
	}
	if _, why := r.input(t0, 144, []tariffs.Slot{hour(0, 0.1)}, true); why == "" {
		t.Error("stale prices gave a plan")
	}
	if _, why := r.input(t0, 144, []tariffs.Slot{hour(1, 0.1)}, false); why == "" {
		t.Error("prices from an hour on gave a plan now")
	}
}

// fixedPrices and nopGate stand in for the tariffs and grid control in
// TestInput, which calls neither (cmd/plantd's TestPlanNegativePrice and
// TestPlanGridCharge run the runner against the real ones).
type fixedPrices struct{}

func (*fixedPrices) Slots(from, to time.Time) []tariffs.Slot { return nil }
func (*fixedPrices) Status() tariffs.Status                  { return tariffs.Status{} }

type nopGate struct{ Gate }
