package gridcontrol_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"plantd/plant"
	"slices"
	"strings"
	"testing"
	"time"

	"plantd/gridcontrol"
	"plantd/sim"
	"plantd/sim/simtest"
	"plantd/sunspec"
)

// curveSpec says where a model keeps its first curve's points.
type curveSpec struct {
	der        bool
	group, sub string // "curve" / "Crv", and "MustTrip" for the 7xx trip models
	x, y       string
}

var curveSpecs = map[uint16]curveSpec{
	126: {group: "curve", x: "V", y: "VAr"}, 132: {group: "curve", x: "V", y: "W"}, 134: {group: "curve", x: "Hz", y: "W"},
	129: {group: "curve", x: "Tms", y: "V"}, 130: {group: "curve", x: "Tms", y: "V"},
	135: {group: "curve", x: "Tms", y: "Hz"}, 136: {group: "curve", x: "Tms", y: "Hz"},
	705: {der: true, group: "Crv", x: "V", y: "Var"}, 706: {der: true, group: "Crv", x: "V", y: "W"},
	707: {der: true, group: "Crv", sub: "MustTrip", x: "Tms", y: "V"}, 708: {der: true, group: "Crv", sub: "MustTrip", x: "Tms", y: "V"},
	709: {der: true, group: "Crv", sub: "MustTrip", x: "Tms", y: "Hz"}, 710: {der: true, group: "Crv", sub: "MustTrip", x: "Tms", y: "Hz"},
}

// points reads curve k (0-based) of a curve model.
func points(t *testing.T, inst *sunspec.Instance, k int) []gridcontrol.CurvePoint {
	t.Helper()
	cs := curveSpecs[inst.Model.ID]
	curves := inst.Root.Groups(cs.group)
	if k >= len(curves) {
		t.Fatalf("model %d has %d curves, want curve %d", inst.Model.ID, len(curves), k+1)
	}
	c := &curves[k]
	if cs.sub != "" {
		c = &c.Groups(cs.sub)[0]
	}
	n, err := inst.FloatIn(c, "ActPt")
	if err != nil {
		t.Fatalf("model %d ActPt: %v", inst.Model.ID, err)
	}
	var out []gridcontrol.CurvePoint
	for j := range int(n) {
		var x, y float64
		var ex, ey error
		if cs.der {
			pt := &c.Groups("Pt")[j]
			x, ex = inst.FloatIn(pt, cs.x)
			y, ey = inst.FloatIn(pt, cs.y)
		} else {
			x, ex = inst.FloatIn(c, fmt.Sprint(cs.x, j+1))
			y, ey = inst.FloatIn(c, fmt.Sprint(cs.y, j+1))
		}
		if ex != nil || ey != nil {
			t.Fatalf("model %d curve %d point %d: %v %v", inst.Model.ID, k+1, j+1, ex, ey)
		}
		out = append(out, gridcontrol.CurvePoint{X: x, Y: y})
	}
	return out
}

// lastWritable is the index of the curve plantd writes: the last one not
// marked read-only.
func lastWritable(t *testing.T, inst *sunspec.Instance) int {
	t.Helper()
	curves := inst.Root.Groups(curveSpecs[inst.Model.ID].group)
	for k := len(curves) - 1; k >= 0; k-- {
		if ro, err := inst.FloatIn(&curves[k], "ReadOnly"); err != nil || ro == 0 {
			return k
		}
	}
	t.Fatalf("model %d: no writable curve", inst.Model.ID)
	return 0
}

func samePoints(a, b []gridcontrol.CurvePoint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i].X-b[i].X) > 0.011 || math.Abs(a[i].Y-b[i].Y) > 0.011 {
			return false
		}
	}
	return true
}

// writableRegs returns the registers of every writable point of gi and
// its sub-groups (skipping the named top-level points), for comparing a
// model with its default.
func writableRegs(inst *sunspec.Instance, gi *sunspec.GroupInstance, skip ...string) map[string][]uint16 {
	out := map[string][]uint16{}
	var walk func(gi *sunspec.GroupInstance, prefix string)
	walk = func(gi *sunspec.GroupInstance, prefix string) {
		for _, p := range gi.Group.Points {
			if !p.Writable || (prefix == "" && slices.Contains(skip, p.Name)) {
				continue
			}
			from := gi.Offset + int(p.Offset)
			out[prefix+p.Name] = slices.Clone(inst.Regs[from : from+int(p.Size)])
		}
		for i, occ := range gi.Sub {
			for j := range occ {
				walk(&occ[j], fmt.Sprintf("%s%s[%d].", prefix, gi.Group.Groups[i].Name, j+1))
			}
		}
	}
	walk(gi, "")
	return out
}

