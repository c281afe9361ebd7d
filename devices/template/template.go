package template

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"plantd/plant/kind"
)

// Template is one device family's register map.
type Template struct {
	Name   string
	Vendor string
	Model  string
	Kind   kind.Kind
	Source Source
	// File is where the template was read from ("sdm630.yaml").
	File     string
	Blocks   []Block
	Identify []Check
	Points   []Point
	// NotAvailable are the raw values (the register bits, 32-bit types
	// with their words in order) that the vendor's map says a device
	// answers for a value it does not have, per type: such a value is
	// absent, never a number.
	NotAvailable map[Type][]uint32
}

// Source is the vendor document a template is written from.
type Source struct {
	Document string `yaml:"document"`
	Version  string `yaml:"version"`
	URL      string `yaml:"url"`
	Note     string `yaml:"note"`
}

// Block is one read request.
type Block struct {
	// Function is 3 (holding registers) or 4 (input registers).
	Function byte
	Address  uint16
	Count    uint16
	// Once blocks are read at identification only (nameplate, model).
	Once bool
	Line int
}

// Check is one identification condition on a point.
type Check struct {
	Point  string
	Equals *float64
	OneOf  []float64
	Range  []float64 // [lo, hi]
	Prefix string
	Line   int
	point  int // index in Points
}

// Type is a point's register type.
type Type string

// The point types.
const (
	U16 Type = "u16"
	S16 Type = "s16"
	U32 Type = "u32"
	S32 Type = "s32"
	F32 Type = "f32"
	Str Type = "str"
)

// Words returns the registers a numeric type occupies (0 for Str).
func (t Type) Words() int {
	switch t {
	case U16, S16:
		return 1
	case U32, S32, F32:
		return 2
	}
	return 0
}

// Point is one value of the map.
type Point struct {
	Name     string
	Address  uint16
	Function byte
	Type     Type
	// Length is the registers of a Str point.
	Length int
	// LowFirst: the low word of a 32-bit value comes first.
	LowFirst bool
	Scale    float64
	// ScaleRegister, when HasScaleRegister, holds an s16 power of ten.
	ScaleRegister    uint16
	HasScaleRegister bool
	Negate           bool
	// Unit is the unit as the vendor gives it; BaseUnit and UnitFactor
	// turn it into the unit of plant's channels (kW: W, 1000).
	Unit       string
	BaseUnit   string
	UnitFactor float64
	Channel    string
	Index      int
	Positive   string
	Negative   string
	Nameplate  string
	Line       int
	block      int // index in Blocks
}

// Size returns the registers the point occupies.
func (p *Point) Size() int {
	if p.Type == Str {
		return p.Length
	}
	return p.Type.Words()
}

// Numeric reports whether the point holds a number.
func (p *Point) Numeric() bool { return p.Type != Str }

// Nameplate fields a point may give.
const (
	PlateManufacturer = "manufacturer"
	PlateModel        = "model"
	PlateSerial       = "serial"
	PlateVersion      = "version"
	PlateRatedPowerW  = "ratedPowerW"
)

// units maps a vendor's unit to plant's base unit and the factor.
var units = map[string]struct {
	base   string
	factor float64
}{
	"W": {"W", 1}, "kW": {"W", 1000},
	"var": {"var", 1}, "kvar": {"var", 1000},
	"VA": {"VA", 1}, "kVA": {"VA", 1000},
	"Wh": {"Wh", 1}, "kWh": {"Wh", 1000}, "MWh": {"Wh", 1e6},
	"V": {"V", 1}, "A": {"A", 1}, "Hz": {"Hz", 1}, "%": {"%", 1}, "°C": {"°C", 1},
	"Ω": {"Ω", 1}, "kΩ": {"Ω", 1e3}, "MΩ": {"Ω", 1e6},
	"": {"", 1},
}

// yaml shapes, decoded strictly.
type fileYAML struct {
	Name     string      `yaml:"name"`
	Vendor   string      `yaml:"vendor"`
	Model    string      `yaml:"model"`
	Kind     string      `yaml:"kind"`
	Source   Source      `yaml:"source"`
	Blocks   []blockYAML `yaml:"blocks"`
	Identify []checkYAML `yaml:"identify"`
	Points   []pointYAML `yaml:"points"`
	// NotAvailable: type (u16 s16 u32 s32) to raw values.
	NotAvailable map[string][]uint64 `yaml:"notAvailable"`
}

