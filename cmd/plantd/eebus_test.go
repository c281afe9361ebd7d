package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plantd/consumer"
	"plantd/eebus"
	"plantd/eebus/controlbox"
	"plantd/internal/proctest"
	"plantd/plant"

	ucapi "github.com/enbility/eebus-go/usecases/api"
)

// TestEEBusControlBox is issue 44's path with the real binary: plantd
// (its eebus section on, the box's SKI trusted) and a control box of
// eebus-go's Energy Guard use cases in this test process (package
// controlbox), which trusts plantd's SKI and dials it over loopback TLS.
// On dimmingSim's heater (6 kW) and heat pump (3 kW), both on by hand:
// an LPC limit of 4.2 kW brings their measured draw to at most the §14a
// minimum of two devices (7.56 kW: a limit never goes below it), the heat
// pump locked; its end lets both run again. An LPP limit of 3 kW is a
// grid operator's FeedInLimit window of 3000 W in the schedule list,
// created by eebus:<box SKI>; its end ends it.
func TestEEBusControlBox(t *testing.T) {
	t.Parallel() // its own simulator and binary
	if testing.Short() {
		t.Skip("runs plantd against an EEBus control box and switching consumers (~15 s)")
	}
	p := dimmingSim(t)
	p.SetLoadOffset(30000) // importing: no surplus; the loads run by hand
	path := dimmingConfig(t, p)
	// plantd's certificate, made as the daemon makes it (its state
	// directory is the database's), so that the box can trust its SKI.
	cert, err := eebus.LoadOrCreateCert(filepath.Dir(path), "gw")
	if err != nil {
		t.Fatal(err)
	}
	ski, err := eebus.SKI(cert)
	if err != nil {
		t.Fatal(err)
	}
	port := proctest.FreePort(t)
	box, err := controlbox.New(controlbox.Spec{Port: proctest.FreePort(t), Trust: ski,
		PeerAddr: fmt.Sprintf("127.0.0.1:%d", port), Heartbeat: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "eebus: {enabled: true, port: %d, trusted: [%q], heartbeatTimeout: 10s}\n", port, box.SKI())
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, path)
	d.waitAPI(15 * time.Second)
	d.waitOnline(10*time.Second, "inv1", "meter", "heatmeter", "hpmeter", "heater", "heatpump")
	box.Start()
	t.Cleanup(box.Stop)
	if err := box.Ready(t.Context()); err != nil {
		t.Fatal(err)
	}

	// limit writes one limit; its effect is what the test waits for, since
	// the box may miss plantd's answer (package controlbox).
	limit := func(production bool, l ucapi.LoadLimit) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		n, err := box.Limit(ctx, production, l)
		if err != nil && !errors.Is(err, controlbox.ErrNoAnswer) || err == nil && n != 0 {
			t.Fatalf("limit %+v: error %d, %v", l, n, err)
		}
	}
	controllableW := func() float64 {
		return p.Device("heatmeter").State().PowerW + p.Device("hpmeter").State().PowerW
	}
	for _, id := range []string{"heater", "heatpump"} {
		if code, b := d.request("PUT", "/gateway/v1/consumers/"+id+"/mode", tokInst, `{"mode":"On"}`); code != 200 {
			t.Fatalf("PUT %s mode On: %d %s", id, code, b)
		}
	}
	proctest.WaitFor(t, "heater 6 kW and heat pump 3 kW on their meters", 20*time.Second, func() bool {
		return controllableW() == 9000
	})
	logged := func(code, part string) func() bool {
		return func() bool {
			for _, e := range plantLog(t, d) {
				if e.Code == code && strings.Contains(e.Message, part) {
					return true
				}
			}
			return false
		}
	}
	proctest.WaitFor(t, "the box connected and plantd out of its start's failsafe", 30*time.Second, logged("EEBusRecovered", "speaks"))

	// LPC 4.2 kW: the controllable draw at most the minimum of two devices.
	pmin := consumer.MinPower14a(2)
	sent := time.Now()
	limit(false, ucapi.LoadLimit{IsActive: true, Value: 4200})
	proctest.WaitFor(t, fmt.Sprintf("the controllable draw at most %v W, not 0", pmin), 10*time.Second, func() bool {
		w := controllableW()
		return w <= pmin && w > 0
	})
	t.Logf("LPC 4.2 kW sent → controllable draw %.0f W after %v", controllableW(), time.Since(sent).Round(time.Millisecond))
	if hp, _ := p.Load("heatpump"); hp.SGReady != 1 {
		t.Errorf("heat pump at SG-Ready %d under the limit, want 1 (locked)", hp.SGReady)
	}
	proctest.WaitFor(t, "ConsumersLimited in the plant log", 5*time.Second, logged("ConsumersLimited", fmt.Sprintf("draw at most %.0f W", pmin)))
	code, raw := d.request("GET", "/gateway/v1/inputs", tokStd, "")
	var st struct {
		EEBus *struct {
			SKI, ControlBox     string
			Connected, Failsafe bool
			ConsumptionLimitW   *float64
		}
	}
	if err := json.Unmarshal(raw, &st); code != 200 || err != nil || st.EEBus == nil || st.EEBus.SKI != ski || st.EEBus.ControlBox != box.SKI() ||
		!st.EEBus.Connected || st.EEBus.Failsafe || st.EEBus.ConsumptionLimitW == nil || *st.EEBus.ConsumptionLimitW != 4200 {
		t.Errorf("GET inputs: %d %s, want the box connected with 4200 W in force", code, raw)
	}
	code, raw = d.request("GET", "/metrics", tokStd, "")
	for _, want := range []string{"plantd_eebus_connected 1", "plantd_eebus_failsafe 0", `plantd_eebus_limit_watts{kind="consumption"} 4200`} {
		if code != 200 || !strings.Contains(string(raw), want) {
			t.Errorf("/metrics: %d, no %q", code, want)
		}
	}
	limit(false, ucapi.LoadLimit{IsActive: false})
	proctest.WaitFor(t, "both running again", 10*time.Second, func() bool { return controllableW() == 9000 })

	// LPP 3 kW: a grid operator's FeedInLimit window in the schedule list,
	// which brings the export at the grid meter to 3 kW. First an export
	// well above it: the loads off, the house's consumption gone.
	for _, id := range []string{"heater", "heatpump"} {
		if code, b := d.request("PUT", "/gateway/v1/consumers/"+id+"/mode", tokInst, `{"mode":"Off"}`); code != 200 {
			t.Fatalf("PUT %s mode Off: %d %s", id, code, b)
		}
	}
	p.SetLoadOffset(-1e6)
	export := func() float64 { return -p.Balance().GridW }
	proctest.WaitFor(t, "an export above 4 kW", 20*time.Second, func() bool { return export() > 4000 })
	written := time.Now()
	limit(true, ucapi.LoadLimit{IsActive: true, Value: 3000})
	by := "eebus:" + box.SKI() + " (gridoperator)"
	window := func() (plant.Schedule, bool) {
		code, b := d.request("GET", "/gridcontrol/v1/plants/p1/schedules", tokInst, "")
		var out struct{ Schedules []plant.Schedule }
		if err := json.Unmarshal(b, &out); code != 200 || err != nil {
			t.Fatalf("GET schedules: %d %s %v", code, b, err)
		}
		for _, sc := range out.Schedules {
			if sc.CreatedBy == by && len(sc.Commands) == 1 && sc.Commands[0].Status == plant.WindowActive {
				return sc, true
			}
		}
		return plant.Schedule{}, false
	}
	sc := proctest.WaitValue(t, "the LPP window active in the schedule list", 10*time.Second, window)
	if cm := sc.Commands[0]; cm.Command != "FeedInLimit" || cm.Value == nil || *cm.Value != 3000 || cm.Unit != "W" {
		t.Errorf("window %+v, want FeedInLimit 3000 W", cm)
	}
	proctest.WaitFor(t, "the export at most 3 kW (and 100 W)", 20*time.Second, func() bool { return export() <= 3100 })
	t.Logf("LPP 3 kW written → export %.0f W after %v", export(), time.Since(written).Round(time.Millisecond))
	limit(true, ucapi.LoadLimit{IsActive: false})
	proctest.WaitFor(t, "the LPP window ended", 10*time.Second, func() bool { _, open := window(); return !open })
}
