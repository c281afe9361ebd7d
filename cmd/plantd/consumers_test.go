package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plantd/config"
	"plantd/internal/proctest"
	"plantd/modbus"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/sim/simtest"
)

// consumerSim is a plant without a battery (so that a surplus shows at the
// meter at once), with the demo's consumers: the 3 kW heater on the relay
// board's coil 0 with its sub-meter, the SG-Ready heat pump on coils 2/3
// and the 1200 W Shelly plug.
func consumerSim(t testing.TB) *sim.Plant {
	t.Helper()
	return simtest.Start(t, consumerSimConfig())
}

// consumerSimConfig is consumerSim's config.
func consumerSimConfig() sim.Config {
	cfg := sim.DemoConfig()
	var devs []sim.DeviceConfig
	for _, d := range cfg.Devices {
		if d.Kind != kind.Battery && d.Kind != kind.Sensor {
			devs = append(devs, d)
		}
	}
	cfg.Devices = devs
	cfg.Start, cfg.ClearSky = time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC), true
	return cfg
}

// consumerConfig writes plantd's config for consumerSim: every device
// polled every 500 ms, the consumers with guards of seconds (minOn 4 s,
// minOff 2 s) and a 5 s watchdog.
func consumerConfig(t testing.TB, p *sim.Plant) string {
	return consumerConfigOf(t, p, consumerOpts{})
}

// consumerOpts varies consumerConfig: more polled devices, more of each
// consumer's settings, more of the plant's, the grid operator's token.
type consumerOpts struct {
	devices  []string // polled besides inv1, inv2, meter and heatmeter
	guards   string   // appended to each consumer's settings
	plant    string   // appended to the plant's entry
	operator bool     // the grid operator's token dso too
	more     string   // more device entries (YAML list items, indented by 2)
	top      string   // more top-level sections
}

