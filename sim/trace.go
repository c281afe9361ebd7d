package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"plantd/sunspec"
)

// TraceEntry is one Modbus write a device received, as the register trace
// records it.
type TraceEntry struct {
	// Seq numbers a device's writes from 1; a gap before the first entry
	// Trace returns is what the bounded trace dropped.
	Seq      uint64    `json:"seq"`
	Device   string    `json:"device"`
	Unit     byte      `json:"unit"`
	SimTime  time.Time `json:"simTime"`  // simulated time of the write
	WallTime time.Time `json:"wallTime"` // Config.Now at the write
	Addr     uint16    `json:"addr"`     // first register written
	Count    int       `json:"count"`    // registers written
	// Model is the model of the first point the write touched (0 when it
	// touched none, as a write outside the map).
	Model uint16 `json:"model"`
	// Points are the points the write touched, decoded after it (after a
	// refused write: the unchanged values).
	Points []TracePoint `json:"points"`
	// Error says why the write was refused (exception 2 or 3); empty when
	// it was accepted.
	Error string `json:"error,omitempty"`
	// LimitPct is the inverter's effective active power limit in % of WMax
	// right after the write (the limit as far as its ramp has moved, or
	// 704 WSet when lower; 100 when nothing limits, and for devices that
	// are not inverters). Connected is false while an inverter is
	// disconnected by 123 Conn.
	LimitPct  float64 `json:"limitPct"`
	Connected bool    `json:"connected"`
}

// TracePoint is a point touched by a write, decoded after it.
type TracePoint struct {
	Model uint16 `json:"model"`
	// Name is the point's name inside its model: "WMaxLimPct", "PFWInj.PF",
	// with the 1-based occurrence of repeating groups: "curve[2].V1",
	// "Crv[1].MustTrip.Pt[3].V".
	Name string `json:"name"`
	// Value is the value in the point's units (enums and bitfields: their
	// number); 0 when not Implemented.
	Value       float64 `json:"value"`
	Raw         uint64  `json:"raw"`
	Implemented bool    `json:"implemented"`
	Text        string  `json:"text,omitempty"` // string points
}

// Point returns the first touched point of the entry with the name.
func (e TraceEntry) Point(name string) (TracePoint, bool) {
	for _, p := range e.Points {
		if p.Name == name {
			return p, true
		}
	}
	return TracePoint{}, false
}

// traceRing is a device's bounded trace. Guarded by Plant.mu.
type traceRing struct {
	buf     []TraceEntry
	head    int    // oldest entry once buf is full
	seq     uint64 // entries ever recorded
	dropped uint64
}

func (r *traceRing) add(e TraceEntry, limit int) {
	r.seq++
	e.Seq = r.seq
	if len(r.buf) < limit {
		r.buf = append(r.buf, e)
		return
	}
	r.buf[r.head] = e
	r.head = (r.head + 1) % len(r.buf)
	r.dropped++
}

func (r *traceRing) entries() []TraceEntry {
	out := make([]TraceEntry, 0, len(r.buf))
	out = append(out, r.buf[r.head:]...)
	return append(out, r.buf[:r.head]...)
}

// Trace returns the writes the device received, oldest first: the last
// Config.TraceLimit (10000 by default). Nil for an unknown device.
func (p *Plant) Trace(deviceID string) []TraceEntry {
	d := p.Device(deviceID)
	if d == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := d.trace.entries()
	for i := range out {
		out[i].Points = append([]TracePoint(nil), out[i].Points...)
	}
	return out
}

// TraceDropped returns how many of the device's oldest trace entries were
// dropped to keep the trace bounded.
func (p *Plant) TraceDropped(deviceID string) uint64 {
	d := p.Device(deviceID)
	if d == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return d.trace.dropped
}

