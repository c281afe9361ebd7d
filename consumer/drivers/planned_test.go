package drivers

import (
	"path/filepath"
	"testing"
	"time"

	"plantd/consumer"
	"plantd/internal/proctest"
	"plantd/modbus"
	"plantd/plant"
	"plantd/sim"
	"plantd/sim/simtest"
)

// TestPlannedHeatPump follows the day-ahead plan's steps (SetPlanned)
// with the simulated SG-Ready heat pump on the relay board (Modbus TCP)
// and a SQLite store, judged by the pump's state in the simulator: the
// plan's 4 and 3 run it in mode Auto without surplus, the grid
// operator's §14a cap still locks it over the plan, the minimum on time
// still holds it, a planned lock (1) counts only where the config allows
// it (planLock), and a plan ended or cleared leaves it to the surplus.
func TestPlannedHeatPump(t *testing.T) {
	p := simtest.Start(t, sim.Config{
		Devices: []sim.DeviceConfig{{ID: "rb", Relay: true, Unit: 3}},
		Loads:   []sim.LoadConfig{{ID: "hp", Kind: sim.LoadSGReady, Board: "rb", Coil: 2}},
	})
	pool := modbus.NewPool(nil)
	t.Cleanup(func() { _ = pool.Close() })
	clk := simtest.NewClock(time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC))
	rr := &restartRig{rig: &rig{clk: clk, p: p, rb: simtest.Device(t, p, "rb"), pool: pool},
		path: filepath.Join(t.TempDir(), "plantd.db"), note: make(chan struct{}, 1), dimMinW: 1000}
	ctx := t.Context()

	type step struct {
		name    string
		advance time.Duration
		// plan: the step handed over (SGReady, for a while from now);
		// clear: ClearPlanned; dim: the grid operator's dimming after it.
		plan       int
		planFor    time.Duration
		clear      bool
		dim        *bool
		exportW    float64
		wantSG     int
		wantReason string
	}
	on, off := true, false
	tests := []struct {
		name  string
		lock  bool
		steps []step
	}{
		{"plan may not lock", false, []step{
			{name: "a cheap slot: forced without surplus", plan: consumer.SGForced, planFor: 15 * time.Minute, exportW: -2000, wantSG: consumer.SGForced, wantReason: plant.ReasonPlan},
			{name: "the grid operator dims: locked over the plan", dim: &on, exportW: -2000, wantSG: consumer.SGLocked, wantReason: plant.ReasonDimmed},
			{name: "dimming ends: the plan's 4 again", advance: time.Minute, dim: &off, exportW: -2000, wantSG: consumer.SGForced, wantReason: plant.ReasonPlan},
			{name: "the next slot: recommended", advance: time.Minute, plan: consumer.SGRecommend, planFor: 15 * time.Minute, exportW: -2000, wantSG: consumer.SGRecommend, wantReason: plant.ReasonPlan},
			{name: "a planned lock not allowed: the minimum on time holds it", plan: consumer.SGLocked, planFor: 15 * time.Minute, exportW: -2000, wantSG: consumer.SGRecommend, wantReason: plant.ReasonMinOnTime},
			{name: "a planned lock not allowed: normal without surplus", advance: 2 * time.Minute, exportW: -2000, wantSG: consumer.SGNormal, wantReason: plant.ReasonNoSurplus},
			{name: "the step ends: surplus decides", advance: 15 * time.Minute, exportW: 3000, wantSG: consumer.SGRecommend, wantReason: plant.ReasonSurplus},
		}},
		{"plan may lock", true, []step{
			{name: "a dear slot: locked by the plan", advance: 3 * time.Minute, plan: consumer.SGLocked, planFor: 15 * time.Minute, exportW: -2000, wantSG: consumer.SGLocked, wantReason: plant.ReasonPlan},
			{name: "surplus does not end a planned lock", exportW: 3000, wantSG: consumer.SGLocked, wantReason: plant.ReasonPlan},
			{name: "the plan falls back: surplus-only", advance: 3 * time.Minute, clear: true, exportW: -2000, wantSG: consumer.SGNormal, wantReason: plant.ReasonNoSurplus},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hp, err := NewSGReady(rr.client("rb"), SGReadyConfig{CoilA: 2, CoilB: 3, Watchdog: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			r := rr.startSpecs(t, consumer.Spec{ID: "hp", PlantID: "p", DriverName: "sgready", Driver: hp, Setpoint: consumer.SetpointSGReady,
				RatedW: 1600, Mode: plant.ModeAuto, Controllable: true, MinOn: 2 * time.Minute, OnW: 1600, OffW: 1400, PlanLock: tt.lock,
				Interval: 50 * time.Millisecond, Timeout: time.Second})
			defer r.stop()
			proctest.WaitFor(t, "the pump read", 10*time.Second, func() bool { return r.status(t, "hp").SGReady != 0 })
			for _, st := range tt.steps {
				clk.Add(st.advance)
				if st.plan != 0 {
					if err := r.m.SetPlanned("hp", consumer.Planned{SGReady: st.plan, Until: clk.Now().Add(st.planFor)}); err != nil {
						t.Fatal(err)
					}
				}
				if st.clear {
					r.m.ClearPlanned("p")
				}
				if st.dim != nil {
					r.m.Dim("p", *st.dim)
				}
				r.absorb(ctx, clk.Now(), st.exportW)
				proctest.WaitFor(t, st.name, 10*time.Second, func() bool { return rr.load(t, "hp").SGReady == st.wantSG })
				cs := r.status(t, "hp")
				if cs.Reason != st.wantReason {
					t.Errorf("%s: reason %s, want %s", st.name, cs.Reason, st.wantReason)
				}
				if st.wantReason == plant.ReasonPlan && (cs.Planned == nil || cs.Planned.SGReady != st.wantSG) {
					t.Errorf("%s: planned %+v in the status, want SG-Ready %d", st.name, cs.Planned, st.wantSG)
				}
			}
		})
	}
}
