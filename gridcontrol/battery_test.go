package gridcontrol_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"plantd/gridcontrol"
	"plantd/modbus"
	"plantd/sim"
	"plantd/sim/simtest"
	"plantd/sunspec"
)

// The battery setpoint (BatteryPower) on the demo plant at night (no PV,
// the house drawing about 0.4 kW), over loopback Modbus TCP: judged by
// the battery's and the grid meter's registers, read by a second Modbus
// master, and by the simulated battery's state of charge.

// midnight is the demo plant at 23:00: PV is 0, the battery covers the
// house on its own (self-consumption).
var midnight = time.Date(2026, 6, 21, 23, 0, 0, 0, mustLoc("Europe/Berlin"))

// plan is the origin of the tests' battery setpoints.
var plan = gridcontrol.PlanOrigin("test")

// master is a second Modbus master on the simulated devices: its own
// connections, as another tool on the LAN.
type master struct {
	r    *rig
	pool *modbus.Pool
}

func newMaster(r *rig) *master {
	m := &master{r: r, pool: modbus.NewPool(nil)}
	r.t.Cleanup(func() { _ = m.pool.Close() })
	return m
}

// model reads a model of a device.
func (m *master) model(id string, model uint16) *sunspec.Instance {
	m.r.t.Helper()
	d, _ := m.r.live.Device(id)
	ref, ok := d.Discovered.(*sunspec.Device).Ref(model)
	if !ok {
		m.r.t.Fatalf("device %s has no model %d", id, model)
	}
	sd := simtest.Device(m.r.t, m.r.sim, id)
	rw := m.pool.Endpoint(modbus.EndpointConfig{Address: sd.Addr(), Timeout: time.Second}).ControlUnit(sd.Unit(), time.Second)
	var err error
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		var inst *sunspec.Instance
		inst, err = sunspec.ReadModel(ctx, rw, ref)
		cancel()
		if err == nil {
			return inst
		}
	}
	m.r.t.Fatalf("read model %d of %s: %v", model, id, err)
	return nil
}

// point reads one point of a model.
func (m *master) point(id string, model uint16, name string) float64 {
	m.r.t.Helper()
	v, err := m.model(id, model).Float(name)
	if err != nil {
		m.r.t.Fatalf("%s model %d %s: %v", id, model, name, err)
	}
	return v
}

