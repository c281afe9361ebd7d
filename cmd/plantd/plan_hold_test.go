package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"plantd/config"
	"plantd/devices"
	"plantd/internal/proctest"
	"plantd/sim/simtest"
	"plantd/sunspec"
)

// TestPlanHoldTakesPV is the plan's hold with the real binary when the
// sun beats the forecast: a plant without a location (no PV forecast:
// the plan sees PV 0), its battery at 20 % (1 kWh above the 10 %
// reserve), 0.30 EUR/kWh now and 0.45 from an hour from now for four
// hours. The plan keeps the battery's energy for the dearer hours (a
// hold), but the simulator's sun is a clear summer noon: the battery's
// registers show the no-discharge control (124 StorCtl_Mod 2, OutWRte 0,
// ChaGriSet PV, not the full hold's 0 W), its SoC rises from the PV
// surplus, and when the house then draws more than PV gives it stays at
// 0 W, the grid carrying the house. It never discharges.
func TestPlanHoldTakesPV(t *testing.T) {
	t.Parallel() // its own simulator and binary
	if testing.Short() {
		t.Skip("runs plantd with a battery under the plan's hold (~20 s)")
	}
	cfg := batteryPlantConfig()
	cfg.Start, cfg.ClearSky = time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC), true
	p := simtest.Start(t, cfg)

	var b []byte
	for _, id := range []string{"inv1", "inv2", "meter", "bat"} {
		host, port, _ := net.SplitHostPort(p.Device(id).Addr())
		b = fmt.Appendf(b, "  - {id: %s, host: %s, port: %s, pollInterval: 500ms, timeout: 1s}\n", id, host, port)
	}
	h := time.Now().Truncate(15 * time.Minute).In(mustLocation(t, "Europe/Berlin"))
	peak := fmt.Sprintf("%s-%s 0.45", h.Add(time.Hour).Format("15:04"), h.Add(5*time.Hour).Format("15:04"))
	dir := t.TempDir()
	path := filepath.Join(dir, "plantd.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, `http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: Home, timezone: Europe/Berlin, battery: {reserveSoc: 10}}
devices:
%stokens:
  - {name: std, sha256: %s, role: standard}
tariffs:
  plant: p1
  import: {fixed: ["0.30", %q]}
  feedIn: {fixed: 0.08}
`, filepath.Join(dir, "plantd.db"), b, config.TokenHash(tokStd), peak), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, path)
	defer d.stop()
	d.waitAPI(30 * time.Second)
	d.waitOnline(20*time.Second, "inv1", "inv2", "meter", "bat")

	// The battery's 124 storage control, read from the simulator's
	// registers.
	bat := p.Device("bat")
	regs := bat.Registers()
	sd, err := devices.Discover(t.Context(), regs)
	if err != nil {
		t.Fatal(err)
	}
	ref, ok := sd.Ref(124)
	if !ok {
		t.Fatal("the battery has no model 124")
	}
	storage := func() string {
		inst, err := sunspec.ReadModel(t.Context(), regs, ref)
		if err != nil {
			return err.Error()
		}
		f := func(n string) float64 { v, _ := inst.Float(n); return v }
		return fmt.Sprintf("StorCtl_Mod %g OutWRte %g ChaGriSet %g", f("StorCtl_Mod"), f("OutWRte"), f("ChaGriSet"))
	}
	const noDischarge = "StorCtl_Mod 2 OutWRte 0 ChaGriSet 0"
	// The plan of the battery (a plan made before the first polls knows
	// none: SoC 0), its slot of now a hold, and the battery's registers.
	var pl struct {
		Steps []struct {
			Battery string
			SoCPct  float64
			PVW     float64
		}
	}
	proctest.WaitFor(t, "the plan's hold on the battery's registers", 60*time.Second, func() bool {
		code, body := d.request("GET", "/gateway/v1/plan", tokStd, "")
		if err := json.Unmarshal(body, &pl); code == 200 && err == nil && len(pl.Steps) > 0 && pl.Steps[0].SoCPct > 0 &&
			pl.Steps[0].Battery == "hold" && storage() == noDischarge {
			return true
		}
		t.Logf("124 %s; plan %.400s", storage(), body)
		return false
	})
	if s := pl.Steps[0]; s.PVW != 0 {
		t.Errorf("plan's slot of now %+v: want PV 0 (no forecast)", s)
	}

	// The sun the forecast did not see: the battery takes it.
	maxW := 0.0
	watch := func() { maxW = max(maxW, p.Balance().BatteryW) }
	soc0 := bat.State().SoCPct
	proctest.WaitFor(t, "the SoC rising from PV", 10*time.Second, func() bool {
		watch()
		return bat.State().SoCPct > soc0+0.05 && p.Balance().BatteryW < -1000
	})
	sun := p.Balance()
	t.Logf("sun: PV %.0f W, house %.0f W, battery %+.0f W, grid %+.0f W; SoC %.3f -> %.3f %%", sun.PVW, sun.LoadW, sun.BatteryW, sun.GridW, soc0, bat.State().SoCPct)

	// A deficit: the house draws 2 kW more than PV gives. On its own the
	// battery would cover it; held, it stays at 0 W.
	p.SetLoadOffset(sun.PVW + 2000)
	proctest.WaitFor(t, "the battery at 0 W, the grid carrying the house", 10*time.Second, func() bool {
		watch()
		b := p.Balance()
		return b.BatteryW == 0 && b.GridW > 1500
	})
	soc1 := bat.State().SoCPct
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		watch()
		if s := storage(); s != noDischarge {
			t.Fatalf("124 reads %s during the hold, want %s", s, noDischarge)
		}
	}
	deficit := p.Balance()
	t.Logf("deficit: PV %.0f W, house %.0f W, battery %+.0f W, grid %+.0f W; SoC %.3f -> %.3f %% in 3 s", deficit.PVW, deficit.LoadW, deficit.BatteryW, deficit.GridW, soc1, bat.State().SoCPct)
	if maxW > 0 {
		t.Errorf("the battery discharged %.0f W during the hold", maxW)
	}
	if soc2 := bat.State().SoCPct; soc2 < soc1 {
		t.Errorf("SoC fell %.4f -> %.4f %% during the hold", soc1, soc2)
	}
}
