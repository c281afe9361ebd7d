package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"plantd/config"
	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
	"plantd/sim"
	"plantd/sim/simtest"
)

// haKeys are the configuration variables Home Assistant documents for the
// MQTT platforms plantd's discovery uses, and the keys of their device
// map, from home-assistant.io's source/_integrations/<platform>.mqtt.markdown
// ({% configuration %} blocks; https://www.home-assistant.io/integrations/
// sensor.mqtt/, binary_sensor.mqtt/, switch.mqtt/, select.mqtt/,
// number.mqtt/), as published in 2025. A key outside its platform's list
// is not Home Assistant's schema.
var haKeys = map[string][]string{
	"sensor": {"availability", "availability_mode", "availability_template", "availability_topic", "device", "device_class",
		"enabled_by_default", "encoding", "entity_category", "entity_picture", "expire_after", "force_update", "icon",
		"json_attributes_template", "json_attributes_topic", "last_reset_value_template", "name", "object_id", "options",
		"payload_available", "payload_not_available", "platform", "suggested_display_precision", "qos", "state_class",
		"state_topic", "unique_id", "unit_of_measurement", "value_template"},
	"binary_sensor": {"availability", "availability_mode", "availability_template", "availability_topic", "device", "device_class",
		"enabled_by_default", "encoding", "entity_category", "entity_picture", "expire_after", "force_update", "icon",
		"json_attributes_template", "json_attributes_topic", "name", "object_id", "off_delay", "payload_available",
		"payload_not_available", "payload_off", "payload_on", "platform", "qos", "state_topic", "unique_id", "value_template"},
	"switch": {"availability", "availability_mode", "availability_template", "availability_topic", "command_template",
		"command_topic", "device", "device_class", "enabled_by_default", "encoding", "entity_category", "entity_picture", "icon",
		"json_attributes_template", "json_attributes_topic", "name", "object_id", "optimistic", "payload_available",
		"payload_not_available", "payload_off", "payload_on", "platform", "qos", "retain", "state_off", "state_on",
		"state_topic", "unique_id", "value_template"},
	"select": {"availability", "availability_topic", "availability_mode", "availability_template", "command_template",
		"command_topic", "device", "enabled_by_default", "encoding", "entity_category", "entity_picture", "icon",
		"json_attributes_template", "json_attributes_topic", "name", "object_id", "optimistic", "options", "platform", "qos",
		"retain", "state_topic", "unique_id", "value_template"},
	"number": {"availability", "availability_topic", "availability_mode", "command_template", "command_topic", "device",
		"device_class", "enabled_by_default", "encoding", "entity_category", "entity_picture", "icon",
		"json_attributes_template", "json_attributes_topic", "min", "max", "mode", "name", "object_id", "optimistic",
		"payload_reset", "platform", "qos", "retain", "state_topic", "step", "unique_id", "unit_of_measurement",
		"value_template"},
}

// haDeviceKeys are the keys of the device map (the same on every platform).
var haDeviceKeys = []string{"configuration_url", "connections", "hw_version", "identifiers", "manufacturer", "model",
	"model_id", "name", "serial_number", "suggested_area", "sw_version", "via_device"}

// haRequired are the keys every plantd entity carries, beyond its
// platform's own required ones (a command_topic for switch, select and
// number; options for select).
var haRequired = map[string][]string{
	"sensor":        {"unique_id", "state_topic", "availability_topic", "device", "name"},
	"binary_sensor": {"unique_id", "state_topic", "availability_topic", "device", "name"},
	"switch":        {"unique_id", "state_topic", "command_topic", "availability_topic", "device", "name"},
	"select":        {"unique_id", "state_topic", "command_topic", "options", "availability_topic", "device", "name"},
	"number":        {"unique_id", "state_topic", "command_topic", "availability_topic", "device", "name"},
}

