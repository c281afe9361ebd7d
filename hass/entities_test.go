package hass

import (
	"regexp"
	"slices"
	"testing"

	"plantd/plant"
	"plantd/plant/kind"
)

// TestEscapeID: Home Assistant's characters only, and distinct ids stay
// distinct (also across the "__" separator of object ids).
func TestEscapeID(t *testing.T) {
	t.Parallel()
	haChars := regexp.MustCompile(`^[A-Za-z0-9_-]*$`)
	ids := []string{"inv1", "inv.1", "inv_1", "inv~1", "inv_2e1", "a__b", "a_b", "a.b", "7190000", "-x", "é"}
	seen := map[string]string{}
	for _, id := range ids {
		got := escapeID(id)
		if !haChars.MatchString(got) {
			t.Errorf("escapeID(%q) = %q: not [A-Za-z0-9_-]", id, got)
		}
		if prev, ok := seen[got]; ok {
			t.Errorf("escapeID(%q) = escapeID(%q) = %q", id, prev, got)
		}
		seen[got] = id
		e := entity{scope: scopeDevice, id: id, key: "active_power"}
		if o := e.objectID(); !haChars.MatchString(o) {
			t.Errorf("object id %q", o)
		}
	}
	// The separator: an escaped id never holds "__".
	for _, id := range ids {
		if got := escapeID(id); regexp.MustCompile(`__`).MatchString(got) {
			t.Errorf("escapeID(%q) = %q holds __", id, got)
		}
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ channel, key, name string }{
		{"activePower", "active_power", "Active power"},
		{"activePowerPhaseA", "active_power_phase_a", "Active power phase A"},
		{"voltagePhaseA2B", "voltage_phase_a2b", "Voltage phase A2B"},
		{"pvGenerationTotal", "pv_generation_total", "PV generation total"},
		{"gridFrequency", "grid_frequency", "Grid frequency"},
	} {
		if got := snake(tc.channel); got != tc.key {
			t.Errorf("snake(%q) = %q, want %q", tc.channel, got, tc.key)
		}
		if got := words(tc.channel); got != tc.name {
			t.Errorf("words(%q) = %q, want %q", tc.channel, got, tc.name)
		}
	}
}

// TestChannelSensor: counters are kWh energy sensors for the Energy
// dashboard, powers W measurements.
func TestChannelSensor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c                   plant.Channel
		v                   float64
		class, stateClass   string
		unit, state         string
		noUnit, noClassWant bool
	}{
		{c: plant.PVGenerationTotal, v: 55043158, class: "energy", stateClass: "total_increasing", unit: "kWh", state: "55043.158"},
		{c: plant.GridFeedInTotal, v: 1500, class: "energy", stateClass: "total_increasing", unit: "kWh", state: "1.5"},
		{c: plant.ActivePower, v: 3578.25, class: "power", stateClass: "measurement", unit: "W", state: "3578.25"},
		{c: plant.BatteryStateOfCharge, v: 50.1, class: "battery", stateClass: "measurement", unit: "%", state: "50.1"},
		{c: plant.DisplacementPowerFactor, v: -0.1424, class: "power_factor", stateClass: "measurement", noUnit: true, state: "-0.142"},
		{c: plant.IsolationResistance, v: 2e6, stateClass: "measurement", unit: "Ω", state: "2000000", noClassWant: true},
	} {
		cfg, st := channelSensor(tc.c, tc.v, true)
		if st != tc.state || cfg["state_class"] != tc.stateClass {
			t.Errorf("%s: state %q class %v, want %q %q", tc.c, st, cfg["state_class"], tc.state, tc.stateClass)
		}
		if _, has := cfg["device_class"]; tc.noClassWant == has || (has && cfg["device_class"] != tc.class) {
			t.Errorf("%s: device_class %v, want %q", tc.c, cfg["device_class"], tc.class)
		}
		if _, has := cfg["unit_of_measurement"]; tc.noUnit == has || (has && cfg["unit_of_measurement"] != tc.unit) {
			t.Errorf("%s: unit %v, want %q", tc.c, cfg["unit_of_measurement"], tc.unit)
		}
		if _, st := channelSensor(tc.c, tc.v, false); st != "" {
			t.Errorf("%s: a value not known has state %q", tc.c, st)
		}
	}
}

