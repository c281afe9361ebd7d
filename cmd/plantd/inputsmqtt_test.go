package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"plantd/devices/sim"
	"plantd/devices/sim/simtest"
	"plantd/gridcontrol"
	"plantd/modbus"
	"plantd/mqtt/mqtttest"
)

// TestInputWindowOverMQTT: a window the ripple-control receiver's contact
// K3 creates is reported over MQTT with its creator, with the real binary
// and mosquitto: the log stream carries its ScheduleAccepted and
// InputApplied entries naming input:rcr/K3, the schedule list asked over
// down/cmd answers on up/ack with the window active and createdBy
// "input:rcr/K3 (gridoperator)", and once K3 opens, the log stream says
// it was released and the list gives the window done.
func TestInputWindowOverMQTT(t *testing.T) {
	t.Parallel() // its own simulator, broker and binary
	if testing.Short() {
		t.Skip("runs the daemon against a broker and an input (~15 s)")
	}
	scfg := sim.DefaultConfig()
	scfg.Start, scfg.ClearSky = time.Date(2026, 6, 21, 12, 0, 0, 0, time.UTC), true
	scfg.Devices = append(scfg.Devices, sim.DeviceConfig{ID: "rcr", Relay: true, InputsFollowCoils: true, Unit: 1})
	p := simtest.Start(t, scfg)
	b := mqtttest.Start(t, mqtttest.Options{})
	col := mqtttest.Collect(t, b)
	path := inputConfig(t, p, time.Minute)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writeConfig(t, path, string(raw)+fmt.Sprintf(`gateway:
  id: gw-inputs
mqtt:
  broker: %s
  remoteControl: true
  remoteRole: installer
`, b.URL()))
	d := startDaemon(t, path)
	d.waitAPI(15 * time.Second)
	d.waitOnline(10*time.Second, "inv1", "inv2")
	mqtttest.WaitFor(t, 15*time.Second, "plantd online on the broker", func() bool { s, _ := col.LastState(); return s.State == "online" })

	pool := modbus.NewPool(nil)
	defer pool.Close()
	rcr := pool.Endpoint(modbus.EndpointConfig{Address: p.Device("rcr").Addr()}).Unit(1, 2*time.Second)
	k3 := func(on bool) {
		t.Helper()
		if err := rcr.WriteCoils(t.Context(), 0, []bool{false, false, on, false}); err != nil {
			t.Fatal(err)
		}
	}
	// logged reports whether the MQTT log stream has an entry of the code
	// whose item holds every one of the strings.
	logged := func(code string, has ...string) func() bool {
		return func() bool {
			return slices.ContainsFunc(col.ItemsOf("log/p1"), func(it json.RawMessage) bool {
				if !bytes.Contains(it, []byte(`"code":"`+code+`"`)) {
					return false
				}
				for _, s := range has {
					if !bytes.Contains(it, []byte(s)) {
						return false
					}
				}
				return true
			})
		}
	}
	// inputWindow asks for the schedule list over MQTT and returns the
	// window created by input:rcr/K3 (its status; "" when not listed).
	asked := 0
	inputWindow := func() gridcontrol.Status {
		t.Helper()
		asked++
		id := fmt.Sprintf("req-list-%d", asked)
		col.Publish("plantd/v1/gw-inputs/down/cmd", false, fmt.Sprintf(`{"requestId":%q,"command":"schedules","plantId":"p1"}`, id))
		mqtttest.WaitFor(t, 15*time.Second, "the ack of "+id, func() bool { return len(col.Acks(id)) > 0 })
		a := col.Acks(id)[0]
		var list struct{ Schedules []gridcontrol.Schedule }
		if err := json.Unmarshal(a.Body, &list); a.Status != 200 || err != nil {
			t.Fatalf("schedules over MQTT: %d %s %v", a.Status, a.Body, err)
		}
		for _, s := range list.Schedules {
			if s.CreatedBy == "input:rcr/K3 (gridoperator)" && s.Role == "gridoperator" && len(s.Commands) == 1 {
				return s.Commands[0].Status
			}
		}
		return ""
	}

	k3(true)
	mqtttest.WaitFor(t, 15*time.Second, "ScheduleAccepted from input:rcr/K3 on the log stream",
		logged("ScheduleAccepted", "from input:rcr/K3 (gridoperator) accepted"))
	mqtttest.WaitFor(t, 15*time.Second, "InputApplied by input:rcr/K3 on the log stream",
		logged("InputApplied", "opModMaxLimW 30 % by input:rcr/K3"))
	mqtttest.WaitFor(t, 15*time.Second, "the window active in the list over MQTT", func() bool { return inputWindow() == gridcontrol.StatusActive })

	k3(false)
	mqtttest.WaitFor(t, 15*time.Second, "InputReleased on the log stream", logged("InputReleased", "input rcr: no limit signalled"))
	mqtttest.WaitFor(t, 15*time.Second, "the window done in the list over MQTT", func() bool { return inputWindow() == gridcontrol.StatusDone })
}
