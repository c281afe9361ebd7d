package httpapi

import (
	"strconv"
	"testing"
)

func TestCleanDropsFloatNoise(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	for in, want := range map[float64]string{
		4.482000000000001: "4.482", 49.971999999999994: "49.972", 398.46000000000004: "398.46",
		0.1 + 0.2: "0.3", 12340: "12340", -0.99: "-0.99", 1.0 / 3: "0.333333333333", 0: "0",
	} {
		if got := strconv.FormatFloat(clean(in), 'g', -1, 64); got != want {
			t.Errorf("clean(%v) = %s, want %s", in, got, want)
		}
	}
}
