package template

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Reader reads holding (function 3) and input (function 4) registers. A
// *modbus.Client is one.
type Reader interface {
	ReadHoldingRegisters(ctx context.Context, addr, quantity uint16, dst []uint16) ([]uint16, error)
	ReadInputRegisters(ctx context.Context, addr, quantity uint16, dst []uint16) ([]uint16, error)
}

// Registers holds the answers of a template's blocks, one slice per
// block (nil: not read). Read refills it without allocating once grown.
type Registers struct {
	Blocks [][]uint16
}

// Read reads the template's blocks into regs: every block when all is
// set (identification), else the poll blocks (not Once), whose Once
// blocks keep what they held.
func (t *Template) Read(ctx context.Context, r Reader, regs *Registers, all bool) error {
	if len(regs.Blocks) != len(t.Blocks) {
		regs.Blocks = make([][]uint16, len(t.Blocks))
	}
	for i, b := range t.Blocks {
		if b.Once && !all {
			continue
		}
		var got []uint16
		var err error
		if b.Function == 4 {
			got, err = r.ReadInputRegisters(ctx, b.Address, b.Count, regs.Blocks[i][:0])
		} else {
			got, err = r.ReadHoldingRegisters(ctx, b.Address, b.Count, regs.Blocks[i][:0])
		}
		if err != nil {
			return fmt.Errorf("template %s: read %d+%d (function %d): %w", t.Name, b.Address, b.Count, b.Function, err)
		}
		if len(got) != int(b.Count) {
			return fmt.Errorf("template %s: read %d+%d: %d registers in the answer", t.Name, b.Address, b.Count, len(got))
		}
		regs.Blocks[i] = got
	}
	return nil
}

// words returns the registers of point p in regs (nil: its block was not
// read).
func (t *Template) words(p *Point, regs *Registers) []uint16 {
	if p.block >= len(regs.Blocks) || regs.Blocks[p.block] == nil {
		return nil
	}
	off := int(p.Address) - int(t.Blocks[p.block].Address)
	return regs.Blocks[p.block][off : off+p.Size()]
}

// Raw returns a numeric point's raw value (before scale), ok false when
// its block was not read, it holds one of the template's NotAvailable
// values for its type, or an f32 is not a finite number.
func (t *Template) Raw(p *Point, regs *Registers) (float64, bool) {
	w := t.words(p, regs)
	if w == nil || !p.Numeric() {
		return 0, false
	}
	switch p.Type {
	case U16:
		return float64(w[0]), !slices.Contains(t.NotAvailable[U16], uint32(w[0]))
	case S16:
		return float64(int16(w[0])), !slices.Contains(t.NotAvailable[S16], uint32(w[0]))
	}
	hi, lo := w[0], w[1]
	if p.LowFirst {
		hi, lo = lo, hi
	}
	u := uint32(hi)<<16 | uint32(lo)
	if slices.Contains(t.NotAvailable[p.Type], u) {
		return 0, false
	}
	switch p.Type {
	case U32:
		return float64(u), true
	case S32:
		return float64(int32(u)), true
	}
	f := float64(math.Float32frombits(u))
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}

// scale returns the factor of point p: its scale, or ten to the power of
// its scale register.
func (t *Template) scale(p *Point, regs *Registers) (float64, bool) {
	if !p.HasScaleRegister {
		return p.Scale, true
	}
	bi := t.locate(p.ScaleRegister, 1, p.Function)
	if bi < 0 || bi >= len(regs.Blocks) || regs.Blocks[bi] == nil {
		return 0, false
	}
	sf := int16(regs.Blocks[bi][p.ScaleRegister-t.Blocks[bi].Address])
	if sf < -10 || sf > 10 {
		return 0, false // SunSpec's not-implemented 0x8000 and nonsense
	}
	return math.Pow10(int(sf)), true
}

// Value returns a numeric point's value in its base unit with the
// template's sign (scale, unit factor and negate applied).
func (t *Template) Value(p *Point, regs *Registers) (float64, bool) {
	raw, ok := t.Raw(p, regs)
	if !ok {
		return 0, false
	}
	s, ok := t.scale(p, regs)
	if !ok {
		return 0, false
	}
	v := raw * s * p.UnitFactor
	if p.Negate {
		v = -v
	}
	return v, true
}

// Text returns a str point's text: ASCII/UTF-8, two bytes per register,
// high byte first, trailing NULs and spaces removed.
func (t *Template) Text(p *Point, regs *Registers) (string, bool) {
	w := t.words(p, regs)
	if w == nil || p.Numeric() {
		return "", false
	}
	b := make([]byte, 0, 2*len(w))
	for _, x := range w {
		b = append(b, byte(x>>8), byte(x))
	}
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(string(b)), true
}

// ErrNotIdentified is the class of an identification mismatch: the
// device answers, but is not what the template describes.
var ErrNotIdentified = errors.New("device does not match its template")