// diff names the points whose registers differ.
func diff(a, b map[string][]uint16) []string {
	var out []string
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			out = append(out, fmt.Sprintf("%s %v≠%v", k, v, b[k]))
		}
	}
	slices.Sort(out)
	return out
}

// check is what a device must show while a command's window is open.
type check struct {
	device string
	model  uint16
	during func(t *testing.T, inst, def *sunspec.Instance) string // "" when right
	// physical, if set, checks the simulated inverter's state.
	physical func(s sim.State) string
}

func point(inst *sunspec.Instance, name string, want float64) string {
	v, err := inst.Float(name)
	if err != nil {
		return fmt.Sprintf("%s: %v", name, err)
	}
	if math.Abs(v-want) > 1e-6 {
		return fmt.Sprintf("%s = %g, want %g", name, v, want)
	}
	return ""
}

func all(msgs ...string) string {
	var out []string
	for _, m := range msgs {
		if m != "" {
			out = append(out, m)
		}
	}
	return strings.Join(out, "; ")
}

// curveApplied checks a curve model holding the posted curve as its
// active one: 12x/13x ActCrv and ModEna, 7xx the adopt request and Ena.
func curveApplied(want []gridcontrol.CurvePoint) func(t *testing.T, inst, def *sunspec.Instance) string {
	return func(t *testing.T, inst, def *sunspec.Instance) string {
		k := lastWritable(t, inst)
		got := points(t, inst, k)
		msg := ""
		if !samePoints(got, want) {
			msg = fmt.Sprintf("curve %d = %v, want %v", k+1, got, want)
		}
		if curveSpecs[inst.Model.ID].der {
			if inst.Model.ID >= 707 && inst.Model.ID <= 710 {
				return all(msg, point(inst, "Ena", 1), point(inst, "AdptCrvReq", float64(k+1)))
			}
			return all(msg, point(inst, "Ena", 1), point(inst, "AdptCrvReq", float64(k+1)), point(inst, "AdptCrvRslt", 1))
		}
		return all(msg, point(inst, "ActCrv", float64(k+1)), point(inst, "ModEna", 1))
	}
}

// tweak returns the points with y moved, so that a write is visible.
func tweak(pts []gridcontrol.CurvePoint, dy float64) []gridcontrol.CurvePoint {
	out := slices.Clone(pts)
	for i := range out {
		out[i].Y += dy
	}
	return out
}

