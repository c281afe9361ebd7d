package sunspec

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// ErrNotImplemented is returned for a point whose register holds the
// SunSpec not-implemented value (or whose scale factor does): the value is
// absent, never 0.
var ErrNotImplemented = errors.New("not implemented")

// ErrUnknownPoint is returned for a point name the model does not define.
var ErrUnknownPoint = errors.New("unknown point")

// Value is one decoded point.
type Value struct {
	// Float is the value in the point's units: the mantissa times 10^sf for
	// scaled points, the IEEE value for floats, the plain integer otherwise
	// (enums and bitfields included).
	Float float64
	// Raw holds the register bits, most significant register first
	// (bitfields, enums, accumulators without rounding).
	Raw uint64
	// OK is false when the point, or its scale factor, is not implemented.
	OK bool
}

// raw returns the register bits of a point of type t held in r, and whether
// they are an implemented value.
func raw(t PointType, r []uint16) (uint64, bool) {
	switch t {
	case TypeInt16, TypeSunssf:
		return uint64(r[0]), r[0] != 0x8000
	case TypeUint16, TypeEnum16, TypeBitfield16, TypeCount:
		return uint64(r[0]), r[0] != 0xFFFF
	case TypeAcc16:
		return uint64(r[0]), r[0] != 0
	case TypePad:
		return 0, false
	case TypeInt32:
		v := uint64(r[0])<<16 | uint64(r[1])
		return v, v != 0x80000000
	case TypeUint32, TypeEnum32, TypeBitfield32:
		v := uint64(r[0])<<16 | uint64(r[1])
		return v, v != 0xFFFFFFFF
	case TypeAcc32, TypeIPAddr:
		v := uint64(r[0])<<16 | uint64(r[1])
		return v, v != 0
	case TypeFloat32:
		v := uint64(r[0])<<16 | uint64(r[1])
		return v, !math.IsNaN(float64(math.Float32frombits(uint32(v))))
	case TypeInt64, TypeUint64, TypeAcc64, TypeFloat64:
		v := uint64(r[0])<<48 | uint64(r[1])<<32 | uint64(r[2])<<16 | uint64(r[3])
		switch t {
		case TypeInt64:
			return v, v != 0x8000000000000000
		case TypeUint64:
			return v, v != math.MaxUint64
		case TypeAcc64:
			return v, v != 0
		}
		return v, !math.IsNaN(math.Float64frombits(v))
	case TypeEUI48:
		v := uint64(r[1])<<32 | uint64(r[2])<<16 | uint64(r[3])
		return v, v != 0xFFFFFFFFFFFF
	}
	return 0, false
}

// number converts implemented register bits of type t to a float64 mantissa.
func number(t PointType, v uint64) float64 {
	switch t {
	case TypeInt16, TypeSunssf:
		return float64(int16(v))
	case TypeInt32:
		return float64(int32(v))
	case TypeInt64:
		return float64(int64(v))
	case TypeFloat32:
		return float64(math.Float32frombits(uint32(v)))
	case TypeFloat64:
		return math.Float64frombits(v)
	}
	return float64(v)
}

// pow10 holds 10^sf for the SunSpec scale factor range −10..10.
var pow10 = [21]float64{1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10}

// scale returns mantissa × 10^sf; sf outside −10..10 is not a valid scale
// factor and makes the value unknown.
func scale(mantissa float64, sf int) (float64, bool) {
	if sf < -10 || sf > 10 {
		return 0, false
	}
	if sf < 0 {
		// Dividing by the exact power of ten gives the float nearest the
		// decimal value (5028 / 1000 = 5.028), where multiplying by the
		// inexact 1e-3 would not (5.0280000000000005).
		return mantissa / pow10[-sf+10], true
	}
	return mantissa * pow10[sf+10], true
}

// decodePoint decodes point p of a group whose registers start at regs[0];
// sfRegs is the register block holding the scale factor (regs itself when
// p.SFUp == 0) and sfGroup the group defining it.
func decodePoint(p *Point, regs []uint16, sfGroup *Group, sfRegs []uint16) Value {
	if int(p.Offset)+int(p.Size) > len(regs) || !p.Type.Numeric() {
		return Value{}
	}
	v, ok := raw(p.Type, regs[p.Offset:p.Offset+p.Size])
	if !ok {
		return Value{Raw: v}
	}
	f := number(p.Type, v)
	switch {
	case p.HasSFConst:
		f, ok = scale(f, int(p.SFConst))
	case p.SF != NoScale:
		sp := &sfGroup.Points[p.SF]
		if int(sp.Offset) >= len(sfRegs) {
			return Value{Raw: v}
		}
		sfRaw := sfRegs[sp.Offset]
		if sfRaw == 0x8000 {
			return Value{Raw: v}
		}
		f, ok = scale(f, int(int16(sfRaw)))
	}
	return Value{Float: f, Raw: v, OK: ok}
}

// DecodeFixed decodes the points of a model's top group (not its repeating
// groups) from regs, which start at the model's ID register. It reuses dst
// when it has room, so a poll loop decodes without allocating.
func DecodeFixed(m *Model, regs []uint16, dst []Value) ([]Value, error) {
	g := &m.Group
	if len(regs) < int(g.FixedLen) {
		return dst[:0], fmt.Errorf("model %d: %d registers, want at least %d", m.ID, len(regs), g.FixedLen)
	}
	if regs[0] != m.ID {
		return dst[:0], fmt.Errorf("model %d: register block starts with id %d", m.ID, regs[0])
	}
	if cap(dst) < len(g.Points) {
		dst = make([]Value, len(g.Points))
	}
	dst = dst[:len(g.Points)]
	for i := range g.Points {
		dst[i] = decodePoint(&g.Points[i], regs, g, regs)
	}
	return dst, nil
}

// decodeString returns a string point trimmed of NUL padding and spaces;
// "" for not implemented (all NUL).
func decodeString(r []uint16) string {
	var b strings.Builder
	b.Grow(2 * len(r))
	for _, w := range r {
		b.WriteByte(byte(w >> 8))
		b.WriteByte(byte(w))
	}
	s := b.String()
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