// write sets points of a model as another master.
func (m *master) write(id string, model uint16, points map[string]float64) {
	m.r.t.Helper()
	d, _ := m.r.live.Device(id)
	ref, _ := d.Discovered.(*sunspec.Device).Ref(model)
	sd := simtest.Device(m.r.t, m.r.sim, id)
	rw := m.pool.Endpoint(modbus.EndpointConfig{Address: sd.Addr(), Timeout: time.Second}).ControlUnit(sd.Unit(), time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := sunspec.WriteModel(ctx, rw, ref, func(inst *sunspec.Instance) error {
		for n, v := range points {
			if err := inst.Set(n, v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		m.r.t.Fatalf("write model %d of %s: %v", model, id, err)
	}
}

// storage is the battery's 124 control as read over Modbus.
type storage struct{ mod, in, out, grid, rvrt float64 }

func (m *master) storage() storage {
	m.r.t.Helper()
	inst := m.model("bat", 124)
	f := func(n string) float64 {
		v, err := inst.Float(n)
		if err != nil {
			m.r.t.Fatalf("124 %s: %v", n, err)
		}
		return v
	}
	return storage{f("StorCtl_Mod"), f("InWRte"), f("OutWRte"), f("ChaGriSet"), f("InOutWRte_RvrtTms")}
}

func (s storage) String() string {
	return fmt.Sprintf("StorCtl_Mod %g InWRte %g OutWRte %g ChaGriSet %g RvrtTms %g", s.mod, s.in, s.out, s.grid, s.rvrt)
}

// selfConsumption is the simulated battery's default 124 control.
var selfConsumption = storage{mod: 0, in: 100, out: 100, grid: 0, rvrt: 0}

// charging3kW is a charge of 3 kW from the grid on the 5 kW battery.
func charging3kW(rvrt float64) storage { return storage{mod: 3, in: 60, out: -60, grid: 1, rvrt: rvrt} }

// batteryWindow is the newest battery setpoint's window.
func batteryWindow(t *testing.T, r *rig) gridcontrol.ScheduledCmd {
	t.Helper()
	list, err := r.controller().Schedules("demo", gridcontrol.BatteryWindows(true))
	if err != nil || len(list) == 0 {
		t.Fatalf("battery windows: %v (%d)", err, len(list))
	}
	return list[len(list)-1].Commands[0]
}

func setBattery(t *testing.T, r *rig, w float64, d time.Duration) {
	t.Helper()
	if _, err := r.controller().SetBatteryPower(context.Background(), plan, "demo", w, time.Now().Add(d)); err != nil {
		t.Fatalf("SetBatteryPower(%g W): %v", w, err)
	}
}

// TestBatteryForcedChargeFromGrid: a charge of 3 kW from the grid shows on
// the battery's registers (124 as written, 802 W about -3 kW, SoC
// rising) and as import at the grid meter (the time it took logged: two
// control cycles and a read on a quiet machine); the release gives the
// battery its own control back.
func TestBatteryForcedChargeFromGrid(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{clockAt: midnight})
	m := newMaster(r)
	soc0 := m.point("bat", 802, "SoC")
	began := time.Now()
	setBattery(t, r, -3000, 10*time.Minute)
	var batW, gridW, loadW float64
	r.await("the battery charging 3 kW from the grid", 5*time.Second, func() bool {
		batW, gridW = m.point("bat", 802, "W"), m.point("meter", 203, "W")
		loadW = r.sim.Balance().LoadW
		return batW <= -2950 && gridW >= loadW+2900
	})
	took := time.Since(began)
	t.Logf("charging %.0f W, grid import %.0f W (house %.0f W) %s after the call; 124: %s", -batW, gridW, loadW, took.Round(time.Millisecond), m.storage())
	// How fast is a figure, not a test's bound (it failed at 1.24 s
	// under a loaded -race suite): the await above is the event.
	if got, want := m.storage(), charging3kW(r.cfg.RevertTimeout.Seconds()); got != want {
		t.Errorf("124 reads %s, want %s", got, want)
	}
	r.await("the state of charge rising", 10*time.Second, func() bool { return m.point("bat", 802, "SoC") > soc0 })
	if err := r.controller().ReleaseBatteryPower(context.Background(), plan, "demo"); err != nil {
		t.Fatal(err)
	}
	r.await("124 restored and the battery covering the house again", 5*time.Second, func() bool {
		return m.storage() == selfConsumption && m.point("bat", 802, "W") > 0
	})
	if !r.logHas("BatterySetpoint", "charge 3000 W") || !r.logHas("BatterySetpointReleased") || !r.logHas("GridControlRestored", "bat", "battery") {
		t.Error("the plant log does not say when the setpoint started and ended")
	}
}

// TestBatteryHold: a hold keeps the battery at 0 W and its SoC flat while
// the house draws 5 kW more than usual (on its own the battery would
// cover it); the grid carries the house.
func TestBatteryHold(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{clockAt: midnight})
	m := newMaster(r)
	r.sim.SetLoadOffset(5000)
	r.await("the battery covering the house", 5*time.Second, func() bool { return m.point("bat", 802, "W") > 4000 })
	setBattery(t, r, 0, 10*time.Minute)
	r.await("the battery holding", 5*time.Second, func() bool { return m.point("bat", 802, "W") == 0 })
	bat := simtest.Device(t, r.sim, "bat")
	soc0, reg0 := bat.State().SoCPct, m.point("bat", 802, "SoC")
	deadline := time.Now().Add(3 * time.Second)
	var minGrid float64 = math.Inf(1)
	for time.Now().Before(deadline) {
		if w := m.point("bat", 802, "W"); w != 0 {
			t.Fatalf("battery at %g W during the hold", w)
		}
		minGrid = math.Min(minGrid, m.point("meter", 203, "W")-r.sim.Balance().LoadW)
	}
	soc1, reg1 := bat.State().SoCPct, m.point("bat", 802, "SoC")
	t.Logf("hold: SoC %.4f %% -> %.4f %% (registers %g -> %g) in 3 s, the meter's import at least the house's %+.0f W", soc0, soc1, reg0, reg1, minGrid)
	if soc1 != soc0 || reg1 != reg0 {
		t.Errorf("SoC moved during the hold: %.4f -> %.4f %% (registers %g -> %g)", soc0, soc1, reg0, reg1)
	}
	if minGrid < -50 {
		t.Errorf("the meter's import fell %.0f W below the house's draw: the battery is not holding", -minGrid)
	}
	if got := m.storage(); got.mod != 3 || got.in != 0 || got.out != 0 {
		t.Errorf("124 reads %s, want StorCtl_Mod 3, InWRte 0, OutWRte 0", got)
	}
}

// TestBatteryTamperedRewritten: another master setting OutWRte back to
// 100 % during a forced charge is written over within 2 s, logged once.
func TestBatteryTamperedRewritten(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{clockAt: midnight})
	r.tamperOK.Store(true)
	m := newMaster(r)
	setBattery(t, r, -3000, 10*time.Minute)
	want := charging3kW(r.cfg.RevertTimeout.Seconds())
	r.await("the charge written", 5*time.Second, func() bool { return m.storage() == want })
	// Its write read back and done (a write landing between plantd's
	// write and its read-back is a failed write, retried, not this).
	r.await("the window applied", 5*time.Second, func() bool { return batteryWindow(t, r).AppliedAt != nil })
	m.write("bat", 124, map[string]float64{"OutWRte": 100})
	wrote := time.Now()
	if got := m.storage(); got.out != 100 {
		t.Fatalf("the other master's write did not land: %s", got)
	}
	r.await("OutWRte written again", 5*time.Second, func() bool { return m.storage() == want })
	took := time.Since(wrote)
	t.Logf("OutWRte 100 %% by another master written over after %s", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("rewritten after %s, want within 2 s", took)
	}
	if !r.logHas("ControlTampered", "bat", "battery", "OutWRte found 100") {
		// The watcher may have judged it before the cycle's read: look a
		// little longer before failing.
		r.await("the episode logged", 5*time.Second, func() bool { return r.logHas("ControlTampered", "bat", "battery", "OutWRte found 100") })
	}
	if n := r.logCount("ControlTampered"); n != 1 {
		t.Errorf("%d ControlTampered entries, want 1 (one episode)", n)
	}
}

// TestBatteryRevertsWhenPlantdKilled: with plantd killed during a forced
// charge (nothing written on the way out), the battery's own timer
// (InOutWRte_RvrtTms) gives it back its self-consumption: 124 reads its
// default and the battery covers the house again.
func TestBatteryRevertsWhenPlantdKilled(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{clockAt: midnight, cfg: gridcontrol.Config{RevertTimeout: 3 * time.Second}})
	m := newMaster(r)
	setBattery(t, r, -3000, 10*time.Minute)
	want := charging3kW(3)
	r.await("the charge written", 5*time.Second, func() bool { return m.storage() == want })
	r.kill()
	killed := time.Now()
	if got := m.storage(); got != want {
		t.Fatalf("right after the kill 124 reads %s, want the charge still (%s): something wrote on the way out", got, want)
	}
	st := simtest.Device(t, r.sim, "bat").State()
	left := st.RevertAt.Sub(st.Time)
	r.await("the battery reverted by its timer", 10*time.Second, func() bool {
		s := m.storage()
		return s.mod == 0 && s.in == 100 && s.out == 100 && m.point("bat", 802, "W") > 0
	})
	t.Logf("reverted %s after the kill (its timer had %s left at the kill)", time.Since(killed).Round(time.Millisecond), left.Round(time.Millisecond))
	if left <= 0 || left > 3*time.Second {
		t.Errorf("the battery's timer had %s left at the kill, want within its 3 s", left)
	}
	if time.Since(killed) < time.Second {
		t.Errorf("reverted %s after the kill: too soon for a 3 s timer renewed every 1.5 s", time.Since(killed))
	}
}

