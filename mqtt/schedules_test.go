package mqtt

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"plantd/config"
	"plantd/devices"
	"plantd/devices/channels"
	"plantd/gridcontrol"
	"plantd/httpapi"
	"plantd/internal/proctest"
	"plantd/modbus"
	"plantd/mqtt/mqtttest"
	"plantd/plant"
	"plantd/sim"
	"plantd/sim/simtest"
	"plantd/store"
	"plantd/sunspec"
)

// gridStack is the part of plantd a schedule from the cloud goes
// through: the live state of plant "p1" with inverter "inv1" (configured
// without a kind, as most are: discovery finds it), the grid controller
// and the HTTP API on a real SQLite store, and the simulated inverter
// that discovery and polls read. The test polls it by hand: night (the
// inverter does not answer) and day.
type gridStack struct {
	t    *testing.T
	st   *store.Store
	live *plant.Live
	gc   *gridcontrol.Controller
	api  http.Handler // as the cloud's role
	// limited counts the API's 429 answers.
	limited atomic.Int64
	client  *modbus.Client
	info    *sunspec.Device
	plan    *devices.ReadPlan
}

// stackOpts tune newGridStack.
type stackOpts struct {
	rate config.RateLimit // the API's rate limit (default: none to speak of)
}

// noHistory is the HTTP API's history for tests that only post schedules.
type noHistory struct{ httpapi.History }

func (noHistory) Health() error { return nil }

func newGridStack(t *testing.T, o stackOpts) *gridStack {
	t.Helper()
	if o.rate.RequestsPerSecond == 0 {
		o.rate = config.RateLimit{RequestsPerSecond: 1e6, Burst: 1e6}
	}
	sp := simtest.Start(t, sim.DefaultConfig())
	inv := simtest.Device(t, sp, "inv1")
	pool := modbus.NewPool(nil)
	t.Cleanup(func() { _ = pool.Close() })
	g := &gridStack{t: t}
	g.client = pool.Endpoint(modbus.EndpointConfig{Address: inv.Addr()}).Unit(inv.Unit(), 2*time.Second)
	var err error
	if g.info, err = devices.Discover(t.Context(), g.client); err != nil {
		t.Fatalf("discover inv1: %v", err)
	}
	if g.plan, err = devices.NewReadPlan(g.info, g.info.PollModels()); err != nil {
		t.Fatal(err)
	}
	g.st, err = store.Open(t.Context(), store.Config{Path: filepath.Join(t.TempDir(), "plantd.db"), Plants: []store.PlantInfo{{ID: "p1"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.st.Close() })
	g.live = plant.NewLive([]plant.Plant{{ID: "p1", Name: "P1", Location: time.UTC}},
		[]plant.DeviceInfo{{ID: "inv1", PlantID: "p1", Name: "inv1"}}, nil)
	conns := func(id string) (sunspec.ReadWriter, bool) { return g.client, id == "inv1" }
	if g.gc, err = gridcontrol.New(gridcontrol.Config{}, g.st, g.live, conns, nil); err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Listen: "127.0.0.1:0", RateLimit: o.rate,
		Plants:   []config.Plant{{ID: "p1", Name: "P1", Timezone: "UTC"}},
		Migrated: config.Migrated{Plants: map[string]string{"old-p1": "p1"}}},
		httpapi.Deps{Live: g.live, History: noHistory{}, GridControl: g.gc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := srv.AsRole("mqtt:test", "installer")
	if err != nil {
		t.Fatal(err)
	}
	g.api = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if sw.status == http.StatusTooManyRequests {
			g.limited.Add(1)
		}
	})
	return g
}

// statusWriter keeps the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// night records a poll of inv1 that found nothing answering.
func (g *gridStack) night() {
	g.live.Apply(plant.Sample{Device: "inv1", Time: time.Now(), Err: errors.New("dial tcp: connection refused"), State: plant.StateOffline})
}

