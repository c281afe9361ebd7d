package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/sim"
	"plantd/sim/simtest"
)

// TestDaemonFaults runs the real binary ("plantd run -c") against a
// simulated plant whose faults the test switches: for each fault the
// daemon must log inv1 offline (or stale) with a reason, log it online
// again by itself once the fault ends, and keep polling the other devices
// while inv1 is down, every poll of theirs good, read from its own
// /metrics. (Their rate under a fault is measured where the poller runs on
// its own: devices/poller's TestFaultIsolation.) Each fault runs in a subtest
// of its own, with its own simulated plant and daemon, in parallel.
func TestDaemonFaults(t *testing.T) {
	t.Parallel() // its own simulators and binaries
	if testing.Short() {
		t.Skip("runs the daemon through every fault mode (~40 s)")
	}
	for _, f := range []sim.Fault{
		{Kind: sim.FaultSlow, Delay: 2 * time.Second}, {Kind: sim.FaultDrop}, {Kind: sim.FaultGarbage},
		{Kind: sim.FaultWrongTID}, {Kind: sim.FaultException, Code: 4}, {Kind: sim.FaultOffline},
	} {
		t.Run(f.Kind.String(), func(t *testing.T) {
			t.Parallel() // its own simulator and daemon
			daemonFault(t, f)
		})
	}
}

// daemonFault starts a simulated plant and plantd polling it, switches f
// on inv1 and checks what TestDaemonFaults says.
func daemonFault(t *testing.T, f sim.Fault) {
	p := simtest.Start(t, sim.DefaultConfig())
	dir := t.TempDir()
	var devs strings.Builder
	for _, d := range p.Devices()[:4] { // inv1, inv2, meter, bat
		host, port, _ := net.SplitHostPort(d.Addr())
		fmt.Fprintf(&devs, "  - {id: %s, host: %s, port: %s, pollInterval: 250ms, timeout: 500ms}\n", d.ID(), host, port)
	}
	cfg := fmt.Sprintf(`http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: Faults, timezone: Europe/Berlin}
devices:
%s`, filepath.Join(dir, "plantd.db"), devs.String())
	path := filepath.Join(dir, "plantd.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, path)
	api := d.waitAPI(10 * time.Second)
	d.waitOnline(30*time.Second, "inv1", "inv2", "meter", "bat")
	// polls returns each device's good polls and failed ones.
	polls := func() (good, failed map[string]float64) {
		resp, err := http.Get("http://" + api + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		out := map[string]float64{}
		for _, m := range regexp.MustCompile(`plantd_device_polls_total\{device="(\w+)"\} (\S+)`).FindAllStringSubmatch(string(body), -1) {
			out[m[1]], _ = strconv.ParseFloat(m[2], 64)
		}
		fails := map[string]float64{}
		for _, m := range regexp.MustCompile(`plantd_device_poll_failures_total\{device="(\w+)"\} (\S+)`).FindAllStringSubmatch(string(body), -1) {
			fails[m[1]], _ = strconv.ParseFloat(m[2], 64)
		}
		for k := range out {
			out[k] -= fails[k] // good polls
		}
		return out, fails
	}
	inv := simtest.Device(t, p, "inv1")
	down := regexp.MustCompile(`msg="device (offline|stale)" .*device=inv1 .* err="?(.*?)"?$`)
	up := regexp.MustCompile(`msg="device online" .*device=inv1 `)
	others := []string{"inv2", "meter", "bat"}
	before, failedBefore := polls()
	start := time.Now()
	inv.SetFault(f)
	m := down.FindStringSubmatch(d.WaitLog(down, 10*time.Second))
	// While inv1 is down, the others are polled on: 8 good polls each
	// (2 s at their interval), and none of theirs fails.
	downAt, _ := polls()
	var after, failed map[string]float64
	proctest.WaitValue(t, fmt.Sprintf("with fault %s on inv1, the others polled 8 times each since %v (last: their polls)", f, downAt), 30*time.Second,
		func() (map[string]float64, bool) {
			after, failed = polls()
			n := 0
			for _, id := range others {
				if after[id]-downAt[id] >= 8 {
					n++
				}
			}
			return after, n == len(others)
		})
	window := time.Since(start)
	inv.SetFault(sim.Fault{Kind: sim.FaultNone})
	cleared := time.Now()
	d.WaitLog(up, 40*time.Second)
	var rates []string
	for _, id := range others {
		rates = append(rates, fmt.Sprintf("%s %.2f/s", id, (after[id]-before[id])/window.Seconds()))
		if n := failed[id] - failedBefore[id]; n > 0 {
			t.Errorf("fault %s on inv1: %.0f polls of %s failed", f, n, id)
		}
	}
	t.Logf("fault %-12s inv1 %s: %s; others %s; back online %v after the fault ended",
		f, m[1], m[2], strings.Join(rates, ", "), time.Since(cleared).Round(10*time.Millisecond))
	d.Stop(os.Interrupt, 30*time.Second)
}