// TestBatteryDischargeCappedByFeedInLimit: a forced discharge of 5 kW at
// night exports 4.6 kW until the grid operator's FeedInLimit of 0 W: from
// then on the discharge is capped at the house's draw and the meter's
// export stays within 50 W, the battery still covering the house.
func TestBatteryDischargeCappedByFeedInLimit(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{clockAt: midnight})
	m := newMaster(r)
	setBattery(t, r, 5000, 10*time.Minute)
	r.await("the discharge exporting", 5*time.Second, func() bool { return m.point("meter", 203, "W") < -4000 })
	start, end := r.window(0, 10*time.Minute)
	b := fmt.Sprintf(`{"commands":[{"command":"FeedInLimit","start":%q,"end":%q,"value":0,"unit":"W"}]}`, ts(start), ts(end))
	if _, err := r.controller().SubmitJSON(context.Background(), "demo", gridOperator, []byte(b)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(start))
	r.await("the export within 50 W", 5*time.Second, func() bool { return m.point("meter", 203, "W") >= -50 })
	capped := time.Since(start)
	worst, least := 0.0, math.Inf(1)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		worst = math.Max(worst, -m.point("meter", 203, "W"))
		least = math.Min(least, m.point("bat", 802, "W"))
	}
	sp := r.controller().BatterySetpoints()
	t.Logf("export within 50 W %s after the limit's start; over 5 s: largest export %.0f W, least discharge %.0f W; setpoints %+v", capped.Round(time.Millisecond), worst, least, sp)
	if worst > 50 {
		t.Errorf("export %.0f W under a FeedInLimit of 0 W, want at most 50 W", worst)
	}
	if least < 100 {
		t.Errorf("the battery discharged %.0f W at least: the cap stopped it instead of letting it cover the house", least)
	}
	if len(sp) != 1 || sp[0].WantW != 5000 || sp[0].W >= 1000 {
		t.Errorf("setpoints in force %+v, want bat asked 5000 W and capped below 1000 W", sp)
	}
}

