package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"plantd/config"
	"plantd/httpapi/apitest"
	"plantd/internal/proctest"
	"plantd/sim"
	"plantd/sim/simtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// binPath is the real binary, built once per test run.
var binPath string

// TestMain builds the binary once for all tests and runs up to 16
// parallel tests at a time rather than one per core (unless -parallel is
// given): each mostly waits for its own daemon, simulated devices or
// broker. Under -race 10: race-built daemons take several times the CPU,
// and 16 of them at once starved the timing-bound rig tests of the
// package go test runs beside this one (gridcontrol); since gridcontrol's
// decision tests run on a stepped clock, full -race suite runs took this
// package 88.9 s at 6, 73.6 s at 8 and 64.8 s at 10, gridcontrol 27-28 s
// in each, all green but for one check of this package's, since fixed.
// gin (the HTTP API of the tests that run it in this process) is in
// release mode, as main sets it: no route listing on stdout.
func TestMain(m *testing.M) {
	flag.Parse()
	gin.SetMode(gin.ReleaseMode)
	proctest.SetQuickExit() // each race-built daemon's exit a second sooner
	if proctest.Race() {
		proctest.DefaultParallel(10)
	} else {
		proctest.DefaultParallel(16)
	}
	dir, err := os.MkdirTemp("", "plantd-bin")
	if err != nil {
		panic(err)
	}
	binPath = filepath.Join(dir, "plantd")
	if err := proctest.Build(binPath, "."); err != nil {
		os.RemoveAll(dir)
		panic("build plantd: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func runBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binPath, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

// TestScanGolden scans every simulated device with the real binary and
// compares the --json output with testdata/scan_<id>.json (the address,
// whose port changes from run to run, is replaced by ADDR).
func TestScanGolden(t *testing.T) {
	t.Parallel() // its own files, processes and ports
	p := simtest.Start(t, sim.DefaultConfig())
	for _, d := range p.Devices() {
		t.Run(d.ID(), func(t *testing.T) {
			t.Parallel() // a device of its own
			out, errOut, code := runBinary(t, "scan", d.Addr(), "--json", "--unit", "1")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var res scanResult
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			got := strings.ReplaceAll(out, d.Addr(), "ADDR")
			golden := filepath.Join("testdata", "scan_"+d.ID()+".json")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/plantd -run TestScanGolden -update)", err)
			}
			if got != string(want) {
				t.Errorf("scan --json differs from %s:\n%s", golden, got)
			}
			// The human form names the same facts.
			human, _, code := runBinary(t, "scan", d.Addr())
			if code != 0 || !strings.Contains(human, string(res.Kind)) || !strings.Contains(human, res.Model) {
				t.Errorf("human output (exit %d) lacks kind %s or model %s:\n%s", code, res.Kind, res.Model, human)
			}
		})
	}
}

func TestScanFailures(t *testing.T) {
	t.Parallel() // its own files, processes and ports
	p := simtest.Start(t, sim.DefaultConfig())
	wx := p.Devices()[0]
	// A port where nothing listens.
	dead := deadAddr(t)
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no SunSpec map", []string{"scan", simtest.PlainModbus(t)}, 1, "not a SunSpec device"},
		{"unit nobody answers", []string{"scan", wx.Addr(), "--unit", "99"}, 1, "failed to respond"},
		{"nothing listening", []string{"scan", dead, "--timeout", "500ms"}, 1, "connect"},
		{"no address", []string{"scan"}, 2, "usage"},
		{"bad port", []string{"scan", "127.0.0.1:70000"}, 2, "not a TCP port"},
		{"bad unit", []string{"scan", "127.0.0.1", "--unit", "300"}, 2, "not a Modbus unit id"},
		{"unknown command", []string{"frobnicate"}, 2, "unknown command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runBinary(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut, tc.code, tc.msg)
			}
		})
	}
}

func TestHelpAndVersion(t *testing.T) {
	t.Parallel() // its own files, processes and ports
	for _, cmd := range []string{"run", "demo", "check-config", "scan", "sim", "version"} {
		_, errOut, code := runBinary(t, cmd, "-h")
		if code != 0 || !strings.Contains(errOut, "usage: plantd "+cmd) {
			t.Errorf("%s -h: exit %d, %q", cmd, code, errOut)
		}
	}
	out, _, code := runBinary(t, "version")
	if code != 0 || !regexp.MustCompile(`^plantd \S+ \(commit \S+, go\S+ linux/\w+\)\n$`).MatchString(out) {
		t.Errorf("version: exit %d, %q", code, out)
	}
}

