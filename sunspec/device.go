package sunspec

import (
	"context"
	"fmt"
	"slices"

	"plantd/plant/kind"
)

// MaxReadRegisters is the most registers one read (function 3) may ask
// for, the Modbus limit of 125.
const MaxReadRegisters = 125

// Reader reads holding registers (function 3). A *modbus.Client is one.
type Reader interface {
	ReadHoldingRegisters(ctx context.Context, addr, quantity uint16, dst []uint16) ([]uint16, error)
}

// ReadWriter adds writes with function 16.
type ReadWriter interface {
	Reader
	WriteRegisters(ctx context.Context, addr uint16, values []uint16) error
}

// ModelRef is one model of a device's chain: its id, the address of its ID
// register and its length L (registers after ID and L).
type ModelRef struct {
	ID   uint16 `json:"id"`
	Addr uint16 `json:"addr"`
	Len  uint16 `json:"len"`
}

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

// readModel reads one model's registers (in reads of at most 125) and lays
// it out.
func readModel(ctx context.Context, r Reader, ref ModelRef) (*Instance, error) {
	m := ModelByID(ref.ID)
	if m == nil {
		return nil, fmt.Errorf("model %d at %d: unknown model", ref.ID, ref.Addr)
	}
	addr, count := ref.Addr, ref.Len+2
	capped := false
	if ml := m.MaxLen(); int(ref.Len) > ml {
		count, capped = uint16(ml)+2, true // a hostile or broken header
	}
	regs := make([]uint16, 0, count)
	for off := uint16(0); off < count; {
		n := min(count-off, MaxReadRegisters)
		got, err := r.ReadHoldingRegisters(ctx, addr+off, n, nil)
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
		regs[1] = count - 2
	}
	return NewInstance(m, ref.Addr, regs)
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
