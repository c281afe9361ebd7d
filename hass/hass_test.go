package hass

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
	"plantd/plant"
	"plantd/plant/kind"
)

// syncBuffer is a log sink the test reads while the link writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lines returns the lines that contain sub.
func (s *syncBuffer) lines(sub string) []string {
	var out []string
	for _, line := range strings.Split(s.String(), "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return out
}

func (s *syncBuffer) count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), sub)
}

// newTestLink is a link of a plant without devices (its plant entities
// only) to broker, without grid control or consumers: every command it
// takes is refused (an unknown target).
func newTestLink(t *testing.T, broker, user, password string, logs *syncBuffer) *Link {
	t.Helper()
	live := plant.NewLive([]plant.Plant{{ID: "p1", Name: "Test", Location: time.UTC}}, nil, nil)
	l, err := New(Config{Broker: broker, Username: user, Password: password, ClientID: "gw-ha", GatewayID: "gw",
		Prefix: "plantd", DiscoveryPrefix: "homeassistant", Check: 100 * time.Millisecond},
		Deps{Live: live}, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// watch subscribes to topic and returns the payloads received, in order.
// watchers numbers the watch clients.
var watchers atomic.Int64

func watch(t *testing.T, broker, topic string) func() []string {
	t.Helper()
	var mu sync.Mutex
	var got []string
	// A client id of its own: two watchers of one id would take the
	// session from each other at every reconnect (once, in a loaded run,
	// long enough to miss the retained offline).
	id := fmt.Sprintf("watcher-%d", watchers.Add(1))
	o := paho.NewClientOptions().AddBroker(broker).SetClientID(id).SetUsername("watcher").SetPassword("pw-w").
		SetAutoReconnect(true).SetConnectRetry(true).SetConnectRetryInterval(100 * time.Millisecond).
		SetOnConnectHandler(func(c paho.Client) {
			c.Subscribe(topic, 1, func(_ paho.Client, m paho.Message) {
				mu.Lock()
				got = append(got, string(m.Payload()))
				mu.Unlock()
			})
		})
	c := paho.NewClient(o)
	c.Connect()
	t.Cleanup(func() { c.Disconnect(0) })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// start runs the link until the returned stop, which cancels it and
// wants Run to return nil within 10 s.
func start(t *testing.T, l *Link) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
	}
}

// TestLinkBrokerComesLate: a link started while its broker is down
// connects once it is up (with username and password), says online,
// publishes its configs; after a broker restart it connects again and
// publishes everything again; a stop says offline.
func TestLinkBrokerComesLate(t *testing.T) {
	t.Parallel()
	b := mqtttest.Start(t, mqtttest.Options{Users: map[string]string{"plantd": "pw-p", "watcher": "pw-w"}})
	b.Stop()
	logs := &syncBuffer{}
	l := newTestLink(t, b.URL(), "plantd", "pw-p", logs)
	stop := start(t, l)

	b.Start()
	avail := watch(t, b.URL(), "plantd/gw/availability")
	configs := watch(t, b.URL(), "homeassistant/sensor/gw/plant_p1__pv_power/config")
	proctest.WaitFor(t, "online and the PV power config", 20*time.Second, func() bool {
		a := avail()
		return len(a) > 0 && a[len(a)-1] == "online" && len(configs()) > 0
	})
	if c := configs(); !strings.Contains(c[0], `"unique_id":"plantd_gw_plant_p1__pv_power"`) || !strings.Contains(c[0], `"device_class":"power"`) {
		t.Errorf("PV power config %s", c[0])
	}

	// A broker restart: the link connects again and publishes again.
	n := len(configs())
	b.Stop()
	b.Start()
	proctest.WaitFor(t, "a second connection", 30*time.Second, func() bool { return logs.count("home assistant broker connected") >= 2 })
	proctest.WaitFor(t, "the config published again", 20*time.Second, func() bool { return len(configs()) > n })

	stop()
	proctest.WaitFor(t, "offline after the stop", 10*time.Second, func() bool {
		a := avail()
		return len(a) > 0 && a[len(a)-1] == "offline"
	})
}

// TestLinkStopsWithoutBroker: a link that never reached its broker (paho
// retrying in the background) stops when its context ends.
func TestLinkStopsWithoutBroker(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	l := newTestLink(t, "tcp://"+proctest.DeadAddr(t), "", "", logs)
	stop := start(t, l)
	stop()
}

// TestLinkClearsLeftConfigs: at connection the link clears the discovery
// configs a previous run left of a device no longer configured (Home
// Assistant removes their entities), and keeps those of a configured
// device it has not published yet (not answered since the start), its
// plant's and another gateway's.
func TestLinkClearsLeftConfigs(t *testing.T) {
	t.Parallel()
	b := mqtttest.Start(t, mqtttest.Options{Users: map[string]string{"plantd": "pw-p", "watcher": "pw-w"}})
	gone := []string{"homeassistant/sensor/gw/device_old__active_power/config", "homeassistant/binary_sensor/gw/device_old__problem/config"}
	kept := []string{"homeassistant/sensor/gw/device_inv_5f1__active_power/config", // inv_1, configured
		"homeassistant/sensor/gw/plant_p1__pv_power/config", "homeassistant/sensor/gw2/device_old__active_power/config"}
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("left").SetUsername("watcher").SetPassword("pw-w"))
	if tok := pub.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	for _, topic := range append(slices.Clone(gone), kept...) {
		if tok := pub.Publish(topic, 1, true, `{"name":"left"}`); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("publish %s: %v", topic, tok.Error())
		}
	}
	pub.Disconnect(0)

	var mu sync.Mutex
	cleared := map[string]bool{}
	w := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("cleared").SetUsername("watcher").SetPassword("pw-w"))
	if tok := w.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	defer w.Disconnect(0)
	if tok := w.Subscribe("homeassistant/#", 1, func(_ paho.Client, m paho.Message) {
		if len(m.Payload()) == 0 {
			mu.Lock()
			cleared[m.Topic()] = true
			mu.Unlock()
		}
	}); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}

	live := plant.NewLive([]plant.Plant{{ID: "p1", Name: "Test", Location: time.UTC}},
		[]plant.DeviceInfo{{ID: "inv_1", PlantID: "p1", Name: "Inverter", Kind: kind.Inverter}}, nil)
	logs := &syncBuffer{}
	l, err := New(Config{Broker: b.URL(), Username: "plantd", Password: "pw-p", ClientID: "gw-ha", GatewayID: "gw",
		Prefix: "plantd", DiscoveryPrefix: "homeassistant"},
		Deps{Live: live}, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, l)
	proctest.WaitFor(t, "the configs of the device no longer configured cleared", 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return cleared[gone[0]] && cleared[gone[1]]
	})
	stop()
	mu.Lock()
	defer mu.Unlock()
	for _, topic := range kept {
		if cleared[topic] {
			t.Errorf("%s cleared, want it kept", topic)
		}
	}
	// One line per device at once; its other configs counted in one
	// line at the stop (internal/logthrottle).
	lines := logs.lines("no longer configured")
	if len(lines) != 2 || strings.Contains(lines[0], "suppressed") || !strings.Contains(lines[1], "object=device_old reason=left-config suppressed=1") {
		t.Errorf("log lines of the cleared device: %q, want one at once and one count at the stop", lines)
	}
}

