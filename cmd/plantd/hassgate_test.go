package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
	"plantd/sim"
	"plantd/sim/simtest"
)

// hassGateConfig is gridConfig's plant (inverters, meter and battery of
// the simulator at a clear noon, a grid-operator token) with Home
// Assistant on broker under gateway id gw-hg (default role installer,
// anonymous: the client id is gw-hg-ha).
func hassGateConfig(t testing.TB, p *sim.Plant, broker string) string {
	t.Helper()
	path := gridConfig(t, p)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "gateway: {id: gw-hg}\nlocal:\n  mqtt: {broker: %s}\n", broker)
	return path
}

// haPublisher is an anonymous client of the LAN broker: anyone on the
// plant's network.
func haPublisher(t testing.TB, broker, id string) paho.Client {
	t.Helper()
	c := paho.NewClient(paho.NewClientOptions().AddBroker(broker).SetClientID(id))
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect %s: %v", id, tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(0) })
	return c
}

// waitHAOnline waits until the link published "online" (after it
// subscribed to the command topics).
func waitHAOnline(t testing.TB, c paho.Client, base string) {
	t.Helper()
	online := make(chan struct{}, 1)
	if tok := c.Subscribe(base+"availability", 1, func(_ paho.Client, m paho.Message) {
		if string(m.Payload()) == "online" {
			select {
			case online <- struct{}{}:
			default:
			}
		}
	}); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	select {
	case <-online:
	case <-time.After(30 * time.Second):
		t.Fatal("the Home Assistant link not online within 30 s")
	}
}

// limitWrites returns the WMaxLimPct values written to the inverters
// after since.
func limitWrites(p *sim.Plant, since time.Time) []float64 {
	var out []float64
	for _, id := range []string{"inv1", "inv2"} {
		for _, e := range p.Trace(id) {
			if pt, ok := e.Point("WMaxLimPct"); ok && e.Error == "" && e.WallTime.After(since) {
				out = append(out, pt.Value)
			}
		}
	}
	return out
}

