package sunspec

import "strconv"

// PointType is the SunSpec type of a point; it decides the register count and
// the not-implemented value.
type PointType uint8

// The SunSpec point types.
const (
	TypeUint16 PointType = iota + 1
	TypeInt16
	TypeSunssf
	TypeAcc16
	TypeCount
	TypeEnum16
	TypeBitfield16
	TypePad
	TypeUint32
	TypeInt32
	TypeAcc32
	TypeEnum32
	TypeBitfield32
	TypeFloat32
	TypeIPAddr
	TypeInt64
	TypeUint64
	TypeAcc64
	TypeFloat64
	TypeEUI48
	TypeIPv6Addr
	TypeString
)

var typeNames = [...]string{
	TypeUint16: "uint16", TypeInt16: "int16", TypeSunssf: "sunssf", TypeAcc16: "acc16", TypeCount: "count",
	TypeEnum16: "enum16", TypeBitfield16: "bitfield16", TypePad: "pad", TypeUint32: "uint32", TypeInt32: "int32",
	TypeAcc32: "acc32", TypeEnum32: "enum32", TypeBitfield32: "bitfield32", TypeFloat32: "float32",
	TypeIPAddr: "ipaddr", TypeInt64: "int64", TypeUint64: "uint64", TypeAcc64: "acc64", TypeFloat64: "float64",
	TypeEUI48: "eui48", TypeIPv6Addr: "ipv6addr", TypeString: "string",
}

// String returns the SunSpec name of the type ("uint16", "acc32", ...).
func (t PointType) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return "PointType(" + strconv.Itoa(int(t)) + ")"
}

// ParsePointType maps a SunSpec type name to its PointType.
func ParsePointType(s string) (PointType, bool) {
	for i, n := range typeNames {
		if n == s && n != "" {
			return PointType(i), true
		}
	}
	return 0, false
}

// Signed reports whether the type holds a two's-complement integer.
func (t PointType) Signed() bool {
	return t == TypeInt16 || t == TypeSunssf || t == TypeInt32 || t == TypeInt64
}

// Float reports whether the type is an IEEE 754 float.
func (t PointType) Float() bool { return t == TypeFloat32 || t == TypeFloat64 }

// Accumulator reports whether the type is an accumulator (0 = not implemented).
func (t PointType) Accumulator() bool { return t == TypeAcc16 || t == TypeAcc32 || t == TypeAcc64 }

// Numeric reports whether the type decodes to a number (all but strings,
// addresses and padding).
func (t PointType) Numeric() bool {
	switch t {
	case TypePad, TypeString, TypeIPAddr, TypeIPv6Addr, TypeEUI48:
		return false
	}
	return true
}

// NoScale marks a point without a scale factor.
const NoScale = -1

// Symbol is one value of an enum or one bit of a bitfield.
type Symbol struct {
	Name  string
	Value int64
}

// Point is one SunSpec point of a group.
type Point struct {
	Name   string
	Label  string
	Type   PointType
	Size   uint16 // registers
	Offset uint16 // registers from the start of its group
	Units  string

	// SF is the index of the point's scale-factor point in the group SFUp
	// levels above this point's group (0 = same group), or NoScale.
	SF   int16
	SFUp uint8
	// SFConst is a fixed scale factor given in the definition instead of a
	// point name (model 303, 308); it applies when HasSFConst.
	SFConst    int8
	HasSFConst bool

	Writable  bool // access RW
	Mandatory bool
	Static    bool
	// Fixed is the value a point must hold (the ID point), or -1.
	Fixed   int64
	Symbols []Symbol
}

// Scaled reports whether the point is an integer mantissa with a scale factor.
func (p *Point) Scaled() bool { return p.SF != NoScale || p.HasSFConst }

// Group is a SunSpec group: points, then sub-groups. A model's top group
// holds ID and L as its first two points.
type Group struct {
	Name   string
	Points []Point
	Groups []Group
	// Repeat says how often the group occurs in its parent: RepeatOnce,
	// RepeatFill (legacy count 0: as many as the model length holds), or
	// RepeatByPoint (the value of CountPoint, found in an enclosing group).
	Repeat     Repeat
	CountPoint string
	// CountIndex and CountUp locate CountPoint: its index in the group
	// CountUp levels above this group's parent (0 = the parent itself).
	CountIndex int16
	CountUp    uint8
	// FixedLen is the register count of the points (not sub-groups).
	FixedLen uint16
}

// MaxRepeats bounds the occurrences of a repeating group plantd reads:
// more than any real device has (MPPT inputs, curve points, ports), few
// enough that a hostile length cannot make a poll read the whole address
// space.
const MaxRepeats = 100

// MaxLen returns the longest length L (registers after ID and L) plantd
// reads of the model: its definition's for a fixed model; for one with
// repeating groups, MaxRepeats occurrences of each (at most 65535).
func (m *Model) MaxLen() int {
	return min(maxGroupLen(&m.Group)-2, 0xFFFF)
}

func maxGroupLen(g *Group) int {
	n := int(g.FixedLen)
	for i := range g.Groups {
		sg := &g.Groups[i]
		l := maxGroupLen(sg)
		if sg.Repeat != RepeatOnce {
			l *= MaxRepeats
		}
		n += l
		if n > 0x10001 {
			return 0x10001
		}
	}
	return n
}

// Repeat says how a group repeats inside its parent.
type Repeat uint8

// The repeat kinds of a group.
const (
	RepeatOnce Repeat = iota
	RepeatFill
	RepeatByPoint
)

// Model is one SunSpec information model definition.
type Model struct {
	ID    uint16
	Name  string
	Label string
	Group Group
}

// PointIndex returns the index of the named point in the model's top group,
// or -1.
func (m *Model) PointIndex(name string) int { return m.Group.PointIndex(name) }

// PointIndex returns the index of the named point in the group, or -1.
func (g *Group) PointIndex(name string) int {
	for i := range g.Points {
		if g.Points[i].Name == name {
			return i
		}
	}
	return -1
}

// Point returns the named point of the model's top group, or nil.
func (m *Model) Point(name string) *Point {
	if i := m.Group.PointIndex(name); i >= 0 {
		return &m.Group.Points[i]
	}
	return nil
}

// ModelByID returns the definition of a SunSpec model, or nil when plantd
// does not know it.
func ModelByID(id uint16) *Model {
	modelTable := models()
	lo, hi := 0, len(modelTable)
	for lo < hi {
		mid := (lo + hi) / 2
		switch {
		case modelTable[mid].ID == id:
			return modelTable[mid]
		case modelTable[mid].ID < id:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return nil
}

// Models returns all known model definitions ordered by id.
func Models() []*Model { return append([]*Model(nil), models()...) }