// TestEveryCommandBothGenerations posts one schedule with every command
// (but FeedInLimit, below) and checks, on the classic inverter inv1
// (123, 126…136) and the DER inverter inv2 (704…711), that the registers
// hold the command while its window is open and are back at the default
// read at first contact after it.
func TestEveryCommandBothGenerations(t *testing.T) {
	t.Parallel()
	// The controller runs on a clock the test steps: the window's start,
	// middle and end come when the test moves the clock there, and the
	// writes at each are waited for, however slowly they come.
	r := newRig(t, rigOpts{stepped: true, clockAt: noon})
	clk := r.clk
	def := map[string]map[uint16]*sunspec.Instance{"inv1": {}, "inv2": {}}
	for _, m := range []uint16{123, 126, 127, 129, 130, 132, 134, 135, 136} {
		def["inv1"][m] = r.read("inv1", m)
	}
	for _, m := range []uint16{704, 705, 706, 707, 708, 709, 710, 711} {
		def["inv2"][m] = r.read("inv2", m)
	}
	vv := tweak(points(t, def["inv1"][126], 0), -5)
	vw := tweak(points(t, def["inv1"][132], 0), -10)
	fw := tweak(points(t, def["inv1"][134], 0), -10)
	lvrt := tweak(points(t, def["inv1"][129], 0), 2)
	hvrt := tweak(points(t, def["inv1"][130], 0), -2)
	lfrt := tweak(points(t, def["inv1"][135], 0), 0.2)
	hfrt := tweak(points(t, def["inv1"][136], 0), -0.2)
	ctl := def["inv2"][711].Root.Groups("Ctl")[0]
	kof, err := def["inv2"][711].FloatIn(&ctl, "KOf")
	if err != nil {
		t.Fatal(err)
	}
	start := clk.Now().Truncate(time.Second).Add(10 * time.Second)
	end := start.Add(4 * time.Second)
	curve := func(cmd string, pts []gridcontrol.CurvePoint, params map[string]float64) string {
		b, _ := json.Marshal(gridcontrol.Curve{Points: pts, Params: params})
		return fmt.Sprintf(`{"command":%q,"start":%q,"end":%q,"curve":%s}`, cmd, ts(start), ts(end), b)
	}
	win := func(cmd string, v string) string {
		return fmt.Sprintf(`{"command":%q,"start":%q,"end":%q%s}`, cmd, ts(start), ts(end), v)
	}
	sched := r.mustSubmit(body(
		limitCmd("opModMaxLimW", start, end, 40),
		win("OpModDisconnect", ""),
		win("opModFixedPFInjectW", `,"value":0.95`),
		win("opModFixedPfAbsorbW", `,"value":0.9`),
		curve("opModVoltVar", vv, nil),
		curve("opModVoltWatt", vw, nil),
		curve("opModFreqWatt", fw, map[string]float64{"KOf": kof + 0.01}),
		curve("opModLvrtMustTrip", lvrt, nil),
		curve("opModHvrtMustTrip", hvrt, nil),
		curve("opModLfrtMustTrip", lfrt, nil),
		curve("opModHfrtMustTrip", hfrt, nil),
	))
	checks := []check{
		{device: "inv1", model: 123, during: func(t *testing.T, inst, _ *sunspec.Instance) string {
			return all(point(inst, "WMaxLimPct", 40), point(inst, "WMaxLim_Ena", 1), point(inst, "WMaxLimPct_RvrtTms", 20),
				point(inst, "Conn", 0), point(inst, "Conn_RvrtTms", 20), point(inst, "OutPFSet", 0.95), point(inst, "OutPFSet_Ena", 1))
		}, physical: func(s sim.State) string {
			if s.EffectiveLimitPct != 40 || s.Connected || s.PowerW != 0 {
				return fmt.Sprintf("limit %g %%, connected %v, %g W; want 40 %%, disconnected, 0 W", s.EffectiveLimitPct, s.Connected, s.PowerW)
			}
			return ""
		}},
		{device: "inv2", model: 704, during: func(t *testing.T, inst, def *sunspec.Instance) string {
			defPct, _ := def.Float("WMaxLimPct")
			inj, abs := inst.Root.Groups("PFWInj")[0], inst.Root.Groups("PFWAbs")[0]
			pfi, _ := inst.FloatIn(&inj, "PF")
			pfa, _ := inst.FloatIn(&abs, "PF")
			msg := ""
			if pfi != 0.95 || pfa != 0.9 {
				msg = fmt.Sprintf("PFWInj.PF %g, PFWAbs.PF %g; want 0.95, 0.9", pfi, pfa)
			}
			return all(msg, point(inst, "WMaxLimPct", 40), point(inst, "WMaxLimPctEna", 1), point(inst, "WMaxLimPctRvrtTms", 20),
				// the stored reversion value is the default, not "unlimited"
				point(inst, "WMaxLimPctRvrt", defPct),
				point(inst, "PFWInjEna", 1), point(inst, "PFWAbsEna", 1))
		}, physical: func(s sim.State) string {
			if s.EffectiveLimitPct != 40 || s.PowerW > 0.41*8000 {
				return fmt.Sprintf("limit %g %%, %g W; want 40 %% of 8 kW", s.EffectiveLimitPct, s.PowerW)
			}
			return ""
		}},
		{device: "inv1", model: 126, during: curveApplied(vv)},
		{device: "inv1", model: 132, during: curveApplied(vw)},
		{device: "inv1", model: 134, during: curveApplied(fw)},
		{device: "inv1", model: 129, during: curveApplied(lvrt)},
		{device: "inv1", model: 130, during: curveApplied(hvrt)},
		{device: "inv1", model: 135, during: curveApplied(lfrt)},
		{device: "inv1", model: 136, during: curveApplied(hfrt)},
		{device: "inv2", model: 705, during: curveApplied(vv)},
		{device: "inv2", model: 706, during: curveApplied(vw)},
		{device: "inv2", model: 707, during: curveApplied(lvrt)},
		{device: "inv2", model: 708, during: curveApplied(hvrt)},
		{device: "inv2", model: 709, during: curveApplied(lfrt)},
		{device: "inv2", model: 710, during: curveApplied(hfrt)},
		{device: "inv2", model: 711, during: func(t *testing.T, inst, _ *sunspec.Instance) string {
			c := inst.Root.Groups("Ctl")
			k := len(c) - 1
			got, _ := inst.FloatIn(&c[k], "KOf")
			msg := ""
			if math.Abs(got-(kof+0.01)) > 1e-6 {
				msg = fmt.Sprintf("Ctl[%d].KOf = %g, want %g", k+1, got, kof+0.01)
			}
			return all(msg, point(inst, "Ena", 1), point(inst, "AdptCtlReq", float64(k+1)))
		}},
	}
	// Before the start nothing is touched.
	r.step(clk, start.Sub(clk.Now())-700*time.Millisecond)
	if l := r.limitOf("inv1"); l != 100 {
		t.Errorf("inv1 limited to %g %% before the window", l)
	}
	// At the start (the clock then stands still): every command written,
	// waited for. How soon after the start is a target, measured by
	// BenchmarkEdgeToWrite, not asserted here.
	r.step(clk, start.Sub(clk.Now()))
	r.await("every command written at the start", 30*time.Second, func() bool {
		for _, c := range checks {
			if c.during(t, r.read(c.device, c.model), def[c.device][c.model]) != "" {
				return false
			}
		}
		return true
	})
	// Held through the window (re-read in the middle of it).
	r.step(clk, 2*time.Second)
	for _, c := range checks {
		if msg := c.during(t, r.read(c.device, c.model), def[c.device][c.model]); msg != "" {
			t.Errorf("%s model %d in the window: %s", c.device, c.model, msg)
		}
		if c.physical != nil {
			if msg := c.physical(simtest.Device(t, r.sim, c.device).State()); msg != "" {
				t.Errorf("%s in the window: %s", c.device, msg)
			}
		}
	}
	// The settings read from the devices show every function active.
	settings := func() map[string]gridcontrol.Setting {
		out := map[string]gridcontrol.Setting{}
		for _, typ := range gridcontrol.SettingsTypes {
			list, err := r.controller().Settings(context.Background(), "demo", typ)
			if err != nil {
				t.Fatalf("settings %s: %v", typ, err)
			}
			for _, st := range list {
				out[st.Type] = st
			}
		}
		return out
	}
	during := settings()
	for _, typ := range []string{"FixedActivePowerLimitConfig", "FreqWattCurveConfig", "VoltWattCurveConfig", "FixedPowerFactorSetting",
		"VoltVarCurveSetting", "LowFrequencyRideThroughCurveConfig", "HighFrequencyRideThroughCurveConfig",
		"LowVoltageRideThroughCurveConfig", "HighVoltageRideThroughCurveConfig"} {
		st, ok := during[typ]
		if !ok || !st.Active || len(st.Values) != 2 || !st.Values[0].ControlledByPlantd {
			t.Errorf("settings in the window: %s = %+v", typ, st)
		}
	}
	if st := during["FixedActivePowerLimitConfig"]; len(st.Values) == 2 && (st.Values[0].LimitPct == nil || *st.Values[0].LimitPct != 40) {
		t.Errorf("limit setting in the window: %+v", st.Values[0])
	}
	if st := during["VoltVarCurveSetting"]; len(st.Values) == 2 && (st.Values[1].Curve == nil || !samePoints(st.Values[1].Curve.Points, vv)) {
		t.Errorf("volt-var of inv2 in the window: %+v, want the posted curve %v", st.Values[1].Curve, vv)
	}
	if _, ok := during["DynamicActivePowerLimitDeactivatedConfig"]; !ok {
		t.Errorf("no FeedInLimit, yet the dynamic limit is not deactivated: %v", during)
	}
	for i, cm := range sched.Commands {
		if got := r.command(sched.ScheduleID, i); got.Status != gridcontrol.StatusActive || got.AppliedAt == nil || got.Late {
			t.Errorf("%s in its window: status %s, applied %v, late %v (%s)", cm.Command, got.Status, got.AppliedAt, got.Late, got.Reason)
		}
	}
	// After the end: every writable register of every control model back
	// at what it held before plantd touched it, bit for bit: on 7xx models
	// also the adopt requests (AdptCrvReq, AdptCtlReq) and every stored
	// curve, the one plantd wrote into included.
	back := func() []string {
		var out []string
		for dev, models := range def {
			for m, d := range models {
				inst := r.read(dev, m)
				if dd := diff(writableRegs(inst, &inst.Root), writableRegs(d, &d.Root)); len(dd) > 0 {
					out = append(out, fmt.Sprintf("%s model %d: %v", dev, m, dd))
				}
			}
		}
		slices.Sort(out)
		return out
	}
	// The end, then a cycle at a time (the fallback ramps 20 % a cycle)
	// until every control is back: waited for, not timed; the bound only
	// ends a test that would never pass.
	r.step(clk, end.Sub(clk.Now()))
	deadline := time.Now().Add(60 * time.Second)
	cycles := 0
	for {
		left := back()
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("60 s after the end, not back at the default: %v", left)
		}
		r.step(clk, 200*time.Millisecond)
		cycles++
	}
	t.Logf("every control back at its default %d cycles after the end", cycles)
	if s := simtest.Device(t, r.sim, "inv1").State(); !s.Connected || s.EffectiveLimitPct != 100 {
		t.Errorf("inv1 after the window: connected %v, limit %g %%", s.Connected, s.EffectiveLimitPct)
	}
	after := settings()
	for _, typ := range []string{"FixedActivePowerLimitDeactivatedConfig", "FreqWattCurveDeactivatedConfig", "VoltWattCurveDeactivatedConfig",
		"ReactivePowerGridDeactivatedSetting"} {
		if st, ok := after[typ]; !ok || st.Active || len(st.Values) != 2 || st.Values[0].ControlledByPlantd {
			t.Errorf("settings after the window: %s = %+v", typ, st)
		}
	}
	for i, cm := range sched.Commands {
		if got := r.command(sched.ScheduleID, i); got.Status != gridcontrol.StatusDone {
			t.Errorf("%s after its window: status %s", cm.Command, got.Status)
		}
	}
	defer dumpLog(t, r)
	r.await("the writes and restores in the plant log", 5*time.Second, func() bool {
		return r.logHas("ScheduleAccepted", "test (installer)") &&
			r.logHas("GridControlWrite", "inv1", "opModMaxLimW of schedule "+sched.ScheduleID+" by test (installer)") &&
			r.logHas("GridControlWrite", "inv2", "model 705") && r.logHas("GridControlRestored", "inv2", "model 711")
	})
}