// TestHomeAssistantGate is issue 39's Home Assistant door with the real
// binary, tried from the LAN as a stranger: under a grid operator's
// 10 % (an API window), a 20 MB publish to the FeedInLimit command topic
// is refused in exactly one short log line and the daemon still answers;
// 5,000 bad publishes give a handful of lines; an anonymous FeedInLimit
// of 100 is accepted as the installer (createdBy and the plant log's
// ScheduleAccepted name ha:gw-hg-ha (installer)) and leaves both
// inverters' limit registers at or below 10 % through the control cycles
// after it.
func TestHomeAssistantGate(t *testing.T) {
	t.Parallel() // its own simulator, broker and binary
	if testing.Short() {
		t.Skip("runs the daemon against a broker")
	}
	p := simtest.Start(t, noonConfig())
	b := mqtttest.Start(t, mqtttest.Options{})
	d := startDaemon(t, hassGateConfig(t, p, b.URL()))
	d.waitAPI(20 * time.Second)
	d.waitOnline(20*time.Second, "inv1", "inv2", "meter")
	const base = "plantd/gw-hg/"
	const topic = base + "plant/p1/feed_in_limit/set"
	pub := haPublisher(t, b.URL(), "stranger")
	waitHAOnline(t, pub, base)

	// The grid operator's 10 %.
	if code, body := d.request("POST", "/gridcontrol/v1/plants/p1/schedules", tokGrid,
		`{"commands":[{"command":"opModMaxLimW","start":"+0s","end":"+1h","value":10}]}`); code != 201 {
		t.Fatalf("the grid operator's POST: %d %s", code, body)
	}
	proctest.WaitFor(t, "both inverters at the grid operator's 10 %", 20*time.Second, func() bool {
		return p.Device("inv1").State().LimitPct <= 10 && p.Device("inv2").State().LimitPct <= 10
	})
	limited := time.Now()

	// 20 MB: refused before it is parsed, one line.
	big := bytes.Repeat([]byte("9"), 20<<20)
	if tok := pub.Publish(topic, 1, false, big); !tok.WaitTimeout(60*time.Second) || tok.Error() != nil {
		t.Fatalf("publish 20 MB: %v", tok.Error())
	}
	d.WaitLines("the 20 MB payload refused", 60*time.Second, func(lines []string) bool {
		return slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "reason=too-large") })
	})
	var tooLarge []string
	for _, l := range d.Stderr() {
		if strings.Contains(l, "reason=too-large") {
			tooLarge = append(tooLarge, l)
		}
	}
	if len(tooLarge) != 1 || len(tooLarge[0]) > 512 || !strings.Contains(tooLarge[0], fmt.Sprintf("size=%d", 20<<20)) {
		t.Fatalf("after a 20 MB publish: %d lines of it, want one of at most 512 bytes with the size: %.600q", len(tooLarge), tooLarge)
	}
	t.Logf("the 20 MB publish: one line of %d bytes: %s", len(tooLarge[0]), tooLarge[0])
	if code, _ := d.request("GET", "/gridcontrol/v1/plants/p1/schedules", tokInst, ""); code != 200 {
		t.Fatalf("GET schedules after the 20 MB publish: %d", code)
	}

	// 5,000 bad publishes, then a FeedInLimit of 100 until one is taken
	// (the flood used the rate limit's burst).
	const n = 5000
	toks := make([]paho.Token, 0, n)
	for i := range n {
		toks = append(toks, pub.Publish(topic, 1, false, fmt.Sprintf("lift %d", i)))
	}
	for _, tok := range toks {
		if !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
			t.Fatalf("publish: %v", tok.Error())
		}
	}
	accepted := func() bool {
		return slices.ContainsFunc(d.Stderr(), func(l string) bool { return strings.Contains(l, "home assistant: command accepted") })
	}
	// Refusals of the rate limit are not all logged: publish again every
	// 250 ms until one is taken.
	var last time.Time
	proctest.WaitFor(t, "a FeedInLimit of 100 accepted after the flood", 30*time.Second, func() bool {
		if accepted() {
			return true
		}
		if time.Since(last) > 250*time.Millisecond {
			if tok := pub.Publish(topic, 1, false, "100"); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
				t.Fatalf("publish: %v", tok.Error())
			}
			last = time.Now()
		}
		return false
	})
	acceptedAt := time.Now()
	var refusals []string
	for _, l := range d.Stderr() {
		if strings.Contains(l, "home assistant: command refused") || strings.Contains(l, "home assistant: command dropped") {
			refusals = append(refusals, l)
		}
	}
	if len(refusals) > 6 {
		t.Errorf("%d refusal lines for a 20 MB and %d bad publishes, want at most 6: %q", len(refusals), n, refusals)
	}
	t.Logf("%d bad publishes after the 20 MB one: %d refusal lines in all", n, len(refusals))

	// The window: createdBy and the plant log name Home Assistant's
	// origin.
	code, body := d.request("GET", "/gridcontrol/v1/plants/p1/schedules", tokInst, "")
	var out struct {
		Schedules []struct {
			ScheduleID string `json:"scheduleId"`
			CreatedBy  string `json:"createdBy"`
			Commands   []struct {
				Command string   `json:"command"`
				Value   *float64 `json:"value"`
			} `json:"commands"`
		} `json:"schedules"`
	}
	if code != 200 || json.Unmarshal(body, &out) != nil {
		t.Fatalf("GET schedules: %d %s", code, body)
	}
	var haID string
	for _, s := range out.Schedules {
		if len(s.Commands) == 1 && s.Commands[0].Command == "FeedInLimit" && *s.Commands[0].Value == 100 {
			haID = s.ScheduleID
			if s.CreatedBy != "ha:gw-hg-ha (installer)" {
				t.Errorf("the FeedInLimit window's createdBy %q, want ha:gw-hg-ha (installer)", s.CreatedBy)
			}
		}
	}
	if haID == "" {
		t.Fatalf("no FeedInLimit window of 100 in %s", body)
	}
	// The plant log commits within a second.
	want := fmt.Sprintf("schedule %s from ha:gw-hg-ha (installer) accepted: FeedInLimit ×1", haID)
	proctest.WaitFor(t, "the plant log's ScheduleAccepted naming ha:gw-hg-ha (installer)", 10*time.Second, func() bool {
		_, logs := d.request("GET", "/monitoring/v1/plants/p1/logs?limit=50", tokInst, "")
		return strings.Contains(string(logs), want)
	})

	// The registers: two renewals of the limit on each inverter since the
	// window was accepted (control cycles that saw it), none above 10 %.
	proctest.WaitFor(t, "two limit writes per inverter after the Home Assistant window", 30*time.Second, func() bool {
		return len(limitWrites(p, acceptedAt)) >= 4
	})
	for _, v := range limitWrites(p, limited) {
		if v > 10 {
			t.Errorf("WMaxLimPct %v written under the grid operator's 10 %% (writes since: %v)", v, limitWrites(p, limited))
			break
		}
	}
	for _, id := range []string{"inv1", "inv2"} {
		if st := p.Device(id).State(); st.LimitPct > 10 || st.EffectiveLimitPct > 10 {
			t.Errorf("%s at %v %% (effective %v %%) after Home Assistant's 100, want <= 10", id, st.LimitPct, st.EffectiveLimitPct)
		}
	}
	t.Logf("after Home Assistant's FeedInLimit 100 under the grid operator's 10 %%: limit writes %v", limitWrites(p, acceptedAt))
}

