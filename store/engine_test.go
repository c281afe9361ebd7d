package store

import (
	"math"
	"testing"

	"plantd/plant"
	"plantd/plant/kind"
)

// smp builds a raw sample at second sec with (channel, value) pairs.
func smp(sec int64, kv ...any) rawSample {
	s := rawSample{t: sec * 1000}
	for i := 0; i < len(kv); i += 2 {
		k := kv[i].(chKey)
		s.vals = append(s.vals, chVal{k, kv[i+1].(float64)})
	}
	return s
}

var (
	kPV     = chKey{plant.PVGeneration, 0}
	kPVTot  = chKey{plant.PVGenerationTotal, 0}
	kDCW1   = chKey{plant.DCPowerInput, 1}
	kDCW2   = chKey{plant.DCPowerInput, 2}
	kDCWh1  = chKey{plant.DCEnergyInput, 1}
	kVolt   = chKey{plant.VoltagePhaseA, 0}
	kFeedIn = chKey{plant.GridFeedIn, 0}
)

// series returns samples every step seconds over [0, n·step) with f(i).
func seriesOf(n int, step int64, f func(i int) rawSample) []rawSample {
	out := make([]rawSample, n)
	for i := range out {
		out[i] = f(i)
		out[i].t = int64(i) * step * 1000
	}
	return out
}

