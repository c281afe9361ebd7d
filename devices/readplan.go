package devices

import (
	"context"
	"fmt"

	"plantd/modbus"
)

// ReadPlan reads a fixed set of a device's models with as few requests as
// the 125-register limit allows. Models that lie close together share a
// request; a request never reaches into a model plantd has no definition
// for (vendor models may fault or have side effects on read). Each model of
// at most 125 registers comes in one request, so its scale factors are read
// with its values. A plan reuses its buffers: keep one per device.
type ReadPlan struct {
	models []ModelRef
	lens   []uint16 // per model, the length read: min(L, MaxLen)
	capped []ModelRef
	defs   []*Model
	reads  []modbus.Read
	regs   [][]uint16 // per model, reused between reads
	buf    []uint16
}

// NewReadPlan plans the reads of the given models of d.
func (d *Device) NewReadPlan(models []ModelRef) (*ReadPlan, error) {
	p := &ReadPlan{models: models}
	need := make([]modbus.Range, len(models))
	for i, m := range models {
		def := ModelByID(m.ID)
		if def == nil {
			return nil, fmt.Errorf("plan read of model %d at %d: unknown model", m.ID, m.Addr)
		}
		p.defs = append(p.defs, def)
		l := m.Len
		if ml := def.MaxLen(); int(l) > ml {
			// A hostile or broken header: read the model only as far as
			// plantd knows it.
			l = uint16(ml)
			p.capped = append(p.capped, m)
		}
		p.lens = append(p.lens, l)
		need[i] = modbus.Range{Addr: m.Addr, Count: l + 2}
		p.regs = append(p.regs, make([]uint16, need[i].Count))
	}
	var forbidden []modbus.Range
	for _, m := range d.Models {
		if !m.Known() {
			forbidden = append(forbidden, m.Range())
		}
	}
	p.reads = modbus.Plan(need, modbus.PlanOptions{
		MaxRegs:   modbus.MaxReadRegisters,
		MaxGap:    modbus.MaxReadRegisters,
		Forbidden: forbidden,
	})
	return p, nil
}

// Capped lists the models whose header claims a length L beyond what
// plantd reads of them (Model.MaxLen): they are read only that far.
func (p *ReadPlan) Capped() []ModelRef { return p.capped }

// Requests is the number of Modbus requests one Read costs.
func (p *ReadPlan) Requests() int { return len(p.reads) }

// Registers is the number of registers one Read transfers.
func (p *ReadPlan) Registers() int {
	n := 0
	for _, r := range p.reads {
		n += int(r.Count)
	}
	return n
}

// Read performs the plan and returns the models laid out, in the order the
// plan was made with. The instances' registers are owned by the plan and
// valid until the next Read.
func (p *ReadPlan) Read(ctx context.Context, r Reader) ([]*Instance, error) {
	for _, rd := range p.reads {
		got, err := r.ReadHoldingRegisters(ctx, rd.Addr, rd.Count, p.buf[:0])
		if err != nil {
			return nil, err
		}
		if len(got) != int(rd.Count) {
			return nil, fmt.Errorf("read %d+%d: %d registers answered", rd.Addr, rd.Count, len(got))
		}
		p.buf = got
		for i, m := range p.models {
			copyOverlap(p.regs[i], m.Addr, got, rd.Addr)
		}
	}
	out := make([]*Instance, len(p.models))
	for i, m := range p.models {
		if l := p.regs[i][1]; l != m.Len {
			return nil, fmt.Errorf("model %d at %d: length changed from %d to %d", m.ID, m.Addr, m.Len, l)
		}
		p.regs[i][1] = p.lens[i] // the part read
		inst, err := NewInstance(p.defs[i], m.Addr, p.regs[i])
		if err != nil {
			return nil, err
		}
		out[i] = inst
	}
	return out, nil
}

// copyOverlap copies the registers src (starting at address srcAddr) holds
// of dst (starting at dstAddr).
func copyOverlap(dst []uint16, dstAddr uint16, src []uint16, srcAddr uint16) {
	lo := max(int(dstAddr), int(srcAddr))
	hi := min(int(dstAddr)+len(dst), int(srcAddr)+len(src))
	if lo < hi {
		copy(dst[lo-int(dstAddr):hi-int(dstAddr)], src[lo-int(srcAddr):hi-int(srcAddr)])
	}
}
