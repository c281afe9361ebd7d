package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/devices"

	"plantd/internal/proctest"
	"plantd/modbus"
	"plantd/sim"
	"plantd/sunspec"
)

// TestSimModesAndTrace runs "plantd sim" with a trace file and both
// device modes, writes limits the way plantd does, and reads in the trace
// file what the separately running simulator saw.
func TestSimModesAndTrace(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	p := proctest.Start(t, exec.Command(binPath, "sim", "--trace", trace, "--ignore-revert", "inv2", "--needs-enable-toggle", "inv1"))
	addrs := simDevices(p.WaitStdout(simReadyRE, 10*time.Second))
	if addrs["inv1"] == "" || addrs["inv2"] == "" {
		t.Fatalf("plantd sim listed %v; stdout:\n%s", addrs, p.Stdout.String())
	}
	pool := modbus.NewPool(nil)
	defer pool.Close()
	write := func(id string, model uint16, values ...sunspec.PointValue) *sunspec.Instance {
		t.Helper()
		cl := pool.Endpoint(modbus.EndpointConfig{Address: addrs[id]}).Unit(1, 2*time.Second)
		d, err := devices.Discover(t.Context(), cl)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := d.Ref(model)
		inst, err := sunspec.WritePoints(t.Context(), cl, ref, values)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		return inst
	}
	pv := func(n string, v float64) sunspec.PointValue { return sunspec.PointValue{Point: n, Value: v} }

	// inv2 ignores reversion: RvrtRem reads 30 now and 1.5 s later.
	first := write("inv2", 704, pv("WMaxLimPct", 40), pv("WMaxLimPctRvrtTms", 30), pv("WMaxLimPctEna", 1))
	time.Sleep(1500 * time.Millisecond)
	second := write("inv2", 704, pv("WMaxLimPctRvrt", 100))
	for _, m := range []*sunspec.Instance{first, second} {
		if rem, _ := m.Float("WMaxLimPctRvrtRem"); rem != 30 {
			t.Errorf("inv2 WMaxLimPctRvrtRem %v, want 30 standing still", rem)
		}
	}
	// inv1 needs the enable toggled: 50 % applies (0 -> 1), 30 % alone not.
	write("inv1", 123, pv("WMaxLimPct", 50), pv("WMaxLim_Ena", 1))
	write("inv1", 123, pv("WMaxLimPct", 30))

	entries, err := sim.ReadTraceFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		for _, p := range e.Points {
			got = append(got, e.Device+" "+p.Name+"="+trim(p.Value)+" limit="+trim(e.LimitPct))
		}
	}
	want := []string{
		// WMaxLimPctEna and WMaxLimPct are adjacent: one write.
		"inv2 WMaxLimPctEna=1 limit=40",
		"inv2 WMaxLimPct=40 limit=40",
		"inv2 WMaxLimPctRvrtTms=30 limit=40",
		"inv2 WMaxLimPctRvrt=100 limit=40",
		"inv1 WMaxLimPct=50 limit=100",
		"inv1 WMaxLim_Ena=1 limit=50",
		"inv1 WMaxLimPct=30 limit=50",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("trace file:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, e := range entries {
		if e.SimTime.IsZero() || e.WallTime.IsZero() || e.Seq == 0 {
			t.Errorf("entry without times or sequence: %+v", e)
		}
	}
	p.Stop(os.Interrupt, 5*time.Second)
}

func trim(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