// deadAddr returns a loopback address where nothing listens (and no
// parallel test's listener can take it).
func deadAddr(t *testing.T) string { return proctest.DeadAddr(t) }

// TestSimCommand runs "plantd sim", scans a device it lists with "plantd
// scan" and stops it with SIGINT.
func TestSimCommand(t *testing.T) {
	p := proctest.Start(t, exec.Command(binPath, "sim", "--speed", "10"))
	devs := simDevices(p.WaitStdout(simReadyRE, 10*time.Second))
	// The demo plant's five SunSpec devices, the relay board, the
	// heater's meter and the ripple-control receiver's I/O module (the
	// Shelly plug is listed by its HTTP address).
	if len(devs) != 8 || devs["io"] == "" || devs["rcr"] == "" || !strings.Contains(p.Stdout.String(), "(HTTP RPC)") ||
		!strings.Contains(p.Stdout.String(), "io-module") {
		t.Fatalf("plantd sim listed %v, want 8 Modbus devices (an io-module among them) and the plug; stdout:\n%s", devs, p.Stdout.String())
	}
	out, errOut, code := runBinary(t, "scan", devs["meter"], "--json")
	if code != 0 || !strings.Contains(out, `"kind": "meter"`) {
		t.Fatalf("scan of the meter: exit %d %s %s", code, out, errOut)
	}
	p.Stop(os.Interrupt, 2*time.Second)
}

// simReadyRE is the last line "plantd sim" prints at start, after its
// device list.
var simReadyRE = regexp.MustCompile(`^try: `)

// simDevices returns the addresses of the devices in the list "plantd
// sim" prints at start, by device id.
func simDevices(stdout string) map[string]string {
	devs := map[string]string{}
	for l := range strings.Lines(stdout) {
		if f := strings.Fields(l); len(f) == 4 && strings.HasPrefix(f[2], "127.0.0.1:") {
			devs[f[0]] = f[2]
		}
	}
	return devs
}

