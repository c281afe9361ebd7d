package hass

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"plantd/gridcontrol"
	"plantd/plant"
)

// fakeGrid records the orders submitted and answers err (or a schedule
// created by the origin).
type fakeGrid struct {
	mu        sync.Mutex
	calls     []submitted
	cancelled []string // "plant schedule by"
	err       error
}

type submitted struct {
	plantID string
	by      gridcontrol.Origin
	orders  []gridcontrol.Order
}

func (g *fakeGrid) Submit(_ context.Context, plantID string, by gridcontrol.Origin, orders []gridcontrol.Order, _ ...gridcontrol.SubmitOption) (gridcontrol.Schedule, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, submitted{plantID, by, orders})
	if g.err != nil {
		return gridcontrol.Schedule{}, g.err
	}
	return gridcontrol.Schedule{ScheduleID: fmt.Sprintf("s%d", len(g.calls)), PlantID: plantID, CreatedBy: by.String()}, nil
}

func (g *fakeGrid) Cancel(_ context.Context, plantID, scheduleID string, by gridcontrol.Origin) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cancelled = append(g.cancelled, plantID+" "+scheduleID+" "+by.String())
	return nil
}

// TestFeedInLimitReplaces: a new FeedInLimit value's window ends the one
// the last value made, as Home Assistant's origin; the first ends none.
func TestFeedInLimitReplaces(t *testing.T) {
	t.Parallel()
	l, g, _ := commandLink(t, Config{}, &syncBuffer{})
	for _, v := range []string{"40", "60", "50"} {
		l.handle(t.Context(), cmd(scopePlant, "p1", keyFeedInLimit, v))
	}
	want := []string{"p1 s1 ha:gw-ha (installer)", "p1 s2 ha:gw-ha (installer)"}
	if len(g.calls) != 3 || !slices.Equal(g.cancelled, want) {
		t.Errorf("%d submitted, cancelled %q; want 3, %q", len(g.calls), g.cancelled, want)
	}
}

// fakeConsumers are the consumers heater and plug.
type fakeConsumers struct {
	mu  sync.Mutex
	set []string // "id mode by"
}

func (c *fakeConsumers) Consumers() []plant.ConsumerStatus {
	return []plant.ConsumerStatus{{DeviceID: "heater", PlantID: "p1"}, {DeviceID: "plug", PlantID: "p1"}}
}

