package store

import (
	"sync/atomic"
	"testing"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
)

// TestFutureRows: a sample stamped a year ahead (a clock that jumped
// forward and back) is refused at write time, and a future row already in
// the file (written while the clock was ahead) does not hide the present
// from Recent.
func TestFutureRows(t *testing.T) {
	t.Parallel() // its own database files
	loc := mustZone(t, "Europe/Berlin")
	now0 := time.Date(2026, 6, 1, 12, 0, 0, 0, loc)
	var clock atomic.Int64
	clock.Store(now0.UnixNano())
	s := openTest(t, Config{Plants: []PlantInfo{{ID: "p1", Location: loc}}, Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	stop := runStore(t, s)
	ctx := t.Context()
	rec := func(at time.Time, w float64) bool {
		return s.Record(Measurement{PlantID: "p1", DeviceID: "inv", Kind: kind.Inverter, Time: at,
			Readings: []plant.Reading{{Channel: plant.PVGeneration, Value: w}, {Channel: plant.ActivePower, Value: w}}})
	}
	for i := range 12 {
		at := now0.Add(time.Duration(i) * 5 * time.Second)
		clock.Store(at.UnixNano())
		rec(at, 1000)
	}
	// A sample a year ahead of the store's clock: refused.
	year := now0.AddDate(1, 0, 0)
	if rec(year, 9999) {
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The clock jumps a year ahead, one sample is stored, the clock comes
	// back.
	clock.Store(year.Add(time.Second).UnixNano())
	rec(year.Add(time.Second), 7777)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		at := now0.Add(time.Minute + time.Duration(i)*5*time.Second)
		clock.Store(at.UnixNano())
		rec(at, 2000)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, smp := range storedSamples(t, s) {
		if smp.t == year.UnixMilli() {
			n++
		}
	}
	if n != 0 {
		t.Errorf("the sample a year ahead of the clock was stored")
	}
	res, err := s.QuerySet(ctx, plant.SetQuery{DeviceID: "inv", SetType: plant.SetEnergyAndPowerPv})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) == 0 {
		t.Fatal("Recent: no rows")
	}
	last := res.Rows[len(res.Rows)-1]
	if last.Start.After(now0.Add(time.Hour)) || last.Values["pvGeneration"] > 2500 {
		t.Errorf("Recent ends at %v with %v: a future row hides the present (now %v)", last.Start, last.Values, now0.Add(2*time.Minute))
	}
	stop()
}
