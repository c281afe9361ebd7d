package plant

import (
	"errors"
	"testing"

	"plantd/plant/kind"
)

// BenchmarkApplyReadings measures Apply alone, the domain's part of a
// poll: a classic inverter's readings as the device layer hands them over
// (26 values, two DC inputs), and a failed poll. devices/channels'
// BenchmarkApply adds the mapping of the models.
func BenchmarkApplyReadings(b *testing.B) {
	l := NewLive([]Plant{{ID: "p"}}, []DeviceInfo{{ID: "inv1", PlantID: "p", Kind: kind.Inverter}}, nil)
	var rs []Reading
	for c := Channel(1); c < numChannels; c++ {
		if c.Set() == SetPowerAc || c == PVGeneration || c == PVGenerationTotal {
			rs = append(rs, Reading{Channel: c, Value: 1})
		}
	}
	rs = append(rs, Reading{Channel: GridFrequency, Value: 50},
		Reading{Channel: DCPowerInput, Index: 1, Value: 5000}, Reading{Channel: DCPowerInput, Index: 2, Value: 4000})
	for _, bc := range []struct {
		name string
		s    Sample
	}{
		{"inverter", Sample{Device: "inv1", Readings: rs, Status: DeviceStatus{Op: OpRunning}, State: StateOnline}},
		{"failure", Sample{Device: "inv1", Err: errors.New("x"), State: StateStale}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l.Apply(bc.s) // grow the inputs slice once
			b.ReportAllocs()
			for b.Loop() {
				if l.Apply(bc.s) != nil && bc.s.Err == nil {
					b.Fatal("an event for an unchanged device")
				}
			}
		})
	}
}
