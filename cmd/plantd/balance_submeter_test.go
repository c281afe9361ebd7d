package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plantd/config"
	"plantd/internal/proctest"
	"plantd/sim"
)

// subMeterConfig is plantd's config for consumerSim's grid meter, two
// inverters and the demo's heater ("mode: On") with its sub-meter
// heatmeter (consumer.meter), every device enabled or none; a commit a
// second, so that a minute shows in Recent a second after it ends.
func subMeterConfig(p *sim.Plant, dir string, enabled bool) string {
	var b strings.Builder
	for _, id := range []string{"inv1", "inv2", "meter", "heatmeter"} {
		host, port, _ := net.SplitHostPort(p.Device(id).Addr())
		fmt.Fprintf(&b, "  - {id: %s, host: %s, port: %s, pollInterval: 500ms, timeout: 1s, enabled: %v}\n", id, host, port, enabled)
	}
	host, port, _ := net.SplitHostPort(p.Device("io").Addr())
	fmt.Fprintf(&b, "  - {id: heater, kind: consumer, host: %s, port: %s, pollInterval: 500ms, timeout: 1s, enabled: %v, "+
		"consumer: {driver: relay, coil: 0, ratedPower: 3000, meter: heatmeter, mode: On, maxSwitchesPerHour: 0}}\n", host, port, enabled)
	return fmt.Sprintf(`http: {listen: 127.0.0.1:0, rateLimit: {requestsPerSecond: 200, burst: 200}}
database: {path: %s, commitInterval: 1s}
plants:
  - {id: p1, name: Home, timezone: Europe/Berlin}
devices:
%stokens:
  - {name: std, sha256: %s, role: standard}
`, filepath.Join(dir, "plantd.db"), b.String(), config.TokenHash(tokStd))
}

