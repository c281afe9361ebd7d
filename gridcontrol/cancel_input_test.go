package gridcontrol_test

import (
	"context"
	"testing"
	"time"

	"plantd/gridcontrol"
)

// TestCancelHandsBackToOlderWindow: Cancel as an input uses it: ending a grid operator's newer window (an input's
// signal that went) hands the plant back to the role's older window it had
// superseded, not to "no limit"; the ended schedule is listed done and an
// unknown one is an error.
func TestCancelHandsBackToOlderWindow(t *testing.T) {
	r := newRig(t, rigOpts{})
	gc := r.controller()
	ctx := context.Background()
	limit := func(id string) float64 { return r.sim.Device(id).State().EffectiveLimitPct }
	both := func(pct float64) func() bool {
		return func() bool { return limit("inv1") == pct && limit("inv2") == pct }
	}
	cloud, err := gc.Submit(ctx, "demo", []byte(`{"commands":[{"command":"opModMaxLimW","start":"+0s","end":"+1h","value":50,"unit":"%"}]}`), false, gridOperator)
	if err != nil {
		t.Fatal(err)
	}
	r.waitFor(10*time.Second, "the cloud's 50 %", both(50))
	input := gridcontrol.Origin{Name: "input:rcr/K3", Role: gridOperator.Role}
	in, err := gc.Submit(ctx, "demo", []byte(`{"commands":[{"command":"opModMaxLimW","start":"+0s","end":"+24h","value":30,"unit":"%"}]}`), true, input)
	if err != nil {
		t.Fatal(err)
	}
	r.waitFor(10*time.Second, "the input's 30 %", both(30))
	if err := gc.Cancel(ctx, "demo", in.ScheduleID, input); err != nil {
		t.Fatal(err)
	}
	r.waitFor(10*time.Second, "the cloud's 50 % again", both(50))
	status := map[string]gridcontrol.Status{}
	r.waitFor(10*time.Second, "the input's window done, the cloud's active", func() bool {
		scheds, err := gc.Schedules("demo")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range scheds {
			status[s.ScheduleID] = s.Commands[0].Status
		}
		return status[in.ScheduleID] == gridcontrol.StatusDone && status[cloud.ScheduleID] == gridcontrol.StatusActive
	})
	if err := gc.Cancel(ctx, "demo", "nope", input); err == nil {
		t.Error("ending an unknown schedule: no error")
	}
	if err := gc.Cancel(ctx, "demo", in.ScheduleID, input); err != nil {
		t.Errorf("ending it again: %v, want nil", err)
	}
}
