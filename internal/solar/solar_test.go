package solar

import (
	"math"
	"testing"
	"time"
)

func TestElevation(t *testing.T) {
	cases := []struct {
		name     string
		lat, lon float64
		at       time.Time
		want     float64 // degrees, ±1.5
	}{
		// Noon elevation = 90 - latitude + declination.
		{"Munich summer solstice noon", 48.1, 11.6, time.Date(2025, 6, 21, 11, 13, 0, 0, time.UTC), 90 - 48.1 + 23.44},
		{"Munich winter solstice noon", 48.1, 11.6, time.Date(2025, 12, 21, 11, 11, 0, 0, time.UTC), 90 - 48.1 - 23.44},
		{"equator equinox noon", 0, 0, time.Date(2025, 3, 20, 12, 7, 0, 0, time.UTC), 90},
		{"Munich midnight", 48.1, 11.6, time.Date(2025, 6, 21, 23, 13, 0, 0, time.UTC), -(90 - 48.1 - 23.44)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Elevation(tc.lat, tc.lon, tc.at); math.Abs(got-tc.want) > 1.5 {
				t.Errorf("elevation %.2f°, want %.2f°", got, tc.want)
			}
		})
	}
}

func TestClearSkyGHI(t *testing.T) {
	cases := []struct {
		name           string
		elevation      float64
		wantLo, wantHi float64
	}{
		{"below the horizon", -5, 0, 0},
		{"on the horizon", 0, 0, 0},
		{"low sun", 10, 130, 145},  // 1098·sin 10°·e^(-0.057/sin 10°) = 137,
		{"zenith", 90, 1030, 1040}, // 1098·e^-0.057
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClearSkyGHI(tc.elevation); got < tc.wantLo || got > tc.wantHi {
				t.Errorf("GHI %.1f W/m², want %v..%v", got, tc.wantLo, tc.wantHi)
			}
		})
	}
}