// TestBatterySetpointAcrossRestart: a clean stop gives the battery its
// own control back; the restarted controller writes the stored setpoint
// again in its first cycle.
func TestBatterySetpointAcrossRestart(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{clockAt: midnight})
	m := newMaster(r)
	setBattery(t, r, -3000, 10*time.Minute)
	want := charging3kW(r.cfg.RevertTimeout.Seconds())
	r.await("the charge written", 5*time.Second, func() bool { return m.storage() == want })
	r.stop()
	if got := m.storage(); got != selfConsumption {
		t.Errorf("after a clean stop 124 reads %s, want its default %s", got, selfConsumption)
	}
	began := time.Now()
	r.start()
	r.await("the charge written again", 5*time.Second, func() bool { return m.storage() == want && m.point("bat", 802, "W") <= -2950 })
	took := time.Since(began)
	// A figure (3-10 ms on a quiet machine), not a bound: a loaded -race
	// suite stretches any wall-clock bound.
	t.Logf("in force again %s after the restart", took.Round(time.Millisecond))
}

// TestBattery802Hold: a battery with the DER storage models only (713,
// 802: no power setpoint) takes a hold as reserve bounds at its state of
// charge: it stops covering the house, and the bounds are restored at the
// release. A charge is refused on it: the window fails, nothing written.
func TestBattery802Hold(t *testing.T) {
	t.Parallel()
	devs := sim.DefaultConfig().Devices
	for i := range devs {
		if devs[i].ID == "bat" {
			devs[i].DER = true
		}
	}
	r := newRig(t, rigOpts{clockAt: midnight, devices: devs})
	m := newMaster(r)
	r.sim.SetLoadOffset(5000)
	r.await("the battery covering the house", 5*time.Second, func() bool { return m.point("bat", 802, "W") > 4000 })
	rsvMin, rsvMax := m.point("bat", 802, "SoCRsvMin"), m.point("bat", 802, "SocRsvMax")
	setBattery(t, r, 0, 10*time.Minute)
	r.await("the battery holding", 5*time.Second, func() bool { return m.point("bat", 802, "W") == 0 })
	soc := m.point("bat", 802, "SoC")
	if lo, hi := m.point("bat", 802, "SoCRsvMin"), m.point("bat", 802, "SocRsvMax"); lo != soc || hi != soc {
		t.Errorf("802 reserves %g..%g %%, want both at the SoC %g %%", lo, hi, soc)
	}
	// Another master moving the reserve is written over.
	r.tamperOK.Store(true)
	r.await("the window applied", 5*time.Second, func() bool { return batteryWindow(t, r).AppliedAt != nil })
	m.write("bat", 802, map[string]float64{"SoCRsvMin": 5})
	wrote := time.Now()
	r.await("SoCRsvMin written again", 5*time.Second, func() bool { return m.point("bat", 802, "SoCRsvMin") == soc })
	t.Logf("802 SoCRsvMin 5 %% by another master written over after %s", time.Since(wrote).Round(time.Millisecond))
	if took := time.Since(wrote); took > 2*time.Second {
		t.Errorf("rewritten after %s, want within 2 s", took)
	}
	r.await("the battery holding again", 5*time.Second, func() bool { return m.point("bat", 802, "W") == 0 })
	bat := simtest.Device(t, r.sim, "bat")
	soc0 := bat.State().SoCPct
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if w := m.point("bat", 802, "W"); w != 0 {
			t.Fatalf("battery at %g W during the hold", w)
		}
	}
	if soc1 := bat.State().SoCPct; soc1 != soc0 {
		t.Errorf("SoC moved during the hold: %.4f -> %.4f %%", soc0, soc1)
	}
	if err := r.controller().ReleaseBatteryPower(context.Background(), plan, "demo"); err != nil {
		t.Fatal(err)
	}
	r.await("the reserves restored and the battery covering the house", 5*time.Second, func() bool {
		return m.point("bat", 802, "SoCRsvMin") == rsvMin && m.point("bat", 802, "SocRsvMax") == rsvMax && m.point("bat", 802, "W") > 4000
	})
	sc, err := r.controller().SetBatteryPower(context.Background(), plan, "demo", -3000, time.Now().Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	r.await("the charge failed on the 802 battery", 5*time.Second, func() bool { return batteryWindow(t, r).Status == gridcontrol.StatusFailed })
	if w := batteryWindow(t, r); !strings.Contains(w.Reason, "802") {
		t.Errorf("schedule %s failed with %q, want the reason naming 802", sc.ScheduleID, w.Reason)
	}
	if lo, hi := m.point("bat", 802, "SoCRsvMin"), m.point("bat", 802, "SocRsvMax"); lo != rsvMin || hi != rsvMax {
		t.Errorf("802 reserves %g..%g %% after a refused charge, want the defaults %g..%g %%", lo, hi, rsvMin, rsvMax)
	}
}

