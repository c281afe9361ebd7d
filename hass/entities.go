package hass

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"plantd/plant"
	"plantd/plant/kind"
)

// entity is one Home Assistant entity: its discovery config and its state.
type entity struct {
	component string // sensor, binary_sensor, switch, select, number
	// scope ("plant" or "device"), id (the plant's or device's) and key
	// name it: its topics, object id and unique id follow from them.
	scope, id, key string
	// config holds the entity's own keys; the common ones (unique id,
	// name, topics, availability, device) are added by configOf.
	name   string
	config map[string]any
	device map[string]any
	// deviceJSON is device encoded: what changedConfigs compares.
	deviceJSON string
	// state is the value published on the state topic; "" publishes
	// nothing (not known yet).
	state string
	// command: the entity takes commands on its state topic + "/set".
	command bool
}

// Component names (Home Assistant's MQTT platforms).
const (
	compSensor = "sensor"
	compBinary = "binary_sensor"
	compSwitch = "switch"
	compSelect = "select"
	compNumber = "number"
)

// Scopes of plantd's topics.
const (
	scopePlant  = "plant"
	scopeDevice = "device"
)

// Entity keys that take commands.
const (
	keyFeedInLimit = "feed_in_limit"
	keyMode        = "mode"
	keySwitch      = "switch"
)

// objectID is the entity's object id in its discovery topic: scope, id and
// key in Home Assistant's characters. Ids are escaped (escapeID), which
// never writes "__", so the separator keeps distinct entities apart.
func (e *entity) objectID() string { return e.scope + "_" + escapeID(e.id) + "__" + e.key }

// escapeID writes s in [A-Za-z0-9-]: every other byte, '_' too, becomes
// '_' and two lower-case hex digits. Distinct ids give distinct results.
func escapeID(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x80 && (unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c)) || c == '-') {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "_%02x", c)
	}
	return b.String()
}

// snapshot is what the link reads from the plant for one round.
type snapshot struct {
	plants    []plant.Plant
	devices   map[string][]plant.DeviceLive // by plant id
	balances  map[string]plant.Balance      // by plant id
	energies  map[string]map[string]float64 // by plant id: the balance's lifetime Wh by field
	limits    map[string]string             // by plant id: the FeedInLimit number's state
	limit14a  map[string]string             // by plant id with a control box: the §14a limit's state
	plans     map[string]PlanState          // by plant id: prices, forecast, plan (with Deps.Plan)
	consumers map[string]plant.ConsumerStatus
	// channels are the readings each device has reported in this process:
	// its sensors (a device gone offline keeps its entities).
	channels map[string][]sensorKey
}

// sensorKey is a reading a device reports: a plain channel (index 0) or
// one input of a per-input channel (DC input A, battery module B).
type sensorKey struct {
	ch    plant.Channel
	index int
}

// The energy balance's lifetime fields (the store's field names) and
// live power fields, as entities of the plant.
var plantPower = []struct {
	key, name string
	value     func(b plant.Balance) *float64
	battery   bool
}{
	{"pv_power", "PV power", func(b plant.Balance) *float64 { return b.PVGenerationW }, false},
	{"grid_feed_in_power", "Grid feed-in power", func(b plant.Balance) *float64 { return b.GridFeedInW }, false},
	{"grid_purchase_power", "Grid purchase power", func(b plant.Balance) *float64 { return b.GridConsumptionW }, false},
	{"consumption_power", "Consumption power", func(b plant.Balance) *float64 { return b.TotalConsumptionW }, false},
	{"battery_charge_power", "Battery charge power", func(b plant.Balance) *float64 { return b.BatteryChargingW }, true},
	{"battery_discharge_power", "Battery discharge power", func(b plant.Balance) *float64 { return b.BatteryDischargingW }, true},
}

var plantEnergy = []struct {
	key, name, field string
	battery          bool
}{
	{"pv_energy", "PV energy", "pvGeneration", false},
	{"grid_feed_in_energy", "Grid feed-in energy", "gridFeedIn", false},
	{"grid_purchase_energy", "Grid purchase energy", "gridConsumption", false},
	{"consumption_energy", "Consumption energy", "totalConsumption", false},
	{"battery_charge_energy", "Battery charge energy", "batteryCharging", true},
	{"battery_discharge_energy", "Battery discharge energy", "batteryDischarging", true},
}

