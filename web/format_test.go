package web

import "testing"

// TestToFixed2 checks the tests' mirror of JavaScript's toFixed(2), which
// the page's kW figures use, on ties and on doubles just below a tie (the
// wants are what node prints for the same expressions).
func TestToFixed2(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{1.125, "1.13"},         // an exact tie: the larger
		{1285.0 / 1000, "1.28"}, // just below 1.285
		{1.005, "1.00"},
		{2.675, "2.67"},
		{1.5, "1.50"},
		{-1.125, "-1.13"},
		{12345.0 / 1000, "12.35"},
		{0.994999, "0.99"},
	} {
		if got := toFixed2(c.x); got != c.want {
			t.Errorf("toFixed2(%v) = %s, want %s", c.x, got, c.want)
		}
	}
}