// TestInputSensors: a per-input channel has a sensor per input, keyed and
// named with the API's input label; a plain channel one sensor.
func TestInputSensors(t *testing.T) {
	t.Parallel()
	d := plant.DeviceLive{Info: plant.DeviceInfo{ID: "inv1", PlantID: "p1", Kind: kind.Inverter}, Health: plant.HealthOk,
		Readings: []plant.Reading{{Channel: plant.ActivePower, Value: 5000},
			{Channel: plant.DCPowerInput, Index: 1, Value: 2600}, {Channel: plant.DCPowerInput, Index: 2, Value: 2500.25},
			{Channel: plant.DCEnergyInput, Index: 2, Value: 1234500}}}
	s := &snapshot{plants: []plant.Plant{{ID: "p1"}}, devices: map[string][]plant.DeviceLive{"p1": {d}}, channels: map[string][]sensorKey{}}
	for _, r := range d.Readings {
		s.channels["inv1"] = append(s.channels["inv1"], keyOf(r))
	}
	l := &Link{cfg: Config{GatewayID: "gw", Prefix: "plantd", DiscoveryPrefix: "homeassistant"}, names: channelNames{}}
	got := map[string][2]string{} // key: name, state
	for _, e := range l.entities(s) {
		if e.scope == scopeDevice && e.component == compSensor {
			got[e.key] = [2]string{e.name, e.state}
		}
	}
	for key, want := range map[string][2]string{
		"active_power":      {"Active power", "5000"},
		"dc_power_input_a":  {"DC power input A", "2600"},
		"dc_power_input_b":  {"DC power input B", "2500.25"},
		"dc_energy_input_b": {"DC energy input B", "1234.5"},
	} {
		if got[key] != want {
			t.Errorf("%s: %q, want %q", key, got[key], want)
		}
	}
	if _, ok := got["dc_energy_input_a"]; ok {
		t.Error("a sensor for an input the device did not report")
	}
}

// TestChargerEntities: a charger's mode select offers MinPV, and it has
// sensors for its current and the car's state of charge; a switch has
// neither.
func TestChargerEntities(t *testing.T) {
	t.Parallel()
	soc := 63.5
	dev := func(id string) plant.DeviceLive {
		return plant.DeviceLive{Info: plant.DeviceInfo{ID: id, PlantID: "p1", Kind: kind.Consumer}, Health: plant.HealthOk}
	}
	s := &snapshot{plants: []plant.Plant{{ID: "p1"}}, devices: map[string][]plant.DeviceLive{"p1": {dev("wallbox"), dev("heater")}},
		channels: map[string][]sensorKey{}, consumers: map[string]plant.ConsumerStatus{
			"wallbox": {DeviceID: "wallbox", Mode: plant.ModeMinPV, SwitchingState: plant.SwitchedOn,
				Charger: &plant.ChargerStatus{Status: "Charging", CurrentA: 7, Phases: 3, MinCurrentA: 6, MaxCurrentA: 16, VehicleSoC: &soc}},
			"heater": {DeviceID: "heater", Mode: plant.ModeAuto},
		}}
	l := &Link{cfg: Config{GatewayID: "gw", Prefix: "plantd", DiscoveryPrefix: "homeassistant"}, names: channelNames{}}
	got := map[string]entity{}
	for _, e := range l.entities(s) {
		got[e.id+"/"+e.key] = e
	}
	if e := got["wallbox/mode"]; e.state != "MinPV" || len(e.config["options"].([]string)) != 5 {
		t.Errorf("wallbox mode: %q with options %v, want MinPV of 4 options", e.state, e.config["options"])
	}
	if e := got["heater/mode"]; len(e.config["options"].([]string)) != 3 {
		t.Errorf("heater mode options %v, want Auto, On, Off", e.config["options"])
	}
	if e := got["wallbox/charging_current"]; e.state != "7" || e.config["unit_of_measurement"] != "A" {
		t.Errorf("wallbox current: %q %v, want 7 A", e.state, e.config)
	}
	if e := got["wallbox/vehicle_soc"]; e.state != "63.5" {
		t.Errorf("wallbox vehicle SoC: %q, want 63.5", e.state)
	}
	if _, ok := got["heater/charging_current"]; ok {
		t.Error("a switch has a charging current sensor")
	}
}