// day records a successful poll of inv1 (discovered, its models read).
func (g *gridStack) day() {
	g.t.Helper()
	models, err := g.plan.Read(g.t.Context(), g.client)
	if err != nil {
		g.t.Fatalf("poll inv1: %v", err)
	}
	g.live.Apply(channels.NewDevice(g.info).Sample("inv1", time.Now(), models))
}

// values are the values of the plant's stored schedules, oldest first.
func (g *gridStack) values(plantID string) []float64 {
	g.t.Helper()
	list, err := g.gc.Schedules(plantID)
	if err != nil {
		g.t.Fatal(err)
	}
	var out []float64
	for _, s := range list {
		out = append(out, *s.Commands[0].Value)
	}
	return out
}

// uplink starts an uplink of gateway gw answering through the stack.
func (g *gridStack) uplink(b *mqtttest.Broker, gw string) (*Uplink, func()) {
	g.t.Helper()
	cfg := fastConfig(b, gw)
	cfg.RemoteControl = true
	u, err := New(cfg, Deps{Outbox: g.st, Live: g.live, Commands: g.api}, testLogger())
	if err != nil {
		g.t.Fatal(err)
	}
	return u, runUplink(g.t, u)
}

// scheduleMsg is a down/schedule message: opModMaxLimW at value % in an
// hour from now.
func scheduleMsg(requestID, version string, value float64) string {
	start := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	return fmt.Sprintf(`{"requestId":%q,"version":%s,"schedule":{"commands":[{"command":"opModMaxLimW","start":%q,"end":%q,"value":%g}]}}`,
		requestID, version, start.Format(time.RFC3339), start.Add(time.Hour).Format(time.RFC3339), value)
}

// problemOf decodes an ack's problem body.
func problemOf(a mqtttest.Ack) (p struct {
	Code      string
	Retryable bool
	Reasons   []struct{ Command, Code string }
}) {
	_ = json.Unmarshal(a.Body, &p)
	return p
}

// TestScheduleNightStart: plantd starts at night (its inverter does not
// answer) with a retained schedule waiting: the schedule is evaluated
// after the first poll round, answered 422 DevicesOffline with retrying
// (not NoActiveInverter, and not marked answered); a restart evaluates
// the retained message again; when the inverter answers the schedule is
// applied and answered 201. The version is then answered: a restart does
// not answer it again.
func TestScheduleNightStart(t *testing.T) {
	t.Parallel() // its own broker, store, simulator and uplink
	g := newGridStack(t, stackOpts{})
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	const topic = "plantd/v1/gw-night/down/schedule/p1"
	col.Publish(topic, true, scheduleMsg("night-1", "1", 40))

	u, stop := g.uplink(b, "gw-night")
	proctest.WaitFor(t, "subscribed", 10*time.Second, u.subscribed.Load)
	g.night() // the first poll round ends: nothing answers
	proctest.WaitFor(t, "the first ack", 10*time.Second, func() bool { return len(col.Acks("night-1")) >= 1 })
	check := func(a mqtttest.Ack, status int, retrying bool, code string) {
		t.Helper()
		p := problemOf(a)
		var codes []string
		for _, r := range p.Reasons {
			codes = append(codes, r.Code)
		}
		if a.Status != status || a.Retrying != retrying || a.Version != 1 || (code != "" && (len(codes) != 1 || codes[0] != code)) {
			t.Errorf("ack %d retrying %v version %d reasons %v, want %d %v %s\n%s", a.Status, a.Retrying, a.Version, codes, status, retrying, code, a.Body)
		}
	}
	check(col.Acks("night-1")[0], http.StatusUnprocessableEntity, true, gridcontrol.ReasonDevicesOffline)

	// A restart, still at night: the retained schedule is evaluated again.
	stop()
	u, stop = g.uplink(b, "gw-night")
	proctest.WaitFor(t, "the ack after the restart", 10*time.Second, func() bool { return len(col.Acks("night-1")) >= 2 })
	check(col.Acks("night-1")[1], http.StatusUnprocessableEntity, true, gridcontrol.ReasonDevicesOffline)
	if v := g.values("p1"); len(v) != 0 {
		t.Fatalf("stored while refused: %v", v)
	}

	// Morning: the inverter answers; the schedule runs.
	g.day()
	proctest.WaitFor(t, "the ack when the inverter answers", 10*time.Second, func() bool { return len(col.Acks("night-1")) >= 3 })
	check(col.Acks("night-1")[2], http.StatusCreated, false, "")
	if v := g.values("p1"); len(v) != 1 || v[0] != 40 {
		t.Errorf("stored schedules %v, want the retained one (40)", v)
	}

	// Answered now: after a restart only the new version is answered.
	stop()
	g.uplink(b, "gw-night")
	col.Publish(topic, true, scheduleMsg("night-2", "2", 45))
	proctest.WaitFor(t, "the ack of version 2", 10*time.Second, func() bool { return len(col.Acks("night-2")) == 1 })
	if n := len(col.Acks("night-1")); n != 3 {
		t.Errorf("version 1 answered %d times, want 3 (422 retrying, again after the restart, 201)", n)
	}
	if v := g.values("p1"); len(v) != 2 || v[1] != 45 {
		t.Errorf("stored schedules %v, want 40 and 45", v)
	}
	_ = u
}

