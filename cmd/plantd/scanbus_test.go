package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/config"
	"plantd/internal/proctest"
)

// TestScanBusFlags: --json, --values and --base work on a bus scan, on a
// serial line and through an RTU-over-TCP converter, as on a TCP address:
// the JSON document alone on stdout (the progress on stderr), the values
// of a SunSpec and of a template device, the SunSpec map looked for at the
// base given only.
func TestScanBusFlags(t *testing.T) {
	t.Parallel() // its own simulators, ptys and binaries
	if testing.Short() {
		t.Skip("sweeps an RS485 bus at 9600 baud")
	}
	for _, tr := range []struct {
		name       string
		rtuOverTCP bool
	}{{"serial", false}, {"rtu-over-tcp", true}} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			_, where := busSim(t, tr.rtuOverTCP)
			bus := []string{"scan", "--serial", where, "--baud", "9600"}
			if tr.rtuOverTCP {
				bus = []string{"scan", "--rtu-over-tcp", where}
			}
			// Units 1 (the SunSpec meter) and 3 (an SDM120).
			bus = append(bus, "--units", "1,3", "--timeout", "2s")
			for _, tc := range []struct {
				name  string
				flags []string
				check func(t *testing.T, out, errOut string)
			}{
				{"json", []string{"--json"}, func(t *testing.T, out, errOut string) {
					res := decodeBusScan(t, out)
					if len(res.Devices) != 2 || res.Devices[0].SunSpec == nil || res.Devices[0].SunSpec.Kind != "meter" ||
						res.Devices[1].Template != "sdm120" || !strings.HasPrefix(res.Devices[1].ConfigEntry, "- {id: sdm120-3, ") {
						t.Errorf("devices %+v", res.Devices)
					}
					if res.Devices[0].SunSpec.Models[0].Points != nil || res.Devices[1].Points != nil {
						t.Error("values without --values")
					}
					if !strings.Contains(errOut, "scanning "+where) {
						t.Errorf("stderr %q: want the progress", errOut)
					}
				}},
				{"values json", []string{"--values", "--json"}, func(t *testing.T, out, _ string) {
					res := decodeBusScan(t, out)
					if len(res.Devices) != 2 || res.Devices[0].SunSpec == nil {
						t.Fatalf("devices %+v", res.Devices)
					}
					if p, ok := findPoint(res.Devices[0].SunSpec.Models[0].Points, "Mn"); !ok || p.Text != "plantd" {
						t.Errorf("the meter's model 1 Mn = %+v", p)
					}
					if p, ok := findPoint(res.Devices[1].Points, "voltage"); !ok || p.Value == nil || *p.Value < 200 || *p.Value > 260 || p.Units != "V" {
						t.Errorf("the SDM120's voltage = %+v in %+v", p, res.Devices[1].Points)
					}
				}},
				{"values", []string{"--values"}, func(t *testing.T, out, _ string) {
					for _, re := range []string{`(?m)^unit 1: SunSpec meter`, `(?m)^\s+1  common\s+at 40002`, `(?m)^\s+Mn\s+plantd$`,
						`(?m)^unit 3: template sdm120`, `(?m)^    voltage\s+2\d\d(\.\d+)? V$`} {
						if !regexp.MustCompile(re).MatchString(out) {
							t.Errorf("no %s in\n%s", re, out)
						}
					}
				}},
				{"base", []string{"--base", "0", "--json"}, func(t *testing.T, out, _ string) {
					res := decodeBusScan(t, out)
					if len(res.Devices) == 0 || res.Devices[0].Unit != 1 || res.Devices[0].SunSpec != nil {
						t.Errorf("--base 0 found the meter's map (at 40000): %+v", res.Devices)
					}
				}},
				{"base of the map", []string{"--base", "40000", "--json"}, func(t *testing.T, out, _ string) {
					res := decodeBusScan(t, out)
					if len(res.Devices) == 0 || res.Devices[0].SunSpec == nil || res.Devices[0].SunSpec.Base != 40000 {
						t.Errorf("--base 40000: %+v", res.Devices)
					}
				}},
			} {
				args := append(append([]string{}, bus...), tc.flags...)
				out, errOut, code := runBinary(t, args...)
				if code != 0 {
					t.Errorf("%s: plantd %v: exit %d\n%s%s", tc.name, args, code, out, errOut)
					continue
				}
				t.Run(tc.name, func(t *testing.T) { tc.check(t, out, errOut) })
			}
		})
	}
}