// checkHAConfig checks one discovery payload against haKeys.
func checkHAConfig(component string, cfg map[string]any) []string {
	allowed, ok := haKeys[component]
	if !ok {
		return []string{"component " + component + " is not one plantd documents"}
	}
	var bad []string
	for k := range cfg {
		if !slices.Contains(allowed, k) {
			bad = append(bad, fmt.Sprintf("key %q is not a %s key", k, component))
		}
	}
	for _, k := range haRequired[component] {
		if _, ok := cfg[k]; !ok {
			bad = append(bad, "missing "+k)
		}
	}
	dev, _ := cfg["device"].(map[string]any)
	for k := range dev {
		if !slices.Contains(haDeviceKeys, k) {
			bad = append(bad, fmt.Sprintf("device key %q is not one of Home Assistant's", k))
		}
	}
	if ids, _ := dev["identifiers"].([]any); len(ids) == 0 {
		bad = append(bad, "device without identifiers")
	}
	return bad
}

// TestHAKeysCheck: the check refuses what Home Assistant does not document.
func TestHAKeysCheck(t *testing.T) {
	t.Parallel()
	good := map[string]any{"unique_id": "u", "name": "n", "state_topic": "s", "availability_topic": "a",
		"device": map[string]any{"identifiers": []any{"x"}, "name": "d"}}
	for _, tc := range []struct {
		name, component string
		cfg             map[string]any
		bad             bool
	}{
		{"a plain sensor", "sensor", good, false},
		{"min on a sensor", "sensor", with(good, "min", 0), true},
		{"state_class on a number", "number", with(with(good, "command_topic", "c"), "state_class", "measurement"), true},
		{"a number", "number", with(good, "command_topic", "c"), false},
		{"a select without options", "select", with(good, "command_topic", "c"), true},
		{"an unknown device key", "sensor", with(good, "device", map[string]any{"identifiers": []any{"x"}, "vendor": "v"}), true},
		{"a light", "light", good, true},
	} {
		if got := checkHAConfig(tc.component, tc.cfg); (len(got) > 0) != tc.bad {
			t.Errorf("%s: problems %v, want problems %v", tc.name, got, tc.bad)
		}
	}
}

func with(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{k: v}
	for kk, vv := range m {
		if kk != k {
			out[kk] = vv
		}
	}
	return out
}

// haMessage is a message a subscriber received; retained says whether a
// retained copy of the topic arrived (the broker's stored message at
// subscription), whatever came after it.
type haMessage struct {
	payload  string
	retained bool
}

// haSubscriber keeps the last message of every topic under its filters.
type haSubscriber struct {
	c    paho.Client
	mu   sync.Mutex
	last map[string]haMessage
	// seq holds every payload of each topic, in order.
	seq map[string][]string
}

func subscribeHA(t *testing.T, broker, id string, filters ...string) *haSubscriber {
	t.Helper()
	s := &haSubscriber{last: map[string]haMessage{}, seq: map[string][]string{}}
	s.c = paho.NewClient(paho.NewClientOptions().AddBroker(broker).SetClientID(id).SetCleanSession(true))
	if tok := s.c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscriber connect: %v", tok.Error())
	}
	t.Cleanup(func() { s.c.Disconnect(0) })
	// One SUBSCRIBE for every filter: the embedded broker (mochi v2.7.9)
	// refuses a SUBSCRIBE whose packet id equals one of its own QoS 1
	// publishes in flight to the client (the two id spaces are the
	// client's and the server's: mochi conflates them), which a second
	// SUBSCRIBE during the first's retained messages hits.
	qos := map[string]byte{}
	for _, f := range filters {
		qos[f] = 1
	}
	tok := s.c.SubscribeMultiple(qos, func(_ paho.Client, m paho.Message) {
		s.mu.Lock()
		s.last[m.Topic()] = haMessage{string(m.Payload()), m.Retained() || s.last[m.Topic()].retained}
		s.seq[m.Topic()] = append(s.seq[m.Topic()], string(m.Payload()))
		s.mu.Unlock()
	})
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe %v: %v", filters, tok.Error())
	}
	return s
}

// get returns the last message of a topic.
func (s *haSubscriber) get(topic string) (haMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.last[topic]
	return m, ok
}

// values returns every payload of a topic so far.
func (s *haSubscriber) values(topic string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seq[topic])
}

