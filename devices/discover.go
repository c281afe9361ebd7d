package devices

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"plantd/modbus"
	"plantd/plant/kind"
)

// Reader reads holding registers (function 3). A *modbus.Client is one.
type Reader interface {
	ReadHoldingRegisters(ctx context.Context, addr, quantity uint16, dst []uint16) ([]uint16, error)
}

// ReadWriter adds writes with function 16.
type ReadWriter interface {
	Reader
	WriteRegisters(ctx context.Context, addr uint16, values []uint16) error
}

// ErrNoSunSpec is returned by Discover when the device answers but holds
// no SunSpec map at any base address.
var ErrNoSunSpec = errors.New("no SunSpec device")

// Bases are the addresses probed for the SunS marker, in pysunspec2's order.
var Bases = []uint16{40000, 0, 50000}

// sunsMarker is "SunS" as two registers.
const sunsHi, sunsLo = 0x5375, 0x6E53

// endModel ends the model chain.
const endModel = 0xFFFF

// maxModels bounds the chain walk against devices whose chain loops.
const maxModels = 200

// ModelRef is one model of a device's chain: its id, the address of its ID
// register and its length L (registers after ID and L).
type ModelRef struct {
	ID   uint16 `json:"id"`
	Addr uint16 `json:"addr"`
	Len  uint16 `json:"len"`
}

// Range is the registers the model occupies, ID and L included.
func (r ModelRef) Range() modbus.Range { return modbus.Range{Addr: r.Addr, Count: r.Len + 2} }

// Known reports whether plantd has the model's definition.
func (r ModelRef) Known() bool { return ModelByID(r.ID) != nil }

// Device is what discovery learned of a SunSpec device.
type Device struct {
	Base         uint16       `json:"base"`
	Models       []ModelRef   `json:"models"`
	Manufacturer string       `json:"manufacturer"`
	Model        string       `json:"model"`
	Options      string       `json:"options,omitempty"`
	Version      string       `json:"version,omitempty"`
	Serial       string       `json:"serial,omitempty"`
	Kind         kind.Kind    `json:"kind"`
	Platform     Platform     `json:"platform"`
	Capabilities []Capability `json:"capabilities"`
	// RatedPowerW is the nameplate active power (120 WRtg, 702 WMaxRtg,
	// 802 WChaRteMax or 124 WChaMax), 0 when the device reports none.
	RatedPowerW float64 `json:"ratedPowerW,omitempty"`
	// RatedEnergyWh is a battery's usable capacity (802/713 WHRtg).
	RatedEnergyWh float64 `json:"ratedEnergyWh,omitempty"`
	// RatedApparentVA is the nameplate apparent power (120 VARtg, 702
	// VAMaxRtg), 0 when the device reports none.
	RatedApparentVA float64 `json:"ratedApparentVA,omitempty"`
	// RatedReactiveVAr is the nameplate reactive power, the larger of
	// injection and absorption (120 VArRtgQ1..Q4, 702 VarMaxInjRtg and
	// VarMaxAbsRtg), 0 when the device reports none.
	RatedReactiveVAr float64 `json:"ratedReactiveVAr,omitempty"`
	// RatedCurrentA is the nameplate AC current (120 ARtg, 702 AMaxRtg),
	// 0 when the device reports none.
	RatedCurrentA float64 `json:"ratedCurrentA,omitempty"`
	// Template is the device template (plantd/devices/template) the
	// device was identified by instead of SunSpec discovery; "" for a
	// SunSpec device. A template device has no Models, Base or Platform.
	Template string `json:"template,omitempty"`
}

// ModelIDs lists the ids of the device's models in chain order.
func (d *Device) ModelIDs() []uint16 {
	ids := make([]uint16, len(d.Models))
	for i, m := range d.Models {
		ids[i] = m.ID
	}
	return ids
}

// Has reports whether the device exposes model id.
func (d *Device) Has(id uint16) bool {
	_, ok := d.Ref(id)
	return ok
}

// Ref returns the first model of the chain with the given id.
func (d *Device) Ref(id uint16) (ModelRef, bool) {
	for _, m := range d.Models {
		if m.ID == id {
			return m, true
		}
	}
	return ModelRef{}, false
}

