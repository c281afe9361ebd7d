package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/sim"
	"plantd/sim/simtest"
)

// TestGridInputsRTU: the ripple-control receiver's I/O module on an RS485
// line (one end of a socat pty pair, 19200 baud), the inverters over
// Modbus TCP. Its K3 contact limits both inverters to 30 % (their
// registers, as the simulator applies them) with a window created by
// input:rcr/K3; opening it releases them.
func TestGridInputsRTU(t *testing.T) {
	t.Parallel() // its own simulator, pty pair and binary
	if testing.Short() {
		t.Skip("a real binary reading inputs over a serial line (~10 s)")
	}
	line, plantdEnd := socatPair(t, t.TempDir())
	scfg := noonConfig()
	scfg.Devices = append(scfg.Devices, sim.DeviceConfig{ID: "rcr", Relay: true, Unit: 3})
	scfg.Serial = []sim.SerialConfig{{Path: line, Baud: 19200, Devices: []string{"rcr"}}}
	p := simtest.Start(t, scfg)
	limit := func(id string) float64 { return p.Device(id).State().EffectiveLimitPct }

	d := startDaemon(t, inputConfigAt(t, p, 3*time.Second, fmt.Sprintf("serial: {port: %s, baud: 19200}\n    unit: 3", plantdEnd)))
	d.waitAPI(15 * time.Second)
	d.waitOnline(10*time.Second, "inv1", "inv2")
	if err := p.Device("rcr").SetInput(2, true); err != nil { // K3 closes
		t.Fatal(err)
	}
	proctest.WaitFor(t, "both inverters at 30 % or less", 15*time.Second, func() bool { return limit("inv1") <= 30 && limit("inv2") <= 30 })
	code, body := d.request("GET", "/gridcontrol/v1/plants/p1/schedules", tokInst, "")
	if code != 200 || !strings.Contains(string(body), `input:rcr/K3`) {
		t.Fatalf("schedules: %d %s", code, body)
	}
	if err := p.Device("rcr").SetInput(2, false); err != nil {
		t.Fatal(err)
	}
	proctest.WaitFor(t, "both inverters released", 15*time.Second, func() bool { return limit("inv1") == 100 && limit("inv2") == 100 })
}
