package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"plantd/config"
	"plantd/consumer"
	"plantd/internal/proctest"
	"plantd/modbus"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/sim/simtest"
)

// dimmingSim is the demo house with §14a loads of realistic size, so that
// dimming has to switch something off: a 6 kW immersion heater on the
// relay board's coil 0 (sub-meter heatmeter) and an SG-Ready heat pump on
// coils 2/3 drawing 3 kW forced (sub-meter hpmeter); 6 + 3 kW is above
// the 7.56 kW two controllable consumers keep. The control box is an I/O
// module of its own, "box", whose input 0 is the dimming contact; writing
// its coil 0 over Modbus sets it. No battery, sensor or plug.
func dimmingSim(t testing.TB) *sim.Plant {
	t.Helper()
	cfg := sim.DemoConfig()
	var devs []sim.DeviceConfig
	for _, d := range cfg.Devices {
		if d.Kind != kind.Battery && d.Kind != kind.Sensor && d.ID != "rcr" {
			devs = append(devs, d)
		}
	}
	cfg.Devices = append(devs,
		sim.DeviceConfig{ID: "hpmeter", Kind: kind.Meter, Unit: 1, Measures: "heatpump"},
		sim.DeviceConfig{ID: "box", Relay: true, InputsFollowCoils: true, Unit: 1})
	cfg.Loads = []sim.LoadConfig{
		{ID: "heater", Kind: sim.LoadHeater, Board: "io", Coil: 0, RatedW: 6000},
		{ID: "heatpump", Kind: sim.LoadSGReady, Board: "io", Coil: 2, StateW: [4]float64{0, 2000, 2500, 3000}},
	}
	cfg.Shellies = nil
	cfg.Start, cfg.ClearSky = time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC), true
	return simtest.Start(t, cfg)
}

// dimmingConfig is plantd's config for dimmingSim: both loads controllable
// consumers with their sub-meters (heater first in priority), guards of
// seconds, and the control box read every second with its contact D
// as the §14a dimming signal (an input that only dims has no actions).
func dimmingConfig(t testing.TB, p *sim.Plant) string {
	return dimmingConfigHeater(t, p, "controllable: true")
}