func dumpLog(t *testing.T, r *rig) {
	entries, _, _ := r.st.Logs(context.Background(), plant.LogQuery{PlantID: "demo", Limit: 1000})
	for _, e := range entries {
		t.Logf("%s %s %s", e.Code, e.DeviceID, e.Message)
	}
}

// limitTrace is an inverter's effective limit after each write it took
// from since on, from the simulator's register trace.
func (r *rig) limitTrace(id string, since time.Time) []sim.TraceEntry {
	var out []sim.TraceEntry
	for _, e := range r.sim.Trace(id) {
		if !e.WallTime.Before(since) && e.Error == "" {
			out = append(out, e)
		}
	}
	return out
}

// TestNoPeakBetweenWindows: back-to-back limit windows and a window
// overwritten while it runs never let the limit rise above the higher of
// the two windows between them (the fallback never shows through), and
// the fallback at the end ramps up by the configured rate (the CSIP-AUS
// ALL-21 idea), on both generations.
func TestNoPeakBetweenWindows(t *testing.T) {
	t.Parallel()
	const ramp = 25.0 // % per s: 5 % per 200 ms cycle
	cases := []struct {
		name   string
		first  float64
		second float64
		// overwrite: the second window is posted as a new schedule while
		// the first runs, covering the first's last second and beyond.
		overwrite bool
	}{
		{name: "60 then 40", first: 60, second: 40},
		{name: "40 then 60", first: 40, second: 60},
		{name: "40 overwritten by 60", first: 40, second: 60, overwrite: true},
		{name: "60 overwritten by 30", first: 60, second: 30, overwrite: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case on a plant of its own
			r := newRig(t, rigOpts{stepped: true, cfg: gridcontrol.Config{RampPctPerSecond: ramp}})
			r.await("both inverters at 100 %", 10*time.Second, func() bool { return r.limitOf("inv1") == 100 && r.limitOf("inv2") == 100 })
			s1, mid := r.window(time.Second, 2*time.Second)
			end := mid.Add(2 * time.Second)
			if tc.overwrite {
				r.mustSubmit(body(limitCmd("opModMaxLimW", s1, end, tc.first)))
				r.stepTo(s1.Add(time.Second))
				r.mustSubmit(body(limitCmd("opModMaxLimW", mid, end.Add(time.Second), tc.second)))
				end = end.Add(time.Second)
			} else {
				r.mustSubmit(body(limitCmd("opModMaxLimW", s1, mid, tc.first), limitCmd("opModMaxLimW", mid, end, tc.second)))
			}
			// The limit in effect after every cycle (the trace below has
			// every write between).
			peak := map[string]float64{}
			for r.now().Before(end) {
				r.step(r.clk, r.cfg.Cycle)
				if now := r.now(); now.After(s1.Add(500*time.Millisecond)) && now.Before(end) {
					for _, id := range []string{"inv1", "inv2"} {
						peak[id] = max(peak[id], r.limitOf(id))
					}
				}
			}
			r.await("the fallback ramp back at 100 %", 10*time.Second, func() bool { return r.limitOf("inv1") == 100 && r.limitOf("inv2") == 100 })
			hi := max(tc.first, tc.second)
			for _, id := range []string{"inv1", "inv2"} {
				if peak[id] > hi {
					t.Errorf("%s: limit %g %% between the windows, above both (%g, %g)", id, peak[id], tc.first, tc.second)
				}
				var seq []float64
				prev, prevAt := -1.0, time.Time{}
				for _, e := range r.limitTrace(id, s1.Add(-time.Second)) {
					if _, ok := e.Point("WMaxLimPct"); !ok {
						continue
					}
					seq = append(seq, e.LimitPct)
					if e.WallTime.Before(end) && e.LimitPct > hi {
						t.Errorf("%s: write at %s left the limit at %g %%, above both windows", id, e.WallTime.Sub(s1).Round(time.Millisecond), e.LimitPct)
					}
					// Loosening steps: at most the ramp rate over the
					// time since the last write (plus one cycle of slack
					// for a cycle woken early by a window edge).
					if prev >= 0 && e.LimitPct > prev {
						allowed := ramp*e.WallTime.Sub(prevAt).Seconds() + ramp*0.2 + 0.1
						if e.LimitPct-prev > allowed {
							t.Errorf("%s: limit jumped from %g to %g %% in %s (ramp %g %%/s)", id, prev, e.LimitPct, e.WallTime.Sub(prevAt).Round(time.Millisecond), ramp)
						}
					}
					prev, prevAt = e.LimitPct, e.WallTime
				}
				t.Logf("%s: limit after each write %v; peak sampled between the windows %g %%", id, seq, peak[id])
			}
		})
	}
}

