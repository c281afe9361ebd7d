package plan

import (
	"math"
	"testing"
	"time"
)

// springSlot is a spring day's prices and forecast: a cheap night, a
// morning and an evening peak, midday hours with negative feed-in (the
// import price, with its fees and taxes, still above zero), PV up to 6 kW.
func springSlot(h float64) Slot {
	s := Slot{ImportEURPerKWh: 0.28, FeedInEURPerKWh: 0.06, BaseLoadW: 500}
	switch {
	case h < 5:
		s.ImportEURPerKWh = 0.22
	case h >= 6 && h < 9:
		s.ImportEURPerKWh, s.BaseLoadW = 0.32, 900
	case h >= 11 && h < 15:
		s.ImportEURPerKWh, s.FeedInEURPerKWh = 0.15, -0.03
	case h >= 17 && h < 21:
		s.ImportEURPerKWh, s.BaseLoadW = 0.42, 1200
	}
	if h > 6 && h < 20 {
		s.PVW = 6000 * math.Pow(math.Sin(math.Pi*(h-6)/14), 2)
	}
	return s
}

// benchInput is n slots from 13:00 with a battery, a heat pump that may be
// locked and a car that wants 30 kWh by 07:00.
func benchInput(n int) *Input {
	start := midnight.Add(13 * time.Hour)
	rules := UtilityLockRules()
	return &Input{Start: start, Slots: horizon(start, n, springSlot),
		Battery:  battery10(30, true),
		HeatPump: &HeatPump{NormalW: 700, RecommendedW: 1500, ForcedW: 2500, BufferWh: 4000, Lock: &rules},
		Car:      &Car{Connected: true, TargetWh: 30000, Deadline: start.Add(18 * time.Hour), MinW: 4140, MaxW: 11040},
	}
}

// BenchmarkPlan36h is issue 45's figure: one plan of 144 quarter hours
// with a battery, a heat pump and a car (< 50 ms, < 5 MB allocated).
func BenchmarkPlan36h(b *testing.B) {
	in := benchInput(144)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compute(in); err != nil {
			b.Fatal(err)
		}
	}
}
