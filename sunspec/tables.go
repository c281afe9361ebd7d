package sunspec

import (
	"strconv"
	"strings"
	"sync"
)

// The model definitions are generated as text (modelData in
// models_gen.go, written by internal/sunspecgen) and decoded into Model
// values once, at the first lookup: as Go composite literals they took
// 224 KB of the binary's data, as text with its strings shared they take
// about a third of that. The decoded strings are slices of modelData.

var (
	tablesOnce sync.Once
	modelTable []*Model
)

// models returns the decoded definitions, ordered by id.
func models() []*Model {
	tablesOnce.Do(func() { modelTable = decodeModels(modelData) })
	return modelTable
}

// records reads modelData: records of tab-separated fields, one a line.
// A malformed table panics: it is generated, and the package's tests
// decode it.
type records struct {
	data   string
	fields []string
}

// next reads the next record, which must be of kind k.
func (r *records) next(k string) {
	line, rest, ok := strings.Cut(r.data, "\n")
	if !ok {
		panic("sunspec: model table: record " + k + " missing")
	}
	r.data = rest
	r.fields = strings.Split(line, "\t")
	if r.fields[0] != k {
		panic("sunspec: model table: record " + r.fields[0] + ", want " + k)
	}
}

func (r *records) str(i int) string { return r.fields[i] }

func (r *records) int(i int) int64 {
	n, err := strconv.ParseInt(r.fields[i], 10, 64)
	if err != nil {
		panic("sunspec: model table: " + err.Error())
	}
	return n
}

func decodeModels(data string) []*Model {
	r := &records{data: data}
	var out []*Model
	for r.data != "" {
		r.next("M")
		m := &Model{ID: uint16(r.int(1)), Name: r.str(2), Label: r.str(3)}
		decodeGroup(r, &m.Group)
		out = append(out, m)
	}
	return out
}

// decodeGroup reads a group's record, then its points' and sub-groups'
// (the generator's writeGroup says their fields).
func decodeGroup(r *records, g *Group) {
	r.next("G")
	g.Name, g.Repeat, g.CountPoint = r.str(1), Repeat(r.int(2)), r.str(3)
	g.CountIndex, g.CountUp, g.FixedLen = int16(r.int(4)), uint8(r.int(5)), uint16(r.int(6))
	np, ng := r.int(7), r.int(8)
	g.Points = make([]Point, np)
	for i := range g.Points {
		r.next("P")
		p := &g.Points[i]
		t, ok := ParsePointType(r.str(3))
		if !ok {
			panic("sunspec: model table: point type " + r.str(3))
		}
		p.Name, p.Label, p.Type, p.Size, p.Offset, p.Units = r.str(1), r.str(2), t, uint16(r.int(4)), uint16(r.int(5)), r.str(6)
		p.SF, p.SFUp, p.SFConst, p.HasSFConst = int16(r.int(7)), uint8(r.int(8)), int8(r.int(9)), r.int(10) == 1
		flags := r.str(11)
		p.Writable, p.Mandatory, p.Static = strings.Contains(flags, "W"), strings.Contains(flags, "M"), strings.Contains(flags, "S")
		p.Fixed = r.int(12)
		if n := int(r.int(13)); n > 0 {
			p.Symbols = make([]Symbol, n)
			for j := range p.Symbols {
				p.Symbols[j] = Symbol{Name: r.str(14 + 2*j), Value: r.int(15 + 2*j)}
			}
		}
	}
	if ng > 0 {
		g.Groups = make([]Group, ng)
		for i := range g.Groups {
			decodeGroup(r, &g.Groups[i])
		}
	}
}