// TestBalanceSubMeter: the real binary on the simulator, the heater
// drawing 3 kW through its sub-meter heatmeter while the grid meter
// imports it with the house's 500 W: the monitoring API's plant balance
// takes its grid figures from the grid meter alone, as the live balance
// does (plant.DeviceInfo.GridMeter). Recent (from the raw samples) while
// plantd runs; after a stop (which rolls everything up) Day (5-minute
// rows) and Total (daily rows, from the hourly ones). Before, the stored
// balance counted the heater's energy as grid import a second time.
func TestBalanceSubMeter(t *testing.T) {
	t.Parallel() // its own simulator and binary
	if testing.Short() {
		t.Skip("runs plantd until a minute of the heater is stored (~1-2 min)")
	}
	p := consumerSim(t)
	setExport(p, -500) // importing 500 W with the heater off
	dir := t.TempDir()
	d := startDaemonConfig(t, subMeterConfig(p, dir, true))
	d.waitAPI(30 * time.Second)
	d.waitOnline(30*time.Second, "inv1", "inv2", "meter", "heatmeter")
	proctest.WaitFor(t, "the heater on in the simulator", 30*time.Second, func() bool {
		h, _ := p.Load("heater")
		return h.PowerW > 2900
	})

	type answer struct {
		Set   []map[string]any `json:"set"`
		Total map[string]any   `json:"total"`
	}
	get := func(path string) (answer, bool) {
		t.Helper()
		var a answer
		code, body := d.request("GET", path, tokStd, "")
		if code != 200 {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, body)
		}
		return a, len(a.Set) > 0 && a.Total != nil
	}
	num := func(m map[string]any, k string) float64 {
		t.Helper()
		v, ok := m[k].(float64)
		if !ok {
			t.Fatalf("no %s in %v", k, m)
		}
		return v
	}
	const (
		plantSet = "/monitoring/v1/plants/p1/measurements/sets/EnergyBalance/"
		gridSet  = "/monitoring/v1/devices/meter/measurements/sets/EnergyAndPowerInOut/"
		subSet   = "/monitoring/v1/devices/heatmeter/measurements/sets/EnergyAndPowerInOut/"
	)
	// A minute with the heater on: the newest Recent row of the
	// sub-meter, then the three answers of that one minute.
	proctest.WaitFor(t, "a stored minute of the heater", 3*time.Minute, func() bool {
		a, ok := get(subSet + "Recent?WithTotal=true")
		return ok && num(a.Set[0], "gridConsumption") >= 300
	})
	recent := proctest.WaitValue(t, "the plant, the grid meter and the sub-meter at the same minute", time.Minute, func() ([3]answer, bool) {
		var out [3]answer
		for i, set := range []string{plantSet, gridSet, subSet} {
			a, ok := get(set + "Recent?WithTotal=true")
			if !ok {
				return out, false
			}
			out[i] = a
		}
		when := out[0].Set[0]["time"]
		return out, out[1].Set[0]["time"] == when && out[2].Set[0]["time"] == when
	})
	pl, grid, sub := recent[0], recent[1], recent[2]
	minute := pl.Set[0]["time"].(string)
	t.Logf("Recent, the minute to %s: plant gridConsumption %.1f W, grid meter %.1f W, sub-meter %.1f W; the hour: %.2f, %.2f, %.2f Wh",
		minute, num(pl.Set[0], "gridConsumption"), num(grid.Set[0], "gridConsumption"), num(sub.Set[0], "gridConsumption"),
		num(pl.Total, "gridConsumption"), num(grid.Total, "gridConsumption"), num(sub.Total, "gridConsumption"))
	if s := num(sub.Set[0], "gridConsumption"); s < 300 {
		t.Fatalf("the sub-meter's minute shows %.1f W: the check needs the heater", s)
	}
	for _, c := range []struct {
		what        string
		plant, grid float64
	}{
		{"Recent's newest minute (W)", num(pl.Set[0], "gridConsumption"), num(grid.Set[0], "gridConsumption")},
		{"Recent's hour (Wh)", num(pl.Total, "gridConsumption"), num(grid.Total, "gridConsumption")},
		{"Recent's newest minute, feed-in (W)", num(pl.Set[0], "gridFeedIn"), num(grid.Set[0], "gridFeedIn")},
	} {
		if math.Abs(c.plant-c.grid) > 0.01 {
			t.Errorf("%s: the plant's gridConsumption %.3f, the grid meter's %.3f", c.what, c.plant, c.grid)
		}
	}

	// The rollups: a stop rolls up everything, the last partial interval
	// too; a start with every device disabled adds nothing to them.
	d.stop()
	d = startDaemonConfig(t, subMeterConfig(p, dir, false))
	d.waitAPI(30 * time.Second)
	at, err := time.Parse("2006-01-02T15:04:05", minute) // the API's local time
	if err != nil {
		t.Fatal(err)
	}
	date := at.Add(-time.Minute).Format(time.DateOnly) // the day the minute is in
	for _, period := range []string{"Day?Date=" + date + "&WithTotal=true", "Total?WithTotal=true"} {
		var out [3]answer
		for i, set := range []string{plantSet, gridSet, subSet} {
			a, ok := get(set + period)
			if !ok {
				t.Fatalf("%s%s: no rows or no total", set, period)
			}
			out[i] = a
		}
		pl, grid, sub := out[0], out[1], out[2]
		t.Logf("%s: gridConsumption plant %.2f Wh, grid meter %.2f Wh, sub-meter %.2f Wh", period,
			num(pl.Total, "gridConsumption"), num(grid.Total, "gridConsumption"), num(sub.Total, "gridConsumption"))
		if s := num(sub.Total, "gridConsumption"); s < 5 {
			t.Fatalf("%s: the sub-meter's %.2f Wh: the check needs the heater", period, s)
		}
		if pw, gw := num(pl.Total, "gridConsumption"), num(grid.Total, "gridConsumption"); math.Abs(pw-gw) > 0.01 {
			t.Errorf("%s: the plant's gridConsumption %.3f Wh, the grid meter's %.3f", period, pw, gw)
		}
		// Row by row (5-minute W means, daily Wh).
		rows := map[any]map[string]any{}
		for _, r := range grid.Set {
			rows[r["time"]] = r
		}
		for _, r := range pl.Set {
			g, ok := rows[r["time"]]
			if !ok {
				t.Errorf("%s: the plant's row %v, the grid meter has none", period, r["time"])
				continue
			}
			pw, ok := r["gridConsumption"].(float64)
			if !ok {
				continue // a row before the grid meter's first pair of polls
			}
			if gw := num(g, "gridConsumption"); math.Abs(pw-gw) > 0.01 {
				t.Errorf("%s, %v: the plant's gridConsumption %.3f, the grid meter's %.3f", period, r["time"], pw, gw)
			}
		}
	}
}