// isAbsent reports whether err is a Modbus exception that says the device
// has nothing at that address (illegal function or data address). Other
// exceptions (device failure, busy, gateway target not answering) say the
// device cannot answer now, and discovery reports them as they are.
func isAbsent(err error) bool {
	return modbus.Classify(err) == modbus.ClassUnsupported
}

// Discover finds the SunSpec map of the device behind r: it probes the
// bases for SunS, walks the model chain to its end marker, reads the common
// model and the nameplate models, and classifies the device. A device that
// answers but has no map yields ErrNoSunSpec; an I/O failure is returned as
// it is (the device is not reachable).
func Discover(ctx context.Context, r Reader) (*Device, error) {
	return DiscoverAt(ctx, r, Bases)
}

// DiscoverAt is Discover probing only the given bases, in order (an
// installer who knows the device's base saves the probes).
func DiscoverAt(ctx context.Context, r Reader, bases []uint16) (*Device, error) {
	var buf []uint16
	base, found := uint16(0), false
	var tried []string
	for _, b := range bases {
		regs, err := r.ReadHoldingRegisters(ctx, b, 2, buf[:0])
		if err != nil {
			if isAbsent(err) {
				tried = append(tried, fmt.Sprintf("%d: %v", b, err))
				continue
			}
			return nil, fmt.Errorf("probe SunS at %d: %w", b, err)
		}
		if len(regs) == 2 && regs[0] == sunsHi && regs[1] == sunsLo {
			base, found = b, true
			break
		}
		tried = append(tried, fmt.Sprintf("%d: %04x %04x", b, regs[0], regs[1]))
		buf = regs
	}
	if !found {
		return nil, fmt.Errorf("%w: no SunS marker at %s (%s)", ErrNoSunSpec, listBases(bases), strings.Join(tried, "; "))
	}
	d := &Device{Base: base}
	addr := uint32(base) + 2
	for {
		if len(d.Models) >= maxModels {
			return nil, fmt.Errorf("model chain at %d: more than %d models, no end marker", base, maxModels)
		}
		if addr+2 > 0x10000 {
			return nil, fmt.Errorf("model chain at %d: runs past register 65535 without an end marker", base)
		}
		regs, err := r.ReadHoldingRegisters(ctx, uint16(addr), 2, buf[:0])
		if err != nil {
			if isAbsent(err) && len(d.Models) > 0 {
				// Some devices answer "illegal address" where the end
				// marker should be; the chain ends there.
				break
			}
			return nil, fmt.Errorf("read model header at %d: %w", addr, err)
		}
		buf = regs
		id, l := regs[0], regs[1]
		if id == endModel || (id == 0 && l == 0) {
			break
		}
		d.Models = append(d.Models, ModelRef{ID: id, Addr: uint16(addr), Len: l})
		addr += 2 + uint32(l)
	}
	if len(d.Models) == 0 || d.Models[0].ID != 1 {
		return nil, fmt.Errorf("%w: chain at %d does not start with the common model 1 (models %v)", ErrNoSunSpec, base, d.ModelIDs())
	}
	if err := d.readIdentity(ctx, r); err != nil {
		return nil, err
	}
	d.Kind, d.Platform, d.Capabilities = Classify(d.ModelIDs())
	if d.Capabilities == nil {
		d.Capabilities = []Capability{}
	}
	return d, nil
}

// listBases writes bases as "40000, 0 or 50000".
func listBases(bases []uint16) string {
	s := ""
	for i, b := range bases {
		switch {
		case i == 0:
		case i == len(bases)-1:
			s += " or "
		default:
			s += ", "
		}
		s += strconv.Itoa(int(b))
	}
	return s
}

