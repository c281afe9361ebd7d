package sunspec

import (
	"errors"
	"fmt"
	"math"
)

// ErrOutOfRange is returned when a value does not fit a point's type after
// scaling; plantd never writes a wrapped or negative unsigned register.
var ErrOutOfRange = errors.New("value out of range")

// EncodeValue stores v, in the point's units, into dst[:p.Size]. Scaled
// points are stored as round(v / 10^sf); sf is ignored for others. Values
// that do not fit (negative for unsigned types, beyond the type's range, or
// equal to its not-implemented pattern) are refused with ErrOutOfRange.
func EncodeValue(p *Point, sf int, v float64, dst []uint16) error {
	if len(dst) < int(p.Size) {
		return fmt.Errorf("point %s: %d registers for %d", p.Name, len(dst), p.Size)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("point %s: %w: %v", p.Name, ErrOutOfRange, v)
	}
	if p.HasSFConst {
		sf = int(p.SFConst)
	}
	if p.Scaled() {
		if sf < -10 || sf > 10 {
			return fmt.Errorf("point %s: scale factor %d outside -10..10", p.Name, sf)
		}
		v = math.Round(v / pow10[sf+10])
	} else if !p.Type.Float() {
		v = math.Round(v)
	}
	bad := func() error {
		return fmt.Errorf("point %s (%s): %w: %v", p.Name, p.Type, ErrOutOfRange, v)
	}
	switch p.Type {
	case TypeInt16, TypeSunssf:
		if v < -32767 || v > 32767 {
			return bad()
		}
		dst[0] = uint16(int16(v))
	case TypeUint16, TypeEnum16, TypeBitfield16, TypeCount, TypeAcc16:
		if v < 0 || v > 0xFFFE {
			return bad()
		}
		dst[0] = uint16(v)
	case TypeInt32:
		if v < -(1<<31-1) || v > 1<<31-1 {
			return bad()
		}
		put32(dst, uint32(int32(v)))
	case TypeUint32, TypeEnum32, TypeBitfield32, TypeAcc32:
		if v < 0 || v > 0xFFFFFFFE {
			return bad()
		}
		put32(dst, uint32(v))
	case TypeInt64:
		if v < -(1<<63-1) || v >= 1<<63 {
			return bad()
		}
		put64(dst, uint64(int64(v)))
	case TypeUint64, TypeAcc64:
		if v < 0 || v >= 1<<64 {
			return bad()
		}
		put64(dst, uint64(v))
	case TypeFloat32:
		put32(dst, math.Float32bits(float32(v)))
	case TypeFloat64:
		put64(dst, math.Float64bits(v))
	default:
		return fmt.Errorf("point %s: type %s is not numeric", p.Name, p.Type)
	}
	return nil
}

// EncodeString stores s into dst[:p.Size], two characters per register,
// NUL padded; longer strings are refused.
func EncodeString(p *Point, s string, dst []uint16) error {
	if p.Type != TypeString {
		return fmt.Errorf("point %s: type %s is not a string", p.Name, p.Type)
	}
	if len(s) > 2*int(p.Size) {
		return fmt.Errorf("point %s: %w: %d characters for %d", p.Name, ErrOutOfRange, len(s), 2*p.Size)
	}
	for i := 0; i < int(p.Size); i++ {
		var hi, lo byte
		if 2*i < len(s) {
			hi = s[2*i]
		}
		if 2*i+1 < len(s) {
			lo = s[2*i+1]
		}
		dst[i] = uint16(hi)<<8 | uint16(lo)
	}
	return nil
}

// EncodeNotImplemented stores the point type's not-implemented pattern.
func EncodeNotImplemented(p *Point, dst []uint16) {
	r := dst[:p.Size]
	for i := range r {
		r[i] = 0
	}
	switch p.Type {
	case TypeInt16, TypeSunssf, TypePad:
		r[0] = 0x8000
	case TypeUint16, TypeEnum16, TypeBitfield16, TypeCount:
		r[0] = 0xFFFF
	case TypeInt32:
		r[0] = 0x8000
	case TypeUint32, TypeEnum32, TypeBitfield32, TypeUint64, TypeEUI48:
		for i := range r {
			r[i] = 0xFFFF
		}
	case TypeInt64:
		r[0] = 0x8000
	case TypeFloat32:
		r[0], r[1] = 0x7FC0, 0
	case TypeFloat64:
		r[0] = 0x7FF8
	}
}

