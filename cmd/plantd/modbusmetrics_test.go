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
	"testing"
	"time"

	"plantd/sim"
	"plantd/sim/simtest"
)

// TestMetricsModbusEndpoints reads the Modbus endpoints' counters from the
// daemon's /metrics while inv1 times out, answers with another
// transaction id and answers with an exception: each shows under inv1's
// endpoint, by reason, and the meter's endpoint keeps one connection
// without a failure.
func TestMetricsModbusEndpoints(t *testing.T) {
	t.Parallel() // its own simulator and daemon
	if testing.Short() {
		t.Skip("runs the daemon through three faults")
	}
	p := simtest.Start(t, sim.DefaultConfig())
	inv, meter := simtest.Device(t, p, "inv1"), simtest.Device(t, p, "meter")
	dir := t.TempDir()
	cfg := fmt.Sprintf("http:\n  listen: 127.0.0.1:0\ndatabase:\n  path: %s\nplants:\n  - {id: p1, name: Metrics, timezone: Europe/Berlin}\ndevices:\n",
		filepath.Join(dir, "plantd.db"))
	for _, d := range []*sim.Device{inv, meter} {
		host, port, _ := net.SplitHostPort(d.Addr())
		cfg += fmt.Sprintf("  - {id: %s, host: %s, port: %s, pollInterval: 250ms, timeout: 500ms}\n", d.ID(), host, port)
	}
	path := filepath.Join(dir, "plantd.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, path)
	api := d.waitAPI(10 * time.Second)
	d.waitOnline(30*time.Second, "inv1", "meter")

	// value returns the sample of name with exactly the labels given.
	value := func(name, labels string) float64 {
		t.Helper()
		resp, err := http.Get("http://" + api + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name+"{"+labels+"} ") + `(\S+)$`).FindSubmatch(body)
		if m == nil {
			t.Fatalf("/metrics lacks %s{%s}:\n%s", name, labels, body)
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	endpoint := func(d *sim.Device) string { return `endpoint="` + d.Addr() + `"` }

	down := regexp.MustCompile(`msg="device (offline|stale)" .*device=inv1 `)
	up := regexp.MustCompile(`msg="device online" .*device=inv1 `)
	for _, tc := range []struct {
		fault  sim.Fault
		name   string
		labels string
	}{
		{sim.Fault{Kind: sim.FaultSlow, Delay: 2 * time.Second}, "plantd_modbus_request_failures_total", endpoint(inv) + `,reason="timeout"`},
		{sim.Fault{Kind: sim.FaultWrongTID}, "plantd_modbus_request_failures_total", endpoint(inv) + `,reason="mismatch"`},
		{sim.Fault{Kind: sim.FaultException, Code: 4}, "plantd_modbus_exceptions_total", endpoint(inv)},
	} {
		before := value(tc.name, tc.labels)
		inv.SetFault(tc.fault)
		// The poll that logs inv1 down has counted its failed request.
		d.WaitLog(down, 10*time.Second)
		if after := value(tc.name, tc.labels); after <= before {
			t.Errorf("fault %s: %s{%s} %v, was %v: want it counted", tc.fault, tc.name, tc.labels, after, before)
		}
		inv.SetFault(sim.Fault{Kind: sim.FaultNone})
		d.WaitLog(up, 40*time.Second)
	}

	for _, m := range []struct {
		name, labels string
		want         float64
	}{
		{"plantd_modbus_connected", endpoint(meter), 1},
		{"plantd_modbus_waiting_requests", endpoint(meter), 0},
		{"plantd_modbus_connects_total", endpoint(meter), 1},
		{"plantd_modbus_connect_failures_total", endpoint(meter), 0},
		{"plantd_modbus_request_failures_total", endpoint(meter) + `,reason="timeout"`, 0},
		{"plantd_modbus_request_failures_total", endpoint(meter) + `,reason="io"`, 0},
		{"plantd_modbus_exceptions_total", endpoint(meter), 0},
	} {
		if got := value(m.name, m.labels); got != m.want {
			t.Errorf("%s{%s} = %v, want %v", m.name, m.labels, got, m.want)
		}
	}
	if n := value("plantd_modbus_requests_total", endpoint(meter)); n < 1 {
		t.Errorf("meter's endpoint: %v requests", n)
	}
	d.Stop(os.Interrupt, 30*time.Second)
}
