package sunspec

import (
	"fmt"
)

// Instance is one model as read from a device: its registers (from the ID
// register on) and their layout, repeating groups resolved.
type Instance struct {
	Model *Model
	Addr  uint16   // register address of the model's ID point on the device
	Regs  []uint16 // ID, L and the L registers of the body
	Root  GroupInstance
}

// GroupInstance is one occurrence of a group inside an Instance.
type GroupInstance struct {
	Group  *Group
	Offset int // index into Instance.Regs of the group's first register
	Len    int // registers, sub-groups included
	// Sub holds, per sub-group of Group, its occurrences.
	Sub    [][]GroupInstance
	parent *GroupInstance
}

// NewInstance lays out a model read from a device. regs starts at the ID
// register and holds at least 2+L registers.
func NewInstance(m *Model, addr uint16, regs []uint16) (*Instance, error) {
	if len(regs) < 2 {
		return nil, fmt.Errorf("model %d at %d: %d registers", m.ID, addr, len(regs))
	}
	if regs[0] != m.ID {
		return nil, fmt.Errorf("model %d at %d: id register holds %d", m.ID, addr, regs[0])
	}
	n := 2 + int(regs[1])
	if len(regs) < n {
		return nil, fmt.Errorf("model %d at %d: length %d but %d registers read", m.ID, addr, regs[1], len(regs)-2)
	}
	if n < int(m.Group.FixedLen) && !(m.ID == 1 && n == int(m.Group.FixedLen)-1) {
		return nil, fmt.Errorf("model %d at %d: length %d shorter than its fixed points (%d)", m.ID, addr, regs[1], m.Group.FixedLen-2)
	}
	inst := &Instance{Model: m, Addr: addr, Regs: regs[:n]}
	inst.Root = GroupInstance{Group: &m.Group}
	used, err := inst.layout(&inst.Root, 0, n)
	if err != nil {
		return nil, fmt.Errorf("model %d at %d: %w", m.ID, addr, err)
	}
	inst.Root.Len = used
	return inst, nil
}

// layout resolves the sub-groups of gi, which starts at off; end bounds it.
// It returns the registers gi occupies.
func (inst *Instance) layout(gi *GroupInstance, off, end int) (int, error) {
	g := gi.Group
	gi.Offset = off
	pos := off + int(g.FixedLen)
	if pos > end {
		// Legacy model 1 may omit its Pad register (L = 65).
		if inst.Model.ID == 1 && gi.parent == nil {
			return end - off, nil
		}
		return 0, fmt.Errorf("group %s: fixed points end at %d, past the model end %d", g.Name, pos, end)
	}
	if len(g.Groups) == 0 {
		return pos - off, nil
	}
	gi.Sub = make([][]GroupInstance, len(g.Groups))
	for i := range g.Groups {
		sg := &g.Groups[i]
		var repeats int
		switch sg.Repeat {
		case RepeatOnce:
			repeats = 1
		case RepeatByPoint:
			v, ok := inst.countValue(gi, sg)
			if !ok {
				return 0, fmt.Errorf("group %s: count point %s not implemented", sg.Name, sg.CountPoint)
			}
			repeats = v
		case RepeatFill:
			repeats = -1
		}
		for r := 0; repeats < 0 || r < repeats; r++ {
			if repeats < 0 && pos >= end {
				break
			}
			child := GroupInstance{Group: sg, parent: gi}
			n, err := inst.layout(&child, pos, end)
			if err != nil {
				if repeats < 0 {
					break // a partial trailing group of a fill-repeated list is ignored
				}
				return 0, err
			}
			if n == 0 {
				return 0, fmt.Errorf("group %s: empty repeating group", sg.Name)
			}
			child.Len = n
			gi.Sub[i] = append(gi.Sub[i], child)
			pos += n
		}
	}
	if pos > end {
		return 0, fmt.Errorf("group %s: ends at %d, past the model end %d", g.Name, pos, end)
	}
	return pos - off, nil
}

// countValue reads the repeat count of sub-group sg of gi.
func (inst *Instance) countValue(gi *GroupInstance, sg *Group) (int, bool) {
	scope := gi
	for i := 0; i < int(sg.CountUp) && scope.parent != nil; i++ {
		scope = scope.parent
	}
	p := &scope.Group.Points[sg.CountIndex]
	v, ok := raw(p.Type, inst.Regs[scope.Offset+int(p.Offset):])
	if !ok || v > 1000 {
		return 0, false
	}
	return int(v), true
}

// regsOf returns the registers of a group instance, from its first point on.
func (inst *Instance) regsOf(gi *GroupInstance) []uint16 { return inst.Regs[gi.Offset:] }

// sfScope returns the group and registers that hold the scale factor of p in gi.
func (inst *Instance) sfScope(gi *GroupInstance, p *Point) (*Group, []uint16) {
	scope := gi
	for i := 0; i < int(p.SFUp) && scope.parent != nil; i++ {
		scope = scope.parent
	}
	return scope.Group, inst.regsOf(scope)
}

// ValueAt decodes point index i of the group instance gi.
func (inst *Instance) ValueAt(gi *GroupInstance, i int) Value {
	p := &gi.Group.Points[i]
	sg, sr := inst.sfScope(gi, p)
	return decodePoint(p, inst.regsOf(gi), sg, sr)
}

// Value decodes a point of the model's top group by name.
func (inst *Instance) Value(name string) (Value, error) {
	i := inst.Root.Group.PointIndex(name)
	if i < 0 {
		return Value{}, fmt.Errorf("model %d: %w %q", inst.Model.ID, ErrUnknownPoint, name)
	}
	return inst.ValueAt(&inst.Root, i), nil
}

// Float returns a numeric point of the top group in its units, or an error
// wrapping ErrNotImplemented.
func (inst *Instance) Float(name string) (float64, error) {
	v, err := inst.Value(name)
	if err != nil {
		return 0, err
	}
	if !v.OK {
		return 0, fmt.Errorf("model %d point %s: %w", inst.Model.ID, name, ErrNotImplemented)
	}
	return v.Float, nil
}

// String returns a string point of the top group, NUL padding and spaces
// trimmed; "" when not implemented.
func (inst *Instance) String(name string) string {
	return inst.StringIn(&inst.Root, name)
}

// StringIn returns a string point of a group instance.
func (inst *Instance) StringIn(gi *GroupInstance, name string) string {
	i := gi.Group.PointIndex(name)
	if i < 0 {
		return ""
	}
	p := &gi.Group.Points[i]
	start := gi.Offset + int(p.Offset)
	if p.Type != TypeString || start+int(p.Size) > len(inst.Regs) {
		return ""
	}
	return decodeString(inst.Regs[start : start+int(p.Size)])
}

// Groups returns the occurrences of the named sub-group of gi (nil if none).
func (gi *GroupInstance) Groups(name string) []GroupInstance {
	for i := range gi.Group.Groups {
		if gi.Group.Groups[i].Name == name && i < len(gi.Sub) {
			return gi.Sub[i]
		}
	}
	return nil
}

// FloatIn returns a numeric point of a group instance by name.
func (inst *Instance) FloatIn(gi *GroupInstance, name string) (float64, error) {
	i := gi.Group.PointIndex(name)
	if i < 0 {
		return 0, fmt.Errorf("model %d group %s: %w %q", inst.Model.ID, gi.Group.Name, ErrUnknownPoint, name)
	}
	v := inst.ValueAt(gi, i)
	if !v.OK {
		return 0, fmt.Errorf("model %d group %s point %s: %w", inst.Model.ID, gi.Group.Name, name, ErrNotImplemented)
	}
	return v.Float, nil
}
