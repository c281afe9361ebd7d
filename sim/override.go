package sim

import (
	"fmt"
	"math"
	"slices"

	"plantd/sunspec"
)

// An override pins the registers of one top-level point to fixed bits,
// whatever the physics renders: a device that reports a wild value
// (W=32767 with W_SF=10), a broken scale factor or a point that is not
// implemented. Overrides are applied after every render, so they hold
// until ClearOverrides.
type override struct {
	off  int      // index of the point's first register in Device.regs
	regs []uint16 // the pinned bits
	orig []uint16 // the bits before the first override, restored by ClearOverrides
}

// Override pins a top-level point of model id to the raw register value
// raw (the point's bits, as SetRaw stores them; for a scale factor the
// int16 bits). It is a scenario hook for tests of implausible values.
func (d *Device) Override(model uint16, point string, raw uint64) error {
	return d.override(model, point, func(p *sunspec.Point, dst []uint16) {
		for i := len(dst) - 1; i >= 0; i-- {
			dst[i] = uint16(raw)
			raw >>= 16
		}
	})
}

// OverrideNotImplemented pins a top-level point of model id to its
// not-implemented value.
func (d *Device) OverrideNotImplemented(model uint16, point string) error {
	return d.override(model, point, func(p *sunspec.Point, dst []uint16) { sunspec.EncodeNotImplemented(p, dst) })
}

func (d *Device) override(model uint16, point string, fill func(*sunspec.Point, []uint16)) error {
	p := d.plant
	p.mu.Lock()
	defer p.mu.Unlock()
	s := d.slot(model)
	if s == nil {
		return fmt.Errorf("sim: device %s has no model %d", d.cfg.ID, model)
	}
	pt := s.inst.Model.Point(point)
	if pt == nil {
		return fmt.Errorf("sim: model %d: %w %q", model, sunspec.ErrUnknownPoint, point)
	}
	off := s.off + int(pt.Offset)
	o := override{off: off, regs: make([]uint16, pt.Size)}
	fill(pt, o.regs)
	for i := range d.overrides {
		if d.overrides[i].off == off {
			d.overrides[i].regs = o.regs
			p.gen++
			return nil
		}
	}
	o.orig = slices.Clone(d.regs[off : off+int(pt.Size)])
	d.overrides = append(d.overrides, o)
	p.gen++
	return nil
}

// ClearOverrides removes every override; the points show the physics
// again from the next read.
func (d *Device) ClearOverrides() {
	p := d.plant
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range d.overrides {
		copy(d.regs[o.off:], o.orig)
	}
	d.overrides = nil
	p.gen++
}

// applyOverrides writes the pinned points into the image.
func (d *Device) applyOverrides() {
	for _, o := range d.overrides {
		copy(d.regs[o.off:], o.regs)
	}
}

// FreezeCounter freezes (true) or releases (false) an inverter's lifetime
// energy counter: while frozen the counter points keep the value they had,
// whatever the inverter feeds in, as a device with a stuck accumulator
// does. Released, they show the true energy again (a jump).
func (d *Device) FreezeCounter(frozen bool) {
	p := d.plant
	p.mu.Lock()
	defer p.mu.Unlock()
	if d.inv == nil {
		return
	}
	p.advanceLocked(p.simNow())
	d.frozenWh = -1
	if frozen {
		d.frozenWh = d.counterWh(d.inv.energyWh)
	}
	p.gen++
}

// counterWh is what the device's energy counter shows for the true energy
// e: e rounded down to the counter's resolution, or the frozen value.
func (d *Device) counterWh(e float64) float64 {
	if d.frozenWh >= 0 {
		return d.frozenWh
	}
	step := d.cfg.EnergyStepWh
	if step <= 0 {
		step = 1
	}
	return math.Floor(e/step) * step
}

// OverrideString pins a top-level string point of model id to s (cut or
// padded with NULs to the point's size), whatever bytes s holds: a device
// with escape sequences in its manufacturer name.
func (d *Device) OverrideString(model uint16, point, s string) error {
	return d.override(model, point, func(p *sunspec.Point, dst []uint16) {
		b := make([]byte, 2*len(dst))
		copy(b, s)
		for i := range dst {
			dst[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		}
	})
}