// configs returns the discovery configs received, by topic.
func (s *haSubscriber) configs() map[string]haMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]haMessage{}
	for k, v := range s.last {
		if strings.HasPrefix(k, "homeassistant/") && strings.HasSuffix(k, "/config") {
			out[k] = v
		}
	}
	return out
}

func (s *haSubscriber) publish(t *testing.T, topic, payload string) {
	t.Helper()
	if tok := s.c.Publish(topic, 1, false, payload); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publish %s: %v", topic, tok.Error())
	}
}

// TestHomeAssistant is the acceptance of Home Assistant over a LAN broker
// with the real binary, a real mosquitto and the simulator's plant with
// consumers: the discovery configs are retained, valid JSON with unique
// ids and only Home Assistant's documented keys, for every platform plantd
// uses; a set on the FeedInLimit number creates a window in GET
// schedules, made by "ha:<clientId>" with the configured role; a mode and
// a switch set from Home Assistant change the consumers' modes in
// /gateway/v1/consumers; kill -9 turns the availability to offline
// through the last will.
func TestHomeAssistant(t *testing.T) {
	t.Parallel() // its own simulator, broker and binary
	if testing.Short() {
		t.Skip("runs the daemon against a broker")
	}
	p := consumerSim(t)
	b := mqtttest.Start(t, mqtttest.Options{})
	cfgPath := consumerConfig(t, p)
	f, err := os.OpenFile(cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "gateway: {id: gw-ha}\nlocal:\n  mqtt: {broker: %s, interval: 10s}\n", b.URL())
	f.Close()
	d := startDaemon(t, cfgPath)
	d.waitAPI(20 * time.Second)
	d.waitOnline(20*time.Second, "inv1", "inv2", "meter")
	const base = "plantd/gw-ha/"

	// Every platform's configs arrive; a subscriber that comes later gets
	// them retained.
	live := subscribeHA(t, b.URL(), "ha-live", "homeassistant/#", base+"#")
	want := []string{
		"homeassistant/number/gw-ha/plant_p1__feed_in_limit/config",
		"homeassistant/sensor/gw-ha/plant_p1__pv_power/config",
		"homeassistant/sensor/gw-ha/plant_p1__pv_energy/config",
		"homeassistant/sensor/gw-ha/device_inv1__active_power/config",
		"homeassistant/sensor/gw-ha/device_inv1__pv_generation_total/config",
		"homeassistant/sensor/gw-ha/device_inv1__dc_power_input_a/config", // per input
		"homeassistant/sensor/gw-ha/device_inv1__health/config",
		"homeassistant/binary_sensor/gw-ha/device_inv1__problem/config",
		"homeassistant/select/gw-ha/device_heater__mode/config",
		"homeassistant/switch/gw-ha/device_plug__switch/config",
	}
	missing := func() []string {
		var out []string
		for _, topic := range want {
			if _, ok := live.get(topic); !ok {
				out = append(out, topic)
			}
		}
		return out
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(missing()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: no retained config at %v; have %v", missing(), slices.Sorted(maps.Keys(live.configs())))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// What was published before a new subscriber comes reaches it
	// retained.
	before := live.configs()
	late := subscribeHA(t, b.URL(), "ha-late", "homeassistant/#", base+"availability")
	proctest.WaitFor(t, "the retained configs at a new subscriber", 10*time.Second, func() bool {
		got := late.configs()
		for topic := range before {
			if !got[topic].retained {
				return false
			}
		}
		m, _ := late.get(base + "availability")
		return m.retained && m.payload == "online"
	})
	configs := late.configs()
	ids := map[string]string{}
	components := map[string]int{}
	for topic, m := range configs {
		var cfg map[string]any
		if err := json.Unmarshal([]byte(m.payload), &cfg); err != nil {
			t.Errorf("%s: not JSON: %v", topic, err)
			continue
		}
		component := strings.Split(topic, "/")[1]
		components[component]++
		for _, problem := range checkHAConfig(component, cfg) {
			t.Errorf("%s: %s", topic, problem)
		}
		id, _ := cfg["unique_id"].(string)
		if prev, ok := ids[id]; ok {
			t.Errorf("unique_id %q of %s and %s", id, topic, prev)
		}
		ids[id] = topic
		if cfg["availability_topic"] != base+"availability" {
			t.Errorf("%s: availability_topic %v", topic, cfg["availability_topic"])
		}
	}
	for _, c := range []string{"sensor", "binary_sensor", "switch", "select", "number"} {
		if components[c] == 0 {
			t.Errorf("no %s config among %d", c, len(configs))
		}
	}
	var energy map[string]any
	_ = json.Unmarshal([]byte(configs["homeassistant/sensor/gw-ha/plant_p1__pv_energy/config"].payload), &energy)
	if energy["device_class"] != "energy" || energy["state_class"] != "total_increasing" || energy["unit_of_measurement"] != "kWh" {
		t.Errorf("pv_energy config %v: want an energy sensor for the Energy dashboard", energy)
	}
	t.Logf("%d discovery configs: %v", len(configs), components)
	if m, _ := live.get(base + "availability"); m.payload != "online" {
		t.Errorf("availability %+v, want online", m)
	}
	proctest.WaitFor(t, "a live PV power state", 10*time.Second, func() bool {
		m, ok := live.get(base + "plant/p1/pv_power")
		return ok && m.payload != "" && m.payload != "0"
	})

	// FeedInLimit from Home Assistant: a window in GET schedules by
	// ha:<clientId> with the installer role, and the number's state.
	setAt := time.Now()
	live.publish(t, base+"plant/p1/feed_in_limit/set", "40")
	proctest.WaitFor(t, "the FeedInLimit window in GET schedules", 20*time.Second, func() bool {
		code, body := d.request("GET", "/gridcontrol/v1/plants/p1/schedules", tokInst, "")
		if code != 200 {
			return false
		}
		var out struct {
			Schedules []struct {
				CreatedBy string `json:"createdBy"`
				Commands  []struct {
					Command string   `json:"command"`
					Value   *float64 `json:"value"`
				} `json:"commands"`
			} `json:"schedules"`
		}
		if json.Unmarshal(body, &out) != nil {
			return false
		}
		for _, s := range out.Schedules {
			for _, c := range s.Commands {
				if c.Command == "FeedInLimit" && c.Value != nil && *c.Value == 40 && s.CreatedBy == "ha:gw-ha-ha (installer)" {
					return true
				}
			}
		}
		return false
	})
	windowAfter := time.Since(setAt)
	proctest.WaitFor(t, "the feed-in limit state 40", 20*time.Second, func() bool {
		m, _ := live.get(base + "plant/p1/feed_in_limit")
		return m.payload == "40"
	})
	t.Logf("FeedInLimit set: window in GET schedules after %v, the number's state 40 after %v",
		windowAfter.Round(time.Millisecond), time.Since(setAt).Round(time.Millisecond))

	// A limit given in W (the installer's over HTTP, newer than Home
	// Assistant's: it governs) shows in % of the inverters' rating
	// (10 + 8 kW).
	if code, b := d.request("POST", "/gridcontrol/v1/plants/p1/schedules", tokInst,
		`{"commands":[{"command":"FeedInLimit","start":"+0s","end":"+1h","value":3600,"unit":"W"}]}`); code != 201 {
		t.Fatalf("POST a FeedInLimit in W: %d %s", code, b)
	}
	proctest.WaitFor(t, "the feed-in limit state 20 (3600 W of 18 kW)", 20*time.Second, func() bool {
		m, _ := live.get(base + "plant/p1/feed_in_limit")
		return m.payload == "20"
	})

	// Consumer modes from Home Assistant: the select and the switch.
	modeAt := time.Now()
	live.publish(t, base+"device/heater/mode/set", "Off")
	live.publish(t, base+"device/plug/switch/set", "ON")
	proctest.WaitFor(t, "heater Off and plug On in /gateway/v1/consumers", 20*time.Second, func() bool {
		code, body := d.request("GET", "/gateway/v1/consumers", tokStd, "")
		if code != 200 {
			return false
		}
		var out struct {
			Consumers []struct {
				DeviceID string `json:"deviceId"`
				Mode     string `json:"mode"`
			} `json:"consumers"`
		}
		if json.Unmarshal(body, &out) != nil {
			return false
		}
		modes := map[string]string{}
		for _, c := range out.Consumers {
			modes[c.DeviceID] = c.Mode
		}
		return modes["heater"] == "Off" && modes["plug"] == "On"
	})
	proctest.WaitFor(t, "the heater's mode state Off", 10*time.Second, func() bool {
		m, _ := live.get(base + "device/heater/mode")
		return m.payload == "Off"
	})
	t.Logf("consumer modes set: in /gateway/v1/consumers and the mode state after %v", time.Since(modeAt).Round(time.Millisecond))
	// A command the API refuses (an unknown mode) changes nothing and is
	// logged.
	live.publish(t, base+"device/heater/mode/set", "Turbo")
	d.WaitLog(regexp.MustCompile(`home assistant: command refused.*Turbo`), 10*time.Second)

	// kill -9: the broker publishes the last will.
	killAt := time.Now()
	d.Kill()
	proctest.WaitFor(t, "availability offline after kill -9", 30*time.Second, func() bool {
		m, _ := live.get(base + "availability")
		return m.payload == "offline"
	})
	t.Logf("kill -9: availability offline (last will) after %v", time.Since(killAt).Round(time.Millisecond))
}

// haBannerRE matches the demo's banner line of the Home Assistant link.
var haBannerRE = regexp.MustCompile(`Home Assistant: MQTT discovery on (tcp://\S+) under homeassistant/, states under (plantd/\S+/) `)

// TestHomeAssistantDemo: plantd demo publishes the discovery to its
// embedded broker, and the plant's lifetime energy sensors, read from the
// store's rollups, only grow (what Home Assistant's Energy dashboard
// needs of total_increasing), at 1800x so that rollups close every
// 0.17 s. The wait is simulated time (three values of the feed-in energy
// need the morning's PV above the house): at 600x it took 24 s under
// -race, at 1800x 6 s; the property (no value falls) does not depend on
// the speed. The demo's 250 ms polls are 7.5 simulated minutes apart
// then (it warns above 5), within the 15 minutes over which the store
// spreads an energy between samples.
func TestHomeAssistantDemo(t *testing.T) {
	t.Parallel() // its own demo, ports and files
	if testing.Short() {
		t.Skip("runs plantd demo")
	}
	db := filepath.Join(t.TempDir(), "demo.db")
	// A June morning whatever today is: on a December day the PV never
	// exceeds the house and its consumers, so no feed-in energy grows.
	d := proctest.Start(t, exec.Command(binPath, "demo", "--interval", "250ms", "--speed", "1800", "--start", "2026-06-21T08:00",
		"--listen", "127.0.0.1:0", "--mqtt", "127.0.0.1:0", "--db", db))
	var m []string
	proctest.WaitFor(t, "the banner's Home Assistant line", 20*time.Second, func() bool {
		m = haBannerRE.FindStringSubmatch(d.Stdout.String())
		return m != nil
	})
	broker, base := m[1], m[2]
	sub := subscribeHA(t, broker, "ha-demo", "homeassistant/#", base+"#")
	energy := []string{base + "plant/demo/pv_energy", base + "plant/demo/grid_feed_in_energy", base + "plant/demo/consumption_energy"}
	// Three values of each (the feed-in stays at 0 until the morning's
	// PV exceeds the house); the backstop is generous for loaded runs,
	// where one took more than a minute for five.
	short := func(topic string) bool { return len(sub.values(topic)) < 3 }
	for deadline := time.Now().Add(2 * time.Minute); slices.ContainsFunc(energy, short); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			for _, topic := range energy {
				t.Logf("%s: %v", topic, sub.values(topic))
			}
			t.Fatalf("after 2m0s: still not three values of each lifetime energy; the demo's last lines:\n%s", d.Tail(20))
		}
	}
	for _, topic := range energy {
		vs := sub.values(topic)
		prev := -1.0
		for _, v := range vs {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %q is not a number", topic, v)
			}
			if f < prev {
				t.Errorf("%s fell from %v to %v: %v", topic, prev, f, vs)
			}
			prev = f
		}
		t.Logf("%s: %v", topic, vs)
	}
	if n := len(sub.values(energy[0])); sub.values(energy[0])[0] == sub.values(energy[0])[n-1] {
		t.Errorf("PV energy did not grow over a simulated morning: %v", sub.values(energy[0]))
	}
	if _, ok := sub.get("homeassistant/switch/" + strings.TrimSuffix(strings.TrimPrefix(base, "plantd/"), "/") + "/device_heater__switch/config"); !ok {
		t.Errorf("no switch config of the demo's heater")
	}
}

