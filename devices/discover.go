package devices

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"plantd/modbus"
	"plantd/sunspec"
)

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

// Range is the registers the model occupies, ID and L included.
func Range(r sunspec.ModelRef) modbus.Range {
	return modbus.Range{Addr: r.Addr, Count: r.Len + 2}
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
func Discover(ctx context.Context, r sunspec.Reader) (*sunspec.Device, error) {
	return DiscoverAt(ctx, r, Bases)
}

// DiscoverAt is Discover probing only the given bases, in order (an
// installer who knows the device's base saves the probes).
func DiscoverAt(ctx context.Context, r sunspec.Reader, bases []uint16) (*sunspec.Device, error) {
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
	d := &sunspec.Device{Base: base}
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
		d.Models = append(d.Models, sunspec.ModelRef{ID: id, Addr: uint16(addr), Len: l})
		addr += 2 + uint32(l)
	}
	if len(d.Models) == 0 || d.Models[0].ID != 1 {
		return nil, fmt.Errorf("%w: chain at %d does not start with the common model 1 (models %v)", ErrNoSunSpec, base, d.ModelIDs())
	}
	if err := readIdentity(ctx, r, d); err != nil {
		return nil, err
	}
	d.Kind, d.Platform, d.Capabilities = sunspec.Classify(d.ModelIDs())
	if d.Capabilities == nil {
		d.Capabilities = []sunspec.Capability{}
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
func readIdentity(ctx context.Context, r sunspec.Reader, d *sunspec.Device) error {
	common, err := sunspec.ReadModel(ctx, r, d.Models[0])
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
		inst, err := sunspec.ReadModel(ctx, r, ref)
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