// entities lists every entity of a snapshot with its state.
func (l *Link) entities(s *snapshot) []entity {
	var out []entity
	for _, p := range s.plants {
		pdev := l.plantDevice(p)
		pjson := encodeDevice(pdev)
		devs := s.devices[p.ID]
		battery := slices.ContainsFunc(devs, func(d plant.DeviceLive) bool { return d.Info.Active() && d.Info.Kind == kind.Battery })
		b := s.balances[p.ID]
		if b.BatteryStateOfChargePct != nil || b.BatteryChargingW != nil {
			battery = true
		}
		for _, f := range plantPower {
			if f.battery && !battery {
				continue
			}
			out = append(out, entity{component: compSensor, scope: scopePlant, id: p.ID, key: f.key, name: f.name, device: pdev, deviceJSON: pjson,
				config: powerSensor(), state: num(f.value(b), 1)})
		}
		if battery {
			out = append(out, entity{component: compSensor, scope: scopePlant, id: p.ID, key: "battery_soc", name: "Battery state of charge", device: pdev, deviceJSON: pjson,
				config: map[string]any{"device_class": "battery", "state_class": "measurement", "unit_of_measurement": "%"},
				state:  num(b.BatteryStateOfChargePct, 1)})
		}
		if l.deps.Energy != nil {
			for _, f := range plantEnergy {
				if f.battery && !battery {
					continue
				}
				var st string
				if wh, ok := s.energies[p.ID][f.field]; ok {
					st = fmtNum(wh/1000, 3)
				}
				out = append(out, entity{component: compSensor, scope: scopePlant, id: p.ID, key: f.key, name: f.name, device: pdev, deviceJSON: pjson,
					config: energySensor(), state: st})
			}
		}
		if l.deps.Limits != nil {
			out = append(out, entity{component: compNumber, scope: scopePlant, id: p.ID, key: keyFeedInLimit, name: "Feed-in limit", device: pdev, deviceJSON: pjson,
				config: map[string]any{"min": 0, "max": 100, "step": 1, "unit_of_measurement": "%", "mode": "box", "icon": "mdi:transmission-tower-export"},
				state:  s.limits[p.ID], command: true})
		}
		if st, ok := s.limit14a[p.ID]; ok {
			cfg := powerSensor()
			cfg["icon"] = "mdi:transmission-tower-import"
			out = append(out, entity{component: compSensor, scope: scopePlant, id: p.ID, key: "consumption_limit_14a", name: "§14a consumption limit",
				device: pdev, deviceJSON: pjson, config: cfg, state: st})
		}
		for _, e := range planEntities(s.plans[p.ID]) {
			e.scope, e.id, e.device, e.deviceJSON = scopePlant, p.ID, pdev, pjson
			out = append(out, e)
		}
		for _, d := range devs {
			if d.Info.Active() {
				out = append(out, l.deviceEntities(p, d, s)...)
			}
		}
	}
	return out
}

// planEntities are a plant's price, forecast and plan sensors (without
// scope, id and device). A price is no monetary sensor: Home Assistant's
// monetary class takes a currency as its unit and no state class but
// total, and a price per kWh is neither; so no device class, EUR/kWh,
// measurement (for its statistics). The forecast is energy in kWh without
// a state class: not a meter. Unknown is "None".
func planEntities(ps PlanState) []entity {
	orNone := func(v *float64, decimals int) string {
		if v == nil {
			return "None"
		}
		return fmtNum(*v, decimals)
	}
	var out []entity
	if ps.Tariffs {
		action := ps.BatteryAction
		if action == "" {
			action = "None"
		}
		out = append(out,
			entity{component: compSensor, key: "import_price", name: "Import price", state: orNone(ps.ImportEURPerKWh, 4),
				config: map[string]any{"unit_of_measurement": "EUR/kWh", "state_class": "measurement", "icon": "mdi:cash-minus"}},
			entity{component: compSensor, key: "feed_in_price", name: "Feed-in price", state: orNone(ps.FeedInEURPerKWh, 4),
				config: map[string]any{"unit_of_measurement": "EUR/kWh", "state_class": "measurement", "icon": "mdi:cash-plus"}},
			entity{component: compSensor, key: "battery_plan", name: "Battery plan", state: action,
				config: map[string]any{"device_class": "enum", "options": BatteryActions, "icon": "mdi:battery-clock"}})
	}
	if ps.Forecast {
		out = append(out, entity{component: compSensor, key: "pv_forecast_rest_of_today", name: "PV forecast rest of today",
			state:  orNone(ps.ForecastRestOfTodayKWh, 3),
			config: map[string]any{"device_class": "energy", "unit_of_measurement": "kWh", "icon": "mdi:solar-power-variant"}})
	}
	return out
}