func put32(dst []uint16, v uint32) { dst[0], dst[1] = uint16(v>>16), uint16(v) }

func put64(dst []uint16, v uint64) {
	dst[0], dst[1], dst[2], dst[3] = uint16(v>>48), uint16(v>>32), uint16(v>>16), uint16(v)
}

// NewBlank builds the register image of a model with every point not
// implemented, the ID and L points set and repeating groups laid out:
// counts gives the repeats of a fill-repeated group (by group name) and of
// a point-counted group (by count point name, whose value it also sets).
// The simulator and tests build device images from it.
func NewBlank(m *Model, addr uint16, counts map[string]int) (*Instance, error) {
	var regs []uint16
	var fill func(g *Group, off int) error
	fill = func(g *Group, off int) error {
		need := off + int(g.FixedLen)
		for len(regs) < need {
			regs = append(regs, 0)
		}
		for i := range g.Points {
			p := &g.Points[i]
			EncodeNotImplemented(p, regs[off+int(p.Offset):])
			if p.Fixed >= 0 {
				regs[off+int(p.Offset)] = uint16(p.Fixed)
			}
		}
		for i := range g.Groups {
			sg := &g.Groups[i]
			n := 1
			switch sg.Repeat {
			case RepeatFill:
				n = counts[sg.Name]
			case RepeatByPoint:
				n = counts[sg.CountPoint]
				if j := g.PointIndex(sg.CountPoint); j >= 0 {
					regs[off+int(g.Points[j].Offset)] = uint16(n)
				}
			}
			for r := 0; r < n; r++ {
				if err := fill(sg, len(regs)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := fill(&m.Group, 0); err != nil {
		return nil, err
	}
	// Counts kept in an enclosing group (705's NPt) are set once at the top.
	for name, n := range counts {
		if j := m.Group.PointIndex(name); j >= 0 {
			regs[m.Group.Points[j].Offset] = uint16(n)
		}
	}
	regs[1] = uint16(len(regs) - 2)
	if m.ID == 1 {
		regs[1] = 66
	}
	return NewInstance(m, addr, regs)
}

// pointIn finds a point of gi by name.
func (inst *Instance) pointIn(gi *GroupInstance, name string) (*Point, error) {
	i := gi.Group.PointIndex(name)
	if i < 0 {
		return nil, fmt.Errorf("model %d group %s: %w %q", inst.Model.ID, gi.Group.Name, ErrUnknownPoint, name)
	}
	return &gi.Group.Points[i], nil
}

// SetIn stores v, in the point's units, using the scale factor the image
// holds now (set scale factors first).
func (inst *Instance) SetIn(gi *GroupInstance, name string, v float64) error {
	p, err := inst.pointIn(gi, name)
	if err != nil {
		return err
	}
	sf := 0
	if p.SF != NoScale {
		sg, sr := inst.sfScope(gi, p)
		raw := sr[sg.Points[p.SF].Offset]
		if raw == 0x8000 {
			return fmt.Errorf("model %d point %s: scale factor %s %w", inst.Model.ID, name, sg.Points[p.SF].Name, ErrNotImplemented)
		}
		sf = int(int16(raw))
	}
	return EncodeValue(p, sf, v, inst.Regs[gi.Offset+int(p.Offset):])
}

// Set stores v into a point of the top group (see SetIn).
func (inst *Instance) Set(name string, v float64) error { return inst.SetIn(&inst.Root, name, v) }

// SetRaw stores raw register bits (most significant register first) into a
// point of the top group: enums, bitfields, scale factors.
func (inst *Instance) SetRaw(name string, v uint64) error {
	p, err := inst.pointIn(&inst.Root, name)
	if err != nil {
		return err
	}
	r := inst.Regs[p.Offset : p.Offset+p.Size]
	for i := len(r) - 1; i >= 0; i-- {
		r[i] = uint16(v)
		v >>= 16
	}
	return nil
}

// SetString stores a string point of the top group.
func (inst *Instance) SetString(name, s string) error {
	p, err := inst.pointIn(&inst.Root, name)
	if err != nil {
		return err
	}
	return EncodeString(p, s, inst.Regs[p.Offset:])
}

// SetNotImplemented stores the not-implemented pattern into a point of the
// top group.
func (inst *Instance) SetNotImplemented(name string) error {
	p, err := inst.pointIn(&inst.Root, name)
	if err != nil {
		return err
	}
	EncodeNotImplemented(p, inst.Regs[p.Offset:])
	return nil
}
