package plant

import (
	"testing"
)

// TestBoundsFromNameplate checks the bounds of a device with a nameplate,
// of one without, and that a wild nameplate does not widen them beyond
// the absolute limits.
func TestBoundsFromNameplate(t *testing.T) {
	rated := &Nameplate{RatedPowerW: 10000, RatedApparentVA: 10000, RatedReactiveVAr: 6000, RatedCurrentA: 15}
	tests := []struct {
		info   *Nameplate
		c      Channel
		lo, hi float64
	}{
		{rated, ActivePower, -12550, 12550},
		{rated, PVGeneration, 0, 12550},
		{rated, ReactivePower, -7550, 7550},
		{rated, CurrentPhaseA, -68.75, 68.75},
		{rated, DCPowerInput, -15050, 15050},
		{nil, ActivePower, -5e6, 5e6},
		{nil, GridFrequency, 40, 70},
		{nil, DisplacementPowerFactor, -1, 1},
		{nil, BatteryStateOfCharge, 0, 100},
		{nil, VoltagePhaseA, 0, 1000},
		{&Nameplate{RatedPowerW: 3.3e14}, ActivePower, -5e6, 5e6},
	}
	for _, tt := range tests {
		lo, hi := Bound(tt.info, tt.c)
		if lo != tt.lo || hi != tt.hi {
			t.Errorf("%+v %s: %g..%g, want %g..%g", tt.info, tt.c, lo, hi, tt.lo, tt.hi)
		}
	}
}

// BenchmarkPlausibility measures the check of one poll's values of a
// classic inverter (every scalar channel it maps plus two DC inputs).
func BenchmarkPlausibility(b *testing.B) {
	bd := boundsFor(&Nameplate{RatedPowerW: 10000})
	var v values
	n := 0
	for c := Channel(1); c < numChannels; c++ {
		if !c.Indexed() {
			v.setBy[c], v.scalar[c] = 1, 1
			n++
		}
	}
	v.scalar[GridFrequency] = 50
	inputs := []Reading{{Channel: DCPowerInput, Index: 1, Value: 5000}, {Channel: DCPowerInput, Index: 2, Value: 4000}}
	n += len(inputs)
	b.ReportAllocs()
	for b.Loop() {
		v.inputs = append(v.inputs[:0], inputs...)
		if v.check(bd) != 0 {
			b.Fatal("dropped a plausible value")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/value")
}

// TestBoundsShared checks that devices of the same ratings share one
// bounds array and that others get their own.
func TestBoundsShared(t *testing.T) {
	a := &Nameplate{RatedPowerW: 10000, RatedCurrentA: 16}
	tests := []struct {
		name  string
		other *Nameplate
		same  bool
	}{
		{"same ratings, other device", &Nameplate{RatedPowerW: 10000, RatedCurrentA: 16, Serial: "x"}, true},
		{"other power", &Nameplate{RatedPowerW: 8000, RatedCurrentA: 16}, false},
		{"no nameplate", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ba, bo := boundsFor(a), boundsFor(tt.other)
			if (ba == bo) != tt.same {
				t.Errorf("shared = %v, want %v", ba == bo, tt.same)
			}
			if lo, hi := Bound(tt.other, ActivePower); bo[ActivePower] != (bound{lo, hi}) {
				t.Errorf("bounds %v, Bound %v..%v", bo[ActivePower], lo, hi)
			}
		})
	}
}