// TestCommandFlood, over a broker: a 20 MB publish to the FeedInLimit
// command topic is refused before it is parsed, in exactly one log line
// that quotes at most 64 bytes of it with its size; 5,000 bad publishes
// give a handful of lines (the first per reason, the rest counted), not
// 5,000; the link still takes a good command after them.
func TestCommandFlood(t *testing.T) {
	t.Parallel()
	b := mqtttest.Start(t, mqtttest.Options{})
	g := &fakeGrid{}
	live := plant.NewLive([]plant.Plant{{ID: "p1", Name: "Test", Location: time.UTC}}, nil, nil)
	logs := &syncBuffer{}
	l, err := New(Config{Broker: b.URL(), ClientID: "gw-ha", GatewayID: "gw", Prefix: "plantd", DiscoveryPrefix: "homeassistant"},
		Deps{Live: live, Grid: g}, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	avail := watch(t, b.URL(), "plantd/gw/availability")
	stop := start(t, l)
	defer stop()
	proctest.WaitFor(t, "online", 20*time.Second, func() bool {
		a := avail()
		return len(a) > 0 && a[len(a)-1] == "online"
	})
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("stranger"))
	if tok := pub.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	defer pub.Disconnect(0)
	const topic = "plantd/gw/plant/p1/feed_in_limit/set"

	big := bytes.Repeat([]byte("1"), 20<<20)
	if tok := pub.Publish(topic, 1, false, big); !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
		t.Fatalf("publish 20 MB: %v", tok.Error())
	}
	proctest.WaitFor(t, "the 20 MB payload refused", 30*time.Second, func() bool { return l.refused.Events() == 1 })
	lines := logs.lines("home assistant:")
	if len(lines) != 1 || !strings.Contains(lines[0], "reason=too-large") || !strings.Contains(lines[0], fmt.Sprintf("size=%d", 20<<20)) ||
		!strings.Contains(lines[0], "payload="+strings.Repeat("1", 64)+"…") || len(lines[0]) > 512 {
		t.Fatalf("log after a 20 MB publish: %q, want one line of at most 512 bytes with 64 bytes of the payload and its size", lines)
	}
	t.Logf("the 20 MB publish: one line of %d bytes: %s", len(lines[0]), lines[0])
	if len(g.calls) != 0 {
		t.Fatalf("submitted %v after a 20 MB payload", g.calls)
	}

	const n = 5000
	toks := make([]paho.Token, 0, n)
	for i := range n {
		toks = append(toks, pub.Publish(topic, 1, false, fmt.Sprintf("not a number %d", i)))
	}
	for _, tok := range toks {
		if !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
			t.Fatalf("publish: %v", tok.Error())
		}
	}
	proctest.WaitFor(t, "5,000 bad commands refused", 60*time.Second, func() bool { return l.refused.Events() == 1+n })
	refusedLines := logs.lines("home assistant: command")
	if len(refusedLines) > 5 {
		t.Errorf("%d log lines for %d bad publishes, want at most 5: %q", len(refusedLines), n, refusedLines)
	}
	t.Logf("%d bad publishes: %d log lines: %q", n, len(refusedLines)-1, refusedLines[1:])

	// The link still takes a good command once the rate limit lets it
	// (the flood used its burst).
	proctest.WaitFor(t, "a good command taken after the flood", 20*time.Second, func() bool {
		if tok := pub.Publish(topic, 1, false, "40"); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			return false
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.calls) > 0
	})
}