func decodeBusScan(t *testing.T, out string) busScanResult {
	t.Helper()
	var res busScanResult
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON document (%v):\n%s", err, out)
	}
	return res
}

func findPoint(ps []scanPoint, name string) (scanPoint, bool) {
	for _, p := range ps {
		if p.Name == name {
			return p, true
		}
	}
	return scanPoint{}, false
}

// TestScanHeldPort is the acceptance of the exclusive port with the real
// binaries: plantd run polls two devices on a serial line; three plantd
// scan --serial on that port (one with --json) each refuse at once,
// naming the daemon and its pid, and send nothing on the line: the
// daemon's polls go on without a failure.
func TestScanHeldPort(t *testing.T) {
	t.Parallel() // its own simulator, ptys and binaries
	_, where := busSim(t, false)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "plantd.yaml")
	writeConfig(t, cfgPath, fmt.Sprintf(`http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: Bus, timezone: Europe/Berlin}
devices:
  - {id: meter, serial: {port: %s, baud: 9600}, unit: 1, pollInterval: 1s, timeout: 1s}
  - {id: sdm120, serial: {port: %[2]s, baud: 9600}, unit: 3, template: sdm120, pollInterval: 1s, timeout: 1s}
tokens:
  - {name: inst, sha256: %s, role: installer}
`, filepath.Join(dir, "plantd.db"), where, config.TokenHash(tokInst)))
	d := startDaemon(t, cfgPath)
	api := d.waitAPI(15 * time.Second)
	d.waitOnline(30*time.Second, "meter", "sdm120")
	metric := func(m, name, id string) float64 {
		v := regexp.MustCompile(`(?m)^` + name + `\{device="` + id + `"\} (\S+)$`).FindStringSubmatch(m)
		if v == nil {
			return 0
		}
		f, _ := strconv.ParseFloat(v[1], 64)
		return f
	}
	metrics := func() string {
		resp, err := http.Get("http://" + api + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	m0 := metrics()
	pid := d.Cmd.Process.Pid
	held := fmt.Sprintf("%s is held by plantd (pid %d)", where, pid)
	for i, flags := range [][]string{nil, {"--units", "1-3"}, {"--json"}} {
		args := append([]string{"scan", "--serial", where, "--baud", "9600"}, flags...)
		out, errOut, code := runBinary(t, args...)
		switch {
		case code != exitFailure:
			t.Errorf("scan %d: exit %d, want %d\n%s%s", i+1, code, exitFailure, out, errOut)
		case slices.Contains(flags, "--json"):
			res := decodeBusScan(t, out)
			if res.Error != held || !strings.Contains(res.Hint, "systemctl stop plantd") || len(res.Devices) != 0 {
				t.Errorf("scan %d: %+v, want error %q and the hint", i+1, res, held)
			}
		case !strings.Contains(errOut, "plantd scan: "+held+"\nhint: plantd's daemon polls this bus") || strings.Contains(out, "no device answered"):
			t.Errorf("scan %d: stdout %q, stderr %q; want %q and the hint", i+1, out, errOut, held)
		}
	}
	// Every device gets 3 more polls after the scans, none failing.
	proctest.WaitFor(t, "3 more polls of each device", 60*time.Second, func() bool {
		m := metrics()
		return metric(m, "plantd_device_polls_total", "meter")-metric(m0, "plantd_device_polls_total", "meter") >= 3 &&
			metric(m, "plantd_device_polls_total", "sdm120")-metric(m0, "plantd_device_polls_total", "sdm120") >= 3
	})
	m := metrics()
	for _, id := range []string{"meter", "sdm120"} {
		// Counted from m0: a poll that failed before (the start on a
		// loaded machine, before the device was online) is not the scans'.
		if f := metric(m, "plantd_device_poll_failures_total", id) - metric(m0, "plantd_device_poll_failures_total", id); f != 0 {
			t.Errorf("%s: %v failed polls with the scans beside it", id, f)
		}
	}
	d.Stop(os.Interrupt, 10*time.Second)
}