// TestLimit14aSensor: a plant with a control box over EEBus has a §14a
// consumption limit sensor in W, "None" (unknown) without a limit; a
// plant without a box has none.
func TestLimit14aSensor(t *testing.T) {
	t.Parallel()
	s := &snapshot{plants: []plant.Plant{{ID: "p1"}, {ID: "p2"}}, devices: map[string][]plant.DeviceLive{}, balances: map[string]plant.Balance{},
		channels: map[string][]sensorKey{}, limit14a: map[string]string{"p1": "4200"}}
	l := &Link{cfg: Config{GatewayID: "gw", Prefix: "plantd", DiscoveryPrefix: "homeassistant"}, names: channelNames{}}
	got := map[string]entity{}
	for _, e := range l.entities(s) {
		if e.key == "consumption_limit_14a" {
			got[e.id] = e
		}
	}
	e, ok := got["p1"]
	if !ok || e.state != "4200" || e.component != compSensor || e.config["unit_of_measurement"] != "W" || e.name != "§14a consumption limit" {
		t.Errorf("p1's sensor: %+v", e)
	}
	if _, ok := got["p2"]; ok {
		t.Error("a §14a sensor for a plant without a control box")
	}
}

// TestPlanSensors: the tariffs' plant has its import and feed-in price
// (EUR/kWh, no device class: not a currency amount) and the plan's
// battery action (an enum, surplus-only on fallback); a plant the
// forecast runs for has its PV forecast for the rest of today (kWh);
// unknown values are "None"; a plant with neither has none of them.
func TestPlanSensors(t *testing.T) {
	t.Parallel()
	v := func(f float64) *float64 { return &f }
	for _, tc := range []struct {
		name  string
		state PlanState
		want  map[string]string // key → state
	}{
		{"prices, plan and forecast", PlanState{Tariffs: true, ImportEURPerKWh: v(0.31456), FeedInEURPerKWh: v(-0.012), BatteryAction: "chargeGrid", Forecast: true, ForecastRestOfTodayKWh: v(12.3456)},
			map[string]string{"import_price": "0.3146", "feed_in_price": "-0.012", "battery_plan": "chargeGrid", "pv_forecast_rest_of_today": "12.346"}},
		{"fallback, no prices yet", PlanState{Tariffs: true, BatteryAction: SurplusOnly},
			map[string]string{"import_price": "None", "feed_in_price": "None", "battery_plan": SurplusOnly}},
		{"no plan yet", PlanState{Tariffs: true, ImportEURPerKWh: v(0.3), FeedInEURPerKWh: v(0.08)},
			map[string]string{"import_price": "0.3", "feed_in_price": "0.08", "battery_plan": "None"}},
		{"forecast only, none made yet", PlanState{Forecast: true}, map[string]string{"pv_forecast_rest_of_today": "None"}},
		{"neither", PlanState{}, map[string]string{}},
	} {
		s := &snapshot{plants: []plant.Plant{{ID: "p1"}}, devices: map[string][]plant.DeviceLive{}, balances: map[string]plant.Balance{},
			channels: map[string][]sensorKey{}, plans: map[string]PlanState{"p1": tc.state}}
		l := &Link{cfg: Config{GatewayID: "gw", Prefix: "plantd", DiscoveryPrefix: "homeassistant"}, names: channelNames{}}
		got := map[string]entity{}
		for _, e := range l.entities(s) {
			if e.key == "import_price" || e.key == "feed_in_price" || e.key == "battery_plan" || e.key == "pv_forecast_rest_of_today" {
				got[e.key] = e
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d sensors, want %d", tc.name, len(got), len(tc.want))
		}
		for k, st := range tc.want {
			e, ok := got[k]
			if !ok || e.state != st || e.component != compSensor || e.scope != scopePlant || e.id != "p1" {
				t.Errorf("%s: %s: %+v, want state %q", tc.name, k, e, st)
				continue
			}
			unit, class := e.config["unit_of_measurement"], e.config["device_class"]
			switch k {
			case "import_price", "feed_in_price":
				if unit != "EUR/kWh" || class != nil || e.config["state_class"] != "measurement" {
					t.Errorf("%s: %s config %v", tc.name, k, e.config)
				}
			case "battery_plan":
				if class != "enum" || !slices.Contains(e.config["options"].([]string), st) && st != "None" {
					t.Errorf("%s: %s config %v with state %q", tc.name, k, e.config, st)
				}
			case "pv_forecast_rest_of_today":
				if unit != "kWh" || class != "energy" || e.config["state_class"] != nil {
					t.Errorf("%s: %s config %v", tc.name, k, e.config)
				}
			}
		}
	}
}