// writeCurvePoint sets one point of a 705 curve (k 0-based) as an
// installer's tool would.
func (r *rig) writeCurvePoint(id string, k, j int, v float64) {
	r.t.Helper()
	d, _ := r.live.Device(id)
	ref, _ := d.Discovered.(*sunspec.Device).Ref(705)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := sunspec.WriteModel(ctx, r.clients[id], ref, func(inst *sunspec.Instance) error {
		crv := inst.Root.Groups("Crv")[k]
		return inst.SetIn(&crv.Groups("Pt")[j], "V", v)
	}); err != nil {
		r.t.Fatalf("write 705 curve %d point %d of %s: %v", k+1, j+1, id, err)
	}
}

// TestDERRestoreBitForBit: after a volt-var window the DER inverter's 705
// is back at what it read before, bit for bit: the adopt request, curve 1
// in effect and the curve plantd wrote into, also when an installer had
// adopted curve 2 and edited it since (the request reads 2 and curve 2
// differs from curve 1), and on a device that clears its requests itself.
func TestDERRestoreBitForBit(t *testing.T) {
	t.Parallel()
	// adoptedEdited: the installer adopted curve 2, then edited it.
	adoptedEdited := func(r *rig) {
		d, _ := r.live.Device("inv2")
		ref, _ := d.Discovered.(*sunspec.Device).Ref(705)
		// A trigger: the device may clear the request once it acted.
		if _, err := sunspec.WriteModelTrigger(context.Background(), r.clients["inv2"], ref, []string{"AdptCrvReq"},
			func(inst *sunspec.Instance) error { return inst.Set("AdptCrvReq", 2) }); err != nil {
			r.t.Fatalf("adopt curve 2: %v", err)
		}
		r.writeCurvePoint("inv2", 1, 1, 96)
	}
	cases := []struct {
		name   string
		clears bool
		before func(r *rig)
	}{
		{name: "request 0"},
		{name: "curve 2 adopted and edited", before: adoptedEdited},
		{name: "device clears its request", clears: true, before: adoptedEdited},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			devs := sim.DefaultConfig().Devices
			devs[1].AdoptClearsRequest = tc.clears
			r := newRig(t, rigOpts{stepped: true, devices: devs, before: tc.before})
			def := r.read("inv2", 705)
			vv := tweak(points(t, def, 0), -5)
			start, end := r.window(time.Second, 2*time.Second)
			b, _ := json.Marshal(gridcontrol.Curve{Points: vv})
			r.mustSubmit(body(fmt.Sprintf(`{"command":"opModVoltVar","start":%q,"end":%q,"curve":%s}`, ts(start), ts(end), b)))
			r.await("the curve restored", end.Sub(r.now())+5*time.Second, func() bool {
				return r.logHas("GridControlRestored", "inv2", "model 705")
			})
			if !r.logHas("GridControlWrite", "inv2", "model 705") {
				t.Fatal("the window's curve was never written")
			}
			inst := r.read("inv2", 705)
			if dd := diff(writableRegs(inst, &inst.Root), writableRegs(def, &def.Root)); len(dd) > 0 {
				dumpLog(t, r)
				t.Errorf("705 after the window differs from before: %v", dd)
			}
			if got := points(t, inst, 0); !samePoints(got, points(t, def, 0)) {
				t.Errorf("curve 1 in effect after the window %v, want %v", got, points(t, def, 0))
			}
		})
	}
}

