package gridcontrol

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sunspec"
)

// model builds an image of a model with the given points set (every other
// point as NewBlank leaves it, scale factors 0).
func model(t testing.TB, id uint16, pts map[string]float64) *sunspec.Instance {
	t.Helper()
	m := sunspec.ModelByID(id)
	inst, err := sunspec.NewBlank(m, 40070, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Group.Points {
		if p.Type == sunspec.TypeSunssf {
			if err := inst.SetRaw(p.Name, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	for n, v := range pts {
		if err := inst.Set(n, v); err != nil {
			t.Fatalf("model %d %s: %v", id, n, err)
		}
	}
	return inst
}

// with returns a copy of inst's registers with the points changed.
func with(t testing.TB, inst *sunspec.Instance, pts map[string]float64) []uint16 {
	t.Helper()
	c, err := sunspec.NewInstance(inst.Model, inst.Addr, slices.Clone(inst.Regs))
	if err != nil {
		t.Fatal(err)
	}
	for n, v := range pts {
		if err := c.Set(n, v); err != nil {
			t.Fatal(err)
		}
	}
	return c.Regs
}

// TestHeldImageJudgesOnlyPollsAfterTheWrite: a poll that may have begun
// before plantd's write is judged against the values in force on either
// side of it (a ramp step, a renewal), an older one not at all; an enable
// toggle leaves no value of its own to accept.
func TestHeldImageJudgesOnlyPollsAfterTheWrite(t *testing.T) {
	at20 := model(t, 123, map[string]float64{"WMaxLimPct": 20, "WMaxLim_Ena": 1, "WMaxLimPct_RvrtTms": 60})
	h := newHeldImage(ctlLimit, at20)
	if h == nil || len(h.spans) != 4 {
		t.Fatalf("held image of the 123 limit: %+v", h)
	}
	h.note(at20, 10, false)
	at100 := with(t, at20, map[string]float64{"WMaxLimPct": 100})
	at30 := with(t, at20, map[string]float64{"WMaxLimPct": 30})
	off := with(t, at20, map[string]float64{"WMaxLim_Ena": 0})
	other := with(t, at20, map[string]float64{"WMaxLimPct_WinTms": 5, "Conn": 0}) // not the limit's held points

	type judge struct {
		name  string
		regs  []uint16
		poll  uint64
		diff  string // the point found different ("" none)
		judge bool
	}
	check := func(cases []judge) {
		t.Helper()
		for _, c := range cases {
			i, ok := h.differs(c.regs, c.poll)
			got := ""
			if i >= 0 {
				got = h.names[i]
			}
			if ok != c.judge || got != c.diff {
				t.Errorf("%s (poll %d): differs %q, judged %v; want %q, %v", c.name, c.poll, got, ok, c.diff, c.judge)
			}
		}
	}
	check([]judge{
		{"the poll running during the first write", at100, 11, "", false},
		{"the write's value, a poll after", at20.Regs, 12, "", true},
		{"someone's 100 %", at100, 12, "WMaxLimPct", true},
		{"other points changed", other, 13, "", true},
		{"the enable off", off, 13, "WMaxLim_Ena", true},
		{"another layout", at20.Regs[:len(at20.Regs)-1], 13, "", false},
	})
	// A ramp step to 30 %, applied as poll 14 was.
	h.note(model(t, 123, map[string]float64{"WMaxLimPct": 30, "WMaxLim_Ena": 1, "WMaxLimPct_RvrtTms": 60}), 14, false)
	check([]judge{
		{"the step before, in the poll that may straddle the step", at20.Regs, 15, "", true},
		{"the new step in that poll", at30, 15, "", true},
		{"someone's 100 % in that poll", at100, 15, "WMaxLimPct", true},
		{"the step before, a poll later", at20.Regs, 16, "WMaxLimPct", true},
		{"the new step, a poll later", at30, 16, "", true},
	})
	// An enable toggle (quirky devices) at 30 %: the poll that may have
	// caught the enable off is not judged.
	h.note(model(t, 123, map[string]float64{"WMaxLimPct": 30, "WMaxLim_Ena": 1, "WMaxLimPct_RvrtTms": 60}), 20, true)
	check([]judge{
		{"the enable off, in the poll the toggle may straddle", off, 21, "", false},
		{"the enable off, a poll later", with(t, at20, map[string]float64{"WMaxLimPct": 30, "WMaxLim_Ena": 0}), 22, "WMaxLim_Ena", true},
	})
	if got := h.describe(with(t, at20, map[string]float64{"WMaxLimPct": 100, "WMaxLim_Ena": 0})); got != "WMaxLimPct found 100, wanted 30; WMaxLim_Ena found 0, wanted 1" {
		t.Errorf("describe: %q", got)
	}
}

// TestHeldImagePF704: a group point (PFWInj.PF) is held like a top-level
// one.
func TestHeldImagePF704(t *testing.T) {
	inst := model(t, 704, map[string]float64{"PFWInjEna": 1, "PFWInjRvrtTms": 60})
	if err := inst.SetRaw("PF_SF", uint64(uint16(0xfffd))); err != nil { // 10^-3
		t.Fatal(err)
	}
	pf := inst.Root.Groups("PFWInj")
	if err := inst.SetIn(&pf[0], "PF", 0.9); err != nil {
		t.Fatal(err)
	}
	h := newHeldImage(ctlPFInj, inst)
	if h == nil || !slices.Contains(h.names, "PFWInj.PF") {
		t.Fatalf("held image of the 704 PF: %+v", h)
	}
	h.note(inst, 1, false)
	c, _ := sunspec.NewInstance(inst.Model, inst.Addr, slices.Clone(inst.Regs))
	g := c.Root.Groups("PFWInj")
	if err := c.SetIn(&g[0], "PF", 1); err != nil {
		t.Fatal(err)
	}
	if i, ok := h.differs(c.Regs, 3); !ok || i < 0 || h.names[i] != "PFWInj.PF" {
		t.Fatalf("PF changed: %d, %v", i, ok)
	}
	if got := h.describe(c.Regs); !strings.Contains(got, "PFWInj.PF found 1, wanted 0.9") {
		t.Errorf("describe: %q", got)
	}
}

// BenchmarkCheckHeld is the tamper check's cost per device per cycle,
// with a new poll to judge every time (the worst case: a device polled
// as often as the cycle runs): the limit held on a 704 inverter, and the
// limit, connection and power factor held on a 123 one.
func BenchmarkCheckHeld(b *testing.B) {
	for _, tc := range []struct {
		name  string
		model uint16
		ctls  []control
		pts   map[string]float64
	}{
		{"704-limit", 704, []control{ctlLimit}, map[string]float64{"WMaxLimPct": 20, "WMaxLimPctEna": 1}},
		{"123-limit-conn-pf", 123, []control{ctlLimit, ctlConnect, ctlPFInj}, map[string]float64{"WMaxLimPct": 20, "WMaxLim_Ena": 1, "OutPFSet": 0.95, "OutPFSet_Ena": 1}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			inst := model(b, tc.model, tc.pts)
			info := plant.DeviceInfo{ID: "inv1", PlantID: "p", Kind: kind.Inverter}
			live := plant.NewLive([]plant.Plant{{ID: "p"}}, []plant.DeviceInfo{info}, nil)
			c := &Controller{live: live, log: slog.New(slog.DiscardHandler), devs: map[string]*devCtl{}}
			dc := c.dev("inv1")
			live.Apply(plant.Sample{Device: "inv1", Time: time.Now(), Registers: regsOf(model(b, 103, map[string]float64{"W": 2000}), inst)})
			for _, k := range tc.ctls {
				c.noteHeld(dc, "inv1", k, inst, false)
			}
			for range 3 {
				live.Apply(plant.Sample{Device: "inv1", Time: time.Now(), Registers: regsOf(inst)})
			}
			d := plant.DeviceLive{Info: info}
			now := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				for _, h := range dc.held {
					h.judged = 0
				}
				c.checkHeld(b.Context(), d, dc, nil, now)
			}
			if c.stats.Tampered["inv1"] != 0 {
				b.Fatal("a difference where there is none")
			}
		})
	}
}

// BenchmarkHeldDiffers100 is one look of the watcher at 100 inverters,
// each holding the limit on its 704, every poll new (it looks four times
// a cycle).
func BenchmarkHeldDiffers100(b *testing.B) {
	inst := model(b, 704, map[string]float64{"WMaxLimPct": 20, "WMaxLimPctEna": 1})
	var infos []plant.DeviceInfo
	for i := range 100 {
		infos = append(infos, plant.DeviceInfo{ID: fmt.Sprintf("inv%03d", i), PlantID: "p", Kind: kind.Inverter})
	}
	live := plant.NewLive([]plant.Plant{{ID: "p"}}, infos, nil)
	c := &Controller{live: live, log: slog.New(slog.DiscardHandler), devs: map[string]*devCtl{}}
	for _, in := range infos {
		live.Apply(plant.Sample{Device: in.ID, Time: time.Now(), Registers: regsOf(inst)})
		c.noteHeld(c.dev(in.ID), in.ID, ctlLimit, inst, false)
		for range 3 {
			live.Apply(plant.Sample{Device: in.ID, Time: time.Now(), Registers: regsOf(inst)})
		}
	}
	var buf []uint16
	b.ReportAllocs()
	for b.Loop() {
		if c.heldDiffers(&buf) {
			b.Fatal("a difference where there is none")
		}
	}
}

// regsOf are the registers of models as a poll hands them to Live.
func regsOf(models ...*sunspec.Instance) []plant.ModelRegisters {
	var out []plant.ModelRegisters
	for _, m := range models {
		out = append(out, plant.ModelRegisters{Model: m.Model.ID, Regs: m.Regs})
	}
	return out
}