type blockYAML struct {
	Function int  `yaml:"function"`
	Address  int  `yaml:"address"`
	Count    int  `yaml:"count"`
	Once     bool `yaml:"once"`
}

type checkYAML struct {
	Point  string    `yaml:"point"`
	Equals *float64  `yaml:"equals"`
	OneOf  []float64 `yaml:"oneOf"`
	Range  []float64 `yaml:"range"`
	Prefix string    `yaml:"prefix"`
}

type pointYAML struct {
	Name          string   `yaml:"name"`
	Address       *int     `yaml:"address"`
	Function      int      `yaml:"function"`
	Type          string   `yaml:"type"`
	Length        int      `yaml:"length"`
	Order         string   `yaml:"order"`
	Scale         *float64 `yaml:"scale"`
	ScaleRegister *int     `yaml:"scaleRegister"`
	Negate        bool     `yaml:"negate"`
	Unit          *string  `yaml:"unit"`
	Channel       string   `yaml:"channel"`
	Index         int      `yaml:"index"`
	Positive      string   `yaml:"positive"`
	Negative      string   `yaml:"negative"`
	Nameplate     string   `yaml:"nameplate"`
}

// ErrTemplate is the class of every Parse error.
var ErrTemplate = errors.New("invalid device template")

// maxBlock is the most registers one read may ask for (Modbus).
const maxBlock = 125

// Parse reads one template from data; file names it in errors
// ("sdm630.yaml:12: ...").
func Parse(file string, data []byte) (*Template, error) {
	ps := &parser{file: file}
	var f fileYAML
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ps.fail(0, "empty")
		}
		return nil, ps.fail(0, "%v", err)
	}
	// A second pass over the node tree gives each entry its line.
	if err := yaml.Unmarshal(data, &ps.root); err != nil {
		return nil, ps.fail(0, "%v", err)
	}
	t := &Template{Name: f.Name, Vendor: f.Vendor, Model: f.Model, Kind: kind.Kind(f.Kind), Source: f.Source, File: file}
	switch {
	case f.Name == "":
		return nil, ps.fail(1, "name: required")
	case f.Vendor == "":
		return nil, ps.fail(1, "vendor: required")
	case f.Source.Document == "":
		return nil, ps.fail(1, "source.document: required (the vendor's register map this template is written from)")
	}
	switch t.Kind {
	case kind.Meter, kind.Inverter, kind.Battery:
	default:
		return nil, ps.fail(1, "kind %q: want meter, inverter or battery", f.Kind)
	}
	if err := ps.notAvailable(t, f.NotAvailable); err != nil {
		return nil, err
	}
	if err := ps.blocks(t, f.Blocks); err != nil {
		return nil, err
	}
	names, err := ps.points(t, f.Points)
	if err != nil {
		return nil, err
	}
	if err := ps.identify(t, f.Identify, names); err != nil {
		return nil, err
	}
	return t, nil
}

// parser is one Parse: the file's name and node tree, for the errors'
// positions.
type parser struct {
	file string
	root yaml.Node
}

// fail is a Parse error at a line of the file (0: the file as a whole).
func (ps *parser) fail(line int, format string, a ...any) error {
	where := ps.file
	if line > 0 {
		where = fmt.Sprintf("%s:%d", ps.file, line)
	}
	return fmt.Errorf("%w: %s: %s", ErrTemplate, where, fmt.Sprintf(format, a...))
}

// line returns the line of the i-th entry of the top-level list key (0
// when not known).
func (ps *parser) line(key string, i int) int {
	if len(ps.root.Content) == 0 {
		return 0
	}
	m := ps.root.Content[0]
	for k := 0; k+1 < len(m.Content); k += 2 {
		if m.Content[k].Value == key && i < len(m.Content[k+1].Content) {
			return m.Content[k+1].Content[i].Line
		}
	}
	return 0
}

