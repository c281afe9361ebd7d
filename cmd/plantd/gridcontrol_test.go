package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"plantd/config"
	"plantd/devices"
	"plantd/devices/sim"
	"plantd/devices/sim/simtest"
	"plantd/modbus"
)

// daemonProc is a running "plantd run" whose log lines a test reads.
type daemonProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	lines chan string
	api   string
}

func startDaemon(t *testing.T, cfgPath string) *daemonProc {
	t.Helper()
	cmd := exec.Command(binPath, "run", "-c", cfgPath)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	d := &daemonProc{t: t, cmd: cmd, lines: make(chan string, 10000)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case d.lines <- sc.Text():
			default: // nobody reads: drop
			}
		}
		close(d.lines)
	}()
	d.api = listenRE.FindStringSubmatch(d.waitLog(listenRE, 15*time.Second))[1]
	return d
}

func (d *daemonProc) waitLog(re *regexp.Regexp, timeout time.Duration) string {
	d.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-d.lines:
			if !ok {
				d.t.Fatalf("plantd ended while waiting for %s", re)
			}
			if re.MatchString(l) {
				return l
			}
		case <-deadline:
			d.t.Fatalf("no log line %s within %v", re, timeout)
		}
	}
}

func (d *daemonProc) request(method, path, token, body string) (int, []byte) {
	d.t.Helper()
	req, _ := http.NewRequest(method, "http://"+d.api+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestGridControlKilledInsideWindow is the dead-gateway acceptance with
// the real binary: an installer's permanent 70 % limit, a 40 % window
// POSTed over HTTP, plantd killed with SIGKILL inside it. The DER
// inverter's own timer reverts it to the installer's 70 % (programmed by
// plantd as its stored reversion value), never to 100 %; plantd started
// again inside the window has 40 % back at its first control cycle. Roles:
// standard gets 403, the grid operator and the installer may write, and
// the plant log names who sent the schedule and every write.
func TestGridControlKilledInsideWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts plantd inside a limit window (~25 s)")
	}
	scfg := sim.DefaultConfig()
	scfg.Start, scfg.ClearSky = time.Date(2026, 6, 21, 12, 0, 0, 0, time.UTC), true
	p := simtest.Start(t, scfg)
	// The installer's permanent limit, set before plantd ever ran.
	pool := modbus.NewPool(nil)
	defer pool.Close()
	for _, w := range []struct {
		id     string
		model  uint16
		points []devices.PointValue
	}{
		{"inv1", 123, []devices.PointValue{{Point: "WMaxLimPct", Value: 70}, {Point: "WMaxLim_Ena", Value: 1}}},
		{"inv2", 704, []devices.PointValue{{Point: "WMaxLimPct", Value: 70}, {Point: "WMaxLimPctEna", Value: 1}}},
	} {
		cl := pool.Endpoint(modbus.EndpointConfig{Address: p.Device(w.id).Addr()}).Unit(1, 2*time.Second)
		d, err := devices.Discover(t.Context(), cl)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := d.Ref(w.model)
		if _, err := devices.WritePoints(t.Context(), cl, ref, w.points); err != nil {
			t.Fatal(err)
		}
	}
	limit := func(id string) float64 { return p.Device(id).State().EffectiveLimitPct }

	dir := t.TempDir()
	var devs strings.Builder
	for _, d := range p.Devices()[:4] {
		host, port, _ := net.SplitHostPort(d.Addr())
		fmt.Fprintf(&devs, "  - {id: %s, host: %s, port: %s, pollInterval: 500ms, timeout: 1s}\n", d.ID(), host, port)
	}
	const tokInst, tokStd, tokGrid = "installer-token-0123456789abcdef0123", "standard-token-0123456789abcdef01234", "gridop-token-0123456789abcdef0123456"
	cfgPath := filepath.Join(dir, "plantd.yaml")
	cfg := fmt.Sprintf(`http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: Grid, timezone: Europe/Berlin}
devices:
%stokens:
  - {name: inst, sha256: %s, role: installer}
  - {name: std, sha256: %s, role: standard}
  - {name: dso, sha256: %s, role: gridoperator}
gridControl:
  reversionTimeout: 4s
  rampRatePercentPerSecond: 50
`, filepath.Join(dir, "plantd.db"), devs.String(), config.TokenHash(tokInst), config.TokenHash(tokStd), config.TokenHash(tokGrid))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, cfgPath)
	online := regexp.MustCompile(`device (inv1|inv2) online`)
	d.waitLog(online, 10*time.Second)
	d.waitLog(online, 10*time.Second)

	start := time.Now().Truncate(time.Second).Add(2 * time.Second)
	end := start.Add(25 * time.Second)
	sched := fmt.Sprintf(`{"commands":[{"command":"opModMaxLimW","start":%q,"end":%q,"value":40,"unit":"%%"}]}`,
		start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
	if code, b := d.request("POST", "/gridcontrol/v1/plants/p1/schedules", tokStd, sched); code != 403 {
		t.Errorf("standard role POST: %d %s, want 403", code, b)
	}
	if code, b := d.request("POST", "/gridcontrol/v1/plants/p1/schedules", tokGrid, fmt.Sprintf(`{"commands":[{"command":"opModFixedPFInjectW","start":%q,"end":%q,"value":0.97}]}`, start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))); code != 201 {
		t.Errorf("grid operator POST: %d %s, want 201", code, b)
	}
	code, b := d.request("POST", "/gridcontrol/v1/plants/p1/schedules", tokInst, sched)
	if code != 201 {
		t.Fatalf("installer POST: %d %s", code, b)
	}
	var created struct {
		Schedule struct {
			ScheduleID string `json:"scheduleId"`
		} `json:"schedule"`
	}
	_ = json.Unmarshal(b, &created)

	waitUntil(t, time.Until(start)+3*time.Second, "40 % on both inverters", func() bool { return limit("inv1") == 40 && limit("inv2") == 40 })
	time.Sleep(time.Until(start.Add(3 * time.Second)))
	_ = d.cmd.Process.Kill() // SIGKILL: no chance to clean up
	_ = d.cmd.Wait()
	killed := time.Now()
	var peak float64
	waitUntil(t, 8*time.Second, "inv2 reverted to the installer's 70 %", func() bool {
		peak = max(peak, limit("inv2"))
		return limit("inv2") == 70
	})
	t.Logf("SIGKILL at start+3 s: inv2 at its stored fallback 70 %% %s later (reversion timeout 4 s, renewed from half of it on)", time.Since(killed).Round(10*time.Millisecond))
	if peak > 70 {
		t.Errorf("inv2 rose to %g %% after plantd died", peak)
	}
	if time.Until(end) < 8*time.Second {
		t.Fatalf("too slow: the window is nearly over")
	}
	d2 := startDaemon(t, cfgPath)
	d2.waitLog(regexp.MustCompile(`device inv2 online`), 10*time.Second)
	onlineAt := time.Now()
	waitUntil(t, 3*time.Second, "40 % back after the restart", func() bool { return limit("inv1") == 40 && limit("inv2") == 40 })
	t.Logf("restart inside the window: 40 %% back %s after inv2 came online (poll interval 500 ms)", time.Since(onlineAt).Round(10*time.Millisecond))

	code, b = d2.request("GET", "/gridcontrol/v1/plants/p1/schedules", tokStd, "")
	if code != 200 || !strings.Contains(string(b), created.Schedule.ScheduleID) || !strings.Contains(string(b), `"status":"active"`) {
		t.Errorf("GET schedules: %d %s", code, b)
	}
	waitUntil(t, 5*time.Second, "the plant log naming who sent what", func() bool {
		_, b := d2.request("GET", "/monitoring/v1/plants/p1/logs?limit=100", tokInst, "")
		s := string(b)
		return strings.Contains(s, "by inst (installer)") && strings.Contains(s, "by dso (gridoperator)") && strings.Contains(s, "WMaxLimPct 40")
	})
	_ = d2.cmd.Process.Signal(os.Interrupt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { <-ctx.Done(); _ = d2.cmd.Process.Kill() }()
	if err := d2.cmd.Wait(); err != nil {
		t.Errorf("plantd after SIGINT: %v", err)
	}
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: still not %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
