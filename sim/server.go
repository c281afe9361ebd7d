package sim

import (
	"fmt"
	"slices"
	"time"

	"plantd/modbus"

	"plantd/sunspec"
)

// handler serves the registers and bits of an endpoint's devices to
// modbus.ServePDU, the request decoder of plantd's Modbus servers, for the
// Modbus TCP endpoints (proxy.go) and the RTU slaves (rtu.go) alike.
// Errors it returns become exceptions: errIllegalAddress 2,
// errIllegalValue 3, errIllegalFunction 1, errGatewayTarget 0x0B.
type handler struct{ ep *endpoint }

var _ modbus.Handler = (*handler)(nil)

// The exceptions the simulated devices answer with.
var (
	errIllegalFunction = modbus.Exception(modbus.ExceptionIllegalFunction)
	errIllegalAddress  = modbus.Exception(modbus.ExceptionIllegalDataAddress)
	errIllegalValue    = modbus.Exception(modbus.ExceptionIllegalDataValue)
	errGatewayTarget   = modbus.Exception(modbus.ExceptionGatewayTargetDeviceFailedToRespond)
)

// Bits reads (functions 1 and 2) or writes (functions 5 and 15) a relay
// board's coils and inputs; the other devices have none (exception 1).
func (h *handler) Bits(req *modbus.Request) ([]bool, error) {
	d, err := h.relayAt(req.Unit)
	if err != nil {
		return nil, err
	}
	if req.Function == 2 {
		return d.plant.relayInputs(d, req)
	}
	return d.plant.relayCoils(d, req)
}

// relayAt returns the relay board answering to unit, or the exception for
// a unit without a device (0x0B) or with one that is no relay board (1).
func (h *handler) relayAt(unit uint8) (*Device, error) {
	d := h.ep.units[unit]
	switch {
	case d == nil:
		return nil, errGatewayTarget
	case d.relay == nil:
		return nil, errIllegalFunction
	}
	return d, nil
}

// Registers reads holding registers (function 3) or writes them (6 and
// 16): a device's map, or a relay board's watchdog registers. Input
// registers (function 4) are a template device's; the others answer
// exception 1 (a relay board counts the request as a telegram).
func (h *handler) Registers(req *modbus.Request) ([]uint16, error) {
	d := h.ep.units[req.Unit]
	if d == nil {
		return nil, errGatewayTarget
	}
	if req.Function == 4 {
		if d.relay != nil {
			d.plant.relayTouch(d)
		}
		if d.tpl != nil {
			return d.plant.readTemplate(d, 4, req.Addr, req.Quantity)
		}
		return nil, errIllegalFunction
	}
	if d.relay != nil {
		return d.plant.relayRegisters(d, req)
	}
	if d.tpl != nil {
		if req.IsWrite() {
			return nil, errIllegalFunction // template devices are read-only
		}
		return d.plant.readTemplate(d, 3, req.Addr, req.Quantity)
	}
	if req.IsWrite() {
		return nil, d.plant.write(d, req.Addr, req.Regs)
	}
	return d.plant.read(d, req.Addr, req.Quantity)
}

// span returns the index in d.regs of the registers addr..addr+n-1, or
// false when they are not all inside the map.
func (d *Device) span(addr uint16, n int) (int, bool) {
	off := int(addr) - int(d.base)
	return off, off >= 0 && n > 0 && off+n <= len(d.regs)
}

// read returns registers of the device's map at the current simulated time.
func (p *Plant) read(d *Device, addr, quantity uint16) ([]uint16, error) {
	off, ok := d.span(addr, int(quantity))
	if !ok {
		return nil, errIllegalAddress
	}
	out := make([]uint16, quantity)
	p.mu.Lock()
	if p.cfg.CountReads {
		p.countReadLocked(d, addr, time.Now())
	}
	p.advanceLocked(p.simNow())
	p.renderLocked(d)
	copy(out, d.regs[off:])
	p.mu.Unlock()
	return out, nil
}

// pointRef is a point of a device's map touched by a write.
type pointRef struct {
	model uint16
	inst  *sunspec.Instance
	gi    *sunspec.GroupInstance
	index int // in gi.Group.Points
}

func (r pointRef) point() *sunspec.Point { return &r.gi.Group.Points[r.index] }

// String names the point "model.point", or "model.group.point" inside a
// sub-group.
func (r pointRef) String() string {
	if r.gi == &r.inst.Root {
		return fmt.Sprintf("%d.%s", r.model, r.point().Name)
	}
	return fmt.Sprintf("%d.%s.%s", r.model, r.gi.Group.Name, r.point().Name)
}

