package channels

import (
	"math"
	. "plantd/plant"
	"testing"
)

// TestHostileFloats: a classic float inverter (model 113) answering +Inf,
// -Inf and NaN (plain and with a payload) in its float32 points, the
// NaN/Inf case of the hostile devices that TestHostileDevices cannot pin
// (the simulator serves no float models). NaN is SunSpec's
// not-implemented value and the extraction takes ±Inf as not implemented
// too: those channels are absent, not counted as implausible. No
// non-finite value reaches the live state; the device's finite values
// stay.
func TestHostileFloats(t *testing.T) {
	plants, devs := testPlant()
	l := NewLive(plants, devs, fixedClock(t0))
	const (
		posInf = 0x7F800000
		negInf = 0xFF800000
		qNaN   = 0x7FC00000
		oddNaN = 0x7FC01234 // a NaN with a payload
	)
	in := mk(t, 113, nil, raw("W", posInf), raw("WH", posInf), raw("PhVphA", negInf), raw("Hz", qNaN), raw("DCW", oddNaN),
		val("PhVphB", 231), val("VA", 5000))
	for range 3 {
		l.Apply(sample("inv1", t0, in))
	}
	d, _ := l.Device("inv1")
	for _, r := range d.Readings {
		if math.IsNaN(r.Value) || math.IsInf(r.Value, 0) {
			t.Errorf("%s = %g reached the live state", r.Channel, r.Value)
		}
	}
	for _, c := range []Channel{ActivePower, PVGeneration, PVGenerationTotal, VoltagePhaseA, GridFrequency, DCPowerInput} {
		if v, ok := d.Value(c); ok {
			t.Errorf("%s = %g kept", c, v)
		}
	}
	for _, c := range []Channel{VoltagePhaseB, ApparentPower} {
		if _, ok := d.Value(c); !ok {
			t.Errorf("%s dropped with the non-finite values", c)
		}
	}
}
