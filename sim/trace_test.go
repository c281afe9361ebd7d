package sim

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTrace writes to both inverters, accepted and refused, and finds
// every write in Plant.Trace and in the JSON-lines file, the file read
// while the plant still runs.
func TestTrace(t *testing.T) {
	file := filepath.Join(t.TempDir(), "trace.jsonl")
	p, clk := sunnyPlant(t, func(c *Config) { c.TraceFile = file })
	inv1, inv2 := p.Device("inv1"), p.Device("inv2")
	c1, c2 := dial(t, inv1), dial(t, inv2)

	t0, w0 := p.Now(), clk.Now()
	// Two Modbus writes: WMaxLimPct and WMaxLim_Ena are not adjacent.
	writePoints(t, c1, inv1, 123, pv("WMaxLimPct", 60), pv("WMaxLim_Ena", 1))
	clk.Add(5 * time.Second)
	writeIn(t, c2, inv2, 704, "PFWInj.PF", 0.9)
	// Refused: out of range, and outside the map.
	m123 := modelInfo(t, inv1, 123)
	pctAddr := m123.Addr + uint16(readModel(t, c1, inv1, 123).Model.Point("WMaxLimPct").Offset)
	if err := c1.WriteRegister(pctAddr, 1200); err == nil { // 120.0 %
		t.Fatal("WMaxLimPct 120 % accepted")
	}
	if err := c1.WriteRegister(1000, 1); err == nil {
		t.Fatal("write outside the map accepted")
	}

	tr1, tr2 := p.Trace("inv1"), p.Trace("inv2")
	if len(tr1) != 4 || len(tr2) != 1 {
		t.Fatalf("trace inv1 %d entries, inv2 %d; want 4 and 1: %+v %+v", len(tr1), len(tr2), tr1, tr2)
	}
	cases := []struct {
		e         TraceEntry
		seq       uint64
		sim, wall time.Time
		model     uint16
		point     string
		value     float64
		limit     float64
		err       string
	}{
		// Written while disabled: no limit yet.
		{tr1[0], 1, t0, w0, 123, "WMaxLimPct", 60, 100, ""},
		{tr1[1], 2, t0, w0, 123, "WMaxLim_Ena", 1, 60, ""},
		{tr2[0], 1, t0.Add(5 * time.Second), w0.Add(5 * time.Second), 704, "PFWInj.PF", 0.9, 100, ""},
		{tr1[2], 3, t0.Add(5 * time.Second), w0.Add(5 * time.Second), 123, "WMaxLimPct", 60, 60, "exception 3"},
		{tr1[3], 4, t0.Add(5 * time.Second), w0.Add(5 * time.Second), 0, "", 0, 60, "exception 2"},
	}
	for i, tc := range cases {
		e := tc.e
		if e.Seq != tc.seq || !e.SimTime.Equal(tc.sim) || !e.WallTime.Equal(tc.wall) || e.Model != tc.model ||
			e.LimitPct != tc.limit || !e.Connected || e.Unit != 1 {
			t.Errorf("entry %d: %+v; want seq %d at %s (wall %s), model %d, limit %v", i, e, tc.seq, tc.sim, tc.wall, tc.model, tc.limit)
		}
		if (tc.err == "") != (e.Error == "") || !strings.Contains(e.Error, tc.err) {
			t.Errorf("entry %d: error %q, want %q", i, e.Error, tc.err)
		}
		if tc.point == "" {
			if len(e.Points) != 0 {
				t.Errorf("entry %d: points %+v outside the map", i, e.Points)
			}
			continue
		}
		pt, ok := e.Point(tc.point)
		if !ok || len(e.Points) != 1 || !pt.Implemented || pt.Value != tc.value || pt.Model != tc.model {
			t.Errorf("entry %d: points %+v, want %s = %v", i, e.Points, tc.point, tc.value)
		}
	}

	// The file holds the same entries, each written through at once.
	lines, err := ReadTraceFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var want []TraceEntry
	want = append(want, tr1[:2]...)
	want = append(want, tr2[0], tr1[2], tr1[3])
	if len(lines) != len(want) {
		t.Fatalf("trace file: %d lines, want %d", len(lines), len(want))
	}
	for i := range want {
		a, _ := json.Marshal(lines[i])
		b, _ := json.Marshal(want[i])
		if string(a) != string(b) {
			t.Errorf("line %d:\n%s\nwant\n%s", i+1, a, b)
		}
		if lines[i].Device != want[i].Device || lines[i].Device == "" {
			t.Errorf("line %d: device %q", i+1, lines[i].Device)
		}
	}
}

// TestTraceRamp: the limit a trace entry shows is the one in effect right
// after the write, where its ramp has got to.
func TestTraceRamp(t *testing.T) {
	p, clk := sunnyPlant(t, nil)
	inv := p.Device("inv1")
	c := dial(t, inv)
	writePoints(t, c, inv, 123, pv("WMaxLimPct_RmpTms", 10))
	writePoints(t, c, inv, 123, pv("WMaxLimPct", 40), pv("WMaxLim_Ena", 1))
	clk.Add(5 * time.Second)
	writePoints(t, c, inv, 123, pv("WMaxLimPct_RvrtTms", 60))
	tr := p.Trace("inv1")
	var got []float64
	for _, e := range tr {
		got = append(got, e.LimitPct)
	}
	// RmpTms, WMaxLimPct (disabled), WMaxLim_Ena (ramp starts at 100),
	// RvrtTms half way down.
	if want := []float64{100, 100, 100, 70}; len(got) != len(want) || got[2] != want[2] || got[3] != want[3] {
		t.Errorf("trace limits %v, want %v", got, want)
	}
}

// TestTraceBounded keeps the last TraceLimit entries and counts the rest.
func TestTraceBounded(t *testing.T) {
	p, _ := sunnyPlant(t, func(c *Config) { c.TraceLimit = 5 })
	inv := p.Device("inv2")
	c := dial(t, inv)
	for i := range 8 {
		writePoints(t, c, inv, 704, pv("WMaxLimPct", float64(10*(i+1))))
	}
	tr := p.Trace("inv2")
	if len(tr) != 5 || p.TraceDropped("inv2") != 3 {
		t.Fatalf("%d entries, %d dropped; want 5 and 3", len(tr), p.TraceDropped("inv2"))
	}
	for i, e := range tr {
		pt, _ := e.Point("WMaxLimPct")
		if e.Seq != uint64(i+4) || pt.Value != float64(10*(i+4)) {
			t.Errorf("entry %d: seq %d WMaxLimPct %v", i, e.Seq, pt.Value)
		}
	}
	if p.Trace("nobody") != nil || len(p.Trace("meter")) != 0 {
		t.Error("trace of unknown or untouched devices")
	}
	if _, ok := p.EffectiveLimitPct("meter"); ok {
		t.Error("EffectiveLimitPct of a meter")
	}
}