// TestHomeAssistantReadOnly: with role standard every command from Home
// Assistant is refused by the role check (the API's, logged), no schedule
// is made, and the number's state is published again unchanged; a
// command left retained on the broker is ignored; a clean stop publishes
// offline.
func TestHomeAssistantReadOnly(t *testing.T) {
	t.Parallel() // its own simulator, broker and binary
	if testing.Short() {
		t.Skip("runs the daemon against a broker")
	}
	p := simtest.Start(t, sim.DefaultConfig())
	b := mqtttest.Start(t, mqtttest.Options{})
	var devs strings.Builder
	for _, id := range []string{"inv1", "meter"} {
		host, port, _ := net.SplitHostPort(p.Device(id).Addr())
		fmt.Fprintf(&devs, "  - {id: %s, host: %s, port: %s, pollInterval: 500ms}\n", id, host, port)
	}
	const base = "plantd/gw-ro/"
	sub := subscribeHA(t, b.URL(), "ha-ro", base+"#")
	// A command left retained on the broker is not applied at connect.
	if tok := sub.c.Publish(base+"plant/p1/feed_in_limit/set", 1, true, "10"); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publish: %v", tok.Error())
	}
	dir := t.TempDir()
	d := startDaemonConfig(t, fmt.Sprintf(`gateway: {id: gw-ro}
http: {listen: 127.0.0.1:0}
database: {path: %s}
plants:
  - {id: p1, name: RO, timezone: Europe/Berlin}
devices:
%stokens:
  - {name: inst, sha256: %s, role: installer}
local:
  mqtt: {broker: %s, role: standard}
`, filepath.Join(dir, "plantd.db"), devs.String(), config.TokenHash(tokInst), b.URL()))
	d.waitAPI(20 * time.Second)
	d.waitOnline(20*time.Second, "inv1", "meter")
	// Looked for from the first line: the broker may hand the retained
	// command over before the devices' online lines waitOnline passed.
	ignored := regexp.MustCompile(`home assistant: retained command ignored`)
	d.WaitLines("the retained command ignored", 20*time.Second, func(lines []string) bool {
		return slices.ContainsFunc(lines, ignored.MatchString)
	})
	proctest.WaitFor(t, "the feed-in limit state", 20*time.Second, func() bool { return len(sub.values(base+"plant/p1/feed_in_limit")) > 0 })
	before := len(sub.values(base + "plant/p1/feed_in_limit"))
	sub.publish(t, base+"plant/p1/feed_in_limit/set", "30")
	d.WaitLog(regexp.MustCompile(`home assistant: command refused.* reason=role problem="role installer required, Home Assistant's is standard`), 20*time.Second)
	proctest.WaitFor(t, "the number's state again", 10*time.Second, func() bool { return len(sub.values(base+"plant/p1/feed_in_limit")) > before })
	if vs := sub.values(base + "plant/p1/feed_in_limit"); vs[len(vs)-1] != "100" {
		t.Errorf("feed-in limit state %v after a refused set, want 100", vs)
	}
	code, body := d.request("GET", "/gridcontrol/v1/plants/p1/schedules", tokInst, "")
	if code != 200 || strings.Contains(string(body), "FeedInLimit") {
		t.Errorf("GET schedules after a refused set: %d %s", code, body)
	}
	// A clean stop says offline itself.
	d.stop()
	proctest.WaitFor(t, "availability offline after SIGTERM", 10*time.Second, func() bool {
		m, _ := sub.get(base + "availability")
		return m.payload == "offline"
	})
}