// TestHomeAssistantGridOperatorNeedsCredentials: local.mqtt.role
// gridoperator without the broker's username and password is refused by
// check-config and run, naming the keys.
func TestHomeAssistantGridOperatorNeedsCredentials(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "plantd.yaml")
	writeConfig(t, path, `gateway: {id: gw}
plants: [{id: p1, name: P, timezone: UTC}]
local:
  mqtt: {broker: tcp://homeassistant.local:1883, role: gridoperator}
`)
	const want = "local.mqtt.role: gridoperator needs the broker connection's credentials (local.mqtt.username and local.mqtt.password)"
	for _, args := range [][]string{{"check-config", path}, {"run", "-c", path}} {
		_, stderr, code := runBinary(t, args...)
		if code != exitConfig || !strings.Contains(stderr, want) {
			t.Errorf("plantd %v: exit %d, %s; want exit %d naming the keys", args, code, stderr, exitConfig)
		}
	}
}

// BenchmarkHomeAssistantCommandToWrite measures issue 39's "command
// submitted → first register written" for the Home Assistant door, with
// the real binary and a broker: from the publish of a FeedInLimit of 0 %
// (at a clear noon, a limit well below the inverters' output, applied at
// once as any tighter limit) to the first WMaxLimPct an inverter takes
// after it (the simulator's trace, its own clock). Each iteration
// releases the limit again with a FeedInLimit of 100, not measured.
//
//	go test -run '^$' -bench HomeAssistantCommandToWrite -benchtime 20x ./cmd/plantd
func BenchmarkHomeAssistantCommandToWrite(b *testing.B) {
	p := simtest.Start(b, noonConfig())
	br := mqtttest.Start(b, mqtttest.Options{})
	d := startDaemon(b, hassGateConfig(b, p, br.URL()))
	d.waitAPI(20 * time.Second)
	d.waitOnline(20*time.Second, "inv1", "inv2", "meter")
	const base = "plantd/gw-hg/"
	pub := haPublisher(b, br.URL(), "automation")
	waitHAOnline(b, pub, base)
	publish := func(v string) time.Time {
		at := time.Now()
		if tok := pub.Publish(base+"plant/p1/feed_in_limit/set", 1, false, v); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			b.Fatalf("publish: %v", tok.Error())
		}
		return at
	}
	await := func(what string, cond func() bool) {
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				b.Fatalf("after 20 s: still not %s", what)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	released := func() bool {
		return p.Device("inv1").State().EffectiveLimitPct == 100 && p.Device("inv2").State().EffectiveLimitPct == 100
	}
	var lat []time.Duration
	for b.Loop() {
		await("both inverters unlimited", released)
		at := publish("0")
		var wrote time.Time
		await("a limit written after the command", func() bool {
			for _, id := range []string{"inv1", "inv2"} {
				for _, e := range p.Trace(id) {
					if pt, ok := e.Point("WMaxLimPct"); ok && e.Error == "" && e.WallTime.After(at) && pt.Value < 100 &&
						(wrote.IsZero() || e.WallTime.Before(wrote)) {
						wrote = e.WallTime
					}
				}
			}
			return !wrote.IsZero()
		})
		lat = append(lat, wrote.Sub(at))
		publish("100")
	}
	b.StopTimer()
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	b.Logf("%d Home Assistant FeedInLimit commands: publish → first WMaxLimPct written: median %v, p99 %v, max %v (all %v)",
		len(lat), p50.Round(time.Millisecond), p99.Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(0, "ns/op") // a command's time is the metrics above
}
