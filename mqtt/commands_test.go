package mqtt

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
)

// fakeAPI answers like the HTTP API: schedules 501, eligibility checks
// 200 with the body echoed; a body "block" blocks until release closes.
type fakeAPI struct {
	release chan struct{}
	mu      sync.Mutex
	reqs    []string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, r.Method+" "+r.URL.String()+" "+r.Header.Get("X-Request-Id")+" "+string(b))
	f.mu.Unlock()
	if strings.Contains(string(b), "block") {
		<-f.release
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/schedules") && r.Method == http.MethodPost:
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotImplemented)
		io.WriteString(w, `{"type":"https://plantd.dev/problems/not-implemented","status":501}`)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}
}

// ack returns the last ack of a request id and how many arrived.
func ack(c *mqtttest.Collector, requestID string) (mqtttest.Ack, int) {
	as := c.Acks(requestID)
	if len(as) == 0 {
		return mqtttest.Ack{}, 0
	}
	return as[len(as)-1], len(as)
}

// TestCommands: schedules and commands from the cloud are answered on
// up/ack with the request id and the handler's status and body; a
// retained schedule version is answered once, across reconnects;
// malformed, oversized and unknown messages get an error answer.
func TestCommands(t *testing.T) {
	t.Parallel() // its own broker, store and uplink
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	api := &fakeAPI{release: make(chan struct{})}
	cfg := fastConfig(b, "gw-cmd")
	cfg.RemoteControl = true
	cfg.MaxCommandBytes = 1024
	p := newProxy(t, b.Addr(), 0)
	cfg.Broker = p.url()
	u, err := New(cfg, Deps{Outbox: openStore(t, ""), Commands: api, Live: fakeLive{}}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	runUplink(t, u)
	proctest.WaitFor(t, "online", 10*time.Second, func() bool { s, _ := col.LastState(); return s.State == "online" })
	base := "plantd/v1/gw-cmd/down/"
	col.Publish(base+"schedule/p1", true, `{"requestId":"s1","version":1,"schedule":{"commands":[]}}`)
	// The online state comes before plantd subscribes: the retained
	// schedule's ack says it has, and commands sent now are not lost.
	proctest.WaitFor(t, "the schedule's ack", 10*time.Second, func() bool { _, n := ack(col, "s1"); return n == 1 })
	col.Publish(base+"cmd", false, `{"requestId":"c1","command":"eligibilityCheck","body":{"plantId":"p1"}}`)
	col.Publish(base+"cmd", false, `{"requestId":"c2","command":"reboot"}`)
	col.Publish(base+"cmd", false, `{"requestId":"c3",`)
	col.Publish(base+"cmd", false, `{"requestId":"c4","command":"eligibilityCheck","body":"`+strings.Repeat("x", 2000)+`"}`)
	col.Publish(base+"cmd", false, `{"requestId":"c5","command":"schedules","plantId":"p1","extra":1}`)
	proctest.WaitFor(t, "acks", 10*time.Second, func() bool {
		_, n1 := ack(col, "c1")
		_, n2 := ack(col, "c2")
		_, n3 := ack(col, "")
		_, n4 := ack(col, "c4")
		_, n5 := ack(col, "c5")
		return n1 == 1 && n2 == 1 && n3 == 1 && n4 == 1 && n5 == 1
	})
	s1, _ := ack(col, "s1")
	if s1.Status != 501 || s1.Version != 1 || s1.Topic != "down/schedule/p1" || !strings.Contains(string(s1.Body), "not-implemented") {
		t.Errorf("schedule ack %+v %s", s1, s1.Body)
	}
	c1, _ := ack(col, "c1")
	if c1.Status != 200 || string(c1.Body) != `{"plantId":"p1"}` {
		t.Errorf("eligibilityCheck ack %+v %s", c1, c1.Body)
	}
	c2, _ := ack(col, "c2")
	if c2.Status != 400 || !strings.Contains(string(c2.Body), "unknown command") {
		t.Errorf("unknown command ack %+v %s", c2, c2.Body)
	}
	// Malformed (no request id to be read), oversized and with an unknown
	// field (both answered with their request id).
	var statuses []int
	for _, id := range []string{"", "c4", "c5"} {
		a, _ := ack(col, id)
		statuses = append(statuses, a.Status)
	}
	if fmt.Sprint(statuses) != "[400 413 400]" {
		t.Errorf("malformed, oversized, unknown field: statuses %v", statuses)
	}
	api.mu.Lock()
	if len(api.reqs) != 2 || !slices.Contains(api.reqs, `POST /gridcontrol/v1/plants/p1/schedules s1 {"commands":[]}`) {
		t.Errorf("requests %q", api.reqs)
	}
	api.mu.Unlock()

	// Reconnect: the retained schedule comes again and is not answered
	// again; a new version is.
	p.sever(false)
	proctest.WaitFor(t, "reconnect", 10*time.Second, func() bool { return u.Status().Connects >= 2 })
	col.Publish(base+"schedule/p1", true, `{"requestId":"s2","version":2,"schedule":{"commands":[]}}`)
	proctest.WaitFor(t, "ack of version 2", 10*time.Second, func() bool { _, n := ack(col, "s2"); return n == 1 })
	if _, n := ack(col, "s1"); n != 1 {
		t.Errorf("version 1 answered %d times", n)
	}
	// Clearing the retained schedule (an empty message) is not answered.
	col.Publish(base+"schedule/p1", true, ``)

	// A handler that blocks does not block the client: live values keep
	// flowing, further commands are queued or dropped (counted).
	col.Publish(base+"cmd", false, `{"requestId":"b1","command":"eligibilityCheck","body":"block"}`)
	proctest.WaitFor(t, "the blocking request", 5*time.Second, func() bool {
		api.mu.Lock()
		defer api.mu.Unlock()
		return strings.Contains(strings.Join(api.reqs, "\n"), "b1")
	})
	for range 100 {
		col.Client().Publish(base+"cmd", 1, false, `{"requestId":"x","command":"eligibilityCheck","body":{}}`)
	}
	live := col.Distinct("live/p1")
	proctest.WaitFor(t, "live values while a handler blocks", 5*time.Second, func() bool { return col.Distinct("live/p1") > live+10 })
	close(api.release)
	proctest.WaitFor(t, "the blocked request's ack", 10*time.Second, func() bool { _, n := ack(col, "b1"); return n == 1 })
	t.Logf("commands answered %d, dropped while blocked %d", u.Status().Commands, u.Status().CommandsDropped)
}

// gateAPI answers every request 200 with its body; a body "block" waits
// for one value on gate first.
type gateAPI struct {
	gate    chan struct{}
	blocked chan struct{}
}

func (g *gateAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if strings.Contains(string(b), "block") {
		g.blocked <- struct{}{}
		<-g.gate
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// TestCommandDropsLoggedPerBurst: bursts of commands while the worker is
// busy fill the queue of 64; the rest are dropped, counted, and said in
// one warning per burst with the count, however many were dropped.
func TestCommandDropsLoggedPerBurst(t *testing.T) {
	t.Parallel() // its own broker, store and uplink
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	api := &gateAPI{gate: make(chan struct{}), blocked: make(chan struct{}, 1)}
	cfg := fastConfig(b, "gw-drops")
	cfg.RemoteControl = true
	logs := newCountingHandler()
	u, err := New(cfg, Deps{Outbox: openStore(t, ""), Commands: api}, slog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	runUplink(t, u)
	proctest.WaitFor(t, "subscribed", 10*time.Second, u.subscribed.Load)
	dropLines := func() []string {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		var out []string
		for _, l := range logs.lines {
			if strings.Contains(l, "dropped") {
				out = append(out, l)
			}
		}
		return out
	}
	const topic = "plantd/v1/gw-drops/down/cmd"
	for i, n := range []int{500, 100, 65} {
		id := fmt.Sprint("burst", i)
		col.Publish(topic, false, `{"requestId":"`+id+`-block","command":"eligibilityCheck","body":"block"}`)
		<-api.blocked // the worker is busy
		before := u.Status().CommandsDropped
		var last interface{ Wait() bool }
		for range n {
			last = col.Client().Publish(topic, 1, false, `{"requestId":"`+id+`","command":"eligibilityCheck","body":{}}`)
		}
		last.Wait()
		want := uint64(n - cap(u.cmds))
		proctest.WaitFor(t, "every message of the burst received", 10*time.Second, func() bool {
			return u.Status().CommandsDropped-before+uint64(len(u.cmds)) == uint64(n)
		})
		if got := u.Status().CommandsDropped - before; got != want {
			t.Errorf("burst of %d: %d dropped, want %d", n, got, want)
		}
		api.gate <- struct{}{}
		proctest.WaitFor(t, "the queued commands answered", 10*time.Second, func() bool { return len(col.Acks(id)) == cap(u.cmds) })
		proctest.WaitFor(t, "the burst's drop warning", 10*time.Second, func() bool { return len(dropLines()) >= i+1 })
		lines := dropLines()
		if len(lines) != i+1 || !strings.Contains(lines[i], fmt.Sprintf(" dropped=%d ", want)) {
			t.Errorf("burst of %d: drop warnings %q, want one more with dropped=%d", n, lines, want)
		}
	}
}