// TestBatterySetpointUnderFeedInLimit: at a summer noon under the grid
// operator's FeedInLimit of 0 %, the loop holds PV at the house and the
// battery's charging (5 kW); then the plan asks a hold, a discharge or a
// charge. PV serves the house first: a hold or a discharge leaves the
// battery at 0 W (the discharge capped: PV is held back, it could only be
// exported), and the loop lowers PV in the cycle the battery stops
// charging; a charge of 4 kW takes PV the loop lets through. The export
// stays within 50 W at every cycle (stepped rig: the simulated plant's
// balance after every cycle).
func TestBatterySetpointUnderFeedInLimit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		w, wantW    float64 // the setpoint, the battery's power after 10 s (positive discharging)
		noDischarge bool    // SetBatteryNoDischarge instead of w
	}{
		{"hold", 0, 0, false},
		{"discharge 5 kW", 5000, 0, false},
		{"charge 4 kW", -4000, -4000, false},
		{"no discharge", 0, -5000, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{stepped: true})
			start, _ := r.window(time.Second, 0)
			if _, err := r.controller().SubmitJSON(context.Background(), "demo", gridOperator, []byte(body(limitCmd("FeedInLimit", start, start.Add(time.Hour), 0)))); err != nil {
				t.Fatal(err)
			}
			r.stepTo(start)
			r.await("the loop holding PV at the house and the battery's charging", 30*time.Second, func() bool {
				b := r.sim.Balance()
				return b.BatteryW < -4500 && -b.GridW < 100
			})
			before := r.sim.Balance()
			set := func() (gridcontrol.Schedule, error) {
				return r.controller().SetBatteryPower(context.Background(), plan, "demo", tc.w, r.now().Add(10*time.Minute))
			}
			if tc.noDischarge {
				set = func() (gridcontrol.Schedule, error) {
					return r.controller().SetBatteryNoDischarge(context.Background(), plan, "demo", r.now().Add(10*time.Minute))
				}
			}
			if _, err := set(); err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			var trace []string
			for range 50 { // 10 s of cycles
				r.step(r.clk, r.cfg.Cycle)
				b := r.sim.Balance()
				worst = math.Max(worst, -b.GridW)
				trace = append(trace, fmt.Sprintf("%.0f/%+.0f/%.0f", b.PVW, b.BatteryW, b.GridW))
			}
			after := r.sim.Balance()
			t.Logf("before: pv %.0f W, battery %+.0f W, grid %.0f W; 10 s after the setpoint: pv %.0f W, battery %+.0f W, grid %.0f W; largest export %.0f W", before.PVW, before.BatteryW, before.GridW, after.PVW, after.BatteryW, after.GridW, worst)
			t.Logf("pv/battery/grid W every cycle: %s", strings.Join(trace, " "))
			if math.Abs(after.BatteryW-tc.wantW) > 60 {
				t.Errorf("battery at %+.0f W, want %+.0f W", after.BatteryW, tc.wantW)
			}
			if worst > 50 {
				t.Errorf("export %.0f W under a FeedInLimit of 0 %%, want at most 50 W", worst)
			}
		})
	}
}