// TestCurveInVolts: a volt-var curve sent in volts (unit "V") reaches each
// inverter in % of its own reference voltage (inv1: 121 VRef, set to
// 240 V here; inv2: 702 VNom, 230 V); volts that convert to an implausible
// percentage on a device are refused, naming the point.
func TestCurveInVolts(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{stepped: true, before: func(r *rig) { r.write("inv1", 121, map[string]float64{"VRef": 240}) }})
	start, end := r.window(time.Second, 3*time.Second)
	post := func(pts string) (gridcontrol.Schedule, error) {
		return r.submit(body(fmt.Sprintf(`{"command":"opModVoltVar","start":%q,"end":%q,"unit":"V","curve":{"points":[%s]}}`, ts(start), ts(end), pts)))
	}
	// Per cent sent as volts: 92 V is 38 % of 240 V.
	_, err := post(`{"x":92,"y":30},{"x":108,"y":-30}`)
	var ve *gridcontrol.ValidationError
	if !errors.As(err, &ve) || len(ve.Fields) == 0 || ve.Fields[0].Field != "commands[0].curve.points[0]" ||
		!strings.Contains(ve.Fields[0].Message, "x = 92 V is") || !strings.Contains(ve.Fields[0].Message, "outside 50..150 %") {
		t.Fatalf("volts that are per cent: %v, want a problem naming commands[0].curve.points[0]", err)
	}
	r.mustSubmit(body(fmt.Sprintf(`{"command":"opModVoltVar","start":%q,"end":%q,"unit":"V","curve":{"points":[%s]}}`, ts(start), ts(end),
		`{"x":207,"y":44},{"x":220,"y":0},{"x":240,"y":0},{"x":253,"y":-44}`)))
	want := map[string]struct {
		model uint16
		vref  float64
	}{"inv1": {126, 240}, "inv2": {705, 230}}
	for _, id := range []string{"inv1", "inv2"} {
		w := want[id]
		var exp []gridcontrol.CurvePoint
		for _, p := range []gridcontrol.CurvePoint{{X: 207, Y: 44}, {X: 220}, {X: 240}, {X: 253, Y: -44}} {
			exp = append(exp, gridcontrol.CurvePoint{X: p.X / w.vref * 100, Y: p.Y})
		}
		var got []gridcontrol.CurvePoint
		r.await(id+" holding the curve in % of its reference voltage", end.Sub(r.now()), func() bool {
			inst := r.read(id, w.model)
			got = points(t, inst, lastWritable(t, inst))
			if len(got) != len(exp) {
				return false
			}
			for i := range got {
				// The registers hold whole per cent (V_SF 0).
				if math.Abs(got[i].X-exp[i].X) > 0.5 || got[i].Y != exp[i].Y {
					return false
				}
			}
			return true
		})
		t.Logf("%s: %v", id, got)
	}
}
