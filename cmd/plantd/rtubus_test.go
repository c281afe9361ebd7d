package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/config"
	"plantd/devices/template"
	"plantd/internal/proctest"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/sim/simtest"
)

// busSim is a bus of eight units: the demo's SunSpec meter (unit 1), one
// device of each template (units 2..7) and a dead SDM630 (unit 8, never
// answers), on a serial line at 9600 baud (one end of a socat pty pair;
// the other is returned) or, with rtuOverTCP, behind one RTU-over-TCP
// converter (its address is returned).
func busSim(t *testing.T, rtuOverTCP bool) (p *sim.Plant, where string) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Devices = []sim.DeviceConfig{{ID: "meter", Kind: kind.Meter, Unit: 1}}
	for i, name := range template.Names() {
		cfg.Devices = append(cfg.Devices, sim.DeviceConfig{ID: name, Template: name, Unit: byte(2 + i)})
	}
	cfg.Devices = append(cfg.Devices, sim.DeviceConfig{ID: "dead", Template: "sdm630", Unit: 8})
	cfg.Start, cfg.ClearSky = time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC), true
	if rtuOverTCP {
		for i := range cfg.Devices {
			cfg.Devices[i].Endpoint, cfg.Devices[i].RTUOverTCP, cfg.Devices[i].Baud = "converter", true, 9600
		}
	} else {
		a, b := socatPair(t, t.TempDir())
		var ids []string
		for _, d := range cfg.Devices {
			ids = append(ids, d.ID)
		}
		cfg.Serial = []sim.SerialConfig{{Path: a, Baud: 9600, Devices: ids}}
		where = b
	}
	p = simtest.Start(t, cfg)
	p.Device("dead").SetFault(sim.Fault{Kind: sim.FaultOffline})
	if rtuOverTCP {
		where = p.Device("meter").Addr()
	}
	return p, where
}

// scanEntryRE matches a config entry a bus scan prints.
var scanEntryRE = regexp.MustCompile(`(?m)^  (- \{id: \S+, .*\})$`)