func TestAggregateEnergy(t *testing.T) {
	t.Parallel() // its own database files
	const width = bucketMs
	type want map[int64]float64 // bucket (s) → energy (Wh)
	tests := []struct {
		name    string
		prev    *rawSample
		samples []rawSample
		next    *rawSample
		key     chKey
		want    want
		events  int
	}{
		{
			name: "counter, no neighbours",
			samples: seriesOf(15, 60, func(i int) rawSample {
				return smp(0, kPVTot, 1e6+100*float64(i), kPV, 6000.0)
			}),
			key:  kPV,
			want: want{0: 500, 300: 500, 600: 400},
		},
		{
			name: "counter with next sample",
			samples: seriesOf(15, 60, func(i int) rawSample {
				return smp(0, kPVTot, 100*float64(i))
			}),
			next: ptrTo(smp(900, kPVTot, 1500.0)),
			key:  kPV,
			want: want{0: 500, 300: 500, 600: 500},
		},
		{
			name: "counter preferred over power",
			samples: seriesOf(6, 60, func(i int) rawSample {
				return smp(0, kPVTot, 10*float64(i), kPV, 6000.0)
			}),
			key:  kPV,
			want: want{0: 50},
		},
		{
			name: "reset to zero: power integrated for that pair",
			samples: seriesOf(6, 60, func(i int) rawSample {
				c := 5e6 + 100*float64(i)
				if i >= 3 {
					c = 100 * float64(i-3) // replaced device, new counter
				}
				return smp(0, kPVTot, c, kPV, 6000.0)
			}),
			key:    kPV,
			want:   want{0: 500},
			events: 1,
		},
		{
			name: "acc32 wrap: power integrated for that pair",
			samples: seriesOf(6, 60, func(i int) rawSample {
				c := math.Mod(4294967000+100*float64(i), 4294967296)
				return smp(0, kPVTot, c, kPV, 6000.0)
			}),
			key:    kPV,
			want:   want{0: 500},
			events: 1,
		},
		{
			name: "absurd jump: new baseline",
			samples: seriesOf(6, 60, func(i int) rawSample {
				c := 100 * float64(i)
				if i >= 2 {
					c += 5e8
				}
				return smp(0, kPVTot, c, kPV, 6000.0)
			}),
			key:    kPV,
			want:   want{0: 500},
			events: 1,
		},
		{
			name: "reset without power: that pair gives nothing",
			samples: seriesOf(6, 60, func(i int) rawSample {
				c := 1000 + 100*float64(i)
				if i >= 3 {
					c = 100 * float64(i-3)
				}
				return smp(0, kPVTot, c)
			}),
			key:    kPV,
			want:   want{0: 400},
			events: 1,
		},
		{
			name:    "counter spread over a 30-minute gap",
			samples: []rawSample{smp(0, kPVTot, 0.0)},
			next:    ptrTo(smp(1800, kPVTot, 3000.0)),
			key:     kPV,
			// The window [0, 900 s) gets its half.
			want: want{0: 500, 300: 500, 600: 500},
		},
		{
			name:    "counter gap over an hour: nothing",
			samples: []rawSample{smp(0, kPVTot, 0.0)},
			next:    ptrTo(smp(3900, kPVTot, 3000.0)),
			key:     kPV,
			want:    want{},
		},
		{
			name: "power integrated (trapezoid), split at the boundary",
			samples: []rawSample{
				smp(240, kFeedIn, 1200.0),
				smp(360, kFeedIn, 2400.0),
			},
			key: kFeedIn,
			// (1200+2400)/2 W × 120 s = 60 Wh, half on each side.
			want: want{0: 30, 300: 30},
		},
		{
			name:    "power gap over 15 minutes: nothing",
			samples: []rawSample{smp(0, kFeedIn, 1200.0)},
			next:    ptrTo(smp(1000, kFeedIn, 1200.0)),
			key:     kFeedIn,
			want:    want{},
		},
		{
			name: "pairs with the samples around the window",
			prev: ptrTo(smp(-60, kFeedIn, 600.0)),
			samples: []rawSample{
				smp(0, kFeedIn, 600.0),
			},
			next: ptrTo(smp(900, kFeedIn, 600.0)),
			key:  kFeedIn,
			// Only the parts inside [0, 900): 600 W × 900 s.
			want: want{0: 50, 300: 50, 600: 50},
		},
		{
			name: "DC input 2 from power",
			samples: seriesOf(6, 60, func(i int) rawSample {
				return smp(0, kDCW1, 1000.0, kDCW2, 3000.0)
			}),
			key:  chKey{plant.DCEnergyInput, 2},
			want: want{0: 250},
		},
		{
			name: "DC input 12 of 12, counter and power: counted once",
			samples: seriesOf(6, 60, func(i int) rawSample {
				var kv []any
				for in := int32(1); in <= 12; in++ {
					kv = append(kv, chKey{plant.DCPowerInput, in}, 6000.0, chKey{plant.DCEnergyInput, in}, 100*float64(i))
				}
				return smp(0, kv...)
			}),
			key:  chKey{plant.DCEnergyInput, 12},
			want: want{0: 500},
		},
		{
			name: "DC input 1 from its counter",
			samples: seriesOf(6, 60, func(i int) rawSample {
				return smp(0, kDCW1, 1000.0, kDCWh1, 7+10*float64(i))
			}),
			key:  chKey{plant.DCEnergyInput, 1},
			want: want{0: 50},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := 0
			out := aggregate(tt.prev, tt.samples, tt.next, 0, 900_000, width, nil, func(counterEvent) { events++ }, nil)
			got := want{}
			for b, db := range out {
				if a := db.aggs[tt.key]; a != nil && a.hasE {
					got[b/1000] = a.e
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("energies %v, want %v", got, tt.want)
			}
			for b, w := range tt.want {
				if !within(got[b], w, 1e-9, 1e-9) {
					t.Errorf("bucket %ds: %v Wh, want %v", b, got[b], w)
				}
			}
			for b, e := range got {
				if e < 0 {
					t.Errorf("bucket %ds: negative energy %v", b, e)
				}
			}
			if events != tt.events {
				t.Errorf("%d counter events, want %d", events, tt.events)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestAggregateStats(t *testing.T) {
	t.Parallel() // its own database files
	samples := []rawSample{
		smp(0, kVolt, 230.0, kPV, 100.0, kPVTot, 5.0),
		smp(100, kVolt, 232.0, kPV, 300.0, kPVTot, 6.0),
		smp(200, kVolt, 231.0, kPVTot, 7.0),
		smp(300, kVolt, 240.0),
	}
	out := aggregate(nil, samples, nil, 0, 600_000, bucketMs, nil, nil, nil)
	b0 := out[0]
	if b0 == nil || b0.n != 3 {
		t.Fatalf("bucket 0: %+v", b0)
	}
	v := b0.aggs[kVolt]
	if v.n != 3 || v.mean() != 231 || v.min != 230 || v.max != 232 {
		t.Errorf("voltage %+v", v)
	}
	if p := b0.aggs[kPV]; p.n != 2 || p.mean() != 200 {
		t.Errorf("pv power %+v", p)
	}
	if _, ok := b0.aggs[kPVTot]; ok {
		t.Error("a counter's values are not aggregated")
	}
	if b1 := out[300_000]; b1 == nil || b1.n != 1 || b1.aggs[kVolt].mean() != 240 {
		t.Errorf("bucket 1: %+v", b1)
	}
}

func TestComputeBalance(t *testing.T) {
	t.Parallel() // its own database files
	bucket := func(kv ...any) *devBucket {
		b := &devBucket{n: 1, aggs: map[chKey]*agg{}}
		for i := 0; i < len(kv); i += 2 {
			a := &agg{}
			switch c := kv[i].(plant.Channel); c {
			case plant.BatteryStateOfCharge:
				a.add(kv[i+1].(float64))
			default:
				a.addE(kv[i+1].(float64))
			}
			b.aggs[chKey{kv[i].(plant.Channel), 0}] = a
		}
		return b
	}
	inv := func(pv float64) devInterval {
		return intervalOf(&device{kind: kind.Inverter}, bucket(plant.PVGeneration, pv))
	}
	met := func(cons, feed float64) devInterval {
		return intervalOf(&device{kind: kind.Meter}, bucket(plant.GridConsumption, cons, plant.GridFeedIn, feed))
	}
	// sub is the heater's sub-meter (plant.DeviceInfo.Measures): its
	// draw is inside the consumption the grid meter gives.
	sub := func(cons, feed float64) devInterval {
		return intervalOf(&device{kind: kind.Meter, measures: "heater"}, bucket(plant.GridConsumption, cons, plant.GridFeedIn, feed))
	}
	bat := func(cha, dis, soc float64) devInterval {
		return intervalOf(&device{kind: kind.Battery}, bucket(plant.BatteryCharging, cha, plant.BatteryDischarging, dis, plant.BatteryStateOfCharge, soc))
	}
	type vals map[balField]float64
	tests := []struct {
		name   string
		devs   []devInterval
		want   vals
		absent []balField
	}{
		{"noon: surplus to battery and grid", []devInterval{inv(100), met(0, 40), bat(30, 0, 60)},
			vals{balPV: 100, balFeedIn: 40, balGridCons: 0, balCharging: 30, balDischarging: 0,
				balTotalCons: 30, balSelfCons: 60, balDirectCons: 30, balSelfSupply: 30, balSoC: 60}, nil},
		{"evening: battery and grid cover the load", []devInterval{inv(0), met(20, 0), bat(0, 50, 40)},
			vals{balPV: 0, balTotalCons: 70, balSelfSupply: 50, balSelfCons: 0, balDirectCons: 0}, nil},
		{"two inverters", []devInterval{inv(10), inv(20), met(5, 0)},
			vals{balPV: 30, balTotalCons: 35, balSelfSupply: 30}, []balField{balCharging, balSoC}},
		{"no meter: no derived fields", []devInterval{inv(10), bat(5, 0, 50)},
			vals{balPV: 10, balCharging: 5}, []balField{balTotalCons, balSelfCons, balFeedIn}},
		{"inverter without energy blocks the derived fields",
			[]devInterval{intervalOf(&device{kind: kind.Inverter}, &devBucket{n: 1, aggs: map[chKey]*agg{}}), met(5, 0)},
			vals{balGridCons: 5}, []balField{balPV, balTotalCons}},
		{"a grid meter and a consumer's sub-meter: the grid is the grid meter's", []devInterval{inv(10), met(30, 2), sub(25, 0)},
			vals{balGridCons: 30, balFeedIn: 2, balTotalCons: 38, balSelfSupply: 8, balSelfCons: 8}, nil},
		{"a sub-meter alone is no grid", []devInterval{inv(10), sub(25, 0)},
			vals{balPV: 10}, []balField{balGridCons, balFeedIn, balTotalCons, balSelfSupply}},
		{"inconsistent readings clamp at 0", []devInterval{inv(10), met(0, 50)},
			vals{balTotalCons: 0, balSelfCons: 0, balSelfSupply: 0}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := computeBalance(tt.devs)
			if !ok {
				t.Fatal("nothing computed")
			}
			for f, w := range tt.want {
				a := r[f]
				got := a.e
				if f == balSoC {
					got = a.mean()
				} else if !a.hasE {
					t.Errorf("%s absent, want %v", balNames[f], w)
					continue
				}
				if !within(got, w, 1e-12, 1e-12) {
					t.Errorf("%s = %v, want %v", balNames[f], got, w)
				}
			}
			for _, f := range tt.absent {
				if r[f].hasE || r[f].n > 0 {
					t.Errorf("%s present (%+v), want absent", balNames[f], r[f])
				}
			}
		})
	}
}
