package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
)

// TestPlanShown: with a time-of-use table, a battery and both brokers
// (the cloud uplink and Home Assistant's, one mosquitto), the prices and
// the plan go up on up/live/tariffs/p1 and up/live/plan/p1 as the API
// gives them (when they change, not every live tick), and Home Assistant gets the current import and feed-in
// price, the plan's battery action and the PV forecast (none made yet:
// unknown), each with a discovery config in Home Assistant's schema.
func TestPlanShown(t *testing.T) {
	t.Parallel() // its own simulator, broker and binary
	if testing.Short() {
		t.Skip("runs plantd with a tariff and two MQTT links (~20 s)")
	}
	p := nightBatterySim(t)
	b := mqtttest.Start(t, mqtttest.Options{})
	col := mqtttest.Collect(t, b)
	path := consumerConfigOf(t, p, consumerOpts{devices: []string{"bat"},
		plant: ", location: {latitude: 52.52, longitude: 13.40}, battery: {gridCharge: true, reserveSoc: 10}",
		top: cheapNowTariffs(t) +
			fmt.Sprintf("gateway: {id: gw-plan}\nmqtt: {broker: %s, liveInterval: 1s}\nlocal:\n  mqtt: {broker: %s, interval: 10s}\n", b.URL(), b.URL())})
	d := startDaemon(t, path)
	defer d.stop()
	d.waitAPI(30 * time.Second)

	// The uplink: the plan that charges from the grid, as the API has it.
	type planDoc struct {
		Configured     bool
		PlantID        string
		BaseLoadSource string
		SavingEur      *float64
		Steps          []struct{ StartUtc, Battery string }
	}
	var item planDoc
	proctest.WaitFor(t, "a plan charging from the grid on up/live/plan/p1", 60*time.Second, func() bool {
		its := col.ItemsOf("live/plan/p1")
		if len(its) == 0 {
			return false
		}
		item = planDoc{}
		return json.Unmarshal(its[len(its)-1], &item) == nil && len(item.Steps) > 0 && item.Steps[0].Battery == "chargeGrid"
	})
	code, body := d.request("GET", "/gateway/v1/plan", tokStd, "")
	var api planDoc
	if err := json.Unmarshal(body, &api); code != 200 || err != nil {
		t.Fatalf("GET plan: %d %.300s %v", code, body, err)
	}
	if !item.Configured || item.PlantID != "p1" || item.SavingEur == nil || len(api.Steps) == 0 || item.Steps[0].StartUtc != api.Steps[0].StartUtc {
		t.Errorf("up/live/plan/p1 item %+v, the API's %+v", item, api)
	}
	if api.BaseLoadSource != "live" { // a fresh database: no history to forecast the base load from
		t.Errorf("the plan's base load from %q, want live", api.BaseLoadSource)
	}
	its := col.ItemsOf("live/tariffs/p1")
	if len(its) == 0 {
		t.Fatal("nothing on up/live/tariffs/p1")
	}
	var tar struct {
		Time    string
		FromUtc *string
		Slots   []struct{ ImportEurPerKWh, FeedInEurPerKWh float64 }
	}
	if err := json.Unmarshal(its[len(its)-1], &tar); err != nil || tar.Time == "" || tar.FromUtc == nil || len(tar.Slots) < 24 ||
		tar.Slots[0].ImportEurPerKWh != 0.10 || tar.Slots[0].FeedInEurPerKWh != 0.08 {
		t.Errorf("up/live/tariffs/p1 item %.300s: %+v %v", its[len(its)-1], tar, err)
	}
	// Published when they change, not every live tick (1 s): the table's
	// prices change at most at the next full hour.
	ticks := len(col.ItemsOf("live/p1"))
	if len(its) > 2 || ticks < 5 {
		t.Errorf("%d tariffs messages in %d live ticks, want 1 (2 across a full hour)", len(its), ticks)
	}
	t.Logf("uplink: %d tariffs and %d plan messages in %d live ticks; plan %.300s", len(its), len(col.ItemsOf("live/plan/p1")), ticks, col.ItemsOf("live/plan/p1")[0])
	// What the uplink asks its API each live tick, over HTTP here (an
	// upper bound of the in-process request): reported, not judged.
	start := time.Now()
	var size int
	for range 20 {
		_, pb := d.request("GET", "/gateway/v1/plan", tokStd, "")
		_, tb := d.request("GET", "/gateway/v1/tariffs", tokStd, "")
		size = len(pb) + len(tb)
	}
	t.Logf("plan and tariffs over HTTP: %.2f ms a pair, %d bytes", float64(time.Since(start).Microseconds())/20/1000, size)

	// Home Assistant: the sensors, their configs and states.
	const base = "plantd/gw-plan/plant/p1/"
	ha := subscribeHA(t, b.URL(), "ha-plan", "homeassistant/sensor/gw-plan/#", base+"#")
	want := map[string]string{"import_price": "0.1", "feed_in_price": "0.08", "battery_plan": "chargeGrid", "pv_forecast_rest_of_today": "None"}
	proctest.WaitFor(t, "the price, plan and forecast sensors' states", 30*time.Second, func() bool {
		for k, v := range want {
			if m, ok := ha.get(base + k); !ok || m.payload != v {
				return false
			}
		}
		return true
	})
	for k := range want {
		m, ok := ha.get("homeassistant/sensor/gw-plan/plant_p1__" + k + "/config")
		var c map[string]any
		if !ok || json.Unmarshal([]byte(m.payload), &c) != nil {
			t.Errorf("%s: no discovery config (%q)", k, m.payload)
			continue
		}
		for _, bad := range checkHAConfig("sensor", c) {
			t.Errorf("%s config: %s", k, bad)
		}
		unit, _ := c["unit_of_measurement"].(string)
		if strings.HasSuffix(k, "_price") && (unit != "EUR/kWh" || c["device_class"] != nil) {
			t.Errorf("%s config %v: want EUR/kWh without a device class", k, c)
		}
		if k == "pv_forecast_rest_of_today" && unit != "kWh" {
			t.Errorf("%s config %v: want kWh", k, c)
		}
	}
}
