package channels

import (
	"math"
	. "plantd/plant"
	"plantd/plant/kind"
	"testing"
	"time"

	"plantd/sunspec"
)

// pv is one point value for a hand-made instance: a scaled value (Set) or,
// with raw, register bits (SetRaw: enums, bitfields, scale factors).
type pv struct {
	name  string
	v     float64
	raw   bool
	notIm bool // store the not-implemented pattern
}

func val(name string, v float64) pv { return pv{name: name, v: v} }
func raw(name string, v uint64) pv  { return pv{name: name, v: float64(v), raw: true} }
func notImpl(name string) pv        { return pv{name: name, notIm: true} }
func sf(name string, exp int) pv    { return pv{name: name, v: float64(uint16(int16(exp))), raw: true} }

// mk builds a model image with every point not implemented, every scale
// factor of the top group 0, then the given points set in order (set scale
// factors before the values they scale).
func mk(t testing.TB, id uint16, counts map[string]int, pts ...pv) *sunspec.Instance {
	t.Helper()
	m := sunspec.ModelByID(id)
	if m == nil {
		t.Fatalf("model %d unknown", id)
	}
	inst, err := sunspec.NewBlank(m, 40002, counts)
	if err != nil {
		t.Fatalf("blank %d: %v", id, err)
	}
	for _, p := range m.Group.Points {
		if p.Type == sunspec.TypeSunssf {
			if err := inst.SetRaw(p.Name, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, p := range pts {
		var err error
		switch {
		case p.notIm:
			err = inst.SetNotImplemented(p.name)
		case p.raw:
			err = inst.SetRaw(p.name, uint64(p.v))
		default:
			err = inst.Set(p.name, p.v)
		}
		if err != nil {
			t.Fatalf("model %d set %s: %v", id, p.name, err)
		}
	}
	return inst
}

// setGroup sets points of occurrence j of a repeating group.
func setGroup(t testing.TB, inst *sunspec.Instance, group string, j int, pts ...pv) {
	t.Helper()
	occ := inst.Root.Groups(group)
	if j >= len(occ) {
		t.Fatalf("model %d group %s: %d occurrences", inst.Model.ID, group, len(occ))
	}
	for _, p := range pts {
		if err := inst.SetIn(&occ[j], p.name, p.v); err != nil {
			t.Fatalf("model %d group %s[%d] set %s: %v", inst.Model.ID, group, j, p.name, err)
		}
	}
}

// testKinds are the kinds of the test devices, by id: the poller maps a
// device's models for its configured kind.
var testKinds = map[string]kind.Kind{"inv1": kind.Inverter, "inv2": kind.Inverter, "old": kind.Inverter,
	"meter": kind.Meter, "m": kind.Meter, "bat": kind.Battery}

// sample makes a successful sample of an undiscovered device (no
// nameplate) whose models read as given, as the poller would map them.
func sample(dev string, tm time.Time, models ...*sunspec.Instance) Sample {
	s := NewDevice(&sunspec.Device{Kind: testKinds[dev]}).Sample(dev, tm, models)
	s.Nameplate, s.Discovered = nil, nil
	return s
}

var t0 = time.Date(2025, 6, 21, 10, 0, 0, 0, time.UTC)

func fixedClock(tm time.Time) func() time.Time { return func() time.Time { return tm } }

// testMapping compiles the channel table or fails.
func testMapping(t testing.TB) *mapping {
	t.Helper()
	m, err := compileTable(channelTable)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// stateless is s without its communication state, for Apply to infer.
func stateless(s Sample) Sample {
	s.State = StateUnknown
	return s
}

// withInfo is s of a device discovery described as info.
func withInfo(s Sample, info *sunspec.Device) Sample {
	s.Nameplate, s.Discovered = NameplateOf(info), info
	return s
}

// checkIdentity checks the balance identity (plant/doc.go).
func checkIdentity(t *testing.T, b Balance) {
	t.Helper()
	v := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	in := v(b.PVGenerationW) + v(b.GridConsumptionW) + v(b.BatteryDischargingW)
	out := v(b.TotalConsumptionW) + v(b.GridFeedInW) + v(b.BatteryChargingW)
	if math.Abs(in-out) > 1 {
		t.Errorf("identity: PV %v + grid %v + discharge %v = %v, consumption %v + feed-in %v + charge %v = %v",
			v(b.PVGenerationW), v(b.GridConsumptionW), v(b.BatteryDischargingW), in,
			v(b.TotalConsumptionW), v(b.GridFeedInW), v(b.BatteryChargingW), out)
	}
}
func deref0(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