// deviceEntities are one device's entities.
func (l *Link) deviceEntities(p plant.Plant, d plant.DeviceLive, s *snapshot) []entity {
	dev := l.deviceDevice(p, d)
	djson := encodeDevice(dev)
	id := d.Info.ID
	var health string
	if d.Health != "" {
		health = string(d.Health)
	}
	problem := ""
	if d.Health != "" {
		problem = "OFF"
		if d.Health == plant.HealthWarning || d.Health == plant.HealthError {
			problem = "ON"
		}
	}
	out := []entity{
		{component: compSensor, scope: scopeDevice, id: id, key: "health", name: "Health", device: dev, deviceJSON: djson,
			config: map[string]any{"device_class": "enum", "entity_category": "diagnostic",
				"options": []string{string(plant.HealthOk), string(plant.HealthWarning), string(plant.HealthError), string(plant.HealthOff), string(plant.HealthNotAvailable)}},
			state: health},
		{component: compBinary, scope: scopeDevice, id: id, key: "problem", name: "Problem", device: dev, deviceJSON: djson,
			config: map[string]any{"device_class": "problem", "entity_category": "diagnostic"}, state: problem},
	}
	for _, k := range s.channels[id] {
		e := entity{component: compSensor, scope: scopeDevice, id: id, key: l.names.key(k.ch), name: l.names.name(k.ch), device: dev, deviceJSON: djson}
		var v float64
		var ok bool
		if k.index == 0 {
			v, ok = d.Value(k.ch)
		} else {
			// The API's label of the input: "DC power input A".
			label := plant.IndexLabel(k.index)
			e.key, e.name = e.key+"_"+strings.ToLower(label), e.name+" "+label
			v, ok = inputValue(d, k)
		}
		e.config, e.state = channelSensor(k.ch, v, ok)
		out = append(out, e)
	}
	if cs, ok := s.consumers[id]; ok {
		sw := ""
		switch cs.SwitchingState {
		case plant.SwitchedOn:
			sw = "ON"
		case plant.SwitchedOff:
			sw = "OFF"
		}
		modes := []string{string(plant.ModeAuto), string(plant.ModeOn), string(plant.ModeOff)}
		if ch := cs.Charger; ch != nil {
			// A charger: MinPV and Plan too (Plan shown, set only over the
			// API with its target), and its current and the car's SoC.
			modes = append(modes, string(plant.ModeMinPV), string(plant.ModePlan))
			soc := ""
			if ch.VehicleSoC != nil {
				soc = fmtNum(*ch.VehicleSoC, 1)
			}
			out = append(out,
				entity{component: compSensor, scope: scopeDevice, id: id, key: "charging_current", name: "Charging current", device: dev, deviceJSON: djson,
					config: map[string]any{"device_class": "current", "unit_of_measurement": "A", "state_class": "measurement"}, state: fmtNum(ch.CurrentA, 1)},
				entity{component: compSensor, scope: scopeDevice, id: id, key: "vehicle_soc", name: "Vehicle state of charge", device: dev, deviceJSON: djson,
					config: map[string]any{"device_class": "battery", "unit_of_measurement": "%", "state_class": "measurement"}, state: soc})
		}
		out = append(out,
			entity{component: compSelect, scope: scopeDevice, id: id, key: keyMode, name: "Mode", device: dev, deviceJSON: djson,
				config: map[string]any{"options": modes},
				state:  string(cs.Mode), command: true},
			entity{component: compSwitch, scope: scopeDevice, id: id, key: keySwitch, name: "Output", device: dev, deviceJSON: djson,
				config: map[string]any{"device_class": "switch"}, state: sw, command: true})
	}
	return out
}

// encodeDevice is a Home Assistant device as JSON.
func encodeDevice(dev map[string]any) string {
	b, _ := json.Marshal(dev) // strings and string lists only
	return string(b)
}

// channelNames caches the entity key and name of each channel.
type channelNames map[plant.Channel][2]string

func (n channelNames) get(c plant.Channel) [2]string {
	kn, ok := n[c]
	if !ok {
		kn = [2]string{snake(c.Name()), words(c.Name())}
		n[c] = kn
	}
	return kn
}

func (n channelNames) key(c plant.Channel) string  { return n.get(c)[0] }
func (n channelNames) name(c plant.Channel) string { return n.get(c)[1] }

// plantDevice is the Home Assistant device of a plant.
func (l *Link) plantDevice(p plant.Plant) map[string]any {
	name := p.Name
	if name == "" {
		name = p.ID
	}
	return map[string]any{"identifiers": []string{l.deviceIdent(scopePlant, p.ID)}, "name": name,
		"manufacturer": "plantd", "model": "PV plant", "sw_version": l.cfg.Version}
}

