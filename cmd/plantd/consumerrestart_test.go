package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
)

// TestConsumersRestartKeepsGuards restarts the real binary with the heat
// pump (SG-Ready on the relay board's coils 2, 3; minimum on time 12 s,
// wall clock) switched on just before and the surplus gone: the new
// plantd holds it recommended (3) until 20 s after the switch on, from
// the guard kept in the store, and writes the coils no other state from
// its start to then (the simulator's write trace). The minimum on time
// need only outlast the restart and the new plantd's first decision:
// under -race that came 2.3 s after the switch on (20 s before, which
// cost 8 s of waiting for nothing); 12 s leaves it five times that.
func TestConsumersRestartKeepsGuards(t *testing.T) {
	t.Parallel() // its own simulator and binary
	if testing.Short() {
		t.Skip("restarts plantd within a heat pump's minimum on time (~15 s)")
	}
	const minOn = 12 * time.Second
	p := consumerSim(t)
	setExport(p, -500)
	path := consumerConfig(t, p)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const guards = "priority: 2, minOnTime: 4s, minOffTime: 2s, watchdog: 5s"
	cfg := strings.Replace(string(raw), guards, fmt.Sprintf("priority: 2, minOnTime: %s, minOffTime: 2s, watchdog: 30s", minOn), 1)
	if cfg == string(raw) {
		t.Fatalf("no %q in the config", guards)
	}
	writeConfig(t, path, cfg)
	pump := func() int { hp, _ := p.Load("heatpump"); return hp.SGReady }
	status := func(d *plantdRun, id string) map[string]any {
		code, b := d.request("GET", "/gateway/v1/consumers", tokStd, "")
		if code != 200 {
			t.Fatalf("GET consumers: %d %s", code, b)
		}
		var out struct{ Consumers []map[string]any }
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		for _, c := range out.Consumers {
			if c["deviceId"] == id {
				return c
			}
		}
		t.Fatalf("no consumer %s in %s", id, b)
		return nil
	}

	d := startDaemon(t, path)
	d.waitAPI(15 * time.Second)
	d.waitOnline(10*time.Second, "meter", "heater", "heatpump", "plug")
	for _, id := range []string{"heater", "plug"} { // the heat pump alone takes the surplus
		if code, b := d.request("PUT", "/gateway/v1/consumers/"+id+"/mode", tokInst, `{"mode":"Off"}`); code != 200 {
			t.Fatalf("PUT %s mode Off: %d %s", id, code, b)
		}
	}
	setExport(p, 2500)
	proctest.WaitFor(t, "the heat pump recommended on surplus", 10*time.Second, func() bool { return pump() == 3 })
	onAt := time.Now()
	setExport(p, -2000) // the surplus gone: only the minimum on time holds it
	proctest.WaitFor(t, "the heat pump held by its minimum on time", 5*time.Second, func() bool {
		return status(d, "heatpump")["reason"] == "MinOnTime"
	})
	d.stop()

	from := len(p.Trace("io"))
	restartAt := time.Now()
	d2 := startDaemon(t, path)
	d2.waitAPI(15 * time.Second)
	proctest.WaitFor(t, "the heat pump held by its minimum on time after the restart", 10*time.Second, func() bool {
		return status(d2, "heatpump")["reason"] == "MinOnTime"
	})
	decidedAt := time.Since(onAt)
	if pump() != 3 {
		t.Fatalf("heat pump in SG-Ready %d after the restart's first decision, want 3", pump())
	}
	proctest.WaitFor(t, "the heat pump back to normal", minOn+10*time.Second, func() bool { return pump() == 2 })
	normalAt := time.Since(onAt)
	t.Logf("switched on, restarted %v later, held by the kept guard at %v, normal at %v (minimum on time %v)",
		restartAt.Sub(onAt).Round(10*time.Millisecond), decidedAt.Round(10*time.Millisecond), normalAt.Round(10*time.Millisecond), minOn)
	if normalAt < minOn {
		t.Errorf("heat pump normal %v after its switch on, within its %v minimum on time", normalAt, minOn)
	}

	// Every coil write from the restart to the switch to normal kept
	// contacts A, B at (open, closed): state 3.
	tr := p.Trace("io")[from:]
	last := -1 // the write that set normal
	for i, e := range tr {
		if a, ok := e.Point("coil[2]"); ok && a.Value == 0 {
			if b, ok := e.Point("coil[3]"); ok && b.Value == 0 {
				last = i
				break
			}
		}
	}
	if last < 0 {
		t.Fatalf("no write of state 2 in the trace since the restart: %+v", tr)
	}
	for _, e := range tr[:last] {
		for coil, want := range map[string]float64{"coil[2]": 0, "coil[3]": 1} {
			if v, ok := e.Point(coil); ok && e.Error == "" && v.Value != want {
				t.Errorf("write %d after the restart set %s to %v before the minimum on time was over: %+v", e.Seq, coil, v.Value, e)
			}
		}
	}
}
