package main

import (
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"plantd/config"
	"plantd/internal/proctest"
	"plantd/plant"
	"plantd/sim"
	"plantd/sim/simtest"
)

// TestDaemonClockJumps runs the daemon's components as plantd run wires
// them, polling two simulated devices every 250 ms, and moves its wall
// clock a year ahead and back while it runs. Each jump must be logged once;
// the samples taken while the clock was ahead stay a year ahead, but once
// the clock is back Recent answers the present, never the future rows.
func TestDaemonClockJumps(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
	p := simtest.Start(t, sim.DefaultConfig())
	dir := t.TempDir()
	var devs strings.Builder
	for _, d := range p.Devices()[:3] { // inv1, inv2, meter
		host, port, _ := net.SplitHostPort(d.Addr())
		fmt.Fprintf(&devs, "  - {id: %s, host: %s, port: %s, pollInterval: 250ms, timeout: 1s}\n", d.ID(), host, port)
	}
	cfg, err := config.Parse("clock.yaml", []byte(fmt.Sprintf(`http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: Clock, timezone: Europe/Berlin}
devices:
%s`, filepath.Join(dir, "plantd.db"), devs.String())))
	if err != nil {
		t.Fatal(err)
	}
	var offset atomic.Int64
	var logs proctest.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	clock := plant.NewClock(plant.ClockConfig{
		Wall:   func() time.Time { return time.Now().Add(time.Duration(offset.Load())) },
		Logger: logger,
	})
	d := runInProcess(t, cfg, clock.Now, logger)
	// waitFor polls cond until it holds, for up to 30 s; the log is
	// shown when it does not.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		held := false
		defer func() {
			if !held {
				t.Logf("log:\n%s", logs.String())
			}
		}()
		proctest.WaitFor(t, what, 30*time.Second, cond)
		held = true
	}
	written := func(n uint64) func() bool {
		return func() bool { _ = d.store.Flush(t.Context()); return d.store.Stats().Written >= n }
	}
	waitFor("samples", written(10))
	year := 365 * 24 * time.Hour
	offset.Store(int64(year))
	waitFor("forward jump logged", func() bool { return strings.Contains(logs.String(), "wall clock jumped forward") })
	waitFor("samples a year ahead", written(d.store.Stats().Written+10))
	offset.Store(0)
	waitFor("backward jump logged", func() bool { return strings.Contains(logs.String(), "wall clock jumped back") })
	waitFor("samples after the jump back", written(d.store.Stats().Written+20))
	if n := clock.Jumps(); n != 2 {
		t.Errorf("%d jumps detected, want 2", n)
	}
	for _, dir := range []string{"forward", "back"} {
		if n := strings.Count(logs.String(), "wall clock jumped "+dir); n != 1 {
			t.Errorf("%d log lines for the jump %s, want 1", n, dir)
		}
	}
	now := time.Now()
	for _, q := range []plant.SetQuery{
		{DeviceID: "inv1", SetType: plant.SetPowerAc},
		{PlantID: "p1", SetType: plant.SetEnergyBalance},
	} {
		res, err := d.store.QuerySet(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) == 0 {
			t.Fatalf("%s %s Recent: no rows", q.DeviceID+q.PlantID, q.SetType)
		}
		last := res.Rows[len(res.Rows)-1].Start
		if last.After(now.Add(time.Minute)) || last.Before(now.Add(-2*time.Minute)) {
			t.Errorf("%s %s Recent ends at %v, now is %v: the rows of the clock's future hide the present",
				q.DeviceID+q.PlantID, q.SetType, last, now)
		}
	}
}