// notAvailable checks the not-available values and adds them to t.
func (ps *parser) notAvailable(t *Template, na map[string][]uint64) error {
	ln := 0
	if len(ps.root.Content) > 0 {
		m := ps.root.Content[0]
		for k := 0; k+1 < len(m.Content); k += 2 {
			if m.Content[k].Value == "notAvailable" {
				ln = m.Content[k].Line
			}
		}
	}
	for _, ty := range slices.Sorted(maps.Keys(na)) {
		typ := Type(ty)
		if typ != U16 && typ != S16 && typ != U32 && typ != S32 {
			return ps.fail(ln, "notAvailable.%s: want u16, s16, u32 or s32 (an f32 NaN is absent already)", ty)
		}
		limit := uint64(1)<<(16*typ.Words()) - 1
		for _, v := range na[ty] {
			if v > limit {
				return ps.fail(ln, "notAvailable.%s: %#x does not fit %d bits", ty, v, 16*typ.Words())
			}
			if t.NotAvailable == nil {
				t.NotAvailable = map[Type][]uint32{}
			}
			t.NotAvailable[typ] = append(t.NotAvailable[typ], uint32(v))
		}
	}
	return nil
}

// blocks checks the reads and adds them to t.
func (ps *parser) blocks(t *Template, bs []blockYAML) error {
	if len(bs) == 0 {
		return ps.fail(1, "blocks: at least one read is required")
	}
	for i, b := range bs {
		ln := ps.line("blocks", i)
		if b.Function != 3 && b.Function != 4 {
			return ps.fail(ln, "blocks[%d].function %d: want 3 (holding) or 4 (input registers)", i, b.Function)
		}
		if b.Count < 1 || b.Count > maxBlock {
			return ps.fail(ln, "blocks[%d].count %d: want 1..%d", i, b.Count, maxBlock)
		}
		if b.Address < 0 || b.Address+b.Count > 0x10000 {
			return ps.fail(ln, "blocks[%d]: registers %d+%d outside 0..65535", i, b.Address, b.Count)
		}
		nb := Block{Function: byte(b.Function), Address: uint16(b.Address), Count: uint16(b.Count), Once: b.Once, Line: ln}
		for j, o := range t.Blocks {
			if o.Function == nb.Function && int(o.Address) < b.Address+b.Count && b.Address < int(o.Address)+int(o.Count) {
				return ps.fail(ln, "blocks[%d] overlaps blocks[%d]", i, j)
			}
		}
		t.Blocks = append(t.Blocks, nb)
	}
	return nil
}

// points checks the points and adds them to t; it returns their indexes
// by name.
func (ps *parser) points(t *Template, ys []pointYAML) (map[string]int, error) {
	names := map[string]int{}
	for i, y := range ys {
		ln := ps.line("points", i)
		p, err := t.point(y)
		if err != nil {
			return nil, ps.fail(ln, "points[%d] %s: %v", i, y.Name, err)
		}
		p.Line = ln
		if _, dup := names[p.Name]; dup {
			return nil, ps.fail(ln, "points[%d]: name %q used twice", i, p.Name)
		}
		names[p.Name] = len(t.Points)
		for _, o := range t.Points {
			if o.Function == p.Function && int(o.Address) < int(p.Address)+p.Size() && int(p.Address) < int(o.Address)+o.Size() {
				return nil, ps.fail(ln, "points[%d] %s: registers %d+%d overlap point %s (line %d)", i, p.Name, p.Address, p.Size(), o.Name, o.Line)
			}
		}
		t.Points = append(t.Points, p)
	}
	if len(t.Points) == 0 {
		return nil, ps.fail(1, "points: at least one is required")
	}
	for i := range t.Points {
		p := &t.Points[i]
		if p.HasScaleRegister && t.locate(p.ScaleRegister, 1, p.Function) < 0 {
			return nil, ps.fail(p.Line, "point %s: scaleRegister %d is in no block of function %d", p.Name, p.ScaleRegister, p.Function)
		}
		if p.HasScaleRegister && !t.Blocks[p.block].Once && t.Blocks[t.locate(p.ScaleRegister, 1, p.Function)].Once {
			return nil, ps.fail(p.Line, "point %s: scaleRegister %d is read at identification only, the point every poll", p.Name, p.ScaleRegister)
		}
	}
	return names, nil
}