// versionStep publishes one schedule message and wants its ack.
type versionStep struct {
	name, requestID, version string
	status                   int
	code                     string // the problem's code ("" for 201)
}

// runVersionSteps runs steps on one uplink in order; stored are the
// values the plant's schedules then hold (the value of a step is its
// index + 10).
func runVersionSteps(t *testing.T, gw string, steps []versionStep) {
	g := newGridStack(t, stackOpts{})
	g.day()
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	u, _ := g.uplink(b, gw)
	proctest.WaitFor(t, "subscribed", 10*time.Second, u.subscribed.Load)
	var want []float64
	for i, s := range steps {
		col.Publish("plantd/v1/"+gw+"/down/schedule/p1", false, scheduleMsg(s.requestID, s.version, float64(10+i)))
		proctest.WaitFor(t, "the ack of "+s.name, 10*time.Second, func() bool { return len(col.Acks(s.requestID)) > 0 })
		a := col.Acks(s.requestID)[0]
		if p := problemOf(a); a.Status != s.status || p.Code != s.code {
			t.Errorf("%s (version %s): %d %s, want %d %s\n%s", s.name, s.version, a.Status, p.Code, s.status, s.code, a.Body)
		}
		if s.status == http.StatusCreated {
			want = append(want, float64(10+i))
		}
	}
	if got := g.values("p1"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stored schedules %v, want %v", got, want)
	}
}

// TestScheduleVersionBounds: versions above 2^53−1 and versions more
// than a day of epoch milliseconds ahead of the gateway's clock are
// refused, answered and not stored: they do not lock the plant's
// schedules (2^42, year 2109 in epoch milliseconds, was taken, after
// which a cloud counting in epoch milliseconds was stale for ever).
func TestScheduleVersionBounds(t *testing.T) {
	t.Parallel() // its own broker, store, simulator and uplink
	day := (24 * time.Hour).Milliseconds()
	runVersionSteps(t, "gw-bounds", []versionStep{
		{"2^63−1", "v-max63", fmt.Sprint(int64(math.MaxInt64)), http.StatusBadRequest, "bad-version"},
		{"2^53", "v-2^53", fmt.Sprint(int64(1) << 53), http.StatusBadRequest, "bad-version"},
		{"2^42 (year 2109 in epoch ms)", "v-2^42", fmt.Sprint(int64(1) << 42), http.StatusConflict, "version-too-far-ahead"},
		{"a counter's first", "v-5", "5", http.StatusCreated, ""},
		{"version given twice", "v-dup", `5,"version":5000`, http.StatusBadRequest, "bad-body"},
		{"epoch ms a day and a minute ahead", "v-day", fmt.Sprint(time.Now().UnixMilli() + day + 60_000), http.StatusConflict, "version-too-far-ahead"},
		{"the next", "v-6", "6", http.StatusCreated, ""},
		{"epoch milliseconds", "v-ms", fmt.Sprint(time.Now().UnixMilli()), http.StatusCreated, ""},
		{"epoch ms of a cloud clock an hour ahead", "v-ms+1h", fmt.Sprint(time.Now().UnixMilli() + 3_600_000), http.StatusCreated, ""},
		{"2^53−1 is far ahead of epoch ms", "v-max53", fmt.Sprint(int64(1)<<53 - 1), http.StatusConflict, "version-too-far-ahead"},
		{"epoch milliseconds again", "v-ms2", fmt.Sprint(time.Now().UnixMilli() + 3_600_001), http.StatusCreated, ""},
	})
}