// consumerConfigOf is consumerConfig with o.
func consumerConfigOf(t testing.TB, p *sim.Plant, o consumerOpts) string {
	t.Helper()
	var b strings.Builder
	for _, id := range append([]string{"inv1", "inv2", "meter", "heatmeter"}, o.devices...) {
		host, port, _ := net.SplitHostPort(p.Device(id).Addr())
		fmt.Fprintf(&b, "  - {id: %s, host: %s, port: %s, pollInterval: 500ms, timeout: 1s}\n", id, host, port)
	}
	ioHost, ioPort, _ := net.SplitHostPort(p.Device("io").Addr())
	plugHost, plugPort, _ := net.SplitHostPort(p.Shelly("plug").Addr())
	guards := "minOnTime: 4s, minOffTime: 2s, watchdog: 5s" + o.guards
	fmt.Fprintf(&b, "  - {id: heater, kind: consumer, host: %s, port: %s, pollInterval: 500ms, timeout: 1s, consumer: {driver: relay, coil: 0, ratedPower: 3000, meter: heatmeter, priority: 1, %s}}\n", ioHost, ioPort, guards)
	fmt.Fprintf(&b, "  - {id: heatpump, kind: consumer, host: %s, port: %s, pollInterval: 500ms, timeout: 1s, consumer: {driver: sgready, coil: 2, ratedPower: 1600, priority: 2, %s}}\n", ioHost, ioPort, guards)
	fmt.Fprintf(&b, "  - {id: plug, kind: consumer, host: %s, port: %s, pollInterval: 500ms, timeout: 1s, consumer: {driver: shelly, ratedPower: 1200, priority: 3, %s}}\n", plugHost, plugPort, guards)
	b.WriteString(o.more)
	b.WriteString("tokens:\n")
	fmt.Fprintf(&b, "  - {name: inst, sha256: %s, role: installer}\n  - {name: std, sha256: %s, role: standard}\n", config.TokenHash(tokInst), config.TokenHash(tokStd))
	if o.operator {
		fmt.Fprintf(&b, "  - {name: dso, sha256: %s, role: gridoperator}\n", config.TokenHash(tokGrid))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "plantd.yaml")
	cfg := fmt.Sprintf(`http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: Home, timezone: Europe/Berlin%s}
devices:
%s%s`, filepath.Join(dir, "plantd.db"), o.plant, b.String(), o.top)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// setExport moves the house's load so that the grid meter shows exportW
// (negative: import) with the consumers off (the heat pump in normal
// operation, which is house load), whatever PV gives now.
func setExport(p *sim.Plant, exportW float64) {
	p.SetLoadOffset(0)
	b := p.Balance()
	p.SetLoadOffset(b.PVW - exportW - (b.LoadW - consumersW(p)))
}

// consumersOn returns which of the three consumers are on in the
// simulator (the heat pump: SG-Ready 3 or 4).
func consumersOn(p *sim.Plant) (heater, pump, plug bool) {
	rs, _ := p.Device("io").Relay()
	hp, _ := p.Load("heatpump")
	return rs.Coils[0], hp.SGReady >= 3, p.Shelly("plug").State().On
}

// consumersW is what the consumers switched on draw beyond the house:
// the heater, the plug, and the heat pump above its normal operation.
func consumersW(p *sim.Plant) float64 {
	h, _ := p.Load("heater")
	hp, _ := p.Load("heatpump")
	w := h.PowerW + p.Shelly("plug").State().PowerW
	if hp.SGReady >= 3 {
		w += hp.PowerW - 700
	}
	return w
}

// TestConsumersOnSurplus is the home energy manager's acceptance with the
// real binary and the simulator's relay board and Shelly plug: consumers
// switch on surplus in priority order, the grid export drops by their
// power, they switch off when it is gone but not before their minimum on
// time, a manual Off holds against surplus, and after kill -9 the devices'
// watchdogs switch them off.
func TestConsumersOnSurplus(t *testing.T) {
	t.Parallel() // its own simulator and binary
	if testing.Short() {
		t.Skip("runs plantd against switching consumers (~40 s)")
	}
	p := consumerSim(t)
	setExport(p, -500) // importing: no surplus
	d := startDaemon(t, consumerConfig(t, p))
	d.waitAPI(15 * time.Second)
	d.waitOnline(10*time.Second, "meter", "heater", "heatpump", "plug")
	status := func() map[string]map[string]any {
		code, b := d.request("GET", "/gateway/v1/consumers", tokStd, "")
		if code != 200 {
			t.Fatalf("GET consumers: %d %s", code, b)
		}
		var out struct{ Consumers []map[string]any }
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		m := map[string]map[string]any{}
		for _, c := range out.Consumers {
			m[c["deviceId"].(string)] = c
		}
		return m
	}
	proctest.WaitFor(t, "every consumer read back, off for want of surplus", 10*time.Second, func() bool {
		st := status()
		for _, id := range []string{"heater", "heatpump", "plug"} {
			if st[id]["reason"] != "NoSurplus" || st[id]["switchingState"] != "Off" {
				return false
			}
		}
		return true
	})

	// 3.8 kW of export: the heater (priority 1, 3 kW) takes it; what is
	// left (800 W) carries neither the heat pump (1600) nor the plug (1200).
	surplusAt := time.Now()
	setExport(p, 3800)
	gridBefore := p.Balance().GridW
	proctest.WaitFor(t, "the heater on", 10*time.Second, func() bool { h, _, _ := consumersOn(p); return h })
	heaterOn := time.Since(surplusAt)
	proctest.WaitFor(t, "the heater reported on", 5*time.Second, func() bool { return status()["heater"]["switchingState"] == "On" })
	st := status()
	if _, pump, plug := consumersOn(p); pump || plug || st["heatpump"]["reason"] != "NoSurplus" || st["plug"]["reason"] != "NoSurplus" {
		t.Errorf("3.8 kW surplus: heat pump %v (%v), plug %v (%v); want both off for want of surplus", pump, st["heatpump"]["reason"], plug, st["plug"]["reason"])
	}
	if drop := p.Balance().GridW - gridBefore; drop < 3000-200 || drop > 3000+200 {
		t.Errorf("the export dropped by %.0f W when the heater came on, want its 3000 W (within 200 W)", drop)
	}
	t.Logf("surplus to heater written: %v (meter polled every 500 ms, control cycle 1 s)", heaterOn.Round(time.Millisecond))
	if heaterOn > 3500*time.Millisecond {
		t.Errorf("heater on %v after the surplus, want within 3 control cycles and a meter poll (3.5 s)", heaterOn)
	}
	proctest.WaitFor(t, "the heater's 3000 W from its meter", 5*time.Second, func() bool {
		st := status()["heater"]
		w, _ := st["consumption"].(float64)
		return w > 2900 && st["consumptionEstimated"] == false
	})

	// 7.5 kW with every consumer off (4.5 kW beside the running heater):
	// the heat pump (1600) and the plug (1200) follow, in priority order.
	setExport(p, 7500)
	proctest.WaitFor(t, "heat pump and plug on", 10*time.Second, func() bool { _, pump, plug := consumersOn(p); return pump && plug })
	var logs string
	proctest.WaitFor(t, "both switchings in the plant log", 5*time.Second, func() bool {
		_, b := d.request("GET", "/monitoring/v1/plants/p1/logs?limit=50", tokInst, "")
		logs = string(b)
		return strings.Contains(logs, "heatpump: SG-Ready 3") && strings.Contains(logs, "plug: on")
	})
	if i, j := strings.Index(logs, "heatpump: SG-Ready 3"), strings.Index(logs, "plug: on"); j > i {
		// Newest first: the plug's entry comes before the heat pump's.
		t.Errorf("log does not show the heat pump switched, then the plug: %s", logs)
	}
	if w, ok := status()["heatpump"]["consumption"].(float64); !ok || w != 1600 || status()["heatpump"]["consumptionEstimated"] != true {
		t.Errorf("heat pump consumption %v, want 1600 W estimated", status()["heatpump"])
	}

	// Manual Off for the plug while surplus holds: it goes off (its min
	// on time permitting) and stays off.
	if code, b := d.request("PUT", "/gateway/v1/consumers/plug/mode", tokStd, `{"mode":"Off"}`); code != 403 {
		t.Errorf("standard role sets a mode: %d %s", code, b)
	}
	if code, b := d.request("PUT", "/gateway/v1/consumers/plug/mode", tokInst, `{"mode":"Off"}`); code != 200 {
		t.Fatalf("PUT mode Off: %d %s", code, b)
	}
	proctest.WaitFor(t, "the plug off by hand", 8*time.Second, func() bool { _, _, plug := consumersOn(p); return !plug })
	if st := status()["plug"]; st["mode"] != "Off" || st["reason"] != "Manual" {
		t.Errorf("plug after Off: %v", st)
	}

	// Surplus gone: the heater and the heat pump switch off, not before
	// their 4 s minimum on time (they have run longer by now).
	setExport(p, -2000)
	proctest.WaitFor(t, "heater and heat pump off", 10*time.Second, func() bool { h, pump, _ := consumersOn(p); return !h && !pump })
	if _, _, plug := consumersOn(p); plug {
		t.Error("the plug came back on against its manual Off")
	}

	// A surplus again, then kill -9 with the heater and heat pump on:
	// the relay board's watchdog (5 s) drops the coils.
	time.Sleep(2 * time.Second) // their min off time
	setExport(p, 8000)
	proctest.WaitFor(t, "heater and heat pump on again", 10*time.Second, func() bool { h, pump, _ := consumersOn(p); return h && pump })
	rs0, _ := p.Device("io").Relay()
	trips := rs0.Trips
	d.Kill()
	killed := time.Now()
	proctest.WaitFor(t, "the coils off by the watchdog", 10*time.Second, func() bool { h, pump, _ := consumersOn(p); return !h && !pump })
	rs, _ := p.Device("io").Relay()
	if rs.Trips != trips+1 {
		t.Errorf("watchdog trips %d, want %d", rs.Trips, trips+1)
	}
	off := rs.LastTrip.Sub(killed)
	t.Logf("kill -9 with heater and heat pump on: coils off %v later (watchdog 5 s, renewed every 1.7 s)", off.Round(10*time.Millisecond))
	if off > 5*time.Second {
		t.Errorf("coils off %v after the kill, want within the 5 s watchdog", off)
	}
}

// TestConsumerFaults: bad consumers give clear device log entries and
// leave the other devices alone: a relay output the module does not
// have (exception 2), a Shelly answering HTTP 500 and one answering
// garbage, and an SG-Ready pair found with both contacts closed at start
// (forced: wired backwards, or another controller), which plantd reports
// and sets to normal.
func TestConsumerFaults(t *testing.T) {
	t.Parallel() // its own simulator and binary
	cfg := sim.DemoConfig()
	cfg.Devices = cfg.Devices[:3] // inv1, inv2, meter
	cfg.Devices = append(cfg.Devices, sim.DeviceConfig{ID: "io", Relay: true, Unit: 1})
	cfg.Loads = []sim.LoadConfig{{ID: "heatpump", Kind: sim.LoadSGReady, Board: "io", Coil: 2}}
	cfg.Shellies = []sim.ShellyConfig{{ID: "plug500"}, {ID: "pluggarbage"}}
	cfg.Start, cfg.ClearSky = time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC), true
	p := simtest.Start(t, cfg)
	p.SetLoadOffset(30000) // no surplus: the heat pump stays in normal operation
	p.Shelly("plug500").SetFault(sim.ShellyFault{Kind: sim.ShellyFault500})
	p.Shelly("pluggarbage").SetFault(sim.ShellyFault{Kind: sim.ShellyFaultGarbage})
	// Both SG-Ready contacts closed before plantd starts.
	pool := modbus.NewPool(nil)
	defer pool.Close()
	if err := pool.Endpoint(modbus.EndpointConfig{Address: p.Device("io").Addr()}).Unit(1, 2*time.Second).WriteCoils(t.Context(), 2, []bool{true, true}); err != nil {
		t.Fatal(err)
	}
	if hp, _ := p.Load("heatpump"); hp.SGReady != 4 {
		t.Fatalf("heat pump at SG-Ready %d before plantd, want 4", hp.SGReady)
	}

	var b strings.Builder
	for _, id := range []string{"inv1", "meter"} {
		host, port, _ := net.SplitHostPort(p.Device(id).Addr())
		fmt.Fprintf(&b, "  - {id: %s, host: %s, port: %s, pollInterval: 500ms}\n", id, host, port)
	}
	ioHost, ioPort, _ := net.SplitHostPort(p.Device("io").Addr())
	fmt.Fprintf(&b, "  - {id: heater, kind: consumer, host: %s, port: %s, pollInterval: 500ms, consumer: {driver: relay, coil: 9, ratedPower: 3000}}\n", ioHost, ioPort)
	fmt.Fprintf(&b, "  - {id: heatpump, kind: consumer, host: %s, port: %s, pollInterval: 500ms, consumer: {driver: sgready, coil: 2, ratedPower: 1600}}\n", ioHost, ioPort)
	for _, id := range []string{"plug500", "pluggarbage"} {
		host, port, _ := net.SplitHostPort(p.Shelly(id).Addr())
		fmt.Fprintf(&b, "  - {id: %s, kind: consumer, host: %s, port: %s, pollInterval: 500ms, consumer: {driver: shelly, ratedPower: 1200}}\n", id, host, port)
	}
	d := startDaemonConfig(t, fmt.Sprintf(`http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: Home, timezone: Europe/Berlin}
devices:
%stokens:
  - {name: inst, sha256: %s, role: installer}
`, filepath.Join(t.TempDir(), "plantd.db"), b.String(), config.TokenHash(tokInst)))
	d.waitAPI(15 * time.Second)
	d.waitOnline(10*time.Second, "inv1", "meter")
	want := map[string]string{ // device -> what its log entry must say
		"heater":      "no such coil",
		"plug500":     "HTTP 500",
		"pluggarbage": "not a JSON frame",
		"heatpump":    "SG-Ready state 4 (forced) read at start",
	}
	var logs string
	proctest.WaitFor(t, "a log entry for each bad consumer", 10*time.Second, func() bool {
		_, b := d.request("GET", "/monitoring/v1/plants/p1/logs?limit=100", tokInst, "")
		logs = string(b)
		for _, s := range want {
			if !strings.Contains(logs, s) {
				return false
			}
		}
		return true
	})
	var entries struct {
		Logs []struct{ Code, Message, DeviceID string }
	}
	if err := json.Unmarshal([]byte(logs), &entries); err != nil {
		t.Fatal(err)
	}
	for dev, s := range want {
		found := false
		for _, e := range entries.Logs {
			found = found || e.DeviceID == dev && strings.Contains(e.Message, s)
		}
		if !found {
			t.Errorf("no log entry of %s saying %q: %s", dev, s, logs)
		}
	}
	proctest.WaitFor(t, "the heat pump set to normal", 5*time.Second, func() bool { hp, _ := p.Load("heatpump"); return hp.SGReady == 2 })
	// The other devices are unaffected: the inverter and meter answer
	// with values.
	code, body := d.request("GET", "/live/v2/plants/p1/devices", tokInst, "")
	if code != 200 || strings.Count(string(body), `"healthStatus":"Ok"`) < 3 {
		t.Errorf("live devices: %d %s; want inv1, meter and the heat pump Ok", code, body)
	}
}