// TestBatteryPowerRefused: a setpoint the plant cannot carry or that is
// malformed is refused before anything is stored.
func TestBatteryPowerRefused(t *testing.T) {
	t.Parallel()
	var noBattery []sim.DeviceConfig
	for _, d := range sim.DefaultConfig().Devices {
		if d.ID != "bat" {
			noBattery = append(noBattery, d)
		}
	}
	r := newRig(t, rigOpts{clockAt: midnight, devices: noBattery})
	cases := []struct {
		name  string
		w     float64
		until time.Duration
		field string
		code  string
		says  string // in the message
	}{
		{"no battery", -3000, time.Hour, "commands[0].command", gridcontrol.ReasonNoActiveDevices, "no active battery"},
		{"not a number", math.NaN(), time.Hour, "value", "", "NaN W"},
		{"ended", 1000, -time.Second, "end", "", "not after now"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.controller().SetBatteryPower(context.Background(), plan, "demo", tc.w, time.Now().Add(tc.until))
			var ve *gridcontrol.ValidationError
			if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != tc.field || ve.Fields[0].Code != tc.code || !strings.Contains(ve.Fields[0].Message, tc.says) {
				t.Fatalf("SetBatteryPower(%g W): %v (%+v), want a refusal of %s with code %q", tc.w, err, ve, tc.field, tc.code)
			}
		})
	}
	if list, _ := r.controller().Schedules("demo", gridcontrol.BatteryWindows(true)); len(list) != 0 {
		t.Errorf("%d battery schedules stored after refusals", len(list))
	}
}

// TestBatteryHeldModels: a battery under a setpoint is held on the model
// plantd drives (124 where it has it, not 802 beside it), for a device
// proxy; released, on none.
func TestBatteryHeldModels(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{clockAt: midnight})
	m := newMaster(r)
	if got := r.controller().HeldModels("bat"); len(got) != 0 {
		t.Fatalf("held before a setpoint: %v", got)
	}
	setBattery(t, r, -1000, 10*time.Minute)
	r.await("the charge written", 5*time.Second, func() bool { return m.storage().mod == 3 })
	r.await("held on 124", 5*time.Second, func() bool { return fmt.Sprint(r.controller().HeldModels("bat")) == "[124]" })
	if err := r.controller().ReleaseBatteryPower(context.Background(), plan, "demo"); err != nil {
		t.Fatal(err)
	}
	r.await("held on none", 5*time.Second, func() bool { return len(r.controller().HeldModels("bat")) == 0 })
}