// TestScheduleVersionStuckMark: a plant whose last answered version is
// 2^42 (taken by a plantd before the bound) is not stuck: the mark,
// beyond any version the cloud may send now, is void, so the cloud's
// epoch-millisecond version is taken and becomes the last answered.
func TestScheduleVersionStuckMark(t *testing.T) {
	t.Parallel() // its own broker, store, simulator and uplink
	g := newGridStack(t, stackOpts{})
	g.day()
	if err := g.st.SetMark(t.Context(), "schedule/p1", 1<<42); err != nil {
		t.Fatal(err)
	}
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	u, _ := g.uplink(b, "gw-stuck")
	proctest.WaitFor(t, "subscribed", 10*time.Second, u.subscribed.Load)
	for i, v := range []int64{time.Now().UnixMilli(), time.Now().UnixMilli() + 1} {
		id := fmt.Sprint("ms-", i)
		col.Publish("plantd/v1/gw-stuck/down/schedule/p1", false, scheduleMsg(id, fmt.Sprint(v), float64(40+i)))
		proctest.WaitFor(t, "the ack of "+id, 10*time.Second, func() bool { return len(col.Acks(id)) > 0 })
		if a := col.Acks(id)[0]; a.Status != http.StatusCreated {
			t.Fatalf("epoch ms version %d after a stuck mark of 2^42: %d %s", v, a.Status, a.Body)
		}
	}
	if last, _, _ := g.st.Mark(t.Context(), "schedule/p1"); last >= 1<<42 {
		t.Errorf("the mark is %d after the cloud's versions, want theirs", last)
	}
}

// TestScheduleStaleVersion: a version lower than one answered is
// answered 409 stale-version (it was left unanswered) and not stored.
func TestScheduleStaleVersion(t *testing.T) {
	t.Parallel() // its own broker, store, simulator and uplink
	runVersionSteps(t, "gw-stale", []versionStep{
		{"version 5", "s-5", "5", http.StatusCreated, ""},
		{"version 3 after 5", "s-3", "3", http.StatusConflict, "stale-version"},
		{"version 7", "s-7", "7", http.StatusCreated, ""},
		{"version 6 after 7", "s-6", "6", http.StatusConflict, "stale-version"},
	})
}

