package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/sim/simtest"
)

// batterySim is the demo plant with its battery (10 kWh / 5 kW,
// self-consumption, at 50 %) and consumers, at a winter noon in Munich
// with the demo's weather (clouds), running speed times faster than the
// wall clock.
func batterySim(t testing.TB, speed float64) *sim.Plant {
	t.Helper()
	cfg := sim.DemoConfig()
	var devs []sim.DeviceConfig
	for _, d := range cfg.Devices {
		if d.Kind != kind.Sensor && d.ID != "rcr" {
			devs = append(devs, d)
		}
	}
	cfg.Devices = devs
	cfg.Start = time.Date(2026, 1, 15, 12, 0, 0, 0, mustLocation(t, "Europe/Berlin"))
	cfg.Speed = speed
	return simtest.Start(t, cfg)
}

func mustLocation(t testing.TB, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// batteryConfig is consumerConfig's plant with the battery polled too,
// the consumers in mode On at the first start, the battery's prioritySoc
// 20 % and a grid operator's token.
func batteryConfig(t testing.TB, p *sim.Plant) string {
	return consumerConfigOf(t, p, consumerOpts{devices: []string{"bat"}, guards: ", mode: On, maxSwitchesPerHour: 0",
		plant: ", battery: {prioritySoc: 20}", operator: true})
}

// batterySample is one look at the plant and plantd's consumers.
type batterySample struct {
	simT             time.Time
	soc, batW, pvW   float64 // batW > 0 discharging
	gridW            float64
	surplus, running []string           // consumers on with reason Surplus; all on
	drawW            map[string]float64 // what each consumer on draws (the API's consumption)
}

// onSurplus: consumers run, all of them on Surplus (none held on by a
// guard's minimum on time or by hand, whose draw is not the surplus
// decision's).
func (s batterySample) onSurplus() bool {
	return len(s.surplus) > 0 && len(s.surplus) == len(s.running)
}

// TestConsumersBatteryWinterNoon is issue 40's acceptance for the energy
// manager and the battery, with the real binary: a winter noon (about
// 5.5 kW of PV), the battery (at 50 %) above its priority SoC (20 %), the
// three consumers (5.8 kW) running in mode On and then all set to Auto,
// as in the demo: the battery holds the meter at 0, so a decision on the
// meter alone kept all three on "Surplus" while the battery fed them.
// Over 6 simulated minutes (speed 20) the battery's SoC never falls
// while consumers run on Surplus (all that run, none held on by its
// minimum on time) beyond what one decision's delay costs: each stretch
// in which they do ends
// with the SoC at most 0.3 % (30 Wh) below where it began (a meter poll,
// a control cycle and a read back are about 2.5 s of wall clock, 50 s of
// simulated time, in which a shortfall of up to 2 kW drains the battery
// before plantd sees it); and under a grid operator's 30 % opModMaxLimW
// (5.4 kW) for 6 simulated minutes no consumer switches on while the
// battery discharges. The meter-only decision this guards against drained
// the battery by about 0.15 % a minute here (50.24 → 45.60 % in 30
// minutes), so 6 minutes show it at three times the 0.3 % bound, and its
// stretch on Surplus with the battery discharging passes the one minute
// bound a minute after the switch to Auto; plantd settles within two simulated
// minutes (all three on → the heater alone by 12:01:46, the rest of the
// 12 minutes this ran before held that). The limit's 6 minutes stay:
// the surplus decision's switch-ons under it come with the clouds (two
// in 6 minutes in one run, none in 4 in another), and a switch-on is
// what its check looks at. The speed stays 20: the 0.3 % bound is one
// decision's delay in wall clock times it. The full 30 and 15 minutes of
// issue 40's acceptance cost two minutes of the suite's critical path,
// 12 and 6 a minute (55 s under -race), 6 and 6 about 40 s.
func TestConsumersBatteryWinterNoon(t *testing.T) {
	t.Parallel() // its own simulator and binary
	if testing.Short() {
		t.Skip("runs plantd with consumers and a battery for 12 simulated minutes (~40 s)")
	}
	const speed = 20.0
	p := batterySim(t, speed)
	d := startDaemon(t, batteryConfig(t, p))
	d.waitAPI(15 * time.Second)
	d.waitOnline(15*time.Second, "meter", "bat", "heater", "heatpump", "plug")
	proctest.WaitFor(t, "the three consumers on by hand", 10*time.Second, func() bool { h, pump, plug := consumersOn(p); return h && pump && plug })
	for _, id := range []string{"heater", "heatpump", "plug"} {
		if code, b := d.request("PUT", "/gateway/v1/consumers/"+id+"/mode", tokInst, `{"mode":"Auto"}`); code != 200 {
			t.Fatalf("PUT %s mode Auto: %d %s", id, code, b)
		}
	}
	look := func() batterySample {
		code, b := d.request("GET", "/gateway/v1/consumers", tokStd, "")
		if code != 200 {
			t.Fatalf("GET consumers: %d %s", code, b)
		}
		var out struct{ Consumers []map[string]any }
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		bal, st := p.Balance(), p.Device("bat").State()
		s := batterySample{simT: bal.Time, soc: st.SoCPct, batW: bal.BatteryW, pvW: bal.PVW, gridW: bal.GridW}
		for _, c := range out.Consumers {
			if c["switchingState"] == "On" {
				id := c["deviceId"].(string)
				s.running = append(s.running, id)
				if w, ok := c["consumption"].(float64); ok {
					if s.drawW == nil {
						s.drawW = map[string]float64{}
					}
					s.drawW[id] = w
				}
				if c["reason"] == "Surplus" {
					s.surplus = append(s.surplus, id)
				}
			}
		}
		return s
	}
	run := func(simulated time.Duration) []batterySample {
		var out []batterySample
		t0 := look().simT
		for {
			s := look()
			out = append(out, s)
			if s.simT.Sub(t0) >= simulated {
				return out
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	// onBattery is the longest stretch, in simulated time, in which a
	// consumer ran on Surplus while the battery discharged more than
	// 300 W, and the energy so discharged (Wh, summed over samples).
	onBattery := func(ss []batterySample) (longest time.Duration, wh float64) {
		var from time.Time
		for i, s := range ss {
			if !s.onSurplus() || s.batW <= 300 {
				from = time.Time{}
				continue
			}
			if from.IsZero() {
				from = s.simT
			}
			longest = max(longest, s.simT.Sub(from))
			if i > 0 {
				wh += s.batW * s.simT.Sub(ss[i-1].simT).Hours()
			}
		}
		return longest, wh
	}
	report := func(what string, ss []batterySample) {
		var b strings.Builder
		for i, s := range ss {
			if i%8 == 0 || i == len(ss)-1 {
				fmt.Fprintf(&b, "\n  %s SoC %.2f %% bat %+5.0f W pv %5.0f W grid %+5.0f W surplus %v on %v",
					s.simT.Format("15:04:05"), s.soc, s.batW, s.pvW, s.gridW, s.surplus, s.running)
			}
		}
		t.Logf("%s: %d samples%s", what, len(ss), b.String())
	}

	ss := run(6 * time.Minute)
	report("winter noon, all Auto, prioritySoc 20", ss)
	// Stretches with a consumer on Surplus.
	var stretches, surplusSamples int
	worst := 0.0
	for i := 0; i < len(ss); {
		if !ss[i].onSurplus() {
			i++
			continue
		}
		j := i
		for j+1 < len(ss) && ss[j+1].onSurplus() {
			j++
		}
		stretches++
		surplusSamples += j - i + 1
		drop := ss[i].soc - ss[j].soc
		// Within the stretch, the lowest SoC against its start.
		for k := i; k <= j; k++ {
			drop = max(drop, ss[i].soc-ss[k].soc)
		}
		worst = max(worst, drop)
		if drop > 0.3 {
			t.Errorf("%s..%s: a consumer ran on Surplus while the SoC fell %.2f %% (%.2f → %.2f)", ss[i].simT.Format("15:04:05"), ss[j].simT.Format("15:04:05"), drop, ss[i].soc, ss[j].soc)
		}
		i = j + 1
	}
	t.Logf("winter noon: SoC %.2f %% → %.2f %% over %v simulated; %d stretches on Surplus (%d of %d samples), largest SoC fall within one %.2f %%",
		ss[0].soc, ss[len(ss)-1].soc, ss[len(ss)-1].simT.Sub(ss[0].simT).Round(time.Second), stretches, surplusSamples, len(ss), worst)
	longest, wh := onBattery(ss)
	t.Logf("winter noon: consumers on Surplus with the battery discharging > 300 W: %.0f Wh, longest %v simulated", wh, longest)
	if longest > time.Minute {
		t.Errorf("a consumer ran on Surplus for %v simulated while the battery discharged, want at most a minute (one decision's delay)", longest)
	}
	if ss[len(ss)-1].soc < ss[0].soc-0.3 && surplusSamples > 0 {
		t.Errorf("the SoC fell from %.2f %% to %.2f %% while consumers ran on Surplus in %d samples", ss[0].soc, ss[len(ss)-1].soc, surplusSamples)
	}

	// Ripple control: 30 % of the 18 kW.
	now := time.Now().UTC()
	sched := fmt.Sprintf(`{"commands":[{"command":"opModMaxLimW","start":%q,"end":%q,"value":30,"unit":"%%"}]}`,
		now.Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))
	if code, b := d.request("POST", "/gridcontrol/v1/plants/p1/schedules", tokGrid, sched); code != 201 {
		t.Fatalf("POST opModMaxLimW 30 %%: %d %s", code, b)
	}
	proctest.WaitFor(t, "PV at or below 30 % of 18 kW", 10*time.Second, func() bool { return p.Balance().PVW <= 5400+100 })
	ls := run(6 * time.Minute)
	report("opModMaxLimW 30 %", ls)
	// A switch-on is on the battery when the discharge before it exceeds
	// what the consumers switched off in the same step drew: a swap (the
	// heater's 3 kW off, the heat pump's 1.6 kW on, the battery charging
	// 1.8 kW after) is not, though the heater alone discharged it before.
	switchedOn := 0
	for i := 1; i < len(ls); i++ {
		freed := 0.0
		for _, id := range ls[i-1].running {
			if !slices.Contains(ls[i].running, id) {
				freed += ls[i-1].drawW[id]
			}
		}
		for _, id := range ls[i].surplus {
			if !slices.Contains(ls[i-1].running, id) {
				switchedOn++
				if ls[i-1].batW-freed > 100 {
					t.Errorf("%s: %s switched on on Surplus while the battery discharged %.0f W (%.0f W switched off with it)", ls[i].simT.Format("15:04:05"), id, ls[i-1].batW, freed)
				}
			}
		}
	}
	longest, wh = onBattery(ls)
	t.Logf("30 %% limit: SoC %.2f %% → %.2f %%; %d switch-ons on Surplus; on Surplus with the battery discharging > 300 W: %.0f Wh, longest %v simulated",
		ls[0].soc, ls[len(ls)-1].soc, switchedOn, wh, longest)
	if longest > time.Minute {
		t.Errorf("30 %% limit: a consumer ran on Surplus for %v simulated while the battery discharged, want at most a minute", longest)
	}
}
