package sunspec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrReadBack is returned when a written point reads back with another value.
var ErrReadBack = errors.New("read-back differs")

// ErrNotWritable is returned for a write to a read-only point.
var ErrNotWritable = errors.New("point is read-only")

// PointValue is a value to write to a point of a model's top group, in the
// point's units.
type PointValue struct {
	Point string
	Value float64
}

// WritePoints writes values to points of one model with function 16 and
// reads them back. Scaled values are encoded with the scale factors the
// device reports now (read in the same request as the model's other
// points). Adjacent points go in one write, so a setpoint and its timers
// change together; a read-only point is never written. The returned
// instance is the model as read back.
func WritePoints(ctx context.Context, rw ReadWriter, ref ModelRef, values []PointValue) (*Instance, error) {
	m := ModelByID(ref.ID)
	if m == nil {
		return nil, fmt.Errorf("write model %d at %d: unknown model", ref.ID, ref.Addr)
	}
	type span struct{ off, size uint16 }
	var spans []span
	for _, pv := range values {
		p := m.Point(pv.Point)
		if p == nil {
			return nil, fmt.Errorf("write model %d: %w %q", ref.ID, ErrUnknownPoint, pv.Point)
		}
		if !p.Writable {
			return nil, fmt.Errorf("write model %d point %s: %w", ref.ID, pv.Point, ErrNotWritable)
		}
		spans = append(spans, span{p.Offset, p.Size})
	}
	before, err := readModel(ctx, rw, ref)
	if err != nil {
		return nil, err
	}
	want := &Instance{Model: before.Model, Addr: before.Addr, Regs: slices.Clone(before.Regs), Root: before.Root}
	for _, pv := range values {
		if err := want.Set(pv.Point, pv.Value); err != nil {
			return nil, fmt.Errorf("write model %d: %w", ref.ID, err)
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.off) - int(b.off) })
	// Join touching spans into one write each.
	for i := 0; i < len(spans); {
		j, end := i, spans[i].off+spans[i].size
		for j+1 < len(spans) && spans[j+1].off <= end {
			end = max(end, spans[j+1].off+spans[j+1].size)
			j++
		}
		off := spans[i].off
		if err := rw.WriteRegisters(ctx, ref.Addr+off, want.Regs[off:end]); err != nil {
			return nil, fmt.Errorf("write model %d registers %d+%d: %w", ref.ID, ref.Addr+off, end-off, err)
		}
		i = j + 1
	}
	after, err := readModel(ctx, rw, ref)
	if err != nil {
		return nil, fmt.Errorf("read back: %w", err)
	}
	for _, pv := range values {
		got, err := after.Value(pv.Point)
		if err != nil {
			return after, err
		}
		exp, _ := want.Value(pv.Point)
		if !got.OK || got.Raw != exp.Raw {
			return after, fmt.Errorf("write model %d point %s = %v: %w: reads %s", ref.ID, pv.Point, pv.Value, ErrReadBack, describe(got))
		}
	}
	return after, nil
}

func describe(v Value) string {
	if !v.OK {
		return "not implemented"
	}
	if v.Float == math.Trunc(v.Float) {
		return fmt.Sprintf("%.0f", v.Float)
	}
	return fmt.Sprintf("%g", v.Float)
}

// ReadModel reads one model of a device and lays it out.
func ReadModel(ctx context.Context, r Reader, ref ModelRef) (*Instance, error) {
	return readModel(ctx, r, ref)
}

// WriteModel reads one model, lets edit change the instance (points of any
// group, through Set and SetIn, in the units of each point and with the
// scale factors the device reports now), writes the registers edit changed
// with function 16 and reads the model back. Changed registers separated
// only by writable points go in one write, so a setpoint and its timers and
// enable change together. A change to a register that is not part of a
// writable point is refused before anything is written. The returned
// instance is the model as read back; a register that reads back different
// from what was written is an error wrapping ErrReadBack.
func WriteModel(ctx context.Context, rw ReadWriter, ref ModelRef, edit func(*Instance) error) (*Instance, error) {
	return WriteModelTrigger(ctx, rw, ref, nil, edit)
}

