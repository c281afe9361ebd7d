package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/modbus"
	"plantd/mqtt/mqtttest"
	"plantd/sim"
	"plantd/sim/simtest"
)

// TestInputWindowOverMQTT: a window the grid operator's input creates is
// reported over MQTT like any schedule sent over HTTP, with its creator.
// The real binary with the ripple-control receiver rcr (inputConfig)
// publishes to mosquitto: K3 closed on the I/O module over Modbus from
// outside gives a ScheduleAccepted entry on up/log/{plant} naming the
// schedule and input:rcr/K3 (gridoperator), the same entry an installer's
// POST gets, and the cloud's schedule list (down/cmd schedules, answered
// on up/ack) lists the window with that createdBy; K3 opened gives
// ScheduleCancelled naming the input.
func TestInputWindowOverMQTT(t *testing.T) {
	t.Parallel() // its own simulator, broker and binary
	if testing.Short() {
		t.Skip("runs the daemon with an input against a broker (~10 s)")
	}
	scfg := noonConfig()
	scfg.Devices = append(scfg.Devices, sim.DeviceConfig{ID: "rcr", Relay: true, InputsFollowCoils: true, Unit: 1})
	p := simtest.Start(t, scfg)
	b := mqtttest.Start(t, mqtttest.Options{})
	col := mqtttest.Collect(t, b)
	t.Logf("broker %s (embedded: %v)", b.URL(), b.Embedded())

	path := inputConfig(t, p, 30*time.Second)
	cfg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg = fmt.Appendf(cfg, `gateway:
  id: gw-input
mqtt:
  broker: %s
  liveInterval: 1s
  remoteControl: true
  remoteRole: installer
  backlog: {messagesPerSecond: 100000, bytesPerSecond: 100000000}
`, b.URL())
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, path)
	d.waitAPI(15 * time.Second)
	d.waitOnline(10*time.Second, "inv1", "inv2")

	// findLog finds the entry of code on up/log/p1 whose message holds
	// every part.
	type logItem struct {
		Code, Level, Message string
		raw                  json.RawMessage
	}
	findLog := func(code string, parts ...string) func() (logItem, bool) {
		return func() (logItem, bool) {
			for _, raw := range col.ItemsOf("log/p1") {
				var it logItem
				if json.Unmarshal(raw, &it) != nil || it.Code != code {
					continue
				}
				all := true
				for _, p := range parts {
					all = all && strings.Contains(it.Message, p)
				}
				if all {
					it.raw = raw
					return it, true
				}
			}
			return logItem{}, false
		}
	}
	waitLog := func(what, code string, parts ...string) logItem {
		t.Helper()
		find := findLog(code, parts...)
		proctest.WaitFor(t, what, 15*time.Second, func() bool { _, ok := find(); return ok })
		it, _ := find()
		return it
	}
	scheduleBy := func(prefix string) (id, createdBy string) {
		_, body := d.request("GET", "/gridcontrol/v1/plants/p1/schedules", tokInst, "")
		var list struct {
			Schedules []struct{ ScheduleID, CreatedBy string }
		}
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatalf("GET schedules: %v: %s", err, body)
		}
		for _, s := range list.Schedules {
			if strings.HasPrefix(s.CreatedBy, prefix) {
				return s.ScheduleID, s.CreatedBy
			}
		}
		return "", ""
	}

	// An installer's schedule over HTTP: the entry any schedule gets.
	code, body := d.request("POST", "/gridcontrol/v1/plants/p1/schedules", tokInst,
		`{"commands":[{"command":"opModMaxLimW","start":"+1h","end":"+2h","value":80}]}`)
	if code != 201 {
		t.Fatalf("POST schedule: %d %s", code, body)
	}
	httpID, httpBy := scheduleBy("inst")
	httpEntry := waitLog("the HTTP schedule's ScheduleAccepted on up/log/p1", "ScheduleAccepted", httpID, httpBy)

	// K3 closed on the receiver, from outside over Modbus.
	pool := modbus.NewPool(nil)
	defer pool.Close()
	rcr := pool.Endpoint(modbus.EndpointConfig{Address: p.Device("rcr").Addr()}).Unit(1, 2*time.Second)
	if err := rcr.WriteCoils(t.Context(), 0, []bool{false, false, true, false}); err != nil {
		t.Fatal(err)
	}
	var inputID, inputBy string
	proctest.WaitFor(t, "a schedule of input:rcr/K3", 10*time.Second, func() bool { inputID, inputBy = scheduleBy("input:rcr/K3"); return inputID != "" })
	if inputBy != "input:rcr/K3 (gridoperator)" {
		t.Errorf("the input's schedule createdBy %q, want input:rcr/K3 (gridoperator)", inputBy)
	}
	inputEntry := waitLog("the input's ScheduleAccepted on up/log/p1", "ScheduleAccepted", inputID, inputBy)
	httpRest, ok1 := strings.CutPrefix(httpEntry.Message, "schedule "+httpID+" from "+httpBy)
	inputRest, ok2 := strings.CutPrefix(inputEntry.Message, "schedule "+inputID+" from "+inputBy)
	if !ok1 || !ok2 || httpRest != inputRest || inputEntry.Level != httpEntry.Level {
		t.Errorf("the input's entry %+v is not the HTTP schedule's %+v with its own id and creator", inputEntry, httpEntry)
	}
	t.Logf("up/log/p1: %s\n%s", httpEntry.raw, inputEntry.raw)

	// The cloud's schedule list over down/cmd: the window and its creator.
	col.Publish("plantd/v1/gw-input/down/cmd", false, `{"requestId":"req-list","command":"schedules","plantId":"p1"}`)
	proctest.WaitFor(t, "the ack of req-list", 30*time.Second, func() bool { return len(col.Acks("req-list")) > 0 })
	a := col.Acks("req-list")[0]
	var listed struct {
		Schedules []struct {
			ScheduleID, CreatedBy string
			Commands              []struct{ Command, Status string }
		}
	}
	if err := json.Unmarshal(a.Body, &listed); err != nil || a.Status != 200 {
		t.Fatalf("schedules over down/cmd: %d %s (%v)", a.Status, a.Body, err)
	}
	found := false
	for _, s := range listed.Schedules {
		if s.ScheduleID == inputID {
			found = s.CreatedBy == inputBy && len(s.Commands) == 1 && s.Commands[0].Command == "opModMaxLimW" && s.Commands[0].Status == "active"
		}
	}
	if !found {
		t.Errorf("schedules over down/cmd: %s; want %s by %s, opModMaxLimW active", a.Body, inputID, inputBy)
	}

	// K3 opened: the input cancels its window, reported the same way.
	if err := rcr.WriteCoils(t.Context(), 0, make([]bool, 4)); err != nil {
		t.Fatal(err)
	}
	it := waitLog("the input's ScheduleCancelled on up/log/p1", "ScheduleCancelled", inputID, "input:rcr/")
	t.Logf("up/log/p1: %s", it.raw)
}