// TestRTUBus is the RS485 acceptance with the real binary: plantd scan
// sweeps units 1..8 of the bus and names the SunSpec meter and the six
// template devices (the dead unit stays silent); plantd run polls the
// entries it printed, plus the dead unit, through the same bus: the seven
// keep being polled without a failed poll while the dead one fails and is
// retried, and /metrics shows the bus (timeouts, utilisation). Then the
// same devices behind an RTU-over-TCP converter.
func TestRTUBus(t *testing.T) {
	t.Parallel() // its own simulator, ptys and binaries
	if testing.Short() {
		t.Skip("sweeps and polls an RS485 bus at 9600 baud (~30 s)")
	}
	for _, tc := range []struct {
		name       string
		rtuOverTCP bool
	}{{"serial", false}, {"rtu-over-tcp", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, where := busSim(t, tc.rtuOverTCP)
			// The bus scan waits 300 ms per unit by default; in a loaded
			// full run a live unit's answer took longer (units 5..7 were
			// taken for silent once): 2 s, which only the dead unit waits.
			args := []string{"scan", "--serial", where, "--baud", "9600", "--units", "1-8", "--timeout", "2s"}
			if tc.rtuOverTCP {
				args = []string{"scan", "--rtu-over-tcp", where, "--units", "1-8", "--timeout", "2s"}
			}
			out, errOut, code := runBinary(t, args...)
			if code != 0 {
				t.Fatalf("scan: exit %d\n%s%s", code, out, errOut)
			}
			for unit, what := range map[int]string{1: "SunSpec meter", 2: "template e3dc", 3: "template sdm120", 4: "template sdm630",
				5: "template sdm72", 6: "template sun2000", 7: "template sungrow_sh"} {
				if !strings.Contains(out, fmt.Sprintf("unit %d: %s", unit, what)) {
					t.Errorf("scan did not find %s at unit %d:\n%s", what, unit, out)
				}
			}
			if strings.Contains(out, "unit 8:") {
				t.Errorf("scan found the dead unit 8:\n%s", out)
			}
			entries := scanEntryRE.FindAllStringSubmatch(out, -1)
			if len(entries) != 7 {
				t.Fatalf("%d config entries, want 7:\n%s", len(entries), out)
			}
			var devs strings.Builder
			for _, e := range entries {
				fmt.Fprintf(&devs, "  %s\n", strings.TrimSuffix(e[1], "}")+", pollInterval: 5s, timeout: 1s}")
			}
			// The dead unit, as an installer would have configured it.
			dead := strings.Replace(strings.Replace(entries[3][1], "unit: 4", "unit: 8", 1), "id: sdm630-4", "id: dead", 1)
			fmt.Fprintf(&devs, "  %s\n", strings.TrimSuffix(dead, "}")+", pollInterval: 5s, timeout: 1s}")
			dir := t.TempDir()
			cfgPath := filepath.Join(dir, "plantd.yaml")
			writeConfig(t, cfgPath, fmt.Sprintf(`http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: Bus, timezone: Europe/Berlin}
devices:
%stokens:
  - {name: inst, sha256: %s, role: installer}
`, filepath.Join(dir, "plantd.db"), devs.String(), config.TokenHash(tokInst)))
			d := startDaemon(t, cfgPath)
			d.waitAPI(15 * time.Second)
			ids := []string{"dev1", "e3dc-2", "sdm120-3", "sdm630-4", "sdm72-5", "sun2000-6", "sungrow_sh-7"}
			d.waitOnline(30*time.Second, ids...)
			metrics := func() string {
				resp, err := http.Get("http://" + d.api + "/metrics")
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return string(b)
			}
			count := func(m, name, id string) float64 {
				re := regexp.MustCompile(`(?m)^` + name + `\{device="` + regexp.QuoteMeta(id) + `"\} (\S+)$`)
				v := re.FindStringSubmatch(m)
				if v == nil {
					return 0
				}
				f, _ := strconv.ParseFloat(v[1], 64)
				return f
			}
			// Every live unit gets 3 more polls, none of them failing,
			// while the dead one fails beside them.
			m0 := metrics()
			began := time.Now()
			proctest.WaitFor(t, "3 more polls of every live unit", 60*time.Second, func() bool {
				m := metrics()
				for _, id := range ids {
					if count(m, "plantd_device_polls_total", id)-count(m0, "plantd_device_polls_total", id) < 3 {
						return false
					}
				}
				return true
			})
			m := metrics()
			for _, id := range ids {
				if f := count(m, "plantd_device_poll_failures_total", id) - count(m0, "plantd_device_poll_failures_total", id); f != 0 {
					t.Errorf("%s: %v failed polls beside the dead unit", id, f)
				}
			}
			deadFails := count(m, "plantd_device_poll_failures_total", "dead")
			if deadFails == 0 || count(m, "plantd_device_online", "dead") != 0 {
				t.Errorf("the dead unit: %v failed polls, online %v", deadFails, count(m, "plantd_device_online", "dead"))
			}
			timeouts := regexp.MustCompile(`(?m)^plantd_modbus_request_failures_total\{endpoint="[^"]+",reason="timeout"\} (\S+)$`).FindStringSubmatch(m)
			util := regexp.MustCompile(`(?m)^plantd_modbus_utilisation\{endpoint="[^"]+",transport="(rtu|rtu-over-tcp)"\} (\S+)$`).FindStringSubmatch(m)
			if timeouts == nil || timeouts[1] == "0" || util == nil {
				t.Errorf("/metrics shows no timeouts or no utilisation of the bus:\n%s", grepLines(m, "plantd_modbus_"))
			} else {
				t.Logf("%s: 3 polls of each of 7 units in %v beside a dead one (%v failed polls of it); bus timeouts %s, utilisation %s",
					tc.name, time.Since(began).Round(100*time.Millisecond), deadFails, timeouts[1], util[2])
			}
			// Values: the meter's and a template device's live values.
			for _, id := range []string{"dev1", "sdm630-4", "sun2000-6"} {
				code, b := d.request("GET", "/live/v1/devices/"+id, tokInst, "")
				if code != 200 || !strings.Contains(string(b), `"name":"activePower"`) {
					t.Errorf("live values of %s: %d %s", id, code, b)
				}
			}
			d.Stop(os.Interrupt, 10*time.Second)
		})
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, strings.TrimRight(l, "\n"))
		}
	}
	return strings.Join(out, "\n")
}