// TestDemo runs "plantd demo": all five simulated devices must be logged
// online within 10 s; the HTTP API answers with the printed token, and a
// client written for the cloud API (scripts/cloud-client.py, no plantd
// code) reads the plant through it and runs the OAuth2 code flow, refresh
// and the back-channel consent, the owner deciding each consent with the
// binary's "plantd consent", and so does a JavaScript client
// (scripts/battery-client.mjs, under node) as the demo's second client
// (demo2: the rate limit is per client, and the Python client's retries
// left the shared one's bucket empty: 429); SIGINT stops it within 2 s
// with exit 0.
func TestDemo(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
	db := filepath.Join(t.TempDir(), "demo.db")
	// At 600× a 5-minute interval of the database closes every 0.5 s.
	start := time.Now()
	d := proctest.Start(t, exec.Command(binPath, "demo", "--interval", "250ms", "--speed", "600", "--listen", "127.0.0.1:0", "--db", db))
	online := map[string]bool{}
	apiAddr := ""
	deadline := time.Now().Add(10 * time.Second)
	for len(online) < 5 || apiAddr == "" {
		l, ok := d.Next(time.Until(deadline))
		if !ok {
			t.Fatalf("plantd demo ended or after 10 s only %v online, api at %q", online, apiAddr)
		}
		for _, id := range []string{"inv1", "inv2", "meter", "bat", "wx"} {
			if strings.Contains(l, `msg="device online"`) && strings.Contains(l, " device="+id+" manufacturer=plantd ") {
				online[id] = true
			}
		}
		if m := listenRE.FindStringSubmatch(l); m != nil {
			apiAddr = m[1]
		}
	}
	t.Logf("all five devices online %v after start; API at %s", time.Since(start).Round(time.Millisecond), apiAddr)
	token := ""
	for _, l := range strings.Split(d.Stdout.String(), "\n") {
		if strings.HasPrefix(l, "demo token (installer role): ") {
			token = strings.TrimPrefix(l, "demo token (installer role): ")
		}
	}
	if token == "" {
		t.Fatalf("no demo token printed: %q", d.Stdout.String())
	}
	base := "http://" + apiAddr
	get := func(path string) (int, []byte) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	validateRoutes(t, base, token)
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{`plantd_device_polls_total{device="inv1"}`, `plantd_device_online{device="meter"} 1`, "plantd_store_healthy 1", "plantd_store_dropped_total 0", "plantd_gridcontrol_write_errors_total 0"} {
		if !strings.Contains(string(metrics), m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
	// The plant's local date now, on the simulated clock.
	_, body := get("/live/v1/plants/demo/measurements/sets/EnergyBalance")
	var live struct {
		Set []struct {
			Time string `json:"time"`
		} `json:"set"`
	}
	if err := json.Unmarshal(body, &live); err != nil || len(live.Set) != 1 || len(live.Set[0].Time) < 10 {
		t.Fatalf("live energy balance: %v %s", err, body)
	}
	today := live.Set[0].Time[:10]
	if py, err := exec.LookPath("python3"); err == nil {
		// Wait for the first 5-minute intervals to be rolled up.
		var out []byte
		for try := 0; try < 20; try++ {
			c := exec.Command(py, filepath.Join("..", "..", "scripts", "cloud-client.py"), "--base", base,
				"--client-id", "demo", "--client-secret", token, "--date", today,
				"--plantd", binPath, "--redirect-uri", demoRedirectURI)
			c.Env = append(os.Environ(), "PLANTD_TOKEN="+token)
			out, err = c.CombinedOutput()
			if err == nil {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("cloud-client.py against plantd demo: %v\n%s", err, out)
		} else {
			t.Logf("cloud-client.py: %s", strings.TrimSpace(string(out)))
		}
	} else if os.Getenv("CI") == "true" {
		t.Error("python3 is needed for the cloud client check in CI")
	} else {
		t.Log("python3 not found: cloud client check skipped")
	}
	// The battery script, in JavaScript as its public original: a
	// back-channel consent the owner approves with plantd consent, then
	// the battery's state of charge.
	if node, err := exec.LookPath("node"); err == nil {
		c := exec.Command(node, "--no-warnings", filepath.Join("..", "..", "scripts", "battery-client.mjs"), "--base", base,
			"--client-id", "demo2", "--client-secret", token, "--plantd", binPath)
		c.Env = append(os.Environ(), "PLANTD_TOKEN="+token)
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("battery-client.mjs against plantd demo: %v\n%s", err, out)
		} else {
			t.Logf("%s", strings.TrimSpace(string(out)))
		}
	} else if os.Getenv("CI") == "true" {
		t.Error("node is needed for the JavaScript client check in CI")
	} else {
		t.Log("node not found: JavaScript client check skipped")
	}
	stopped := time.Now()
	d.Stop(os.Interrupt, 2*time.Second)
	t.Logf("stopped %v after SIGINT", time.Since(stopped).Round(time.Millisecond))
}

// TestBadConfig checks that check-config reports all three mistakes of
// config/testdata/three-mistakes with their lines, and that run refuses
// to start with the same messages.
func TestBadConfig(t *testing.T) {
	t.Parallel() // its own files, processes and ports
	dir := filepath.Join("..", "..", "config", "testdata", "three-mistakes")
	want, err := os.ReadFile(filepath.Join(dir, "want.err"))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check-config", "plantd.yaml"}, {"run", "-c", "plantd.yaml"}, {"-c", "plantd.yaml"}} {
		cmd := exec.Command(binPath, args...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != exitConfig {
			t.Errorf("plantd %v: %v, want exit %d", args, err, exitConfig)
		}
		if !strings.Contains(stderr.String(), string(want)) {
			t.Errorf("plantd %v said:\n%s\nwant the three problems:\n%s", args, stderr.String(), want)
		}
	}
	out, errOut, code := runBinary(t, "check-config", filepath.Join("..", "..", "packaging", "plantd.yaml.example"))
	if code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("check-config of the example: exit %d %s %s", code, out, errOut)
	}
}

// TestRunWithoutConfig checks that run never falls back to the demo plant:
// without a config it exits 78 naming the path it looked for and pointing
// to "plantd demo", with -c and without (the default path, unless this
// machine has plantd installed).
func TestRunWithoutConfig(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	cases := [][]string{{"run", "-c", missing}, {"-c", missing}}
	if _, err := os.Stat(defaultConfigPath); os.IsNotExist(err) {
		cases = append(cases, []string{"run"}, nil)
	} else {
		t.Logf("%s exists: the default path is not tried", defaultConfigPath)
	}
	for _, args := range cases {
		// A plantd that started something would run until killed: the
		// minute's bound ends it (exit -1, a failure below), it times
		// nothing.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		cmd := exec.CommandContext(ctx, binPath, args...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		cancel()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		out, errOut := o.String(), e.String()
		want := missing
		if len(args) < 2 {
			want = defaultConfigPath
		}
		if code != exitConfig || !strings.Contains(errOut, "no config file at "+want) || !strings.Contains(errOut, `"plantd demo"`) {
			t.Errorf("plantd %q: exit %d, stderr %q; want exit %d naming %s and plantd demo", args, code, errOut, exitConfig, want)
		}
		if out != "" || strings.Contains(errOut, "demo plant") {
			t.Errorf("plantd %q started something: stdout %q, stderr %q", args, out, errOut)
		}
	}
}

// TestTokenAdd adds two tokens to a copy of the packaged example with the
// real binary: the file keeps its comments, validates, holds the hashes and
// never the tokens; a second token with the same name is refused.
func TestTokenAdd(t *testing.T) {
	t.Parallel() // its own files, processes and ports
	path, _ := exampleConfigCopy(t)
	// As root (an installer's sudo), the file keeps its group: the package
	// installs it root:plantd 0640.
	const gid = 4242
	asRoot := os.Geteuid() == 0
	if asRoot {
		if err := os.Chown(path, 0, gid); err != nil {
			t.Fatal(err)
		}
	}
	var tokens []string
	for _, name := range []string{"laptop", "scada"} {
		out, errOut, code := runBinary(t, "token", "add", "--name", name, "--role", "installer", "-c", path)
		if code != 0 {
			t.Fatalf("token add %s: exit %d %s", name, code, errOut)
		}
		i := strings.Index(out, "keep it secret): ")
		if i < 0 {
			t.Fatalf("no token printed: %q", out)
		}
		tokens = append(tokens, strings.TrimSpace(out[i+len("keep it secret): "):]))
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config after token add: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("config after token add: %v, mode %v; want 0640", err, fi.Mode())
	} else if st := fi.Sys().(*syscall.Stat_t); asRoot && st.Gid != gid {
		t.Errorf("config after token add: group %d, want %d kept", st.Gid, gid)
	}
	data, _ := os.ReadFile(path)
	for i, tok := range tokens {
		if strings.Contains(string(data), tok) {
			t.Errorf("the config holds token %d itself", i)
		}
		found := false
		for _, ct := range cfg.Tokens {
			found = found || (ct.SHA256 == config.TokenHash(tok) && ct.Role == "installer")
		}
		if !found {
			t.Errorf("token %d: no entry with its hash", i)
		}
	}
	if !strings.Contains(string(data), "# ") {
		t.Error("comments of the config were lost")
	}
	if _, errOut, code := runBinary(t, "token", "add", "--name", "laptop", "--role", "installer", "-c", path); code == 0 || !strings.Contains(errOut, "exists already") {
		t.Errorf("a second token named laptop: exit %d %q", code, errOut)
	}
}

// validateRoutes calls every route of the API of a running plantd demo, as
// a client would, and validates each status and body against the OpenAPI
// document the server itself serves (kin-openapi).
func validateRoutes(t *testing.T, base, token string) {
	t.Helper()
	resp, err := http.Get(base + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	validator, err := apitest.New(t.Context(), raw, base)
	if err != nil {
		t.Fatalf("/openapi.json: %v", err)
	}
	today, month := time.Now().Format("2006-01-02"), time.Now().Format("2006-01")
	const json = "application/json"
	tests := []struct {
		method, path, ctype, body string
		auth                      bool
		status                    int
	}{
		{"GET", "/monitoring/v1/plants", "", "", true, 200},
		{"GET", "/monitoring/v1/plants/demo/installation", "", "", true, 200},
		{"GET", "/monitoring/v1/plants/demo/configuration", "", "", true, 200},
		{"GET", "/monitoring/v1/plants/demo/devices", "", "", true, 200},
		{"GET", "/monitoring/v1/plants/demo/stakeholders", "", "", true, 200},
		{"GET", "/monitoring/v1/plants/demo/communication", "", "", true, 200},
		{"GET", "/monitoring/v1/plants/demo/logs?limit=5", "", "", true, 200},
		{"GET", "/monitoring/v1/plants/demo/measurements/sets/EnergyBalance", "", "", true, 200},
		{"GET", "/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/Day?Date=" + today + "&WithTotal=true", "", "", true, 200},
		{"GET", "/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/Month?Date=" + month, "", "", true, 200},
		{"GET", "/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/Total", "", "", true, 200},
		{"GET", "/monitoring/v1/plants/demo", "", "", true, 200},
		{"GET", "/monitoring/v1/plants/demo/devices/lean?WithDeactivatedDevices=true", "", "", true, 200},
		{"GET", "/monitoring/v1/devices/bat", "", "", true, 200},
		{"GET", "/monitoring/v2/plants/demo/measurements/sets/EnergyBalance/Day?Date=" + today + "&WithTotal=true", "", "", true, 200},
		{"GET", "/monitoring/v1/devices/inv1/measurements/sets/poweraC/day?Date=" + today, "", "", true, 200},
		{"GET", "/readyz", "", "", false, 200},
		{"GET", "/monitoring/v1/devices/inv1/logs", "", "", true, 200},
		{"GET", "/monitoring/v1/devices/inv1/measurements/sets", "", "", true, 200},
		{"GET", "/monitoring/v1/devices/inv1/measurements/sets/PowerAc/Day?Date=" + today, "", "", true, 200},
		{"GET", "/monitoring/v1/devices/inv1/measurements/sets/EnergyAndPowerPv/Week?Date=" + today, "", "", true, 200},
		{"GET", "/monitoring/v1/devices/inv1/measurements/sets/PowerDc", "", "", true, 200},
		{"GET", "/monitoring/v1/devices/meter/measurements/sets/EnergyAndPowerInOut/Day?Date=" + today + "&ReturnEnergyValues=true", "", "", true, 200},
		{"GET", "/monitoring/v1/devices/bat/measurements/sets/EnergyAndPowerBattery/Recent", "", "", true, 200},
		{"GET", "/monitoring/v1/devices/wx/measurements/sets/Sensor/Day?Date=" + today, "", "", true, 200},
		{"GET", "/monitoring/v1/devices/inv1/measurement/sets/EnergyMix/Month?Date=" + month, "", "", true, 200},
		{"GET", "/gridcontrol/v1/plants/demo/schedules", "", "", true, 200},
		{"POST", "/gridcontrol/v1/plants/eligibilityCheck", json, `{"plantId":"demo","commands":["FeedInLimit","opModVoltVar"]}`, true, 200},
		{"POST", "/gridcontrol/v1/plants/eligibleCommands", json, `{"serialNumber":"SIM-inv1"}`, true, 200},
		{"GET", "/gridcontrol/v1/plants/demo/settings/activePowerGridSettings", "", "", true, 200},
		// A schedule is stored and armed (the window is years ahead).
		{"POST", "/gridcontrol/v1/plants/demo/schedules", json, `{"commands":[{"command":"opModMaxLimW","start":"2030-06-21T10:00:00Z","end":"2030-06-21T11:00:00Z","value":50}]}`, true, 201},
		{"POST", "/gridcontrol/v1/plants/demo/schedules", json, `{"commands":[{"command":"opModMaxLimW","start":"2030-06-21T10:00:00Z","end":"2030-06-21T11:00:00Z","value":5000}]}`, true, 400},
		{"GET", "/metrics", "", "", false, 200},
		{"GET", "/openapi.json", "", "", false, 200},
		{"GET", "/live/v1/plants/demo/measurements/sets/EnergyBalance", "", "", true, 200},
		{"GET", "/live/v1/devices/inv1/measurement/sets/EnergyMix", "", "", true, 200},
		{"GET", "/live/v1/plants/demo/devices", "", "", true, 200},
		{"GET", "/live/v2/plants/demo/devices", "", "", true, 200},
		{"POST", "/oauth2/token", "application/x-www-form-urlencoded", "grant_type=client_credentials&client_id=demo&client_secret=" + token, false, 200},
		{"GET", "/healthz", "", "", false, 200},
		// Errors, each a problem-JSON body.
		{"GET", "/monitoring/v1/plants", "", "", false, 401},
		{"GET", "/monitoring/v1/plants/nope/devices", "", "", true, 404},
		{"GET", "/monitoring/v1/devices/inv1/measurements/sets/PowerAc/Fortnight", "", "", true, 400},
		{"GET", "/monitoring/v1/devices/inv1/measurements/sets/PowerAc/Day?Date=23.11.2026", "", "", true, 400},
		{"POST", "/gridcontrol/v1/plants/eligibilityCheck", "text/plain", "x", true, 415},
		{"POST", "/gridcontrol/v1/plants/eligibilityCheck", json, `{"plantId":"demo","commands":[],"bogus":1}`, true, 400},
	}
	for _, tc := range tests {
		req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		if tc.auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s: %d, want %d: %.300s", tc.method, tc.path, resp.StatusCode, tc.status, body)
			continue
		}
		if tc.status >= 400 && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
			t.Errorf("%s %s: %d with Content-Type %q, want problem-JSON", tc.method, tc.path, tc.status, resp.Header.Get("Content-Type"))
		}
		vreq, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
		vreq.Header = req.Header
		if err := validator.Check(t.Context(), vreq, resp.StatusCode, resp.Header, body); err != nil {
			t.Errorf("%v\n%.400s", err, body)
		}
	}
	t.Logf("%d requests to the running demo validated against its /openapi.json", len(tests))
}