func (c *fakeConsumers) SetMode(_ context.Context, id string, mode plant.ConsumerMode, by string) (plant.ConsumerStatus, error) {
	if id != "heater" && id != "plug" {
		return plant.ConsumerStatus{}, fmt.Errorf("consumer %q: %w", id, plant.ErrUnknownDevice)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set = append(c.set, id+" "+string(mode)+" "+by)
	return plant.ConsumerStatus{DeviceID: id, Mode: mode}, nil
}

// commandLink is a link of plant p1 with grid control and consumers
// faked, not connected: the tests call handle.
func commandLink(t *testing.T, cfg Config, logs *syncBuffer) (*Link, *fakeGrid, *fakeConsumers) {
	t.Helper()
	g, cs := &fakeGrid{}, &fakeConsumers{}
	live := plant.NewLive([]plant.Plant{{ID: "p1", Name: "Test", Location: time.UTC}}, nil, nil)
	cfg.Broker, cfg.ClientID, cfg.GatewayID, cfg.Prefix, cfg.DiscoveryPrefix = "tcp://127.0.0.1:1", "gw-ha", "gw", "plantd", "homeassistant"
	l, err := New(cfg, Deps{Live: live, Grid: g, Consumers: cs}, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return l, g, cs
}

func cmd(scope, id, key, payload string) command {
	return command{topic: "plantd/gw/" + scope + "/" + id + "/" + key + "/set", scope: scope, id: id, key: key, payload: []byte(payload)}
}

// TestCommands: each command goes to grid control or the consumers
// directly, as Home Assistant's origin: a FeedInLimit value is one
// FeedInLimit order from now for LimitWindow in %, from Origin{ha,
// <clientId>, installer, channel ha:<clientId>}; a mode or a switch is
// SetMode by "ha:<clientId>". A bad value, an unknown plant or consumer,
// a key without a command are refused with the reason and nothing is
// called.
func TestCommands(t *testing.T) {
	t.Parallel()
	v := func(f float64) *float64 { return &f }
	for _, tc := range []struct {
		cmd    command
		order  *gridcontrol.Order
		set    string
		reason string
	}{
		{cmd: cmd(scopePlant, "p1", keyFeedInLimit, "40"), order: &gridcontrol.Order{Command: "FeedInLimit", For: 24 * time.Hour, Value: v(40), Unit: "%"}},
		{cmd: cmd(scopePlant, "p1", keyFeedInLimit, " 12.5\n"), order: &gridcontrol.Order{Command: "FeedInLimit", For: 24 * time.Hour, Value: v(12.5), Unit: "%"}},
		{cmd: cmd(scopePlant, "p1", keyFeedInLimit, "much"), reason: reasonValue},
		{cmd: cmd(scopePlant, "p9", keyFeedInLimit, "40"), reason: reasonTarget},
		{cmd: cmd(scopeDevice, "heater", keyMode, "off"), set: "heater Off ha:gw-ha"},
		{cmd: cmd(scopeDevice, "heater", keyMode, "Turbo"), reason: reasonValue},
		{cmd: cmd(scopeDevice, "heater", keyMode, "Plan"), reason: reasonValue}, // set only over the API, with its target
		{cmd: cmd(scopeDevice, "plug", keySwitch, "ON"), set: "plug On ha:gw-ha"},
		{cmd: cmd(scopeDevice, "plug", keySwitch, "OFF"), set: "plug Off ha:gw-ha"},
		{cmd: cmd(scopeDevice, "plug", keySwitch, "toggle"), reason: reasonValue},
		{cmd: cmd(scopeDevice, "boiler", keyMode, "On"), reason: reasonTarget},
		{cmd: cmd(scopeDevice, "inv1", "active_power", "5"), reason: reasonTarget},
		{cmd: cmd(scopePlant, "p1", keyMode, "On"), reason: reasonTarget},
	} {
		logs := &syncBuffer{}
		l, g, cs := commandLink(t, Config{}, logs)
		l.handle(t.Context(), tc.cmd)
		name := fmt.Sprintf("%s %q", tc.cmd.topic, tc.cmd.payload)
		switch {
		case tc.order != nil:
			want := gridcontrol.Origin{Door: gridcontrol.DoorHomeAssistant, Name: "gw-ha", Role: "installer", Channel: "ha:gw-ha"}
			if len(g.calls) != 1 || g.calls[0].plantID != "p1" || g.calls[0].by != want || len(g.calls[0].orders) != 1 {
				t.Errorf("%s: submitted %+v, want one order of plant p1 from %+v", name, g.calls, want)
				continue
			}
			o := g.calls[0].orders[0]
			if o.Command != tc.order.Command || o.For != tc.order.For || o.Unit != tc.order.Unit || o.Value == nil || *o.Value != *tc.order.Value || !o.Start.IsZero() {
				t.Errorf("%s: order %+v, want %+v", name, o, *tc.order)
			}
			if logs.count("command accepted") != 1 || logs.count(`createdBy="ha:gw-ha (installer)"`) != 1 {
				t.Errorf("%s: log %s, want the acceptance with createdBy", name, logs.String())
			}
		case tc.set != "":
			if !slices.Equal(cs.set, []string{tc.set}) || len(g.calls) > 0 {
				t.Errorf("%s: set %v, submitted %v, want %q", name, cs.set, g.calls, tc.set)
			}
		default:
			if len(g.calls)+len(cs.set) > 0 {
				t.Errorf("%s: submitted %v, set %v, want a refusal", name, g.calls, cs.set)
			}
			if logs.count("command refused") != 1 || logs.count("reason="+tc.reason) != 1 {
				t.Errorf("%s: log %s, want one refusal for %s", name, logs.String(), tc.reason)
			}
		}
	}
}

// TestCommandRefusals: grid control's refusals are logged with every
// field as the API's problem did (a value, the eligibility check with its
// reason code); role standard refuses every command before it reaches
// anything (the API's installer check of POST schedules and PUT consumer
// mode); the rate limit (the API's per credential) refuses beyond its
// burst.
func TestCommandRefusals(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	l, g, _ := commandLink(t, Config{}, logs)
	g.err = &gridcontrol.ValidationError{Fields: []gridcontrol.FieldError{{Field: "commands[0].value", Message: "150 % outside 0..100"}}}
	l.handle(t.Context(), cmd(scopePlant, "p1", keyFeedInLimit, "150"))
	if logs.count(`reason=invalid problem="invalid schedule; commands[0].value: 150 % outside 0..100"`) != 1 {
		t.Errorf("log %s, want the invalid value with its field", logs.String())
	}
	g.err = &gridcontrol.ValidationError{NotEligible: true, Fields: []gridcontrol.FieldError{{Field: "commands[0].command", Message: "FeedInLimit: no grid meter", Code: "NoGridMeter"}}}
	l.handle(t.Context(), cmd(scopePlant, "p1", keyFeedInLimit, "50"))
	if logs.count(`reason=not-eligible problem="the plant's devices cannot carry every command; commands[0].command: FeedInLimit: no grid meter (NoGridMeter)"`) != 1 {
		t.Errorf("log %s, want the eligibility refusal with its field and code", logs.String())
	}

	logs = &syncBuffer{}
	l, g, cs := commandLink(t, Config{Role: "standard"}, logs)
	l.handle(t.Context(), cmd(scopePlant, "p1", keyFeedInLimit, "50"))
	l.handle(t.Context(), cmd(scopeDevice, "heater", keyMode, "On"))
	if len(g.calls)+len(cs.set) > 0 || logs.count(`reason=role problem="role installer required, Home Assistant's is standard`) != 2 {
		t.Errorf("role standard: submitted %v, set %v, log %s: want two refusals of the role", g.calls, cs.set, logs.String())
	}

	logs = &syncBuffer{}
	l, _, cs = commandLink(t, Config{CommandRate: 0.001, CommandBurst: 3}, logs)
	for range 5 {
		l.handle(t.Context(), cmd(scopeDevice, "heater", keyMode, "On"))
	}
	if len(cs.set) != 3 || logs.count("reason=rate-limited") != 1 {
		t.Errorf("burst 3: %d set, log %s: want 3 and one line of the rate limit (the second held back)", len(cs.set), logs.String())
	}
	// The one held back is logged with its count when the limiter
	// flushes (Run's end), under the topic.
	l.refused.FlushAll()
	if logs.count(`command=plantd/gw/device/+/mode/set reason=rate-limited suppressed=1`) != 1 {
		t.Errorf("after the flush: log %s, want one line of the topic with suppressed=1", logs.String())
	}
}

// TestGridOperatorNeedsCredentials: New refuses role gridoperator without
// the broker connection's username and password; with them the commands
// act as gridoperator.
func TestGridOperatorNeedsCredentials(t *testing.T) {
	t.Parallel()
	live := plant.NewLive([]plant.Plant{{ID: "p1", Name: "Test", Location: time.UTC}}, nil, nil)
	base := Config{Broker: "tcp://127.0.0.1:1", ClientID: "gw-ha", GatewayID: "gw", Prefix: "plantd", DiscoveryPrefix: "homeassistant", Role: "gridoperator"}
	for _, creds := range [][2]string{{"", ""}, {"plantd", ""}, {"", "pw"}} {
		c := base
		c.Username, c.Password = creds[0], creds[1]
		if _, err := New(c, Deps{Live: live}, nil); err == nil || !strings.Contains(err.Error(), "role gridoperator needs the broker connection's credentials") {
			t.Errorf("gridoperator with %q: %v, want refused", creds, err)
		}
	}
	logs := &syncBuffer{}
	l, g, _ := commandLink(t, Config{Role: "gridoperator", Username: "plantd", Password: "pw"}, logs)
	l.handle(t.Context(), cmd(scopePlant, "p1", keyFeedInLimit, "10"))
	if len(g.calls) != 1 || g.calls[0].by.Role != "gridoperator" || logs.count(`createdBy="ha:gw-ha (gridoperator)"`) != 1 {
		t.Errorf("gridoperator with credentials: %+v, log %s", g.calls, logs.String())
	}
}

// TestExcerpt: at most n bytes and "…", never a rune cut in two, invalid
// UTF-8 replaced.
func TestExcerpt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"100", 64, "100"},
		{strings.Repeat("x", 100), 4, "xxxx…"},
		{"ab€", 4, "ab…"}, // € is 3 bytes
		{"a\xffb", 64, "a\uFFFDb"},
	} {
		got := excerpt([]byte(tc.in), tc.n)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("excerpt(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestAcceptedFlood: 500 accepted commands in a row (a publisher the
// broker lets in, at a rate the limit allows) give one line per topic,
// the rest counted; each command still acts.
func TestAcceptedFlood(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	l, _, cs := commandLink(t, Config{CommandRate: 1e6, CommandBurst: 1000}, logs)
	for i := range 500 {
		l.handle(t.Context(), cmd(scopeDevice, "heater", keySwitch, []string{"ON", "OFF"}[i%2]))
	}
	if len(cs.set) != 500 {
		t.Fatalf("%d modes set, want 500", len(cs.set))
	}
	if n := logs.count("command accepted"); n != 1 {
		t.Errorf("%d lines for 500 accepted commands, want 1: %s", n, logs.String())
	}
	l.accepted.FlushAll()
	if logs.count(`topic=plantd/gw/device/heater/switch/set reason=accepted suppressed=499`) != 1 {
		t.Errorf("after the flush: %s, want the count of the 499 not logged", logs.String())
	}
}