// WriteModelTrigger is WriteModel with trigger points: top-level points
// (such as a 7xx AdptCrvReq) that act when written, so they are written
// even when edit leaves them at their value, and are not compared on
// read-back (a device may clear a request once it acted on it).
func WriteModelTrigger(ctx context.Context, rw ReadWriter, ref ModelRef, triggers []string, edit func(*Instance) error) (*Instance, error) {
	return writeModel(ctx, rw, ref, triggers, nil, edit)
}

// WriteModelRenew is WriteModelTrigger with renew points: top-level points
// written even when edit leaves them at their value, and read back like the
// others, such as a control's setpoint and reversion timeout, whose write
// restarts the device's reversion timer (a write that changes no register
// is no write at all). Points the model lacks are ignored.
func WriteModelRenew(ctx context.Context, rw ReadWriter, ref ModelRef, renew, triggers []string, edit func(*Instance) error) (*Instance, error) {
	return writeModel(ctx, rw, ref, triggers, renew, edit)
}

func writeModel(ctx context.Context, rw ReadWriter, ref ModelRef, triggers, renew []string, edit func(*Instance) error) (*Instance, error) {
	before, err := readModel(ctx, rw, ref)
	if err != nil {
		return nil, err
	}
	want := &Instance{Model: before.Model, Addr: before.Addr, Regs: slices.Clone(before.Regs)}
	want.Root = before.Root
	if err := edit(want); err != nil {
		return before, fmt.Errorf("write model %d: %w", ref.ID, err)
	}
	writable := make([]bool, len(want.Regs))
	markWritable(&want.Root, writable)
	mark := func(names []string) []bool {
		m := make([]bool, len(want.Regs))
		for _, name := range names {
			if i := want.Model.Group.PointIndex(name); i >= 0 {
				p := &want.Model.Group.Points[i]
				from := want.Root.Offset + int(p.Offset)
				for r := from; r < from+int(p.Size) && r < len(m); r++ {
					m[r] = true
				}
			}
		}
		return m
	}
	trigger, force := mark(triggers), mark(renew)
	type span struct{ from, to int } // registers [from, to)
	var spans []span
	for i, r := range want.Regs {
		if r == before.Regs[i] && !trigger[i] && !force[i] {
			continue
		}
		if !writable[i] {
			return before, fmt.Errorf("write model %d register %d: %w", ref.ID, int(ref.Addr)+i, ErrNotWritable)
		}
		if n := len(spans); n > 0 && allTrue(writable[spans[n-1].to:i]) {
			spans[n-1].to = i + 1
			continue
		}
		spans = append(spans, span{i, i + 1})
	}
	if len(spans) == 0 {
		return before, nil
	}
	for _, s := range spans {
		if err := rw.WriteRegisters(ctx, ref.Addr+uint16(s.from), want.Regs[s.from:s.to]); err != nil {
			return nil, fmt.Errorf("write model %d registers %d+%d: %w", ref.ID, int(ref.Addr)+s.from, s.to-s.from, err)
		}
	}
	after, err := readModel(ctx, rw, ref)
	if err != nil {
		return nil, fmt.Errorf("write model %d: read back: %w", ref.ID, err)
	}
	for _, s := range spans {
		for i := s.from; i < s.to; i++ {
			if trigger[i] {
				continue
			}
			if i >= len(after.Regs) || after.Regs[i] != want.Regs[i] {
				return after, fmt.Errorf("write model %d register %d = %d: %w", ref.ID, int(ref.Addr)+i, want.Regs[i], ErrReadBack)
			}
		}
	}
	return after, nil
}

// markWritable sets w[i] for every register of a writable point of gi and
// its sub-groups.
func markWritable(gi *GroupInstance, w []bool) {
	for _, p := range gi.Group.Points {
		if !p.Writable {
			continue
		}
		for r := gi.Offset + int(p.Offset); r < gi.Offset+int(p.Offset+p.Size) && r < len(w); r++ {
			w[r] = true
		}
	}
	for _, occ := range gi.Sub {
		for i := range occ {
			markWritable(&occ[i], w)
		}
	}
}

func allTrue(bs []bool) bool {
	for _, b := range bs {
		if !b {
			return false
		}
	}
	return true
}