// identify checks the identification checks and adds them to t.
func (ps *parser) identify(t *Template, cs []checkYAML, names map[string]int) error {
	for i, c := range cs {
		ln := ps.line("identify", i)
		pi, ok := names[c.Point]
		if !ok {
			return ps.fail(ln, "identify[%d]: unknown point %q", i, c.Point)
		}
		p := &t.Points[pi]
		n := 0
		if c.Equals != nil {
			n++
		}
		if c.OneOf != nil {
			n++
		}
		if c.Range != nil {
			n++
			if len(c.Range) != 2 || c.Range[0] > c.Range[1] {
				return ps.fail(ln, "identify[%d].range: want [lo, hi]", i)
			}
		}
		if c.Prefix != "" {
			n++
			if p.Numeric() {
				return ps.fail(ln, "identify[%d].prefix: point %s is a number, not text", i, c.Point)
			}
		} else if !p.Numeric() {
			return ps.fail(ln, "identify[%d]: point %s is text: give prefix", i, c.Point)
		}
		if n != 1 {
			return ps.fail(ln, "identify[%d]: give exactly one of equals, oneOf, range, prefix", i)
		}
		t.Identify = append(t.Identify, Check{Point: c.Point, Equals: c.Equals, OneOf: c.OneOf, Range: c.Range, Prefix: c.Prefix, Line: ln, point: pi})
	}
	return nil
}

// point checks and converts one point.
func (t *Template) point(y pointYAML) (Point, error) {
	p := Point{Name: y.Name, Type: Type(y.Type), Length: y.Length, Negate: y.Negate, Channel: y.Channel,
		Index: y.Index, Positive: y.Positive, Negative: y.Negative, Nameplate: y.Nameplate, Scale: 1}
	if p.Name == "" {
		return p, errors.New("name: required")
	}
	if y.Address == nil || *y.Address < 0 || *y.Address > 0xFFFF {
		return p, errors.New("address: required, 0..65535")
	}
	p.Address = uint16(*y.Address)
	switch p.Type {
	case U16, S16, U32, S32, F32:
		if p.Length != 0 {
			return p, fmt.Errorf("length: only for type str")
		}
	case Str:
		if p.Length < 1 || p.Length > maxBlock {
			return p, fmt.Errorf("length %d: a str point needs 1..%d registers", p.Length, maxBlock)
		}
	default:
		return p, fmt.Errorf("type %q: want u16, s16, u32, s32, f32 or str", y.Type)
	}
	switch y.Order {
	case "", "high-first":
	case "low-first":
		if p.Type.Words() != 2 {
			return p, fmt.Errorf("order low-first: only for 32-bit types, not %s", p.Type)
		}
		p.LowFirst = true
	default:
		return p, fmt.Errorf("order %q: want high-first or low-first", y.Order)
	}
	if y.Scale != nil {
		if *y.Scale == 0 || math.IsNaN(*y.Scale) || math.IsInf(*y.Scale, 0) {
			return p, fmt.Errorf("scale %v: want a finite non-zero factor", *y.Scale)
		}
		p.Scale = *y.Scale
	}
	if y.ScaleRegister != nil {
		if y.Scale != nil {
			return p, errors.New("give scale or scaleRegister, not both")
		}
		if *y.ScaleRegister < 0 || *y.ScaleRegister > 0xFFFF {
			return p, fmt.Errorf("scaleRegister %d outside 0..65535", *y.ScaleRegister)
		}
		p.ScaleRegister, p.HasScaleRegister = uint16(*y.ScaleRegister), true
	}
	if y.Unit != nil {
		p.Unit = *y.Unit
	}
	u, ok := units[p.Unit]
	if !ok {
		return p, fmt.Errorf("unit %q: not one plantd knows (W kW var kvar VA kVA Wh kWh MWh V A Hz %% °C Ω kΩ MΩ, or empty)", p.Unit)
	}
	p.BaseUnit, p.UnitFactor = u.base, u.factor
	feeds := p.Channel != "" || p.Positive != "" || p.Negative != ""
	switch {
	case p.Type == Str && (feeds || y.Scale != nil || y.ScaleRegister != nil || y.Unit != nil || p.Negate):
		return p, errors.New("a str point feeds no channel and has no scale or unit")
	case p.Nameplate != "" && feeds:
		return p, errors.New("a nameplate point feeds no channel")
	case p.Index < 0:
		return p, fmt.Errorf("index %d: want 1, 2, ... or none", p.Index)
	case p.Index > 0 && p.Channel == "":
		return p, errors.New("index needs a channel")
	}
	switch p.Nameplate {
	case "", PlateManufacturer, PlateModel, PlateSerial, PlateVersion:
		if p.Nameplate != "" && p.Type != Str {
			return p, fmt.Errorf("nameplate %s: needs a str point", p.Nameplate)
		}
	case PlateRatedPowerW:
		if p.Type == Str || p.BaseUnit != "W" {
			return p, fmt.Errorf("nameplate %s: needs a number in W or kW", p.Nameplate)
		}
	default:
		return p, fmt.Errorf("nameplate %q: want manufacturer, model, serial, version or ratedPowerW", p.Nameplate)
	}
	switch y.Function {
	case 0:
		found := -1
		for i, b := range t.Blocks {
			if b.contains(p.Address, p.Size()) {
				if found >= 0 && t.Blocks[found].Function != b.Function {
					return p, fmt.Errorf("registers %d+%d are in blocks of functions 3 and 4: give function", p.Address, p.Size())
				}
				found = i
			}
		}
		if found < 0 {
			return p, fmt.Errorf("registers %d+%d are in no block", p.Address, p.Size())
		}
		p.Function = t.Blocks[found].Function
	case 3, 4:
		p.Function = byte(y.Function)
	default:
		return p, fmt.Errorf("function %d: want 3 or 4", y.Function)
	}
	p.block = t.locate(p.Address, p.Size(), p.Function)
	if p.block < 0 {
		return p, fmt.Errorf("registers %d+%d are in no block of function %d", p.Address, p.Size(), p.Function)
	}
	return p, nil
}

