package main

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"plantd/config"
	"plantd/internal/proctest"
	"plantd/sim"
	"plantd/sim/simtest"
)

// disabledConfig is a config of the simulated inverter, meter and battery
// (with their kinds), the devices named in disabled set enabled: false.
func disabledConfig(p *sim.Plant, dir, extra string, disabled ...string) string {
	var devs strings.Builder
	for _, id := range []string{"inv1", "meter", "bat"} {
		var d *sim.Device
		for _, x := range p.Devices() {
			if x.ID() == id {
				d = x
			}
		}
		host, port, _ := net.SplitHostPort(d.Addr())
		kind := string(d.Kind())
		enabled := true
		for _, x := range disabled {
			enabled = enabled && x != id
		}
		fmt.Fprintf(&devs, "  - {id: %s, kind: %s, host: %s, port: %s, pollInterval: 250ms, timeout: 500ms, enabled: %v}\n", id, kind, host, port, enabled)
	}
	return fmt.Sprintf("http:\n  listen: 127.0.0.1:0\ndatabase:\n  path: %s\nplants:\n  - {id: p1, name: Test, timezone: Europe/Berlin}\ndevices:\n%s%s",
		filepath.Join(dir, "plantd.db"), devs.String(), extra)
}

// TestDisabledDeviceKept: the real binary, a battery and an inverter
// polled and stored, then disabled in the config (SIGHUP): both stay in
// the API as deactivated (GET /monitoring/v1/devices/{id} answers, the
// lean list has them with WithDeactivatedDevices=true only, isActive false
// and deactivatedAt the time of the reload), their history stays
// readable, plantWithBattery is false and calculatedAcNominalPower
// counts no inverter; they are never polled again. After a restart they
// are still deactivated, at the same deactivatedAt (kept in the
// database), and not polled; enabled again, they are active and polled.
func TestDisabledDeviceKept(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
	p := simtest.Start(t, sim.DefaultConfig())
	dir := t.TempDir()
	const tok = "token-of-the-disabled-device-test"
	extra := fmt.Sprintf("tokens:\n  - {name: t, sha256: %s, role: standard}\n", config.TokenHash(tok))
	d := startDaemonConfig(t, disabledConfig(p, dir, extra))
	d.waitAPI(10 * time.Second)
	d.waitOnline(30*time.Second, "inv1", "meter", "bat")

	get := func(path string, v any) int {
		t.Helper()
		code, body := d.request("GET", path, tok, "")
		if v != nil && code == 200 {
			if err := json.Unmarshal(body, v); err != nil {
				t.Fatalf("%s: %v: %s", path, err, body)
			}
		}
		return code
	}
	type device struct {
		DeviceID      string `json:"deviceId"`
		Type          string `json:"type"`
		IsActive      bool   `json:"isActive"`
		DeactivatedAt string `json:"deactivatedAt"`
	}
	// recent is the time of the battery's latest stored values ("" none).
	recent := func() string {
		var set struct {
			Set []struct {
				Time string `json:"time"`
			} `json:"set"`
		}
		if code := get("/monitoring/v1/devices/bat/measurements/sets/EnergyAndPowerBattery/Recent", &set); code != 200 || len(set.Set) == 0 {
			return ""
		}
		return set.Set[0].Time
	}
	polls := func(id string) (float64, bool) {
		_, body := d.request("GET", "/metrics", "", "")
		m := regexp.MustCompile(`plantd_device_polls_total\{device="` + id + `"\} (\S+)`).FindSubmatch(body)
		if m == nil {
			return 0, false
		}
		var v float64
		fmt.Sscan(string(m[1]), &v)
		return v, true
	}
	// pollRounds waits until the meter was polled n more times.
	pollRounds := func(n float64) {
		t.Helper()
		m0, _ := polls("meter")
		proctest.WaitFor(t, "meter polls", 20*time.Second, func() bool { m, _ := polls("meter"); return m >= m0+n })
	}
	proctest.WaitFor(t, "the battery's stored values", 30*time.Second, func() bool { return recent() != "" })
	var conf struct {
		PlantWithBattery bool `json:"plantWithBattery"`
	}
	var inst struct {
		Installation struct {
			CalculatedAcNominalPower *float64 `json:"calculatedAcNominalPower"`
		} `json:"installation"`
	}
	get("/monitoring/v1/plants/p1/configuration", &conf)
	get("/monitoring/v1/plants/p1/installation", &inst)
	if !conf.PlantWithBattery || inst.Installation.CalculatedAcNominalPower == nil {
		t.Fatalf("all enabled: plantWithBattery %v, calculatedAcNominalPower %v", conf.PlantWithBattery, inst.Installation.CalculatedAcNominalPower)
	}

	// Disabled at a reload.
	d.writeConfig(disabledConfig(p, dir, extra, "bat", "inv1"))
	before := time.Now().Add(-time.Second) // deactivatedAt has whole seconds
	d.Signal(syscall.SIGHUP)
	d.WaitLog(regexp.MustCompile(`devices reloaded`), 10*time.Second)
	after := time.Now()
	berlin, _ := time.LoadLocation("Europe/Berlin")
	check := func(when string, wantAt string) string {
		t.Helper()
		var det struct {
			Details device `json:"details"`
		}
		for _, id := range []string{"bat", "inv1"} {
			if code := get("/monitoring/v1/devices/"+id, &det); code != 200 {
				t.Fatalf("%s: GET /monitoring/v1/devices/%s: %d", when, id, code)
			}
			at, err := time.ParseInLocation("2006-01-02T15:04:05", det.Details.DeactivatedAt, berlin)
			if det.Details.IsActive || err != nil || at.Before(before) || at.After(after) || det.Details.Type == "" {
				t.Errorf("%s: %s = %+v, want inactive, deactivated between %v and %v", when, id, det.Details, before, after)
			}
			if wantAt != "" && det.Details.DeactivatedAt != wantAt {
				t.Errorf("%s: %s deactivatedAt %s, want %s as before", when, id, det.Details.DeactivatedAt, wantAt)
			}
			wantAt = det.Details.DeactivatedAt
		}
		for _, tc := range []struct {
			query string
			want  bool
		}{{"", false}, {"?WithDeactivatedDevices=true", true}} {
			var lean struct{ Devices []device }
			get("/monitoring/v1/plants/p1/devices/lean"+tc.query, &lean)
			found := 0
			for _, x := range lean.Devices {
				if (x.DeviceID == "bat" || x.DeviceID == "inv1") && !x.IsActive && x.DeactivatedAt != "" {
					found++
				}
			}
			if (found == 2) != tc.want {
				t.Errorf("%s: lean list%s: %+v", when, tc.query, lean.Devices)
			}
		}
		get("/monitoring/v1/plants/p1/configuration", &conf)
		inst.Installation.CalculatedAcNominalPower = nil
		get("/monitoring/v1/plants/p1/installation", &inst)
		if conf.PlantWithBattery || inst.Installation.CalculatedAcNominalPower != nil {
			t.Errorf("%s: plantWithBattery %v, calculatedAcNominalPower %v; want false and none (no active battery nor inverter)",
				when, conf.PlantWithBattery, inst.Installation.CalculatedAcNominalPower)
		}
		var sets struct{ Sets []string }
		if code := get("/monitoring/v1/devices/bat/measurements/sets", &sets); code != 200 || !strings.Contains(fmt.Sprint(sets.Sets), "EnergyAndPowerBattery") {
			t.Errorf("%s: the battery's sets: %d %v", when, code, sets.Sets)
		}
		return wantAt
	}
	at := check("after the reload", "")
	pollRounds(2) // a poll under way at the reload is stored
	last := recent()
	pollRounds(4)
	if r := recent(); r == "" || r != last {
		t.Errorf("the battery's latest values %q, then %q: want its history readable and not growing", last, r)
	}
	for _, id := range []string{"bat", "inv1"} {
		if n, ok := polls(id); ok {
			t.Errorf("%s polled %v times after it was disabled", id, n)
		}
	}
	d.stop()

	// A restart: still deactivated, since the same time, not polled.
	d = startDaemon(t, d.path)
	d.waitAPI(10 * time.Second)
	d.waitOnline(30*time.Second, "meter")
	check("after a restart", at)
	pollRounds(3)
	for _, id := range []string{"bat", "inv1"} {
		if n, ok := polls(id); ok {
			t.Errorf("%s polled %v times after the restart", id, n)
		}
	}

	// Enabled again: active and polled.
	d.writeConfig(disabledConfig(p, dir, extra))
	d.Signal(syscall.SIGHUP)
	d.WaitLog(regexp.MustCompile(`devices reloaded`), 10*time.Second)
	proctest.WaitFor(t, "the battery polled again", 20*time.Second, func() bool { n, ok := polls("bat"); return ok && n > 0 })
	var det struct {
		Details device `json:"details"`
	}
	get("/monitoring/v1/devices/bat", &det)
	if !det.Details.IsActive || det.Details.DeactivatedAt != "" {
		t.Errorf("enabled again: %+v", det.Details)
	}
	d.stop()
}
