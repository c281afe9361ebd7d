package gridcontrol

import (
	"fmt"
	"testing"

	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sunspec"
)

// TestRatedOf: ratedOf sums the rated power of exactly the named devices
// that are discovered, whether the names come in the devices' order (as
// Eligible gives them), in another order, repeated, or naming devices
// not in the list.
func TestRatedOf(t *testing.T) {
	devs := []plant.DeviceLive{
		dev("a", kind.Inverter, plant.StateOnline, 1, 103),
		dev("b", kind.Inverter, plant.StateOnline, 1, 103),
		{Info: plant.DeviceInfo{ID: "c", PlantID: "p", Kind: kind.Inverter}}, // undiscovered
		dev("d", kind.Inverter, plant.StateOnline, 1, 103),
	}
	for i, w := range []float64{1000, 2500, 0, 4000} {
		if sp, ok := devs[i].Discovered.(*sunspec.Device); ok {
			sp.RatedPowerW = w
		}
	}
	tests := []struct {
		name string
		ids  []string
		want float64
	}{
		{"none", nil, 0},
		{"all in order", []string{"a", "b", "c", "d"}, 7500},
		{"subsequence", []string{"a", "d"}, 5000},
		{"undiscovered only", []string{"c"}, 0},
		{"other order", []string{"d", "a"}, 5000},
		{"repeated", []string{"a", "a", "b"}, 3500},
		{"unknown id", []string{"a", "x"}, 1000},
		{"unknown id first", []string{"x", "b"}, 2500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ratedOf(devs, tt.ids); got != tt.want {
				t.Errorf("ratedOf(%v) = %g, want %g", tt.ids, got, tt.want)
			}
		})
	}
}

// BenchmarkRatedOf: a control cycle's ratedOf at 1,000 inverters, all of
// them taking the limit.
func BenchmarkRatedOf(b *testing.B) {
	var devs []plant.DeviceLive
	var ids []string
	for i := range 1000 {
		id := fmt.Sprintf("inv%04d", i)
		devs = append(devs, dev(id, kind.Inverter, plant.StateOnline, 1, 103))
		ids = append(ids, id)
	}
	b.ReportAllocs()
	for b.Loop() {
		if ratedOf(devs, ids) != 1000*10000 {
			b.Fatal("wrong sum")
		}
	}
}
