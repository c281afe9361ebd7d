package poller_test

import (
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/devices/poller"
	"plantd/internal/proctest"
	"plantd/plant"
	"plantd/sim"
	"plantd/sim/simtest"
)

// TestWorkersBounded starts 200 devices behind 10 addresses, whose first
// polls all begin at once: once every device polled twice, no more than
// MaxIdleWorkers workers wait for the next poll, at least one does (the
// polls reuse them), and none is left once Run has returned. It runs
// alone (not parallel): it counts the process's workers.
func TestWorkersBounded(t *testing.T) {
	proctest.WaitFor(t, "no workers of earlier tests", 10*time.Second, func() bool { return idleWorkers(t) == 0 })
	cfg, err := sim.ScaleConfig(200, 10)
	if err != nil {
		t.Fatal(err)
	}
	p := simtest.Start(t, cfg)
	var c collector
	var cfgs []poller.DeviceConfig
	for _, d := range p.Devices() {
		cfgs = append(cfgs, poller.DeviceConfig{ID: d.ID(), Address: d.Addr(), Unit: d.Unit(), Interval: interval, Timeout: time.Second})
	}
	if poller.MaxIdleWorkers >= len(cfgs) {
		t.Fatalf("%d devices, no more than the %d workers that may wait: the bound would go untested", len(cfgs), poller.MaxIdleWorkers)
	}
	pl, _, stop := runPoller(t, cfgs, c.sink)
	<-pl.FirstRound()
	start := time.Now()
	proctest.WaitFor(t, "a second poll of every device", 30*time.Second, func() bool {
		for _, d := range p.Devices() {
			if len(c.since(d.ID(), start)) == 0 {
				return false
			}
		}
		return true
	})
	for _, d := range p.Devices() {
		if s, _ := c.last(d.ID()); s.State != plant.StateOnline {
			t.Fatalf("%s: %v (%v)", d.ID(), s.State, s.Err)
		}
	}
	if n := idleWorkers(t); n < 1 || n > poller.MaxIdleWorkers {
		t.Errorf("%d workers wait, want 1..%d", n, poller.MaxIdleWorkers)
	}
	stop()
	proctest.WaitFor(t, "no worker after Run", 10*time.Second, func() bool { return idleWorkers(t) == 0 })
}

// idleWorkers counts the goroutines in the poller's worker loop that run
// no poll.
func idleWorkers(t *testing.T) int {
	t.Helper()
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	total := 0
	_, body, _ := strings.Cut(b.String(), "\n")
	for rec := range strings.SplitSeq(body, "\n\n") {
		head, rest, _ := strings.Cut(rec, "\n")
		if !strings.Contains(rest, "poller.(*Poller).serve") || strings.Contains(rest, "poller.(*device).step") {
			continue
		}
		if k, _, ok := strings.Cut(head, " @ "); ok {
			if v, err := strconv.Atoi(k); err == nil {
				total += v
			}
		}
	}
	return total
}
