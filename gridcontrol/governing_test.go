package gridcontrol_test

import (
	"context"
	"testing"
	"time"

	"plantd/gridcontrol"
)

// TestGoverningLimit: the limit in force is the most restrictive of the
// channels' windows, whoever sent it, and none once they end.
func TestGoverningLimit(t *testing.T) {
	r := newRig(t, rigOpts{}) // its controller runs (newRig starts it)
	gc := r.controller()
	<-gc.Loaded()
	ctx := context.Background()
	if _, ok, err := gc.GoverningLimit("demo"); err != nil || ok {
		t.Fatalf("no window: ok %v err %v", ok, err)
	}
	if _, _, err := gc.GoverningLimit("nope"); err == nil {
		t.Error("unknown plant: no error")
	}
	pct := func(v float64) *float64 { return &v }
	op, err := gc.Submit(ctx, "demo", gridOperator, []gridcontrol.Order{{Command: "opModMaxLimW", For: time.Hour, Value: pct(20), Unit: "%"}})
	if err != nil {
		t.Fatal(err)
	}
	master := gridcontrol.Origin{Door: gridcontrol.DoorModbus, Name: "127.0.0.2", Role: installer.Role, Channel: "modbus:127.0.0.2"}
	mine, err := gc.Submit(ctx, "demo", master, []gridcontrol.Order{{Command: "opModMaxLimW", For: time.Hour, Value: pct(50), Unit: "%"}})
	if err != nil {
		t.Fatal(err)
	}
	lim, ok, err := gc.GoverningLimit("demo")
	if err != nil || !ok || lim.Pct != 20 || lim.ScheduleID != op.ScheduleID || lim.Role != "gridoperator" || lim.Command != "opModMaxLimW" {
		t.Fatalf("operator 20 %%, master 50 %%: %+v %v %v", lim, ok, err)
	}
	// The operator's window ends: the master's governs.
	if err := gc.Cancel(ctx, "demo", op.ScheduleID, gridOperator); err != nil {
		t.Fatal(err)
	}
	lim, ok, err = gc.GoverningLimit("demo")
	if err != nil || !ok || lim.Pct != 50 || lim.ScheduleID != mine.ScheduleID || lim.CreatedBy != "modbus:127.0.0.2 (installer)" ||
		lim.Channel != "modbus:127.0.0.2" || !lim.End.Equal(mine.Commands[0].End) {
		t.Fatalf("the master's 50 %%: %+v %v %v", lim, ok, err)
	}
	if err := gc.Cancel(ctx, "demo", mine.ScheduleID, master); err != nil {
		t.Fatal(err)
	}
	if lim, ok, _ := gc.GoverningLimit("demo"); ok {
		t.Errorf("every window ended: %+v", lim)
	}
}
