package gridcontrol_test

import (
	"fmt"
	"testing"
	"time"

	"plantd/gridcontrol"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/sim/simtest"
)

// TestSlowInverterKeepsOthersLimit: a grid operator's 20 % holds on both
// inverters with a 4 s reversion timeout (renewed at 2 s); then inv1
// answers every request in 0.9 s, just within its 1 s timeout, for 20 s.
// inv2, which answers at once, must stay at 20 % in every sample of its
// registers: the cycle does not wait for inv1's writes past
// Config.DeviceWait. Before, each cycle waited for every device, inv2's
// renewals came late and its limit in effect lapsed to 100 %.
func TestSlowInverterKeepsOthersLimit(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{cfg: gridcontrol.Config{RevertTimeout: 4 * time.Second, Cycle: time.Second}})
	start, end := r.window(time.Second, 10*time.Minute)
	if _, err := r.controller().SubmitJSON(t.Context(), "demo", gridOperator, []byte(body(limitCmd("opModMaxLimW", start, end, 20)))); err != nil {
		t.Fatal(err)
	}
	r.await("20 % on both", 20*time.Second, func() bool { return r.limitOf("inv1") == 20 && r.limitOf("inv2") == 20 })
	simtest.Device(t, r.sim, "inv1").SetFault(sim.Fault{Kind: sim.FaultSlow, Delay: 900 * time.Millisecond})
	samples, hs := highestLimits(r, time.After(20*time.Second), "inv2", "inv1")
	highest, slowHighest := hs[0], hs[1]
	t.Logf("%d samples at 10 Hz: inv2's highest limit in effect %g %%, slow inv1's %g %%", samples, highest, slowHighest)
	if highest > 20 {
		t.Errorf("inv2's limit in effect rose to %g %% under the operator's 20 %% while inv1 answered slowly", highest)
	}
}

// TestBusyBusKeepsLimit: an inverter shares its gateway (one endpoint,
// as on an RS485 bus behind a converter) with ten meters that answer
// each request in 200 ms; the poller, every 250 ms, keeps the
// endpoint's queue full. The grid operator's 20 % with a 4 s reversion
// (renewed at 2 s) must hold in every sample of the inverter's
// registers: grid control's requests take the endpoint's turn before
// the queued polls (modbus.Endpoint.ControlUnit). In first-come order a
// renewal's every request waited behind the whole bus's polls and the
// limit lapsed to 100 %.
func TestBusyBusKeepsLimit(t *testing.T) {
	t.Parallel()
	const meters = 10
	devs := []sim.DeviceConfig{{ID: "inv1", Kind: kind.Inverter, Unit: 1, Endpoint: "bus"}}
	for i := range meters {
		devs = append(devs, sim.DeviceConfig{ID: fmt.Sprintf("meter%d", i+1), Kind: kind.Meter, Unit: byte(i + 2), Endpoint: "bus"})
	}
	r := newRig(t, rigOpts{devices: devs, cfg: gridcontrol.Config{RevertTimeout: 4 * time.Second, Cycle: time.Second}})
	for i := range meters {
		simtest.Device(t, r.sim, fmt.Sprintf("meter%d", i+1)).SetFault(sim.Fault{Kind: sim.FaultSlow, Delay: 200 * time.Millisecond})
	}
	start, end := r.window(time.Second, 10*time.Minute)
	if _, err := r.controller().SubmitJSON(t.Context(), "demo", gridOperator, []byte(body(limitCmd("opModMaxLimW", start, end, 20)))); err != nil {
		t.Fatal(err)
	}
	r.await("20 % on inv1", 30*time.Second, func() bool { return r.limitOf("inv1") == 20 })
	samples, hs := highestLimits(r, time.After(20*time.Second), "inv1")
	highest := hs[0]
	t.Logf("%d samples at 10 Hz: inv1's highest limit in effect %g %%", samples, highest)
	if highest > 20 {
		t.Errorf("inv1's limit in effect rose to %g %% under the operator's 20 %% on a busy bus", highest)
	}
}