// TestCommandFloodManyTopics, over a broker: 5,000 publishes, each to a
// topic of its own (device/<i>/switch/set, an id per publish), give a
// handful of lines: the refusals are counted per kind of command and
// reason, not per topic (MQTT names no publisher, and ids are whatever a
// publisher makes up).
func TestCommandFloodManyTopics(t *testing.T) {
	t.Parallel()
	b := mqtttest.Start(t, mqtttest.Options{})
	logs := &syncBuffer{}
	l := newTestLink(t, b.URL(), "", "", logs)
	avail := watch(t, b.URL(), "plantd/gw/availability")
	stop := start(t, l)
	defer stop()
	proctest.WaitFor(t, "online", 20*time.Second, func() bool {
		a := avail()
		return len(a) > 0 && a[len(a)-1] == "online"
	})
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("stranger"))
	if tok := pub.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	defer pub.Disconnect(0)
	const n = 5000
	toks := make([]paho.Token, 0, n)
	for i := range n {
		toks = append(toks, pub.Publish(fmt.Sprintf("plantd/gw/device/d%d/switch/set", i), 1, false, "ON"))
	}
	for _, tok := range toks {
		if !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
			t.Fatalf("publish: %v", tok.Error())
		}
	}
	proctest.WaitFor(t, "5,000 commands refused", 60*time.Second, func() bool { return l.refused.Events() == n })
	lines := logs.lines("home assistant: command")
	if len(lines) > 5 {
		t.Errorf("%d log lines for %d publishes to distinct topics, want at most 5: %q", len(lines), n, lines[:min(len(lines), 10)])
	}
	t.Logf("%d publishes to distinct topics: %d log lines: %q", n, len(lines), lines)
}

// TestLeftConfigFlood: 1,000 retained configs under the gateway's node,
// each of an object of its own (anyone the broker lets publish there can
// leave them), are cleared with at most maxLeftLogged lines, one for
// the rest and its count at the stop.
func TestLeftConfigFlood(t *testing.T) {
	t.Parallel()
	b := mqtttest.Start(t, mqtttest.Options{})
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("left"))
	if tok := pub.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	const n = 1000
	for i := range n {
		if tok := pub.Publish(fmt.Sprintf("homeassistant/sensor/gw/device_x%d__p/config", i), 1, true, `{}`); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("publish: %v", tok.Error())
		}
	}
	pub.Disconnect(0)
	logs := &syncBuffer{}
	l := newTestLink(t, b.URL(), "", "", logs)
	stop := start(t, l)
	proctest.WaitFor(t, "1,000 left configs seen", 30*time.Second, func() bool { return l.left.Events() == n })
	stop()
	if got := len(logs.lines("no longer configured")); got > maxLeftLogged+2 {
		t.Errorf("%d lines for %d left configs, want at most %d", got, n, maxLeftLogged+2)
	}
}