// dimmingConfigHeater is dimmingConfig with the heater's §14a setting
// (controllable: true, a device of its own; or partOf: heatpump).
func dimmingConfigHeater(t testing.TB, p *sim.Plant, heater14a string) string {
	t.Helper()
	var b strings.Builder
	for _, id := range []string{"inv1", "inv2", "meter", "heatmeter", "hpmeter"} {
		host, port, _ := net.SplitHostPort(p.Device(id).Addr())
		fmt.Fprintf(&b, "  - {id: %s, host: %s, port: %s, pollInterval: 500ms, timeout: 1s}\n", id, host, port)
	}
	ioHost, ioPort, _ := net.SplitHostPort(p.Device("io").Addr())
	guards := "minOnTime: 2s, minOffTime: 2s, watchdog: 30s"
	fmt.Fprintf(&b, "  - {id: heater, kind: consumer, host: %s, port: %s, pollInterval: 500ms, timeout: 1s, consumer: {driver: relay, coil: 0, ratedPower: 6000, meter: heatmeter, priority: 1, %s, %s}}\n", ioHost, ioPort, heater14a, guards)
	fmt.Fprintf(&b, "  - {id: heatpump, kind: consumer, host: %s, port: %s, pollInterval: 500ms, timeout: 1s, consumer: {driver: sgready, coil: 2, ratedPower: 3000, meter: hpmeter, priority: 2, %s}}\n", ioHost, ioPort, guards)
	boxHost, boxPort, _ := net.SplitHostPort(p.Device("box").Addr())
	dir := t.TempDir()
	path := filepath.Join(dir, "plantd.yaml")
	cfg := fmt.Sprintf(`http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: Home, timezone: Europe/Berlin}
devices:
%sinputs:
  - {id: box, host: %s, port: %s, pollInterval: 1s, contacts: {D: 0}, dimming: [D]}
tokens:
  - {name: inst, sha256: %s, role: installer}
  - {name: std, sha256: %s, role: standard}
`, filepath.Join(dir, "plantd.db"), b.String(), boxHost, boxPort, config.TokenHash(tokInst), config.TokenHash(tokStd))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDimming14a is issue 29's §14a acceptance with the real binary: the
// immersion heater (6 kW) and the heat pump (3 kW forced) run, by their
// sub-meters; the control box's dimming contact, set by writing its I/O
// module's coil over Modbus from outside as an installer's test would,
// brings their measured draw to at most Pmin (consumer.MinPower14a(2) =
// 7.56 kW) within 2 control cycles of the daemon taking the signal (the
// simulator's record of the daemon's read and write), never to 0 W: the heat pump, last in priority, is
// locked (SG-Ready 1) and the heater runs on. The dimming is logged and
// the API gives the heat pump's reason Dimmed. Clearing the contact lifts
// it: both run again. A heat pump in normal operation (Auto, no surplus)
// counts too: dimmed, it is locked.
func TestDimming14a(t *testing.T) {
	t.Parallel() // its own simulator and binary
	if testing.Short() {
		t.Skip("runs plantd against a control box and switching consumers (~20 s)")
	}
	p := dimmingSim(t)
	p.SetLoadOffset(30000) // importing: no surplus; the loads run by hand
	d := startDaemon(t, dimmingConfig(t, p))
	d.waitAPI(15 * time.Second)
	d.waitOnline(10*time.Second, "inv1", "meter", "heatmeter", "hpmeter", "heater", "heatpump")
	pmin := consumer.MinPower14a(2)
	controllableW := func() float64 {
		return p.Device("heatmeter").State().PowerW + p.Device("hpmeter").State().PowerW
	}
	consumers := func() map[string]plant.ConsumerStatus {
		code, b := d.request("GET", "/gateway/v1/consumers", tokStd, "")
		var out struct{ Consumers []plant.ConsumerStatus }
		if err := json.Unmarshal(b, &out); code != 200 || err != nil {
			t.Fatalf("GET consumers: %d %s %v", code, b, err)
		}
		m := map[string]plant.ConsumerStatus{}
		for _, c := range out.Consumers {
			m[c.DeviceID] = c
		}
		return m
	}

	// Both run: the installer switches them on by hand.
	for _, id := range []string{"heater", "heatpump"} {
		if code, b := d.request("PUT", "/gateway/v1/consumers/"+id+"/mode", tokInst, `{"mode":"On"}`); code != 200 {
			t.Fatalf("PUT %s mode On: %d %s", id, code, b)
		}
	}
	proctest.WaitFor(t, "heater 6 kW and heat pump 3 kW on their meters", 10*time.Second, func() bool {
		return p.Device("heatmeter").State().PowerW == 6000 && p.Device("hpmeter").State().PowerW == 3000
	})
	if w := controllableW(); w <= pmin {
		t.Fatalf("both running draw %v W, not above Pmin %v W: dimming would have nothing to do", w, pmin)
	}

	// The control box closes its dimming contact: an installer's Modbus
	// client writes the module's coil 0.
	pool := modbus.NewPool(nil)
	defer pool.Close()
	box := pool.Endpoint(modbus.EndpointConfig{Address: p.Device("box").Addr()}).Unit(1, 2*time.Second)
	if err := box.WriteCoils(t.Context(), 0, []bool{true}); err != nil {
		t.Fatal(err)
	}
	signal := time.Now()
	proctest.WaitFor(t, fmt.Sprintf("the controllable draw at most Pmin %v W", pmin), 10*time.Second, func() bool { return controllableW() <= pmin })
	took := time.Since(signal)
	w := controllableW()
	if w <= 0 {
		t.Errorf("dimmed to %v W: never 0 W unless configured", w)
	}
	if hp, _ := p.Load("heatpump"); hp.SGReady != 1 {
		t.Errorf("heat pump at SG-Ready %d while dimmed, want 1 (locked)", hp.SGReady)
	}

	// Within 2 control cycles (1 s each) of the daemon taking the signal,
	// by the simulator's record of the daemon's requests: from its first
	// read of the box's inputs after the coil was written to its write of
	// the heat pump's contact A (coil 2 on: locked).
	trace := p.Trace("box")
	edge := trace[len(trace)-1].WallTime
	rs, _ := p.Device("box").Relay()
	i := slices.IndexFunc(rs.InputReads, func(r time.Time) bool { return !r.Before(edge) })
	if i < 0 {
		t.Fatalf("no read of the box's inputs after its coil was written at %v: %v", edge, rs.InputReads)
	}
	taken := rs.InputReads[i]
	var locked time.Time
	for _, e := range p.Trace("io") {
		if pt, ok := e.Point("coil[2]"); ok && pt.Value == 1 && e.Error == "" && e.WallTime.After(taken) {
			locked = e.WallTime
			break
		}
	}
	if locked.IsZero() {
		t.Fatal("no write locking the heat pump (coil 2 on) after the signal was read")
	}
	t.Logf("§14a: contact → draw ≤ %v W: %v (1 s input poll); contact read %v after the write, heat pump locked %v after that read; dimmed draw %v W",
		pmin, took.Round(time.Millisecond), taken.Sub(edge).Round(time.Millisecond), locked.Sub(taken).Round(time.Millisecond), w)
	if lag := locked.Sub(taken); lag > 2*time.Second {
		t.Errorf("heat pump locked %v after the daemon read the dimming contact, want within 2 control cycles (2 s)", lag)
	}
	proctest.WaitFor(t, "ConsumersDimmed and the heat pump's switch in the plant log", 5*time.Second, func() bool {
		var dimmed, switched bool
		for _, e := range plantLog(t, d) {
			dimmed = dimmed || e.Code == "ConsumersDimmed" && strings.Contains(e.Message, "at most 7560 W")
			switched = switched || e.Code == "ConsumerSwitched" && e.DeviceID == "heatpump" && strings.Contains(e.Message, "(Dimmed)")
		}
		return dimmed && switched
	})
	proctest.WaitFor(t, "the API's reasons: heat pump Dimmed, heater on by hand", 5*time.Second, func() bool {
		st := consumers()
		return st["heatpump"].Reason == plant.ReasonDimmed && st["heater"].Reason == plant.ReasonManual && st["heater"].SwitchingState == plant.SwitchedOn
	})

	// The contact opens: the dimming is lifted and both run again.
	if err := box.WriteCoils(t.Context(), 0, []bool{false}); err != nil {
		t.Fatal(err)
	}
	proctest.WaitFor(t, "both running again", 10*time.Second, func() bool {
		hp, _ := p.Load("heatpump")
		return hp.SGReady == 4 && controllableW() == 9000
	})
	proctest.WaitFor(t, "the end of the dimming logged", 5*time.Second, func() bool {
		for _, e := range plantLog(t, d) {
			if e.Code == "ConsumersDimmed" && strings.Contains(e.Message, "dimming ended") {
				return true
			}
		}
		return false
	})
	if st := consumers()["heatpump"]; st.Reason != plant.ReasonManual {
		t.Errorf("heat pump after the dimming: %+v, want on by hand again", st)
	}

	// The heat pump in Auto without surplus runs in normal operation
	// (SG-Ready 2, 2 kW here): plantd does not switch it on, but its own
	// controller runs it, so its draw counts: dimmed, it is locked.
	if code, b := d.request("PUT", "/gateway/v1/consumers/heatpump/mode", tokInst, `{"mode":"Auto"}`); code != 200 {
		t.Fatalf("PUT heatpump mode Auto: %d %s", code, b)
	}
	proctest.WaitFor(t, "the heat pump in normal operation, 6 + 2 kW drawn", 10*time.Second, func() bool {
		hp, _ := p.Load("heatpump")
		return hp.SGReady == 2 && controllableW() == 8000
	})
	if err := box.WriteCoils(t.Context(), 0, []bool{true}); err != nil {
		t.Fatal(err)
	}
	proctest.WaitFor(t, "the pump in normal operation locked, the draw at most Pmin", 10*time.Second, func() bool {
		hp, _ := p.Load("heatpump")
		return hp.SGReady == 1 && controllableW() <= pmin && controllableW() > 0
	})
	if err := box.WriteCoils(t.Context(), 0, []bool{false}); err != nil {
		t.Fatal(err)
	}
	proctest.WaitFor(t, "the pump back in normal operation", 10*time.Second, func() bool { hp, _ := p.Load("heatpump"); return hp.SGReady == 2 })
}

// TestDimming14aOneDevice is the acceptance's case of one §14a device:
// the immersion heater is the heat pump's auxiliary heater (partOf), so
// both count as one and keep Pmin = 4.2 kW together. Dimmed, the 6 kW
// heater goes off (it cannot fit), the 3 kW heat pump runs on (it fits:
// never 0 W when something fits), within 2 control cycles of the daemon
// reading the contact; lifted, both run again.
func TestDimming14aOneDevice(t *testing.T) {
	t.Parallel() // its own simulator and binary
	if testing.Short() {
		t.Skip("runs plantd against a control box and switching consumers (~10 s)")
	}
	p := dimmingSim(t)
	p.SetLoadOffset(30000) // importing: no surplus; the loads run by hand
	d := startDaemon(t, dimmingConfigHeater(t, p, "partOf: heatpump"))
	d.waitAPI(15 * time.Second)
	d.waitOnline(10*time.Second, "inv1", "meter", "heatmeter", "hpmeter", "heater", "heatpump")
	const pmin = 4200.0
	if got := consumer.MinPower14a(1); got != pmin {
		t.Fatalf("MinPower14a(1) = %v", got)
	}
	heaterW := func() float64 { return p.Device("heatmeter").State().PowerW }
	pumpW := func() float64 { return p.Device("hpmeter").State().PowerW }
	for _, id := range []string{"heater", "heatpump"} {
		if code, b := d.request("PUT", "/gateway/v1/consumers/"+id+"/mode", tokInst, `{"mode":"On"}`); code != 200 {
			t.Fatalf("PUT %s mode On: %d %s", id, code, b)
		}
	}
	proctest.WaitFor(t, "heater 6 kW and heat pump 3 kW on their meters", 10*time.Second, func() bool {
		return heaterW() == 6000 && pumpW() == 3000
	})

	pool := modbus.NewPool(nil)
	defer pool.Close()
	box := pool.Endpoint(modbus.EndpointConfig{Address: p.Device("box").Addr()}).Unit(1, 2*time.Second)
	if err := box.WriteCoils(t.Context(), 0, []bool{true}); err != nil {
		t.Fatal(err)
	}
	proctest.WaitFor(t, "the heater off, the heat pump on: 3 kW of Pmin 4.2 kW", 10*time.Second, func() bool {
		return heaterW() == 0 && pumpW() == 3000
	})
	trace := p.Trace("box")
	edge := trace[len(trace)-1].WallTime
	rs, _ := p.Device("box").Relay()
	i := slices.IndexFunc(rs.InputReads, func(r time.Time) bool { return !r.Before(edge) })
	if i < 0 {
		t.Fatalf("no read of the box's inputs after its coil was written at %v", edge)
	}
	taken := rs.InputReads[i]
	var off time.Time
	for _, e := range p.Trace("io") {
		if pt, ok := e.Point("coil[0]"); ok && pt.Value == 0 && e.Error == "" && e.WallTime.After(taken) {
			off = e.WallTime
			break
		}
	}
	if off.IsZero() {
		t.Fatal("no write switching the heater off after the signal was read")
	}
	t.Logf("§14a, one device: heater off %v after the daemon read the contact; dimmed draw %v W of %v W", off.Sub(taken).Round(time.Millisecond), heaterW()+pumpW(), pmin)
	if lag := off.Sub(taken); lag > 2*time.Second {
		t.Errorf("heater off %v after the daemon read the dimming contact, want within 2 control cycles (2 s)", lag)
	}
	proctest.WaitFor(t, "ConsumersDimmed at most 4200 W for one §14a device", 5*time.Second, func() bool {
		for _, e := range plantLog(t, d) {
			if e.Code == "ConsumersDimmed" && strings.Contains(e.Message, "(one §14a device) draw at most 4200 W") {
				return true
			}
		}
		return false
	})

	if err := box.WriteCoils(t.Context(), 0, []bool{false}); err != nil {
		t.Fatal(err)
	}
	proctest.WaitFor(t, "both running again", 10*time.Second, func() bool { return heaterW() == 6000 && pumpW() == 3000 })
}

// plantLog returns plant p1's last 200 log entries, newest first.
func plantLog(t *testing.T, d *plantdRun) []plant.LogEntry {
	t.Helper()
	code, b := d.request("GET", "/monitoring/v1/plants/p1/logs?limit=200", tokInst, "")
	if code != 200 {
		t.Fatalf("GET logs: %d %s", code, b)
	}
	var out struct{ Logs []plant.LogEntry }
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out.Logs
}
