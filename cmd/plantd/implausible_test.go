package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/config"
	"plantd/internal/proctest"
	"plantd/sim"
	"plantd/sim/simtest"
)

// TestImplausibleMetrics runs the daemon's components against a simulated
// inverter that reports W=32767 with W_SF=10: /metrics must count the
// dropped values per device and channel, and the log say it once. The
// same /metrics has the poll latency histogram of the inverter kind:
// cumulative buckets ending in +Inf with the count of its polls.
func TestImplausibleMetrics(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
	p := simtest.Start(t, sim.DefaultConfig())
	inv := simtest.Device(t, p, "inv1")
	if err := inv.Override(103, "W", 32767); err != nil {
		t.Fatal(err)
	}
	if err := inv.Override(103, "W_SF", 10); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(inv.Addr())
	cfg, err := config.Parse("implausible.yaml", []byte(fmt.Sprintf(`http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: Implausible, timezone: Europe/Berlin}
devices:
  - {id: inv1, host: %s, port: %s, pollInterval: 250ms}
`, filepath.Join(t.TempDir(), "plantd.db"), host, port)))
	if err != nil {
		t.Fatal(err)
	}
	var logs proctest.Buffer
	d := runInProcess(t, cfg, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	re := regexp.MustCompile(`plantd_device_implausible_values_total\{channel="activePower",device="inv1"\} (\d+)`)
	proctest.WaitValue(t, "a count of 3 implausible activePower values in /metrics (last: /metrics)", 30*time.Second, func() (string, bool) {
		resp, err := http.Get("http://" + d.ln.Addr().String() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := re.FindSubmatch(body)
		n := 0
		if m != nil {
			n, _ = strconv.Atoi(string(m[1]))
		}
		return string(body), n >= 3
	})
	resp, err := http.Get("http://" + d.ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	bucket := regexp.MustCompile(`(?m)^plantd_poll_duration_seconds_bucket\{kind="inverter",result="ok",le="([^"]+)"\} (\d+)$`)
	count := regexp.MustCompile(`(?m)^plantd_poll_duration_seconds_count\{kind="inverter",result="ok"\} (\d+)$`)
	bs, c := bucket.FindAllSubmatch(body, -1), count.FindSubmatch(body)
	if len(bs) < 2 || c == nil {
		t.Fatalf("no poll duration histogram of the inverter in /metrics:\n%s", body)
	}
	prev := -1
	for _, b := range bs {
		n, _ := strconv.Atoi(string(b[2]))
		if n < prev {
			t.Errorf("bucket le=%s has %d, less than the bucket below (%d)", b[1], n, prev)
		}
		prev = n
	}
	if n, _ := strconv.Atoi(string(c[1])); string(bs[len(bs)-1][1]) != "+Inf" || prev != n || n < 3 {
		t.Errorf("last bucket le=%s %d, count %d: want +Inf equal to a count of at least 3", bs[len(bs)-1][1], prev, n)
	}
	if n := strings.Count(logs.String(), "implausible activePower dropped"); n != 1 {
		t.Errorf("%d log lines for activePower turning implausible, want 1", n)
	}
}
