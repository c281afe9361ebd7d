package metrics

import "testing"

// TestObserveAllocs: updating a counter or a histogram of label values
// seen before allocates nothing (they sit on the poll path).
func TestObserveAllocs(t *testing.T) {
	h := NewHistogramVec("x", "x", []float64{1, 2}, "a")
	c := NewCounterVec("y", "y", "a")
	h.Observe(1, "v")
	c.Inc("v")
	if n := testing.AllocsPerRun(100, func() { h.Observe(1.5, "v"); c.Inc("v") }); n != 0 {
		t.Errorf("%v allocs per observe", n)
	}
}
