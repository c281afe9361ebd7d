package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/config"
	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/sim/simtest"
	"plantd/store"
)

// TestMQTTUplink runs the real binary against mosquitto: 10,000 messages
// left unsent in the outbox and a SIGKILL while the broker is down are all
// delivered after the restart, without a gap; the retained state says
// offline after a kill (last will); a schedule sent over MQTT is answered
// exactly like the same POST over HTTP.
func TestMQTTUplink(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
	if testing.Short() {
		t.Skip("runs the daemon against a broker (~15 s)")
	}
	p := simtest.Start(t, sim.DefaultConfig())
	b := mqtttest.Start(t, mqtttest.Options{})
	col := mqtttest.Collect(t, b)
	dir := t.TempDir()
	db := filepath.Join(dir, "plantd.db")
	const token = "mqtt-test-token-0123456789abcdef0123456789"
	cfg := fmt.Sprintf(`gateway:
  id: gw-test
http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: MQTT, timezone: Europe/Berlin}
devices:
%stokens:
  - {name: t, sha256: %s, role: installer}
mqtt:
  broker: %s
  liveInterval: 1s
  remoteControl: true
  remoteRole: installer
  backlog: {messagesPerSecond: 100000, bytesPerSecond: 100000000}
`, db, plantDevices(p.Devices()[:4]), config.TokenHash(token), b.URL())
	cfgPath := filepath.Join(dir, "plantd.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	// A plantd that was killed with 10,000 messages unsent.
	st, err := store.Open(t.Context(), store.Config{Path: db, Plants: []store.PlantInfo{{ID: "p1"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 10000
	msgs := make([]store.OutboxAppend, n)
	for i := range msgs {
		msgs[i] = store.OutboxAppend{Stream: "log/p1", Payload: fmt.Appendf(nil, `[{"time":"2026-01-01T00:00:00Z","level":"info","code":"Backlog","message":"%d"}]`, i+1)}
	}
	if _, err := st.EnqueueBatch(t.Context(), msgs, nil); err != nil {
		t.Fatal(err)
	}
	st.Close()

	// Broker down: plantd starts, queues its own log entries, is killed.
	b.Stop()
	p1 := startDaemon(t, cfgPath)
	p1.WaitLog(regexp.MustCompile(`mqtt broker unreachable`), 10*time.Second)
	p1.waitOnline(10*time.Second, "inv1", "inv2", "meter", "bat")
	proctest.WaitFor(t, "the online log entries in the outbox", 10*time.Second, func() bool { return outboxRows(t, db, "log/p1") >= n+4 })
	p1.Kill()
	b.Start()
	proctest.WaitFor(t, "the collector back", 10*time.Second, func() bool { return col.Client().IsConnectionOpen() })

	start := time.Now()
	p2 := startDaemon(t, cfgPath)
	proctest.WaitFor(t, "the backlog", 60*time.Second, func() bool { return col.Distinct("log/p1") >= n+4 })
	el := time.Since(start)
	distinct, dups, gaps := col.Check("log/p1", true)
	t.Logf("after SIGKILL with %d unsent: %d log messages delivered in %s (process start included), %d duplicates, gaps %v",
		n, distinct, el.Round(time.Millisecond), dups, gaps)
	if len(gaps) > 0 {
		t.Errorf("log/p1: missing %v", gaps[:min(len(gaps), 20)])
	}
	proctest.WaitFor(t, "live values", 10*time.Second, func() bool { return col.Distinct("live/p1") >= 2 && col.Distinct("live/devices/inv1") >= 2 })
	s, _ := col.LastState()
	if s.State != "online" || s.GatewayID != "gw-test" || s.Version == "" || s.StartedAt == "" {
		t.Errorf("state %+v", s)
	}

	// Schedules over MQTT and the same POSTs over HTTP: the same status and
	// body but for what names the request itself (the schedule's id,
	// creation time and credential); the accepted one is stored by the grid
	// controller, shows in GET schedules and in the log stream.
	api := p2.waitAPI(10 * time.Second)
	const window = `"start":"2030-06-21T10:00:00Z","end":"2030-06-21T11:00:00Z"`
	var mqttIDs []string
	for i, tc := range []struct {
		id, body string
		status   int
	}{
		{"req-ok", `{"commands":[{"command":"opModMaxLimW",` + window + `,"value":50}]}`, http.StatusCreated},
		{"req-bad", `{"commands":[{"command":"nope"}]}`, http.StatusBadRequest},
		{"req-rated", `{"commands":[{"command":"opModMaxLimW",` + window + `,"value":1e9,"unit":"W"}]}`, http.StatusUnprocessableEntity},
	} {
		status, httpBody := apiDo(t, api, token, "POST", "/gridcontrol/v1/plants/p1/schedules", tc.id, tc.body)
		col.Publish("plantd/v1/gw-test/down/schedule/p1", true, fmt.Sprintf(`{"requestId":%q,"version":%d,"schedule":%s}`, tc.id, i+1, tc.body))
		proctest.WaitFor(t, "the ack of "+tc.id, 30*time.Second, func() bool { return len(col.Acks(tc.id)) > 0 })
		a := col.Acks(tc.id)[0]
		if status != tc.status || a.Status != status || a.Version != int64(i+1) {
			t.Errorf("%s: HTTP %d, MQTT %d (version %d), want %d", tc.id, status, a.Status, a.Version, tc.status)
		}
		h, m := withoutRequestFields(t, httpBody), withoutRequestFields(t, a.Body)
		if h != m {
			t.Errorf("%s: answers differ\nMQTT %s\nHTTP %s", tc.id, a.Body, httpBody)
			continue
		}
		t.Logf("%s: MQTT and HTTP both %d %s", tc.id, a.Status, m)
		if status == http.StatusCreated {
			var ans struct {
				Schedule struct{ ScheduleID, CreatedBy string }
			}
			if err := json.Unmarshal(a.Body, &ans); err != nil || ans.Schedule.ScheduleID == "" {
				t.Fatalf("%s: answer %s: %v", tc.id, a.Body, err)
			}
			if ans.Schedule.CreatedBy != "mqtt:gw-test (installer)" {
				t.Errorf("%s: createdBy %q, want the cloud's credential", tc.id, ans.Schedule.CreatedBy)
			}
			mqttIDs = append(mqttIDs, ans.Schedule.ScheduleID)
		}
	}
	if got := scheduleIDs(t, api, token); len(got) != 2 || !slices.Contains(got, mqttIDs[0]) {
		t.Errorf("GET schedules: %v, want the HTTP one and %s (MQTT)", got, mqttIDs[0])
	}
	proctest.WaitFor(t, "ScheduleAccepted on up/log/p1", 30*time.Second, func() bool {
		return slices.ContainsFunc(col.ItemsOf("log/p1"), func(it json.RawMessage) bool {
			return bytes.Contains(it, []byte(`"ScheduleAccepted"`)) && bytes.Contains(it, []byte(mqttIDs[0]))
		})
	})
	// The schedule list over down/cmd: byte for byte the GET's.
	col.Publish("plantd/v1/gw-test/down/cmd", false, `{"requestId":"req-list","command":"schedules","plantId":"p1"}`)
	proctest.WaitFor(t, "the ack of req-list", 30*time.Second, func() bool { return len(col.Acks("req-list")) > 0 })
	status, list := apiDo(t, api, token, "GET", "/gridcontrol/v1/plants/p1/schedules", "req-list", "")
	if a := col.Acks("req-list")[0]; a.Status != status || !bytes.Equal(bytes.TrimSpace(a.Body), bytes.TrimSpace(list)) {
		t.Errorf("schedules: MQTT %d %s\nHTTP %d %s", a.Status, a.Body, status, list)
	}

	// Killed while connected: the broker publishes the last will.
	p2.Kill()
	proctest.WaitFor(t, "the last will", 30*time.Second, func() bool { s, _ := col.LastState(); return s.State == "offline" })

	// Restarted: the retained schedule message (version 3) comes again and
	// is not answered again; a new version is; the stored schedules are
	// back.
	p3 := startDaemon(t, cfgPath)
	api = p3.waitAPI(10 * time.Second)
	proctest.WaitFor(t, "a command answered after the restart", 60*time.Second, func() bool {
		col.Publish("plantd/v1/gw-test/down/cmd", false, `{"requestId":"req-ping","command":"schedules","plantId":"p1"}`)
		time.Sleep(500 * time.Millisecond)
		return len(col.Acks("req-ping")) > 0
	})
	col.Publish("plantd/v1/gw-test/down/schedule/p1", true, `{"requestId":"req-v4","version":4,"schedule":{"commands":[{"command":"opModMaxLimW",`+window+`,"value":60}]}}`)
	proctest.WaitFor(t, "the ack of req-v4", 30*time.Second, func() bool { return len(col.Acks("req-v4")) > 0 })
	if a := col.Acks("req-v4")[0]; a.Status != http.StatusCreated {
		t.Errorf("req-v4: %d %s", a.Status, a.Body)
	}
	if n := len(col.Acks("req-rated")); n != 1 {
		t.Errorf("the retained version 3 was answered %d times, want once", n)
	}
	if got := scheduleIDs(t, api, token); len(got) != 3 {
		t.Errorf("GET schedules after the restart: %v, want 3", got)
	}
}

// TestMQTTNightStartSchedule runs the real binary at night: its inverters
// (configured without a kind, as most are) do not answer when it starts,
// a retained schedule waits on the broker. The schedule is answered 422
// DevicesOffline with retrying, not applied and not marked answered; when
// the inverters answer it is applied (201) and written to them. The ack
// sequence on up/ack is exactly those two.
func TestMQTTNightStartSchedule(t *testing.T) {
	t.Parallel() // its own daemon, simulator, broker and files
	if testing.Short() {
		t.Skip("runs the daemon against a broker")
	}
	p := simtest.Start(t, sim.DefaultConfig())
	b := mqtttest.Start(t, mqtttest.Options{})
	col := mqtttest.Collect(t, b)
	dir := t.TempDir()
	var devs strings.Builder
	var inverters []*sim.Device
	for _, d := range p.Devices()[:3] {
		host, port, _ := net.SplitHostPort(d.Addr())
		fmt.Fprintf(&devs, "  - {id: %s, plant: p1, host: %s, port: %s, pollInterval: 500ms}\n", d.ID(), host, port)
		if d.Kind() == kind.Inverter {
			inverters = append(inverters, d)
			d.SetFault(sim.Fault{Kind: sim.FaultOffline}) // asleep
		}
	}
	if len(inverters) == 0 {
		t.Fatal("no inverter among the simulated devices")
	}
	cfg := fmt.Sprintf(`gateway:
  id: gw-night
http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: Night, timezone: Europe/Berlin}
devices:
%smqtt:
  broker: %s
  liveInterval: 1s
  remoteControl: true
  remoteRole: installer
`, filepath.Join(dir, "plantd.db"), devs.String(), b.URL())
	cfgPath := filepath.Join(dir, "plantd.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC().Truncate(time.Second)
	col.Publish("plantd/v1/gw-night/down/schedule/p1", true, fmt.Sprintf(
		`{"requestId":"night","version":1,"schedule":{"commands":[{"command":"opModMaxLimW","start":%q,"end":%q,"value":40}]}}`,
		start.Format(time.RFC3339), start.Add(time.Hour).Format(time.RFC3339)))

	startDaemon(t, cfgPath)
	proctest.WaitFor(t, "the first ack", 60*time.Second, func() bool { return len(col.Acks("night")) > 0 })
	first := col.Acks("night")[0]
	var pb struct {
		Retryable bool
		Reasons   []struct{ Code string }
	}
	_ = json.Unmarshal(first.Body, &pb)
	if first.Status != http.StatusUnprocessableEntity || !first.Retrying || !pb.Retryable || len(pb.Reasons) != 1 || pb.Reasons[0].Code != "DevicesOffline" {
		t.Fatalf("first ack: %d retrying %v %s, want 422 retrying DevicesOffline", first.Status, first.Retrying, first.Body)
	}
	t.Logf("at night: %d retrying %s", first.Status, first.Body)
	for _, d := range inverters {
		if n := len(d.Writes()); n != 0 {
			t.Errorf("%s: %d writes while refused", d.ID(), n)
		}
	}

	// Morning.
	for _, d := range inverters {
		d.SetFault(sim.Fault{})
	}
	proctest.WaitFor(t, "the second ack", 60*time.Second, func() bool { return len(col.Acks("night")) > 1 })
	if a := col.Acks("night")[1]; a.Status != http.StatusCreated || a.Retrying || a.Version != 1 {
		t.Fatalf("second ack: %d retrying %v %s, want 201", a.Status, a.Retrying, a.Body)
	}
	proctest.WaitFor(t, "the limit written to an inverter", 30*time.Second, func() bool {
		for _, d := range inverters {
			for _, w := range d.Writes() {
				if slices.ContainsFunc(w.Points, func(pt string) bool { return strings.HasSuffix(pt, "WMaxLimPct") }) {
					return true
				}
			}
		}
		return false
	})
	if n := len(col.Acks("night")); n != 2 {
		t.Errorf("%d acks of the schedule, want 2 (422 retrying, 201)", n)
	}
}

// apiDo runs one request against the daemon's HTTP API and returns the
// status and body.
func apiDo(t *testing.T, addr, token, method, path, requestID, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader = http.NoBody
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Request-Id", requestID)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// withoutRequestFields is an answer as canonical JSON without the fields
// that differ between two submissions of the same schedule.
func withoutRequestFields(t *testing.T, body []byte) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("answer %s: %v", body, err)
	}
	if sc, ok := v["schedule"].(map[string]any); ok {
		delete(sc, "scheduleId")
		delete(sc, "createdAt")
		delete(sc, "createdBy")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// scheduleIDs lists the ids of GET .../plants/p1/schedules.
func scheduleIDs(t *testing.T, addr, token string) []string {
	t.Helper()
	status, body := apiDo(t, addr, token, "GET", "/gridcontrol/v1/plants/p1/schedules", "list", "")
	var l struct{ Schedules []struct{ ScheduleID string } }
	if err := json.Unmarshal(body, &l); status != http.StatusOK || err != nil {
		t.Fatalf("GET schedules: %d %s %v", status, body, err)
	}
	var out []string
	for _, s := range l.Schedules {
		out = append(out, s.ScheduleID)
	}
	return out
}

// TestDemoOutageDay: plantd demo at 4320× publishing to mosquitto, the
// broker stopped for 20 s (a simulated day of rollups and log entries);
// afterwards every stream is complete, in order, and the day's rollups
// came as historical, batched messages. The deadlines are generous: after
// a 20 s outage the reconnect backoff alone may wait up to 32 s.
func TestDemoOutageDay(t *testing.T) {
	t.Parallel() // its own simulator, broker and binary
	if testing.Short() {
		t.Skip("stops a broker for a simulated day (~40 s)")
	}
	b := mqtttest.Start(t, mqtttest.Options{})
	col := mqtttest.Collect(t, b)
	cmd := exec.Command(binPath, "demo", "--speed", "4320", "--interval", "250ms", "--listen", "127.0.0.1:0",
		"--db", filepath.Join(t.TempDir(), "demo.db"), "--broker", b.URL())
	cmd.Stdout = io.Discard
	d := proctest.Start(t, cmd)
	proctest.WaitFor(t, "the first rollups", 60*time.Second, func() bool { return col.Distinct("rollup/demo") >= 2 })
	b.Stop()
	time.Sleep(20 * time.Second)
	b.Start()
	proctest.WaitFor(t, "the collector back", 30*time.Second, func() bool { return col.Client().IsConnectionOpen() })
	before := col.Distinct("rollup/demo")
	proctest.WaitFor(t, "the day's rollups", 90*time.Second, func() bool {
		return col.Historical("rollup/demo") > 0 && col.Distinct("rollup/demo") > before+5 && col.Items("rollup/demo") >= 250
	})
	// Live messages left unacknowledged by the outage are dropped, not
	// replayed: a live stream's gaps are those, counted per stream.
	var api string
	for _, l := range d.Stderr() {
		if m := listenRE.FindStringSubmatch(l); m != nil {
			api = m[1]
		}
	}
	resp, err := http.Get("http://" + api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	dropped := map[string]int{}
	for _, m := range regexp.MustCompile(`plantd_mqtt_outbox_dropped_total\{stream="([^"]+)"\} (\d+)`).FindAllSubmatch(metrics, -1) {
		dropped[string(m[1])], _ = strconv.Atoi(string(m[2]))
	}
	d.Stop(os.Interrupt, 30*time.Second)
	for _, s := range col.Streams() {
		distinct, dups, gaps := col.Check(s, false)
		t.Logf("%-22s %5d seqs, %4d items, %3d historical messages, %d duplicates, %d gaps, %d dropped", s, distinct, col.Items(s), col.Historical(s), dups, len(gaps), dropped[s])
		if len(gaps) > dropped[s] {
			t.Errorf("stream %s: missing %v, %d dropped", s, gaps[:min(len(gaps), 20)], dropped[s])
		}
		if strings.HasPrefix(s, "live/") && col.Historical(s) > 0 {
			t.Errorf("stream %s: %d live messages replayed as historical", s, col.Historical(s))
		}
	}
	if n := col.Items("rollup/demo"); n < 250 {
		t.Errorf("%d rollup rows, want a simulated day's (288)", n)
	}
}

// plantDevices is the devices: list of simulated devices in plant p1,
// polled every 500 ms.
func plantDevices(devs []*sim.Device) string {
	var b strings.Builder
	for _, d := range devs {
		host, port, _ := net.SplitHostPort(d.Addr())
		fmt.Fprintf(&b, "  - {id: %s, plant: p1, host: %s, port: %s, pollInterval: 500ms}\n", d.ID(), host, port)
	}
	return b.String()
}

// outboxRows counts a stream's messages in the outbox of the database at
// path, which a running daemon holds: a read-only connection of its own.
func outboxRows(t *testing.T, path, stream string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM outbox WHERE stream = ?`, stream).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