// readModel reads one model's registers (in reads of at most 125) and lays
// it out.
func readModel(ctx context.Context, r Reader, ref ModelRef) (*Instance, error) {
	m := ModelByID(ref.ID)
	if m == nil {
		return nil, fmt.Errorf("model %d at %d: unknown model", ref.ID, ref.Addr)
	}
	rg := ref.Range()
	capped := false
	if ml := m.MaxLen(); int(ref.Len) > ml {
		rg.Count, capped = uint16(ml)+2, true // a hostile or broken header
	}
	regs := make([]uint16, 0, rg.Count)
	for off := uint16(0); off < rg.Count; {
		n := min(rg.Count-off, modbus.MaxReadRegisters)
		got, err := r.ReadHoldingRegisters(ctx, rg.Addr+off, n, nil)
		if err != nil {
			return nil, fmt.Errorf("read model %d at %d: %w", ref.ID, ref.Addr, err)
		}
		if len(got) != int(n) {
			return nil, fmt.Errorf("read model %d at %d: %d registers for %d", ref.ID, ref.Addr, len(got), n)
		}
		regs = append(regs, got...)
		off += n
	}
	if capped {
		regs[1] = rg.Count - 2
	}
	return NewInstance(m, ref.Addr, regs)
}

// ratingPoints name, per model, the points discovery reads ratings from.
// A rating comes from the first model of the list that has it.
var ratingPoints = []struct {
	Model    uint16
	Power    string
	Energy   string
	Apparent string
	Reactive []string // the largest of them
	Current  string
}{
	{120, "WRtg", "WHRtg", "VARtg", []string{"VArRtgQ1", "VArRtgQ2", "VArRtgQ3", "VArRtgQ4"}, "ARtg"},
	{702, "WMaxRtg", "", "VAMaxRtg", []string{"VarMaxInjRtg", "VarMaxAbsRtg"}, "AMaxRtg"},
	{802, "WChaRteMax", "WHRtg", "", nil, ""},
	{713, "", "WHRtg", "", nil, ""},
	{124, "WChaMax", "", "", nil, ""},
}

// readIdentity reads the common model and the nameplate ratings.
func (d *Device) readIdentity(ctx context.Context, r Reader) error {
	common, err := readModel(ctx, r, d.Models[0])
	if err != nil {
		return err
	}
	d.Manufacturer = common.String("Mn")
	d.Model = common.String("Md")
	d.Options = common.String("Opt")
	d.Version = common.String("Vr")
	d.Serial = common.String("SN")
	for _, rp := range ratingPoints {
		ref, ok := d.Ref(rp.Model)
		if !ok {
			continue
		}
		want := func(name string, have float64) bool { return name != "" && have == 0 }
		if !want(rp.Power, d.RatedPowerW) && !want(rp.Energy, d.RatedEnergyWh) && !want(rp.Apparent, d.RatedApparentVA) &&
			!want(rp.Current, d.RatedCurrentA) && (len(rp.Reactive) == 0 || d.RatedReactiveVAr != 0) {
			continue
		}
		inst, err := readModel(ctx, r, ref)
		if err != nil {
			return err
		}
		take := func(name string, dst *float64) {
			if !want(name, *dst) {
				return
			}
			if v, err := inst.Float(name); err == nil && v > 0 && !math.IsInf(v, 0) {
				*dst = v
			}
		}
		take(rp.Power, &d.RatedPowerW)
		take(rp.Energy, &d.RatedEnergyWh)
		take(rp.Apparent, &d.RatedApparentVA)
		take(rp.Current, &d.RatedCurrentA)
		if d.RatedReactiveVAr == 0 {
			for _, name := range rp.Reactive {
				if v, err := inst.Float(name); err == nil && !math.IsInf(v, 0) {
					d.RatedReactiveVAr = max(d.RatedReactiveVAr, math.Abs(v))
				}
			}
		}
	}
	return nil
}

// pollModels are the dynamic models a measurement poll reads; the others
// (identity, nameplate, settings, curves) are read once or on demand.
var pollModels = []uint16{101, 102, 103, 111, 112, 113, 122, 123, 124, 160,
	201, 202, 203, 204, 211, 212, 213, 214, 302, 303, 307, 308, 701, 704, 713, 714, 802}

// PollModels returns the device's models that a measurement poll reads.
func (d *Device) PollModels() []ModelRef {
	var out []ModelRef
	for _, m := range d.Models {
		if slices.Contains(pollModels, m.ID) {
			out = append(out, m)
		}
	}
	return out
}
