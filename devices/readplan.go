package devices

import (
	"context"
	"fmt"

	"plantd/modbus"
	"plantd/sunspec"
)

// ReadPlan reads a fixed set of a device's models with as few requests as
// the 125-register limit allows. Models that lie close together share a
// request; a request never reaches into a model plantd has no definition
// for (vendor models may fault or have side effects on read). Each model of
// at most 125 registers comes in one request, so its scale factors are read
// with its values. A plan reuses its buffers: keep one per device.
type ReadPlan struct {
	models []sunspec.ModelRef
	lens   []uint16 // per model, the length read: min(L, MaxLen)
	capped []sunspec.ModelRef
	defs   []*sunspec.Model
	reads  []modbus.Read
	regs   [][]uint16 // per model, reused between reads
	buf    []uint16
	// insts are the instances of the last Read, per model: reused by the
	// next one when the model's layout cannot have changed (no group
	// repeated by a count point, same length), laid out anew otherwise.
	insts  []*sunspec.Instance
	static []bool // per model: no group repeated by a count point
}

// NewReadPlan plans the reads of the given models of d.
func NewReadPlan(d *sunspec.Device, models []sunspec.ModelRef) (*ReadPlan, error) {
	p := &ReadPlan{models: models}
	need := make([]modbus.Range, len(models))
	for i, m := range models {
		def := sunspec.ModelByID(m.ID)
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
			forbidden = append(forbidden, Range(m))
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
func (p *ReadPlan) Capped() []sunspec.ModelRef { return p.capped }

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
// plan was made with. The slice, the instances and their registers are
// owned by the plan and valid until the next Read, which reads into them
// again: a poll allocates nothing once the plan has read once (models
// whose layout follows a count point are laid out anew each time).
func (p *ReadPlan) Read(ctx context.Context, r sunspec.Reader) ([]*sunspec.Instance, error) {
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
	if p.insts == nil {
		p.insts = make([]*sunspec.Instance, len(p.models))
		p.static = make([]bool, len(p.models))
		for i, def := range p.defs {
			p.static[i] = !countedGroups(&def.Group)
		}
	}
	for i, m := range p.models {
		if l := p.regs[i][1]; l != m.Len {
			return nil, fmt.Errorf("model %d at %d: length changed from %d to %d", m.ID, m.Addr, m.Len, l)
		}
		p.regs[i][1] = p.lens[i] // the part read
		if inst := p.insts[i]; inst != nil && p.static[i] && p.regs[i][0] == m.ID {
			continue // the registers were read into inst.Regs in place
		}
		p.insts[i] = nil
		inst, err := sunspec.NewInstance(p.defs[i], m.Addr, p.regs[i])
		if err != nil {
			return nil, err
		}
		p.insts[i] = inst
	}
	return p.insts, nil
}

// countedGroups reports whether g or a group inside it repeats by the
// value of a count point.
func countedGroups(g *sunspec.Group) bool {
	for i := range g.Groups {
		if g.Groups[i].Repeat == sunspec.RepeatByPoint || countedGroups(&g.Groups[i]) {
			return true
		}
	}
	return false
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
