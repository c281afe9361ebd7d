package sim

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"plantd/plant/kind"
	"plantd/sunspec"
)

// The register image of a device is one []uint16 holding the SunSpec map
// from the SunS marker to the end marker. Its models are sunspec.Instance
// values whose Regs alias that slice, so a value set through an instance is
// what a client reads. Static points are set once when the image is built;
// the physics writes the dynamic ones through handles resolved by name at
// build time, so rendering does no name lookups.

// Layout of the map.
const (
	defaultBase = 40000
	sunsHi      = 0x5375 // "Su"
	sunsLo      = 0x6E53 // "nS"
	endModelID  = 0xFFFF
)

// modelSpec is one model of a device kind: its id, the repeats of its
// repeating groups (see sunspec.NewBlank) and the static values it holds,
// as tables of point name to value. The builder stores the scale factors
// first, as the values are encoded with them, then the other tables, then
// calls fill for what a table cannot say (curves, nested groups).
type modelSpec struct {
	id     uint16
	counts map[string]int
	sf     sfs
	raw    raws
	str    strs
	val    vals
	zero   []string        // top-level points whose value is 0
	groups map[string]vals // points of the first occurrence of top-level groups
	fill   func(b *builder, inst *sunspec.Instance)
}

// Point tables: the static values of a model or group by point name.
type (
	// sfs are scale factors (the power of ten).
	sfs map[string]int
	// raws are register bits: enums and bitfields.
	raws map[string]uint64
	// strs are string points.
	strs map[string]string
	// vals are values in the point's units, encoded with its scale factor.
	vals map[string]float64
)

// fillTables stores the tables of s into inst.
func (b *builder) fillTables(s *modelSpec, inst *sunspec.Instance) {
	for _, n := range sortedKeys(s.sf) {
		b.sf(inst, n, s.sf[n])
	}
	for _, n := range sortedKeys(s.raw) {
		b.raw(inst, n, s.raw[n])
	}
	for _, n := range sortedKeys(s.str) {
		b.str(inst, n, s.str[n])
	}
	b.setAll(inst, &inst.Root, s.val)
	for _, n := range s.zero {
		b.set(inst, n, 0)
	}
	for _, g := range sortedKeys(s.groups) {
		if gs := b.groups(&inst.Root, g, 1); gs != nil {
			b.setAll(inst, &gs[0], s.groups[g])
		}
	}
}

// sortedKeys returns the point names of a table in order, so a table is
// stored, and its first error reported, the same way every time.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// builder sets static points and resolves handles, keeping the first error
// so the model tables read as plain lists of values.
type builder struct {
	d   *Device
	err error
}

func (b *builder) fail(err error) {
	if b.err == nil && err != nil {
		b.err = err
	}
}

// set stores a value of a top-level point (scale factors first).
func (b *builder) set(inst *sunspec.Instance, name string, v float64) {
	if b.err == nil {
		b.fail(inst.Set(name, v))
	}
}

// raw stores the register bits of a top-level point (enums, bitfields,
// scale factors).
func (b *builder) raw(inst *sunspec.Instance, name string, v uint64) {
	if b.err == nil {
		b.fail(inst.SetRaw(name, v))
	}
}

// sf stores a scale factor.
func (b *builder) sf(inst *sunspec.Instance, name string, sf int) {
	b.raw(inst, name, uint64(uint16(int16(sf))))
}

// str stores a string point.
func (b *builder) str(inst *sunspec.Instance, name, s string) {
	if b.err == nil {
		b.fail(inst.SetString(name, s))
	}
}

// setIn stores a value of a point inside a group instance.
func (b *builder) setIn(inst *sunspec.Instance, gi *sunspec.GroupInstance, name string, v float64) {
	if b.err == nil {
		b.fail(inst.SetIn(gi, name, v))
	}
}

// setAll stores the values of a table into the points of a group
// instance.
func (b *builder) setAll(inst *sunspec.Instance, gi *sunspec.GroupInstance, t vals) {
	for _, n := range sortedKeys(t) {
		b.setIn(inst, gi, n, t[n])
	}
}

// groups returns the occurrences of a sub-group, failing when there are
// fewer than want.
func (b *builder) groups(gi *sunspec.GroupInstance, name string, want int) []sunspec.GroupInstance {
	g := gi.Groups(name)
	if len(g) < want {
		b.fail(fmt.Errorf("group %s: %d occurrences, want %d", name, len(g), want))
		return nil
	}
	return g
}

