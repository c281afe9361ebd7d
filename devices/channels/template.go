package channels

import (
	"fmt"
	"math"

	"plantd/devices/template"
	"plantd/plant"
)

// This file maps the points of device templates (plantd/devices/template:
// non-SunSpec devices described as data) to channels, as mapping.go maps
// SunSpec points. The template states each point's channel by name and
// gives its value in the channel's base unit and sign; this package checks the
// names and units once (CompileTemplate) and turns a poll's registers
// into plant.Readings, which plant.Live.Apply checks and stores like SunSpec
// values.

// TemplateMap is a template compiled against the channel table: which
// channels each point feeds. It is immutable and safe for concurrent use.
type TemplateMap struct {
	t     *template.Template
	rules []templateRule
}

// templateRule is the channels one point feeds: its value (channel, at
// index), its positive part and its negated negative part.
type templateRule struct {
	point                       int
	channel, positive, negative plant.Channel
	index                       int
}

// CompileTemplate checks that every channel a template names exists,
// that the point's unit is the channel's, that an indexed channel gets an
// index and a plain one none, and that no channel (and input) is fed
// twice. Errors are template.ErrTemplate and name the file and line.
func CompileTemplate(t *template.Template) (*TemplateMap, error) {
	m := &TemplateMap{t: t}
	type key struct {
		c     plant.Channel
		index int
	}
	fed := map[key]string{}
	for i := range t.Points {
		p := &t.Points[i]
		fail := func(format string, a ...any) error {
			return fmt.Errorf("%w: %s:%d: point %s: %s", template.ErrTemplate, t.File, p.Line, p.Name, fmt.Sprintf(format, a...))
		}
		r := templateRule{point: i, index: p.Index}
		for _, f := range []struct {
			name  string
			dst   *plant.Channel
			plain bool
		}{{p.Channel, &r.channel, false}, {p.Positive, &r.positive, true}, {p.Negative, &r.negative, true}} {
			if f.name == "" {
				continue
			}
			c, ok := plant.ChannelByName(f.name)
			if !ok {
				return nil, fail("unknown channel %q", f.name)
			}
			if string(c.Unit()) != p.BaseUnit {
				return nil, fail("channel %s is in %q, the point in %q", f.name, c.Unit(), p.Unit)
			}
			idx := 0
			switch {
			case c.Indexed() && f.plain:
				return nil, fail("positive and negative feed plain channels, not %s", f.name)
			case c.Indexed() && p.Index < 1:
				return nil, fail("channel %s is per input: give index 1, 2, ...", f.name)
			case !c.Indexed() && p.Index != 0 && !f.plain:
				return nil, fail("channel %s has no inputs: no index", f.name)
			case c.Indexed():
				idx = p.Index
			}
			k := key{c, idx}
			if other, dup := fed[k]; dup {
				return nil, fail("channel %s is fed by point %s already", f.name, other)
			}
			fed[k] = p.Name
			*f.dst = c
		}
		if r.channel != 0 || r.positive != 0 || r.negative != 0 {
			m.rules = append(m.rules, r)
		}
	}
	return m, nil
}

// Template returns the compiled template.
func (m *TemplateMap) Template() *template.Template { return m.t }

// Channels returns the channels the template feeds, in point order.
func (m *TemplateMap) Channels() []plant.Channel {
	var out []plant.Channel
	for _, r := range m.rules {
		for _, c := range []plant.Channel{r.channel, r.positive, r.negative} {
			if c != 0 {
				out = append(out, c)
			}
		}
	}
	return out
}

// Readings appends to dst[:0] the channel values of one poll's registers
// and returns it, never nil: a point whose block was not read or whose
// value is not a number gives nothing.
func (m *TemplateMap) Readings(regs *template.Registers, dst []plant.Reading) []plant.Reading {
	if dst == nil {
		dst = make([]plant.Reading, 0, 2*len(m.rules))
	}
	dst = dst[:0]
	for _, r := range m.rules {
		v, ok := m.t.Value(&m.t.Points[r.point], regs)
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if r.channel != 0 {
			idx := 0
			if r.channel.Indexed() {
				idx = r.index
			}
			dst = append(dst, plant.Reading{Channel: r.channel, Index: idx, Value: v})
		}
		if r.positive != 0 {
			dst = append(dst, plant.Reading{Channel: r.positive, Value: math.Max(0, v)})
		}
		if r.negative != 0 {
			dst = append(dst, plant.Reading{Channel: r.negative, Value: math.Max(0, -v)})
		}
	}
	return dst
}

// templateChannels returns the channels an embedded template feeds (nil:
// no such template).
func templateChannels(name string) []plant.Channel {
	t, ok := template.Lookup(name)
	if !ok {
		return nil
	}
	m, err := CompileTemplate(t)
	if err != nil {
		return nil // TestTemplatesCompile keeps it from happening
	}
	return m.Channels()
}
