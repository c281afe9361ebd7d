package plant

import (
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

// sample makes a successful sample.
func sample(dev string, tm time.Time, models ...*sunspec.Instance) Sample {
	return Sample{Device: dev, Time: tm, Models: models, State: StateOnline}
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