// Check tests the identification conditions against regs (read with all
// set) and returns the first that fails, wrapped in ErrNotIdentified.
func (t *Template) Check(regs *Registers) error {
	for _, c := range t.Identify {
		p := &t.Points[c.point]
		if !p.Numeric() {
			s, _ := t.Text(p, regs)
			if !strings.HasPrefix(s, c.Prefix) {
				return fmt.Errorf("%w: template %s: %s is %q, want it to start with %q", ErrNotIdentified, t.Name, p.Name, s, c.Prefix)
			}
			continue
		}
		v, ok := t.Value(p, regs)
		if !ok {
			return fmt.Errorf("%w: template %s: %s is not a number", ErrNotIdentified, t.Name, p.Name)
		}
		switch {
		case c.Equals != nil && v != *c.Equals:
			return fmt.Errorf("%w: template %s: %s is %v, want %v", ErrNotIdentified, t.Name, p.Name, v, *c.Equals)
		case c.OneOf != nil && !containsFloat(c.OneOf, v):
			return fmt.Errorf("%w: template %s: %s is %v, want one of %v", ErrNotIdentified, t.Name, p.Name, v, c.OneOf)
		case c.Range != nil && (v < c.Range[0] || v > c.Range[1]):
			return fmt.Errorf("%w: template %s: %s is %v, want %v..%v", ErrNotIdentified, t.Name, p.Name, v, c.Range[0], c.Range[1])
		}
	}
	return nil
}

func containsFloat(s []float64, v float64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Plate is what a template device's nameplate points give, with the
// template's vendor and model where the device gives none.
type Plate struct {
	Manufacturer, Model, Serial, Version string
	RatedPowerW                          float64
}

// Plate reads the nameplate points of regs (read with all set).
func (t *Template) Plate(regs *Registers) Plate {
	pl := Plate{Manufacturer: t.Vendor, Model: t.Model}
	for i := range t.Points {
		p := &t.Points[i]
		switch p.Nameplate {
		case PlateRatedPowerW:
			if v, ok := t.Value(p, regs); ok {
				pl.RatedPowerW = v
			}
		case PlateManufacturer, PlateModel, PlateSerial, PlateVersion:
			s, ok := t.Text(p, regs)
			if !ok || s == "" {
				continue
			}
			switch p.Nameplate {
			case PlateManufacturer:
				pl.Manufacturer = s
			case PlateModel:
				pl.Model = s
			case PlateSerial:
				pl.Serial = s
			case PlateVersion:
				pl.Version = s
			}
		}
	}
	return pl
}

// Encode writes v (in the point's base unit, with the template's sign) into
// the point's registers w and returns the value a decoder will read back:
// v quantized to the point's type and scale. It is the simulator's half of
// Value; the scale register, if any, must hold 0 (factor 1).
func (p *Point) Encode(v float64, w []uint16) float64 {
	x := v
	if p.Negate {
		x = -x
	}
	x /= p.UnitFactor
	if !p.HasScaleRegister {
		x /= p.Scale
	}
	var back float64
	switch p.Type {
	case U16:
		r := clampRound(x, 0, math.MaxUint16)
		w[0], back = uint16(r), r
	case S16:
		r := clampRound(x, math.MinInt16, math.MaxInt16)
		w[0], back = uint16(int16(r)), r
	case U32, S32, F32:
		var u uint32
		switch p.Type {
		case U32:
			r := clampRound(x, 0, math.MaxUint32)
			u, back = uint32(r), r
		case S32:
			r := clampRound(x, math.MinInt32, math.MaxInt32)
			u, back = uint32(int32(r)), r
		default:
			f := float32(x)
			u, back = math.Float32bits(f), float64(f)
		}
		hi, lo := uint16(u>>16), uint16(u)
		if p.LowFirst {
			hi, lo = lo, hi
		}
		w[0], w[1] = hi, lo
	default:
		return 0
	}
	if !p.HasScaleRegister {
		back *= p.Scale
	}
	back *= p.UnitFactor
	if p.Negate {
		back = -back
	}
	return back
}

func clampRound(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, math.Round(x))) }

// EncodeText writes s into a str point's registers w (padded with NULs).
func (p *Point) EncodeText(s string, w []uint16) {
	b := []byte(s)
	for i := range w {
		var hi, lo byte
		if 2*i < len(b) {
			hi = b[2*i]
		}
		if 2*i+1 < len(b) {
			lo = b[2*i+1]
		}
		w[i] = uint16(hi)<<8 | uint16(lo)
	}
}

// Example returns a value that satisfies the identification check on a
// numeric point (ok false: the point has none), for simulators.
func (t *Template) Example(name string) (v float64, prefix string, ok bool) {
	for _, c := range t.Identify {
		if c.Point != name {
			continue
		}
		switch {
		case c.Equals != nil:
			return *c.Equals, "", true
		case c.OneOf != nil:
			return c.OneOf[0], "", true
		case c.Range != nil:
			return (c.Range[0] + c.Range[1]) / 2, "", true
		default:
			return 0, c.Prefix, true
		}
	}
	return 0, "", false
}
