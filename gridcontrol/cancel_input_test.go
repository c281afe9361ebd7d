package gridcontrol_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"plantd/gridcontrol"
)

// TestCancelHandsBackToOlderWindow: Cancel as an input uses it: ending a grid operator's newer window (an input's
// signal that went) hands the plant back to the role's older window it had
// superseded, not to "no limit"; the ended schedule is listed done and an
// unknown one is an error.
func TestCancelHandsBackToOlderWindow(t *testing.T) {
	r := newRig(t, rigOpts{stepped: true})
	gc := r.controller()
	ctx := context.Background()
	limit := func(id string) float64 { return r.sim.Device(id).State().EffectiveLimitPct }
	both := func(pct float64) func() bool {
		return func() bool { return limit("inv1") == pct && limit("inv2") == pct }
	}
	cloud, err := gc.SubmitJSON(ctx, "demo", gridOperator, []byte(`{"commands":[{"command":"opModMaxLimW","start":"+0s","end":"+1h","value":50,"unit":"%"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r.await("the cloud's 50 %", 10*time.Second, both(50))
	input := gridcontrol.Origin{Door: gridcontrol.DoorInput, Name: "rcr/K3", Role: gridOperator.Role, Channel: "input:rcr"}
	in, err := gc.SubmitJSON(ctx, "demo", input, []byte(`{"commands":[{"command":"opModMaxLimW","start":"+0s","end":"+24h","value":30,"unit":"%"}]}`), gridcontrol.SkipEligibilityCheck(true))
	if err != nil {
		t.Fatal(err)
	}
	r.await("the input's 30 %", 10*time.Second, both(30))
	if in.CreatedBy != "input:rcr/K3 (gridoperator)" {
		t.Errorf("createdBy %q, want the input door, its contacts and role", in.CreatedBy)
	}
	// While its contacts hold, no other origin ends the input's window:
	// not the grid operator's API token, not another input.
	for _, by := range []gridcontrol.Origin{gridOperator, {Door: gridcontrol.DoorInput, Name: "rcr2/K1", Role: gridOperator.Role, Channel: "input:rcr2"}} {
		err := gc.Cancel(ctx, "demo", in.ScheduleID, by)
		var held *gridcontrol.InputHeldError
		if !errors.As(err, &held) || !errors.Is(err, gridcontrol.ErrHeldByInput) || held.Holder != in.CreatedBy {
			t.Errorf("cancel by %s: %v, want an InputHeldError naming %s", by, err, in.CreatedBy)
		}
	}
	if l1, l2 := limit("inv1"), limit("inv2"); l1 != 30 || l2 != 30 {
		t.Errorf("after the refused cancels the limits are %v/%v %%, want 30", l1, l2)
	}
	if err := gc.Cancel(ctx, "demo", in.ScheduleID, input); err != nil {
		t.Fatal(err)
	}
	r.await("the cloud's 50 % again", 10*time.Second, both(50))
	status := map[string]gridcontrol.Status{}
	r.await("the input's window done, the cloud's active", 10*time.Second, func() bool {
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