// TestScheduleFlood: 1,000 versions of a plant's schedule published at
// once, against an API that rate-limits the cloud's credential to 2
// requests a second: the newest version is applied and answered 201 (it
// is never dropped nor left rate-limited), every version is answered
// once, the others 201 or 409 (superseded before they were evaluated, or
// stale), none 429.
func TestScheduleFlood(t *testing.T) {
	t.Parallel() // its own broker, store, simulator and uplink
	g := newGridStack(t, stackOpts{rate: config.RateLimit{RequestsPerSecond: 2, Burst: 1}})
	g.day()
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	u, _ := g.uplink(b, "gw-flood")
	proctest.WaitFor(t, "subscribed", 10*time.Second, u.subscribed.Load)
	const n = 1000
	value := func(v int) float64 { return float64(10 + v%90) }
	start := time.Now()
	var last interface{ Wait() bool }
	for v := 1; v <= n; v++ {
		last = col.Client().Publish("plantd/v1/gw-flood/down/schedule/p1", 1, true, scheduleMsg(fmt.Sprint("f-", v), fmt.Sprint(v), value(v)))
	}
	last.Wait()
	t.Logf("%d versions published in %s", n, time.Since(start).Round(time.Millisecond))
	newest := fmt.Sprint("f-", n)
	proctest.WaitFor(t, "the newest version's ack", 30*time.Second, func() bool { return len(col.Acks(newest)) > 0 })
	if a := col.Acks(newest)[0]; a.Status != http.StatusCreated {
		t.Fatalf("version %d: %d %s", n, a.Status, a.Body)
	}
	if v := g.values("p1"); len(v) == 0 || v[len(v)-1] != value(n) {
		t.Errorf("stored schedules %v: the newest is not version %d's (%g)", v, n, value(n))
	}
	proctest.WaitFor(t, "every version answered", 30*time.Second, func() bool { return len(col.Acks("")) == 0 && countAcks(col, "f-") >= n })
	statuses := map[int]int{}
	for v := 1; v <= n; v++ {
		as := col.Acks(fmt.Sprint("f-", v))
		if len(as) != 1 {
			t.Errorf("version %d answered %d times", v, len(as))
			continue
		}
		statuses[as[0].Status]++
		if s := as[0].Status; s != http.StatusCreated && s != http.StatusConflict {
			t.Errorf("version %d: %d %s", v, s, as[0].Body)
		}
	}
	t.Logf("acks by status %v; stored %d schedules; the API answered 429 %d times", statuses, len(g.values("p1")), g.limited.Load())
	if g.limited.Load() == 0 {
		t.Error("the API never rate-limited the flood: the test does not try what it means to")
	}
}

// countAcks counts the acks whose request id starts with prefix.
func countAcks(col *mqtttest.Collector, prefix string) int {
	n := 0
	for _, a := range col.AllAcks() {
		if strings.HasPrefix(a.RequestID, prefix) {
			n++
		}
	}
	return n
}

// TestScheduleMigratedPlant: a schedule on a migrated plant id is applied
// to the plant's new id, as the HTTP API corrects a body's plant id, and
// the ack says so (migratedTo) on the old id's topic.
func TestScheduleMigratedPlant(t *testing.T) {
	t.Parallel() // its own broker, store, simulator and uplink
	g := newGridStack(t, stackOpts{})
	g.day()
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	u, _ := g.uplink(b, "gw-migrated")
	proctest.WaitFor(t, "subscribed", 10*time.Second, u.subscribed.Load)
	for _, tc := range []struct {
		topicPlant, requestID, migratedTo string
		value                             float64
	}{
		{"old-p1", "m-old", "p1", 30},
		{"p1", "m-new", "", 35},
	} {
		col.Publish("plantd/v1/gw-migrated/down/schedule/"+tc.topicPlant, true, scheduleMsg(tc.requestID, "1", tc.value))
		proctest.WaitFor(t, "the ack of "+tc.requestID, 10*time.Second, func() bool { return len(col.Acks(tc.requestID)) > 0 })
		a := col.Acks(tc.requestID)[0]
		if a.Status != http.StatusCreated || a.MigratedTo != tc.migratedTo || a.Topic != "down/schedule/"+tc.topicPlant {
			t.Errorf("%s: %d migratedTo %q topic %s, want 201 %q\n%s", tc.requestID, a.Status, a.MigratedTo, a.Topic, tc.migratedTo, a.Body)
		}
	}
	if v := g.values("p1"); fmt.Sprint(v) != "[30 35]" {
		t.Errorf("stored schedules %v, want [30 35]", v)
	}
}