// handle is a resolved top-level point of a device's image.
type handle struct {
	p   *sunspec.Point
	off int // index of its first register in Device.regs
	sf  int
}

// handle resolves a top-level point of model id for rendering.
func (b *builder) handle(id uint16, name string) handle {
	if b.err != nil {
		return handle{}
	}
	s := b.d.slot(id)
	if s == nil {
		b.fail(fmt.Errorf("model %d not in the image", id))
		return handle{}
	}
	p := s.inst.Model.Point(name)
	if p == nil {
		b.fail(fmt.Errorf("model %d: %w %q", id, sunspec.ErrUnknownPoint, name))
		return handle{}
	}
	h := handle{p: p, off: s.off + int(p.Offset)}
	if p.SF != sunspec.NoScale {
		sp := &s.inst.Model.Group.Points[p.SF]
		raw := s.inst.Regs[sp.Offset]
		if raw == 0x8000 {
			b.fail(fmt.Errorf("model %d point %s: scale factor %s not set", id, name, sp.Name))
			return handle{}
		}
		h.sf = int(int16(raw))
	}
	return h
}

// pointUse says what a handle's point is to the faults: a measurement, which
// FaultNotImplemented blanks, or state (status, counters, timers), which
// stays.
type pointUse bool

const (
	useState    pointUse = false
	useMeasured pointUse = true
)

// named is a handle to resolve by its point's name.
type named struct {
	dst *handle
	n   string
}

// bindAll resolves the handles of points of model id.
func (b *builder) bindAll(id uint16, u pointUse, ns ...named) {
	for _, n := range ns {
		*n.dst = b.handle(id, n.n)
		if u == useMeasured {
			b.d.measured = append(b.d.measured, *n.dst)
		}
	}
}

// Suffixes of per-phase point names: by phase (AphA), by pair of phases
// (PhVphAB), and the same numbered in models 7xx (WL1, VL1L2).
var (
	phaseABC = [3]string{"A", "B", "C"}
	phaseAB  = [3]string{"AB", "BC", "CA"}
	phase123 = [3]string{"1", "2", "3"}
	phase12  = [3]string{"1L2", "2L3", "3L1"}
)

// phased is a per-phase quantity to resolve: the points named prefix
// followed by each of the suffixes.
type phased struct {
	dst    *[3]handle
	prefix string
	suffix [3]string
}

// bindPhases resolves the handles of per-phase points of model id.
func (b *builder) bindPhases(id uint16, u pointUse, ps ...phased) {
	for _, p := range ps {
		for i, s := range p.suffix {
			p.dst[i] = b.handle(id, p.prefix+s)
		}
		if u == useMeasured {
			b.d.measured = append(b.d.measured, p.dst[:]...)
		}
	}
}

// slot returns the model id of the device's map, or nil.
func (d *Device) slot(id uint16) *slot {
	for i := range d.models {
		if d.models[i].inst.Model.ID == id {
			return &d.models[i]
		}
	}
	return nil
}

// inst returns the instance of model id (which the device is known to have).
func (d *Device) inst(id uint16) *sunspec.Instance {
	if s := d.slot(id); s != nil {
		return s.inst
	}
	return nil
}

// put stores v, in the point's units, clamping it into the type's range.
func (d *Device) put(h handle, v float64) {
	dst := d.regs[h.off:]
	if math.IsNaN(v) || math.IsInf(v, 0) {
		sunspec.EncodeNotImplemented(h.p, dst)
		return
	}
	if sunspec.EncodeValue(h.p, h.sf, v, dst) == nil {
		return
	}
	sf := h.sf
	if h.p.HasSFConst {
		sf = int(h.p.SFConst)
	}
	scale := math.Pow(10, float64(sf))
	lo, hi := rawRange(h.p.Type)
	v = math.Max(lo*scale, math.Min(hi*scale, v))
	if sunspec.EncodeValue(h.p, h.sf, v, dst) != nil {
		sunspec.EncodeNotImplemented(h.p, dst)
	}
}

// rawRange is the implemented range of an integer type's raw value.
func rawRange(t sunspec.PointType) (lo, hi float64) {
	switch t {
	case sunspec.TypeInt16, sunspec.TypeSunssf:
		return -32767, 32767
	case sunspec.TypeInt32:
		return -(1<<31 - 1), 1<<31 - 1
	case sunspec.TypeUint32, sunspec.TypeAcc32, sunspec.TypeEnum32, sunspec.TypeBitfield32:
		return 0, 0xFFFFFFFE
	case sunspec.TypeInt64:
		return -(1 << 62), 1 << 62
	case sunspec.TypeUint64, sunspec.TypeAcc64:
		return 0, 1 << 62
	}
	return 0, 0xFFFE
}

