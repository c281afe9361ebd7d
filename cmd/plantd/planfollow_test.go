package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/plant"
	"plantd/sim"
)

// TestPlanFollowsCarAndHeatPump is issue 45's plan for the car and the
// heat pump with the real binary, the simulator's OCPP wallbox (a car at
// 40 %) and its SG-Ready heat pump on the relay board: a time-of-use
// tariff cheap (0.10 EUR/kWh) in one two-hour window and dear (0.40)
// otherwise, the plant importing (no surplus), the wallbox in Plan mode
// by six hours after the hour (PUT .../plan). When the window is now
// (10 kWh), the twin's current is set to 16 A (the plan's charging in
// its cheapest slots) and the pump runs at 3 or 4 (heating ahead), as
// GET /gateway/v1/plan plans it; when the window is later (a SoC target:
// 70 % of a 60 kWh car at 40 %, 18 kWh), the twin is set to no current
// and the pump stays in normal operation. GET /gateway/v1/consumers shows
// mode Plan, the target with what remains and the plan's step; the
// target survives a restart; bad targets are 400, a pump's plan 422.
func TestPlanFollowsCarAndHeatPump(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs plantd with a charger, a heat pump and a time-of-use tariff (~40 s)")
	}
	tests := []struct {
		name      string
		cheapFrom time.Duration // the cheap window's start after the hour
		charging  bool
		restart   bool
		// target is the plan's body before the deadline; capacity the
		// wallbox's vehicleCapacity (kWh, 0: none); remaining the
		// remaining energy the API shows at first (Wh).
		target    string
		capacity  float64
		remaining float64
	}{
		{"cheap now", 0, true, true, `"energy":10000`, 0, 10000},
		// 70 % of a 60 kWh car at 40 %: 18 kWh, which the window's 2 h
		// at 11 kW hold.
		{"cheap later, a SoC target", 3 * time.Hour, false, false, `"soc":70`, 60, 18000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // its own simulator and binary
			p := chargerSim(t)
			cp := p.ChargePoint("wallbox")
			berlin := mustLocation(t, "Europe/Berlin")
			h := time.Now().In(berlin).Truncate(time.Hour)
			from := h.Add(tt.cheapFrom)
			cheap := fmt.Sprintf("%s-%s 0.10", from.Format("15:04"), from.Add(2*time.Hour).Format("15:04"))
			path := consumerConfigOf(t, p, consumerOpts{
				guards: ", sgReadyPower: {normal: 700, recommended: 1600, forced: 2400}",
				more: "  - {id: wallbox, kind: consumer, pollInterval: 500ms, consumer: {driver: ocpp, password: s3cret, priority: 4, " +
					"minOnTime: 0s, minOffTime: 0s, maxSwitchesPerHour: 0, enableDelay: 0s, disableDelay: 3s, watchdog: 15s" +
					fmt.Sprintf(", vehicleCapacity: %g}}\n", tt.capacity),
				top: fmt.Sprintf("ocpp:\n  listen: 127.0.0.1:0\ntariffs:\n  plant: p1\n  import: {fixed: [\"0.40\", %q]}\n  feedIn: {fixed: 0.08}\n", cheap),
			})
			// sgReadyPower is the pump's alone: the other consumers'
			// settings must not carry it.
			path = onlyHeatPump(t, path)
			setCarExport(p, -3000) // importing: no surplus
			d := startDaemon(t, path)
			defer func() { d.stop() }()
			d.waitAPI(30 * time.Second)
			connectTwins(t, p, d)
			d.waitOnline(20*time.Second, "meter", "wallbox", "heatpump")

			deadline := h.Add(6 * time.Hour).UTC().Format(time.RFC3339)
			bads := []struct{ body, field string }{{`{"energy":10000,"deadline":"2020-01-01T00:00:00Z"}`, "deadline"}}
			if tt.capacity == 0 {
				bads = append(bads, struct{ body, field string }{`{"soc":80,"deadline":"` + deadline + `"}`, "soc"})
			}
			for _, bad := range bads {
				code, b := d.request("PUT", "/gateway/v1/consumers/wallbox/plan", tokInst, bad.body)
				if code != 400 || !strings.Contains(string(b), `"`+bad.field+`"`) {
					t.Errorf("plan %s: %d %s, want 400 naming %s", bad.body, code, b, bad.field)
				}
			}
			if code, b := d.request("PUT", "/gateway/v1/consumers/heatpump/plan", tokInst, `{"energy":10000,"deadline":"`+deadline+`"}`); code != 422 {
				t.Errorf("plan of the heat pump: %d %s, want 422", code, b)
			}
			began := time.Now()
			code, b := d.request("PUT", "/gateway/v1/consumers/wallbox/plan", tokInst, `{`+tt.target+`,"deadline":"`+deadline+`"}`)
			var set plant.ConsumerStatus
			if code != 200 || json.Unmarshal(b, &set) != nil {
				t.Fatalf("plan: %d %s", code, b)
			}
			if set.Mode != plant.ModePlan || set.Plan == nil || set.Plan.RemainingWh == nil || math.Abs(*set.Plan.RemainingWh-tt.remaining) > 100 {
				t.Errorf("plan set: %s; want mode Plan, %v Wh remaining", b, tt.remaining)
			}

			hpState := func() int { hp, _ := p.Load("heatpump"); return hp.SGReady }
			if tt.charging {
				// 10 kWh in the cheap window's first slots: the maximum,
				// 16 A (11040 W), not the 6 A of the fallback profile.
				st := waitLimit(t, cp, 60*time.Second, "charging at 16 A in the cheap slot", func(st sim.ChargePointState) bool { return st.LimitA == 16 })
				t.Logf("cheap now: the twin at %v A after %v", st.LimitA, time.Since(began).Round(time.Millisecond))
				proctest.WaitFor(t, "the heat pump at 3 or 4 in the cheap slot", 60*time.Second, func() bool { return hpState() >= 3 })
				all := consumersOf(t, d)
				car := all["wallbox"]
				if car.Mode != plant.ModePlan || car.Reason != plant.ReasonPlan || car.Plan == nil || car.Plan.EnergyWh != 10000 ||
					car.Planned == nil || car.Planned.PowerW == nil || *car.Planned.PowerW < 4140 {
					t.Errorf("wallbox in the API: %+v, want mode Plan, reason Plan, 10000 Wh, a planned power ≥ 4140 W", car)
				}
				code, b = d.request("GET", "/gateway/v1/plan", tokStd, "")
				var pl struct {
					HeatPumpID, CarID string
					Steps             []struct {
						SGReady int      `json:"sgReadyState"`
						CarW    *float64 `json:"carW"`
					}
				}
				if code != 200 || json.Unmarshal(b, &pl) != nil || pl.CarID != "wallbox" || pl.HeatPumpID != "heatpump" || len(pl.Steps) == 0 ||
					pl.Steps[0].CarW == nil || *pl.Steps[0].CarW < 4140 || pl.Steps[0].SGReady < 3 {
					t.Errorf("GET /gateway/v1/plan: %d %.600s; want the wallbox and the heat pump planned, the first slot charging and at 3 or 4", code, b)
				}
				if hp := all["heatpump"]; hp.Reason != plant.ReasonPlan || hp.Planned == nil || hp.Planned.SGReady < 3 {
					t.Errorf("heat pump in the API: %+v, want reason Plan, planned 3 or 4", hp)
				}
			} else {
				// The plan's step handed over and decided: the wallbox on
				// surplus (none), the pump left to its own controller.
				proctest.WaitFor(t, "the plan's 0 W for the car, decided", 60*time.Second, func() bool {
					all := consumersOf(t, d)
					car, hp := all["wallbox"], all["heatpump"]
					return car.Planned != nil && car.Planned.PowerW != nil && hp.Planned != nil &&
						car.Reason == plant.ReasonNoSurplus && hp.Reason == plant.ReasonNoSurplus
				})
				all := consumersOf(t, d)
				car, hp := all["wallbox"], all["heatpump"]
				if *car.Planned.PowerW != 0 || hp.Planned.SGReady >= 3 {
					t.Errorf("a dear slot planned the car at %v W, the pump at %d; want 0 W, state 1 or 2", *car.Planned.PowerW, hp.Planned.SGReady)
				}
				for _, c := range cp.Trace() {
					if c.Wall.After(began) && c.LimitA >= 6 {
						t.Errorf("the twin was set to %v A at %v (%s) in a dear slot", c.LimitA, c.Wall, c.Source)
					}
				}
				if s := hpState(); s >= 3 {
					t.Errorf("the heat pump at %d in a dear slot, want normal", s)
				}
			}
			if !tt.restart {
				return
			}
			d.stop()
			d = startDaemon(t, path)
			d.waitAPI(30 * time.Second)
			car := consumersOf(t, d)["wallbox"]
			if car.Mode != plant.ModePlan || car.Plan == nil || car.Plan.EnergyWh != 10000 || car.Plan.Deadline.UTC().Format(time.RFC3339) != deadline {
				t.Errorf("after a restart: %+v, want mode Plan, 10000 Wh by %s", car, deadline)
			}
		})
	}
}

// onlyHeatPump removes sgReadyPower from every consumer but the heat
// pump in the config at path.
func onlyHeatPump(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, "id: heatpump") {
			l = strings.Replace(l, ", sgReadyPower: {normal: 700, recommended: 1600, forced: 2400}", "", 1)
		}
		out = append(out, l)
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// consumersOf is GET /gateway/v1/consumers by id (one request: the
// tests poll it, within the API's rate limit).
func consumersOf(t *testing.T, d *plantdRun) map[string]plant.ConsumerStatus {
	t.Helper()
	code, b := d.request("GET", "/gateway/v1/consumers?plantId=p1", tokStd, "")
	var list struct{ Consumers []plant.ConsumerStatus }
	if code != 200 || json.Unmarshal(b, &list) != nil {
		t.Fatalf("GET consumers: %d %s", code, b)
	}
	out := map[string]plant.ConsumerStatus{}
	for _, c := range list.Consumers {
		out[c.DeviceID] = c
	}
	return out
}