// deviceDevice is the Home Assistant device of a plant's device, via the
// plant's.
func (l *Link) deviceDevice(p plant.Plant, d plant.DeviceLive) map[string]any {
	name := d.Info.Name
	if name == "" {
		name = d.Info.ID
	}
	m := map[string]any{"identifiers": []string{l.deviceIdent(scopeDevice, d.Info.ID)}, "name": name,
		"via_device": l.deviceIdent(scopePlant, p.ID)}
	if n := d.Nameplate; n != nil {
		for k, v := range map[string]string{"manufacturer": n.Manufacturer, "model": n.Model, "serial_number": n.Serial, "sw_version": n.Version} {
			if v != "" {
				m[k] = v
			}
		}
	}
	if _, ok := m["model"]; !ok && d.Info.Kind != "" {
		m["model"] = d.Info.Kind.Type()
	}
	return m
}

// deviceIdent is the identifier of a Home Assistant device.
func (l *Link) deviceIdent(scope, id string) string {
	return "plantd_" + escapeID(l.cfg.GatewayID) + "_" + scope + "_" + escapeID(id)
}

func powerSensor() map[string]any {
	return map[string]any{"device_class": "power", "state_class": "measurement", "unit_of_measurement": "W"}
}

func energySensor() map[string]any {
	return map[string]any{"device_class": "energy", "state_class": "total_increasing", "unit_of_measurement": "kWh"}
}

// channelSensor is a device channel's sensor config and its state: a
// lifetime counter in kWh (total_increasing), the rest in their unit with
// Home Assistant's device class for it, where it has one.
func channelSensor(c plant.Channel, v float64, ok bool) (map[string]any, string) {
	state := func(scale float64, decimals int) string {
		if !ok {
			return ""
		}
		return fmtNum(v*scale, decimals)
	}
	if c.Counter() {
		return energySensor(), state(0.001, 3)
	}
	cfg := map[string]any{"state_class": "measurement"}
	class, unit := "", string(c.Unit())
	switch c.Unit() {
	case plant.UnitW:
		class = "power"
	case plant.UnitVA:
		class = "apparent_power"
	case plant.UnitVar:
		class = "reactive_power"
	case plant.UnitV:
		class = "voltage"
	case plant.UnitA:
		class = "current"
	case plant.UnitHz:
		class = "frequency"
	case plant.UnitCelsius:
		class = "temperature"
	case plant.UnitWm2:
		class = "irradiance"
	case plant.UnitMS:
		class = "wind_speed"
	case plant.UnitRatio:
		class = "power_factor"
	case plant.UnitPercent:
		if c == plant.BatteryStateOfCharge {
			class = "battery"
		}
	}
	if class != "" {
		cfg["device_class"] = class
	}
	if unit != "" {
		cfg["unit_of_measurement"] = unit
	}
	return cfg, state(1, 3)
}

// keyOf is the sensor a reading belongs to.
func keyOf(r plant.Reading) sensorKey {
	if r.Channel.Indexed() {
		return sensorKey{r.Channel, r.Index}
	}
	return sensorKey{ch: r.Channel}
}

// inputValue is the value of one input of a per-input channel.
func inputValue(d plant.DeviceLive, k sensorKey) (float64, bool) {
	for _, r := range d.Readings {
		if r.Channel == k.ch && r.Index == k.index {
			return r.Value, true
		}
	}
	return 0, false
}

// lifetimeEnergy reads a plant's energy balance over its whole history
// from the store: Wh by field.
func lifetimeEnergy(ctx context.Context, e Energy, plantID string) (map[string]float64, error) {
	res, err := e.QuerySet(ctx, plant.SetQuery{PlantID: plantID, SetType: plant.SetEnergyBalance, Period: plant.PeriodTotal, WithTotal: true})
	if err != nil {
		return nil, err
	}
	if res.Total == nil {
		return map[string]float64{}, nil
	}
	return res.Total.Values, nil
}

// num formats a value known or not ("" when not).
func num(v *float64, decimals int) string {
	if v == nil {
		return ""
	}
	return fmtNum(*v, decimals)
}

// fmtNum formats v rounded to decimals, without trailing zeros.
func fmtNum(v float64, decimals int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	p := math.Pow10(decimals)
	r := math.Round(v*p) / p
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// snake writes a channel name ("activePowerPhaseA", "voltagePhaseA2B")
// as an entity key ("active_power_phase_a", "voltage_phase_a2b"): a
// capital after a digit starts no word.
func snake(name string) string {
	var b strings.Builder
	prevDigit := false
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 && !prevDigit {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		prevDigit = unicode.IsDigit(r)
		b.WriteRune(r)
	}
	return b.String()
}

// words writes a channel name as an entity name ("Active power phase A",
// "Voltage phase A2B", "PV generation").
func words(name string) string {
	ws := strings.Split(snake(name), "_")
	for i, w := range ws {
		switch {
		case w == "pv" || w == "dc" || w == "ac":
			ws[i] = strings.ToUpper(w)
		case i > 0 && ws[i-1] == "phase":
			ws[i] = strings.ToUpper(w)
		case i == 0:
			ws[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(ws, " ")
}