// touches reports whether a write touched any of the named top-level
// points of the model.
func touches(touched []pointRef, model uint16, names ...string) bool {
	for _, r := range touched {
		if r.model == model && r.gi == &r.inst.Root && slices.Contains(names, r.point().Name) {
			return true
		}
	}
	return false
}

// touched lists the points overlapping registers off..off+n-1 of d.regs.
func (d *Device) touched(off, n int) []pointRef {
	var out []pointRef
	d.pointsIn(off, n, func(s *slot, gi *sunspec.GroupInstance, i int, _ string) {
		out = append(out, pointRef{model: s.inst.Model.ID, inst: s.inst, gi: gi, index: i})
	})
	return out
}

// validate checks the values a write changed: enums must be one of their
// symbols, percentages in range, an inverter's WMax within its rating. A point written with the value it holds
// passes, so a client may write back a block as it read it.
func (d *Device) validate(touched []pointRef, off int, old []uint16) error {
	for _, r := range touched {
		p := r.point()
		if !p.Writable || !d.changed(r, off, old) {
			continue
		}
		v := r.inst.ValueAt(r.gi, r.index)
		if p.Type == sunspec.TypeEnum16 && len(p.Symbols) > 0 {
			ok := false
			for _, s := range p.Symbols {
				if v.OK && int64(v.Raw) == s.Value {
					ok = true
					break
				}
			}
			if !ok {
				return fmt.Errorf("%s = %d: not one of its symbols", r, v.Raw)
			}
		}
		if r.gi != &r.inst.Root {
			continue
		}
		lo, hi := 0.0, -1.0
		switch p.Name {
		case "WMaxLimPct", "WMaxLimPctRvrt", "MinRsvPct", "SoCRsvMin", "SocRsvMax":
			lo, hi = 0, 100
		case "InWRte", "OutWRte":
			lo, hi = -100, 100
		case "WMax":
			// An inverter's power setting (121, 702) is bounded by its
			// nameplate rating (WRtg, WMaxRtg), as real ones refuse more.
			if d.inv != nil && (r.model == 121 || r.model == 702) {
				lo, hi = 0, d.inv.ratedW
			}
		}
		if hi >= lo && (!v.OK || v.Float < lo || v.Float > hi) {
			return fmt.Errorf("%s = %v: outside %v..%v", r, v.Float, lo, hi)
		}
	}
	return nil
}

// changed reports whether a write of old's length at off changed any
// register of the point; old holds the registers before the write.
func (d *Device) changed(r pointRef, off int, old []uint16) bool {
	s := d.slot(r.model)
	start := s.off + r.gi.Offset + int(r.point().Offset)
	for i := max(start, off); i < min(start+int(r.point().Size), off+len(old)); i++ {
		if d.regs[i] != old[i-off] {
			return true
		}
	}
	return false
}

// write stores values into the device's map: every register must belong
// to a writable point (exception 2 otherwise) and the values must be valid
// (exception 3 otherwise). Controls take effect at once; reversion timers
// start now.
func (p *Plant) write(d *Device, addr uint16, values []uint16) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advanceLocked(p.simNow())
	off, ok := d.span(addr, len(values))
	if !ok {
		p.traceLocked(d, addr, len(values), -1, fmt.Errorf("exception 2: registers %d+%d outside the map", addr, len(values)))
		return errIllegalAddress
	}
	for i := range values {
		if !d.writable[off+i] {
			p.traceLocked(d, addr, len(values), off, fmt.Errorf("exception 2: register %d is not writable", int(addr)+i))
			return errIllegalAddress
		}
	}
	d.scratch = append(d.scratch[:0], d.regs[off:off+len(values)]...)
	copy(d.regs[off:], values)
	touched := d.touched(off, len(values))
	if err := d.validate(touched, off, d.scratch); err != nil {
		copy(d.regs[off:], d.scratch)
		d.log.Info("write refused", "addr", addr, "err", err)
		p.traceLocked(d, addr, len(values), off, fmt.Errorf("exception 3: %w", err))
		return errIllegalValue
	}
	switch {
	case d.inv != nil:
		d.inv.afterWrite(d, touched, p.t)
	case d.bat != nil:
		d.bat.afterWrite(d, touched, p.t)
	}
	names := make([]string, len(touched))
	for i, r := range touched {
		names[i] = r.String()
	}
	if len(d.writes) == maxWriteLog {
		d.writes = append(d.writes[:0], d.writes[1:]...)
	}
	d.writes = append(d.writes, Write{Time: p.t, Unit: d.cfg.Unit, Addr: addr, Values: slices.Clone(values), Points: names})
	d.log.Info("write", "addr", addr, "count", len(values), "points", names)
	p.traceLocked(d, addr, len(values), off, nil)
	p.flowsLocked(p.t) // the new controls act on the next read
	return nil
}