// TestRejectedAckKeepsRequestID: a message refused as malformed or too
// large is answered with its requestId whenever the id could be read.
func TestRejectedAckKeepsRequestID(t *testing.T) {
	t.Parallel() // its own broker, store and uplink
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	cfg := fastConfig(b, "gw-rid")
	cfg.RemoteControl = true
	cfg.MaxCommandBytes = 1024
	u, err := New(cfg, Deps{Outbox: openStore(t, ""), Commands: &fakeAPI{}, Live: fakeLive{}}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	runUplink(t, u)
	proctest.WaitFor(t, "subscribed", 10*time.Second, u.subscribed.Load)
	base := "plantd/v1/gw-rid/down/"
	for _, tc := range []struct {
		name, topic, payload, requestID string
		status                          int
	}{
		{"schedule with an unknown field", "schedule/p1", `{"requestId":"r1","version":1,"schedule":{},"extra":1}`, "r1", 400},
		{"version not a number", "schedule/p1", `{"requestId":"r2","version":"one","schedule":{}}`, "r2", 400},
		{"version beyond int64", "schedule/p1", `{"requestId":"r3","version":1e30,"schedule":{}}`, "r3", 400},
		{"command with an unknown field", "cmd", `{"requestId":"r4","command":"schedules","plantId":"p1","extra":1}`, "r4", 400},
		{"command too large", "cmd", `{"requestId":"r5","command":"eligibilityCheck","body":"` + strings.Repeat("x", 2000) + `"}`, "r5", 413},
		{"schedule too large", "schedule/p2", `{"requestId":"r6","version":1,"schedule":"` + strings.Repeat("x", 2000) + `"}`, "r6", 413},
		{"not JSON", "cmd", `{"requestId":"r7",`, "", 400},
	} {
		col.Publish(base+tc.topic, false, tc.payload)
		proctest.WaitFor(t, "the ack of: "+tc.name, 10*time.Second, func() bool {
			for _, a := range col.AllAcks() {
				if a.Topic == "down/"+tc.topic && a.Status == tc.status && a.RequestID == tc.requestID {
					return true
				}
			}
			return false
		})
	}
}

// TestScheduleUnknownPlant: schedule messages on plant ids plantd does not
// know are answered 404 by the HTTP API and leave nothing in the database
// (no version mark per plant id, no schedule); the same version sent
// again is answered again (nothing was counted as answered); a known
// plant's version is still stored as answered.
func TestScheduleUnknownPlant(t *testing.T) {
	t.Parallel() // its own broker, store, simulator and uplink
	g := newGridStack(t, stackOpts{})
	g.day()
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	u, _ := g.uplink(b, "gw-unknown")
	proctest.WaitFor(t, "subscribed", 10*time.Second, u.subscribed.Load)
	for _, tc := range []struct {
		name, plantID, requestID string
		status                   int
		marked                   bool
	}{
		{"an unknown plant", "nope", "u-1", http.StatusNotFound, false},
		{"the same version again", "nope", "u-2", http.StatusNotFound, false},
		{"another unknown plant", "x-4711", "u-3", http.StatusNotFound, false},
		{"a made-up id with odd characters", "p1%20", "u-4", http.StatusNotFound, false},
		{"the known plant", "p1", "u-5", http.StatusCreated, true},
	} {
		col.Publish("plantd/v1/gw-unknown/down/schedule/"+tc.plantID, false, scheduleMsg(tc.requestID, "1", 20))
		proctest.WaitFor(t, "the ack of "+tc.name, 10*time.Second, func() bool { return len(col.Acks(tc.requestID)) > 0 })
		if a := col.Acks(tc.requestID)[0]; a.Status != tc.status || a.Version != 1 {
			t.Errorf("%s: %d version %d, want %d\n%s", tc.name, a.Status, a.Version, tc.status, a.Body)
		}
		if _, ok, err := g.st.Mark(t.Context(), "schedule/"+tc.plantID); err != nil || ok != tc.marked {
			t.Errorf("%s: version mark stored %v (%v), want %v", tc.name, ok, err, tc.marked)
		}
	}
	if v := g.values("p1"); len(v) != 1 {
		t.Errorf("stored schedules of p1 %v, want one", v)
	}
}