// EffectiveLimitPct returns the active power limit in % of WMax acting on
// the inverter now (see State.EffectiveLimitPct); false when there is no
// such inverter.
func (p *Plant) EffectiveLimitPct(deviceID string) (float64, bool) {
	d := p.Device(deviceID)
	if d == nil || d.inv == nil {
		return 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advanceLocked(p.simNow())
	return d.inv.effectiveLimitPct(p.t), true
}

// ReadTraceFile reads the JSON lines a plant wrote to Config.TraceFile.
func ReadTraceFile(path string) ([]TraceEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []TraceEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e TraceEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return out, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// traceLocked records a write of n registers at addr (off in d.regs, -1
// when outside the map) after it was applied or refused.
func (p *Plant) traceLocked(d *Device, addr uint16, n, off int, refused error) {
	e := TraceEntry{
		Device:    d.cfg.ID,
		Unit:      d.cfg.Unit,
		SimTime:   p.t,
		WallTime:  p.cfg.Now(),
		Addr:      addr,
		Count:     n,
		LimitPct:  100,
		Connected: true,
	}
	if refused != nil {
		e.Error = refused.Error()
	}
	if off >= 0 {
		e.Points = d.tracePoints(off, n)
		if len(e.Points) > 0 {
			e.Model = e.Points[0].Model
		}
	}
	if d.inv != nil {
		e.LimitPct = d.inv.effectiveLimitPct(p.t)
		e.Connected = d.inv.connected
	}
	p.addTraceLocked(d, e)
}

// addTraceLocked adds an entry to the device's trace and to the trace
// file.
func (p *Plant) addTraceLocked(d *Device, e TraceEntry) {
	d.trace.add(e, p.cfg.TraceLimit)
	if p.traceFile == nil {
		return
	}
	e.Seq = d.trace.seq
	line, err := json.Marshal(e)
	if err == nil {
		_, err = p.traceFile.Write(append(line, '\n'))
	}
	if err != nil && !p.traceErr {
		p.traceErr = true
		p.log.Error("trace file", "file", p.cfg.TraceFile, "err", err)
	}
}

// tracePoints decodes the points overlapping registers off..off+n-1.
func (d *Device) tracePoints(off, n int) []TracePoint {
	var out []TracePoint
	d.pointsIn(off, n, func(s *slot, gi *sunspec.GroupInstance, i int, name string) {
		tp := TracePoint{Model: s.inst.Model.ID, Name: name}
		if p := &gi.Group.Points[i]; p.Type == sunspec.TypeString {
			tp.Text = s.inst.StringIn(gi, p.Name)
			tp.Implemented = tp.Text != ""
		} else if v := s.inst.ValueAt(gi, i); v.OK {
			tp.Value, tp.Raw, tp.Implemented = v.Float, v.Raw, true
		}
		out = append(out, tp)
	})
	return out
}

// pointsIn calls fn for every point overlapping registers off..off+n-1 of
// d.regs, with its model's slot and its name inside the model (see
// TracePoint.Name).
func (d *Device) pointsIn(off, n int, fn func(s *slot, gi *sunspec.GroupInstance, i int, name string)) {
	for si := range d.models {
		s := &d.models[si]
		if off+n <= s.off || off >= s.off+len(s.inst.Regs) {
			continue
		}
		walkNamed(&s.inst.Root, "", func(gi *sunspec.GroupInstance, i int, name string) {
			p := &gi.Group.Points[i]
			if start := s.off + gi.Offset + int(p.Offset); start < off+n && off < start+int(p.Size) {
				fn(s, gi, i, name)
			}
		})
	}
}

// walkNamed calls fn for every point of gi and its sub-groups with its
// name inside the model (see TracePoint.Name).
func walkNamed(gi *sunspec.GroupInstance, prefix string, fn func(gi *sunspec.GroupInstance, i int, name string)) {
	for i := range gi.Group.Points {
		fn(gi, i, prefix+gi.Group.Points[i].Name)
	}
	for k, subs := range gi.Sub {
		g := &gi.Group.Groups[k]
		for j := range subs {
			name := g.Name
			if g.Repeat != sunspec.RepeatOnce {
				name += "[" + strconv.Itoa(j+1) + "]"
			}
			walkNamed(&subs[j], prefix+name+".", fn)
		}
	}
}
