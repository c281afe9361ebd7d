package siteplan

import (
	"context"
	"fmt"
	"testing"
	"time"

	"plantd/gridcontrol"
	"plantd/plan"
	"plantd/plant"
)

// gateCalls records the battery calls the runner puts through the gate,
// for TestFollowBattery; the gate's own behaviour is gridcontrol's
// (TestBatteryNoDischarge) and the real binary's (TestPlanHoldTakesPV).
type gateCalls struct {
	nopGate
	calls []string
}

func (g *gateCalls) SetBatteryPower(_ context.Context, _ gridcontrol.Origin, _ string, watts float64, until time.Time) (gridcontrol.Schedule, error) {
	g.calls = append(g.calls, fmt.Sprintf("power %g W until %s", watts, until.Format("15:04")))
	return gridcontrol.Schedule{}, nil
}

func (g *gateCalls) SetBatteryNoDischarge(_ context.Context, _ gridcontrol.Origin, _ string, until time.Time) (gridcontrol.Schedule, error) {
	g.calls = append(g.calls, "no discharge until "+until.Format("15:04"))
	return gridcontrol.Schedule{}, nil
}

func (g *gateCalls) ReleaseBatteryPower(context.Context, gridcontrol.Origin, string) error {
	g.calls = append(g.calls, "release")
	return nil
}

// TestFollowBattery: the slot of now's battery action becomes the gate's
// call until the slot's end and a minute: a hold no discharge, keeping
// room the 0 W hold, a grid charge its power; a charge from PV or a
// discharge (the battery's own self-consumption) releases what the plan
// set before, and nothing when it set nothing; a plan made before the
// battery was known (its steps say hold) holds nothing.
func TestFollowBattery(t *testing.T) {
	t0 := time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		actions []plan.BatteryAction // the slots of now, one run each
		want    []string
		noBat   bool // the plans made without the battery
	}{
		{"hold: no discharge", []plan.BatteryAction{plan.BatteryHold}, []string{"no discharge until 10:16"}, false},
		{"keep room: 0 W both ways", []plan.BatteryAction{plan.BatteryKeepRoom}, []string{"power 0 W until 10:16"}, false},
		{"grid charge", []plan.BatteryAction{plan.BatteryChargeGrid}, []string{"power -3000 W until 10:16"}, false},
		{"self-consumption after a hold: released", []plan.BatteryAction{plan.BatteryHold, plan.BatteryChargePV},
			[]string{"no discharge until 10:16", "release"}, false},
		{"self-consumption without a setpoint: nothing", []plan.BatteryAction{plan.BatteryDischarge}, nil, false},
		{"a plan without the battery: nothing", []plan.BatteryAction{plan.BatteryHold}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			live := plant.NewLive([]plant.Plant{{ID: "p1"}}, nil, func() time.Time { return t0 })
			g := &gateCalls{}
			r, err := New(Spec{PlantID: "p1", Now: func() time.Time { return t0 }}, Deps{Prices: &fixedPrices{}, Gate: g, Live: live}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range tc.actions {
				w := 0.0
				if a == plan.BatteryChargeGrid {
					w = 3000
				}
				r.followBattery(t.Context(), t0, &plan.Plan{Start: t0, Slot: plan.DefaultSlot,
					Steps: []plan.Step{{Start: t0, Battery: a, BatteryW: w}}}, !tc.noBat)
			}
			if fmt.Sprint(g.calls) != fmt.Sprint(tc.want) {
				t.Errorf("gate calls %q, want %q", g.calls, tc.want)
			}
		})
	}
}