func (b Block) contains(addr uint16, n int) bool {
	return addr >= b.Address && int(addr)+n <= int(b.Address)+int(b.Count)
}

// locate returns the block of function fn holding registers addr+n, or -1.
func (t *Template) locate(addr uint16, n int, fn byte) int {
	for i, b := range t.Blocks {
		if b.Function == fn && b.contains(addr, n) {
			return i
		}
	}
	return -1
}

// Point returns the point of the given name, or nil.
func (t *Template) Point(name string) *Point {
	for i := range t.Points {
		if t.Points[i].Name == name {
			return &t.Points[i]
		}
	}
	return nil
}

// BlockOf returns the index in Blocks of the block holding point i.
func (t *Template) BlockOf(i int) int { return t.Points[i].block }

// PollRequests is the number of reads of one poll (blocks not Once).
func (t *Template) PollRequests() int {
	n := 0
	for _, b := range t.Blocks {
		if !b.Once {
			n++
		}
	}
	return n
}

//go:embed *.yaml
var files embed.FS

// embedded is the parsed embedded set, built once.
var embedded = sync.OnceValues(func() ([]*Template, error) {
	entries, err := files.ReadDir(".")
	if err != nil {
		return nil, err
	}
	var out []*Template
	for _, e := range entries {
		data, err := files.ReadFile(e.Name())
		if err != nil {
			return nil, err
		}
		t, err := Parse(e.Name(), data)
		if err != nil {
			return nil, err
		}
		if e.Name() != t.Name+".yaml" {
			return nil, fmt.Errorf("%w: %s: name %q: the file must be %s.yaml", ErrTemplate, e.Name(), t.Name, t.Name)
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Template) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
})

// All returns the embedded templates by name. An error is a broken
// embedded file (TestEmbedded keeps it from happening).
func All() ([]*Template, error) { return embedded() }

// Lookup returns the embedded template of the given name.
func Lookup(name string) (*Template, bool) {
	all, err := embedded()
	if err != nil {
		return nil, false
	}
	for _, t := range all {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

// Names lists the embedded templates' names, sorted.
func Names() []string {
	all, _ := embedded()
	out := make([]string, len(all))
	for i, t := range all {
		out[i] = t.Name
	}
	return out
}