// noDischarge is the 124 control of a no-discharge hold: the discharge
// limit only (StorCtl_Mod 2) at 0 %, the charge rate free, from PV only.
func noDischarge(rvrt float64) storage { return storage{mod: 2, in: 100, out: 0, grid: 0, rvrt: rvrt} }

// TestBatteryNoDischarge: the plan's two holds on a battery with 124 and
// on one with 802 only, judged by the battery's registers, its SoC and
// the grid meter. A no-discharge hold with PV surplus (summer noon) lets
// the battery charge from PV; with a deficit (night, the house drawing
// 5 kW more) the battery stays at 0 W and the grid carries the house; a
// full hold (0 W) with surplus keeps it at 0 W, PV exported.
func TestBatteryNoDischarge(t *testing.T) {
	t.Parallel()
	der := sim.DefaultConfig().Devices
	for i := range der {
		if der[i].ID == "bat" {
			der[i].DER = true
		}
	}
	cases := []struct {
		name     string
		at       time.Time
		devices  []sim.DeviceConfig // nil: the demo plant (bat with 124)
		full     bool               // a full hold (SetBatteryPower 0) instead of no discharge
		charging bool               // the battery charges (else 0 W)
	}{
		{"124 no discharge, PV surplus: charges from PV", noon, nil, false, true},
		{"124 no discharge, deficit: 0 W, the grid carries the house", midnight, nil, false, false},
		{"124 full hold, PV surplus: 0 W", noon, nil, true, false},
		{"802 no discharge, PV surplus: charges from PV", noon, der, false, true},
		{"802 no discharge, deficit: 0 W, the grid carries the house", midnight, der, false, false},
		{"802 full hold, PV surplus: 0 W", noon, der, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{clockAt: tc.at, devices: tc.devices})
			m := newMaster(r)
			is124 := tc.devices == nil
			if tc.at.Equal(midnight) {
				r.sim.SetLoadOffset(5000)
				r.await("the battery covering the house", 5*time.Second, func() bool { return m.point("bat", 802, "W") > 4000 })
			} else {
				r.await("the battery taking PV surplus", 5*time.Second, func() bool { return m.point("bat", 802, "W") < -1000 })
			}
			rsvMax := m.point("bat", 802, "SocRsvMax")
			var err error
			if tc.full {
				_, err = r.controller().SetBatteryPower(context.Background(), plan, "demo", 0, time.Now().Add(10*time.Minute))
			} else {
				_, err = r.controller().SetBatteryNoDischarge(context.Background(), plan, "demo", time.Now().Add(10*time.Minute))
			}
			if err != nil {
				t.Fatal(err)
			}
			r.await("the window applied", 5*time.Second, func() bool { return batteryWindow(t, r).AppliedAt != nil })
			if is124 {
				want := noDischarge(r.cfg.RevertTimeout.Seconds())
				if tc.full {
					want = storage{mod: 3, in: 0, out: 0, grid: 0, rvrt: r.cfg.RevertTimeout.Seconds()}
				}
				if got := m.storage(); got != want {
					t.Errorf("124 reads %s, want %s", got, want)
				}
			} else {
				lo, hi := m.point("bat", 802, "SoCRsvMin"), m.point("bat", 802, "SocRsvMax")
				wantHi := rsvMax
				if tc.full {
					wantHi = lo
				}
				if soc := m.point("bat", 802, "SoC"); lo > soc || lo < soc-1 || hi != wantHi {
					t.Errorf("802 reserves %g..%g %% at SoC %g %%, want SoCRsvMin at the SoC of the first write and SocRsvMax %g", lo, hi, soc, wantHi)
				}
			}
			if tc.charging {
				r.await("the battery charging from PV", 5*time.Second, func() bool { return m.point("bat", 802, "W") < -1000 })
			} else {
				r.await("the battery at 0 W", 5*time.Second, func() bool { return m.point("bat", 802, "W") == 0 })
			}
			bat := simtest.Device(t, r.sim, "bat")
			soc0 := bat.State().SoCPct
			maxW, minW, minGrid, maxGrid := math.Inf(-1), math.Inf(1), math.Inf(1), math.Inf(-1)
			deadline := time.Now().Add(2 * time.Second)
			for time.Now().Before(deadline) {
				w := m.point("bat", 802, "W")
				maxW, minW = math.Max(maxW, w), math.Min(minW, w)
				b := r.sim.Balance()
				g := m.point("meter", 203, "W") - (b.LoadW - b.PVW) // what the meter shows beyond house − PV: − battery
				minGrid, maxGrid = math.Min(minGrid, g), math.Max(maxGrid, g)
			}
			soc1 := bat.State().SoCPct
			t.Logf("over 2 s: battery %+.0f..%+.0f W, meter − (house − PV) %+.0f..%+.0f W, SoC %.4f -> %.4f %%", minW, maxW, minGrid, maxGrid, soc0, soc1)
			if maxW > 0 {
				t.Errorf("the battery discharged %.0f W during a hold", maxW)
			}
			switch {
			case tc.charging && (maxW > -1000 || soc1 <= soc0):
				t.Errorf("battery %+.0f..%+.0f W, SoC %.4f -> %.4f %%: want it charging from the PV surplus", minW, maxW, soc0, soc1)
			case !tc.charging && (minW != 0 || soc1 != soc0):
				t.Errorf("battery %+.0f..%+.0f W, SoC %.4f -> %.4f %%: want 0 W and the SoC flat", minW, maxW, soc0, soc1)
			case !tc.charging && (minGrid < -50 || maxGrid > 50):
				t.Errorf("the meter differs from house − PV by %+.0f..%+.0f W: the grid does not carry the house alone", minGrid, maxGrid)
			}
		})
	}
}