// putRaw stores raw register bits (enums, bitfields).
func (d *Device) putRaw(h handle, v uint64) {
	r := d.regs[h.off : h.off+int(h.p.Size)]
	for i := len(r) - 1; i >= 0; i-- {
		r[i] = uint16(v)
		v >>= 16
	}
}

// ni stores the point's not-implemented value.
func (d *Device) ni(h handle) { sunspec.EncodeNotImplemented(h.p, d.regs[h.off:]) }

// build lays out the device's map at base from the model specs, then lets
// the kind resolve its handles.
func (d *Device) build(base uint16, specs []modelSpec, resolve func(b *builder)) error {
	b := &builder{d: d}
	insts := make([]*sunspec.Instance, 0, len(specs))
	total := 4 // SunS and the end marker
	for _, s := range specs {
		m := sunspec.ModelByID(s.id)
		if m == nil {
			return fmt.Errorf("model %d: no definition", s.id)
		}
		inst, err := sunspec.NewBlank(m, 0, s.counts)
		if err != nil {
			return fmt.Errorf("model %d: %w", s.id, err)
		}
		if s.id == 1 {
			d.fillCommon(b, inst)
		}
		b.fillTables(&s, inst)
		if s.fill != nil {
			s.fill(b, inst)
		}
		if b.err != nil {
			return fmt.Errorf("model %d: %w", s.id, b.err)
		}
		insts = append(insts, inst)
		total += len(inst.Regs)
	}
	if int(base)+total > 0x10000 {
		return fmt.Errorf("map of %d registers does not fit above %d", total, base)
	}
	regs := make([]uint16, total)
	regs[0], regs[1] = sunsHi, sunsLo
	off := 2
	d.models = d.models[:0]
	for _, inst := range insts {
		n := len(inst.Regs)
		copy(regs[off:], inst.Regs)
		fin, err := sunspec.NewInstance(inst.Model, base+uint16(off), regs[off:off+n:off+n])
		if err != nil {
			return fmt.Errorf("model %d: %w", inst.Model.ID, err)
		}
		d.models = append(d.models, slot{inst: fin, off: off})
		off += n
	}
	regs[off], regs[off+1] = endModelID, 0
	d.base, d.regs = base, regs
	d.writable = make([]bool, total)
	for _, s := range d.models {
		walkPoints(&s.inst.Root, func(gi *sunspec.GroupInstance, i int) {
			if p := &gi.Group.Points[i]; p.Writable {
				start := s.off + gi.Offset + int(p.Offset)
				for k := range int(p.Size) {
					d.writable[start+k] = true
				}
			}
		})
	}
	if resolve != nil {
		resolve(b)
	}
	return b.err
}

// walkPoints calls fn for every point (by index) of gi and its sub-groups.
func walkPoints(gi *sunspec.GroupInstance, fn func(gi *sunspec.GroupInstance, i int)) {
	for i := range gi.Group.Points {
		fn(gi, i)
	}
	for _, subs := range gi.Sub {
		for j := range subs {
			walkPoints(&subs[j], fn)
		}
	}
}

// fillCommon sets model 1: identity of the device.
func (d *Device) fillCommon(b *builder, inst *sunspec.Instance) {
	b.str(inst, "Mn", "plantd")
	b.str(inst, "Md", modelName(d.cfg))
	b.str(inst, "Opt", "sim "+d.cfg.model())
	b.str(inst, "Vr", "1.0.0")
	b.str(inst, "SN", serialOf(d.cfg.ID))
	b.set(inst, "DA", float64(d.cfg.Unit))
}

// modelName returns model 1 Md for a device: its kind and rating.
func modelName(c DeviceConfig) string {
	kw := func(w float64) string { return strconv.FormatFloat(w/1000, 'f', -1, 64) }
	switch {
	case c.Kind == kind.Inverter && !c.DER:
		return "SIM-INV-" + kw(c.RatedW) + "K"
	case c.Kind == kind.Inverter:
		return "SIM-DER-" + kw(c.RatedW) + "K"
	case c.Kind == kind.Meter:
		return "SIM-METER-3P"
	case c.Kind == kind.Battery:
		return "SIM-BAT-" + kw(c.CapacityWh)
	case c.Kind == kind.Sensor:
		return "SIM-WX"
	}
	return "SIM"
}