// TestBatteryHoldKindsReplace: the plan switching between its holds
// replaces the window (the older one ends): a full hold, then no
// discharge, then the full hold again, each on the battery's 124 within
// a few cycles, one window open at a time; the same hold again extends
// its window.
func TestBatteryHoldKindsReplace(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{clockAt: noon})
	m := newMaster(r)
	rvrt := r.cfg.RevertTimeout.Seconds()
	full := storage{mod: 3, in: 0, out: 0, grid: 0, rvrt: rvrt}
	open := func() int {
		list, err := r.controller().Schedules("demo", gridcontrol.BatteryWindows(true))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range list {
			for _, c := range s.Commands {
				if c.Status == gridcontrol.StatusActive || c.Status == gridcontrol.StatusPending {
					n++
				}
			}
		}
		return n
	}
	steps := []struct {
		name string
		set  func() (gridcontrol.Schedule, error)
		want storage
	}{
		{"full hold", func() (gridcontrol.Schedule, error) {
			return r.controller().SetBatteryPower(context.Background(), plan, "demo", 0, time.Now().Add(10*time.Minute))
		}, full},
		{"no discharge", func() (gridcontrol.Schedule, error) {
			return r.controller().SetBatteryNoDischarge(context.Background(), plan, "demo", time.Now().Add(10*time.Minute))
		}, noDischarge(rvrt)},
		{"no discharge again", func() (gridcontrol.Schedule, error) {
			return r.controller().SetBatteryNoDischarge(context.Background(), plan, "demo", time.Now().Add(20*time.Minute))
		}, noDischarge(rvrt)},
		{"full hold again", func() (gridcontrol.Schedule, error) {
			return r.controller().SetBatteryPower(context.Background(), plan, "demo", 0, time.Now().Add(10*time.Minute))
		}, full},
	}
	ids := map[string]bool{}
	for _, st := range steps {
		sc, err := st.set()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		ids[sc.ScheduleID] = true
		r.await(st.name+" on 124", 5*time.Second, func() bool { return m.storage() == st.want })
		if n := open(); n != 1 {
			t.Errorf("%s: %d battery windows open, want 1", st.name, n)
		}
	}
	if len(ids) != 3 {
		t.Errorf("%d schedules for four calls, want 3 (the same hold again extends its window)", len(ids))
	}
}
