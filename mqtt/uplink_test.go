package mqtt

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
	"plantd/plant"
	"plantd/store"
)

// fakeLive is a plant "p1" with one device "inv1" whose values are new at
// every call.
type fakeLive struct{}

func (fakeLive) Plants() []plant.Plant {
	return []plant.Plant{{ID: "p1", Name: "P1", Location: time.UTC}}
}
func (fakeLive) EnergyBalance(string) (plant.Balance, error) {
	pv := 1234.5
	return plant.Balance{PlantID: "p1", Time: time.Now(), PVGenerationW: &pv}, nil
}
func (fakeLive) Devices(string) ([]plant.DeviceLive, error) {
	return []plant.DeviceLive{{Info: plant.DeviceInfo{ID: "inv1", PlantID: "p1"}, LastUpdate: time.Now(),
		Readings: []plant.Reading{{Channel: plant.ActivePower, Value: 1000}}}}, nil
}

// fastConfig is a config for tests: quick live ticks and reconnects, no
// rate cap.
func fastConfig(b *mqtttest.Broker, gw string) Config {
	return Config{Broker: b.URL(), GatewayID: gw, LiveInterval: 50 * time.Millisecond,
		BackoffMin: 200 * time.Millisecond, BackoffMax: time.Second, ConnectTimeout: 2 * time.Second, PublishTimeout: 5 * time.Second,
		BacklogMessagesPerSecond: -1, BacklogBytesPerSecond: -1, KeepAlive: 2 * time.Second}
}

// outage is how long the outage test stops the broker
// (PLANTD_MQTT_OUTAGE=60s for the long run).
func outage(t *testing.T) time.Duration {
	if s := os.Getenv("PLANTD_MQTT_OUTAGE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return 3 * time.Second
}

// TestOutage: a broker stopped and restarted while live values and log
// entries keep coming; afterwards every seq of the log stream arrived, in
// order, duplicates only as repeated seqs; live values were coalesced
// while offline, none replayed: a live stream's only gaps are the live
// messages left unacknowledged by the outage, dropped and counted.
func TestOutage(t *testing.T) {
	t.Parallel() // its own broker, store and uplink
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	st := openStore(t, "")
	u, err := New(fastConfig(b, "gw-outage"), Deps{Outbox: st, Live: fakeLive{}}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	stop := runUplink(t, u)
	stopLogging := logSteadily(t, u)
	proctest.WaitFor(t, "first messages", 10*time.Second, func() bool { return col.Distinct("log/p1") > 50 && col.Distinct("live/p1") > 5 })
	b.Stop()
	liveBefore := col.Distinct("live/p1")
	time.Sleep(outage(t))
	b.Start()
	proctest.WaitFor(t, "reconnect", 30*time.Second, func() bool { return u.Status().Connects >= 2 })
	proctest.WaitFor(t, "live after the outage", 10*time.Second, func() bool { return col.Distinct("live/p1") > liveBefore+5 })
	n := stopLogging()
	proctest.WaitFor(t, "every log entry", 30*time.Second, func() bool { return col.Distinct("log/p1") >= n })
	// Live values keep coming every 50 ms, so only the log stream empties.
	proctest.WaitFor(t, "an empty log stream in the outbox", 30*time.Second, func() bool { return outboxDepth(t, st, "log/p1") == 0 })
	stop()
	dropped := map[string]uint64{}
	for _, s := range u.Status().Streams {
		dropped[s.Stream] = s.Dropped
	}
	for _, s := range []string{"log/p1", "live/p1", "live/devices/inv1"} {
		distinct, dups, gaps := col.Check(s, true)
		t.Logf("stream %s: %d seqs, %d duplicates, %d gaps, %d historical messages, %d dropped", s, distinct, dups, len(gaps), col.Historical(s), dropped[s])
		// A live stream's gaps are the live messages queued before the
		// outage and dropped (counted) rather than replayed late.
		if uint64(len(gaps)) > dropped[s] {
			t.Errorf("stream %s: missing seqs %v, %d dropped", s, gaps[:min(len(gaps), 20)], dropped[s])
		}
		if strings.HasPrefix(s, "live/") && col.Historical(s) > 0 {
			t.Errorf("stream %s: %d live messages replayed as historical", s, col.Historical(s))
		}
	}
	if d := col.Distinct("log/p1"); d != n {
		t.Errorf("log entries: %d delivered, %d logged", d, n)
	}
	// Live was coalesced: about one live message per tick while online,
	// none queued while offline.
	// The offline state was acknowledged by the broker before stop
	// returned; it reaches the collector a moment later.
	proctest.WaitFor(t, "the offline state after a clean stop", 30*time.Second, func() bool { s, ok := col.LastState(); return ok && s.State == "offline" })
	t.Logf("status: %+v", u.Status())
}

// TestBacklogAfterKill: 10,000 messages left in the outbox by a killed
// plantd (written, never published) are all delivered after the restart,
// in order, marked historical.
func TestBacklogAfterKill(t *testing.T) {
	t.Parallel() // its own broker, store and uplink
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	path := t.TempDir() + "/plantd.db"
	st := openStore(t, path)
	const n = 10000
	msgs := make([]store.OutboxAppend, 0, n)
	for i := range n {
		msgs = append(msgs, store.OutboxAppend{Stream: "log/p1", Payload: fmt.Appendf(nil, `[{"code":"Test","message":"%d"}]`, i+1)})
	}
	if _, err := st.EnqueueBatch(t.Context(), msgs, nil); err != nil {
		t.Fatal(err)
	}
	cfg := fastConfig(b, "gw-kill")
	u, err := New(cfg, Deps{Outbox: st}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	runUplink(t, u)
	proctest.WaitFor(t, "the backlog", 60*time.Second, func() bool { return col.Distinct("log/p1") >= n })
	el := time.Since(start)
	proctest.WaitFor(t, "an empty outbox", 30*time.Second, func() bool { return outboxDepth(t, st) == 0 })
	distinct, dups, gaps := col.Check("log/p1", true)
	if distinct != n || len(gaps) > 0 {
		t.Errorf("%d of %d delivered, gaps %v", distinct, n, gaps[:min(10, len(gaps))])
	}
	items := col.Items("log/p1")
	t.Logf("%d messages (%d items, %d duplicates) in %s: %.0f/s; %d MQTT messages, all historical: %v",
		distinct, items, dups, el.Round(time.Millisecond), float64(n)/el.Seconds(), u.Status().Published, col.Historical("log/p1") == int(u.Status().Published))
}

// TestOutboxCaps: with the broker unreachable, the per-stream caps drop
// the oldest messages of the rollup and log streams by count and by age,
// count every drop per stream and log it; the ack stream is never
// trimmed; live rows in the outbox (left by a plantd that queued live
// values there) are all dropped, counted and logged; and handing log
// entries to an uplink at its cap never blocks.
func TestOutboxCaps(t *testing.T) {
	t.Parallel() // its own store and uplink
	st := openStore(t, "")
	old := time.Now().Add(-2 * time.Hour)
	var msgs []store.OutboxAppend
	add := func(stream string, n int, created time.Time) {
		for range n {
			msgs = append(msgs, store.OutboxAppend{Stream: stream, Payload: []byte(`[{"x":1}]`), Created: created})
		}
	}
	add("log/p1", 200, time.Now())
	add("ack", 200, old)
	add("rollup/p1", 5, old)
	add("rollup/p1", 25, time.Now())
	add("live/p1", 150, time.Now())
	if _, err := st.EnqueueBatch(t.Context(), msgs, nil); err != nil {
		t.Fatal(err)
	}
	h := newCountingHandler()
	cfg := Config{Broker: fmt.Sprintf("tcp://127.0.0.1:%d", proctest.FreePort(t)), GatewayID: "gw-caps", MaxRows: 120, MaxAge: time.Hour,
		BackoffMin: time.Second, BackoffMax: time.Second}
	u, err := New(cfg, Deps{Outbox: st}, slog.New(h))
	if err != nil {
		t.Fatal(err)
	}
	runUplink(t, u)
	want := []struct {
		stream         string
		depth, dropped int
	}{
		{"ack", 200, 0},      // never trimmed, however old
		{"live/p1", 0, 150},  // live rows of an older plantd: all
		{"log/p1", 120, 80},  // by count (MaxRows)
		{"rollup/p1", 25, 5}, // by age
	}
	got := func() map[string]StreamStatus {
		m := map[string]StreamStatus{}
		for _, s := range u.Status().Streams {
			m[s.Stream] = s
		}
		return m
	}
	proctest.WaitFor(t, "the caps applied", 30*time.Second, func() bool {
		g := got()
		for _, w := range want {
			if g[w.stream].Depth != w.depth {
				return false
			}
		}
		return true
	})
	g := got()
	for _, w := range want {
		if s := g[w.stream]; s.Dropped != uint64(w.dropped) {
			t.Errorf("%s: %d dropped, want %d", w.stream, s.Dropped, w.dropped)
		}
	}
	var dropLines, liveLines int
	h.mu.Lock()
	for _, l := range h.lines {
		if strings.Contains(l, "outbox cap reached") {
			dropLines++
		}
		if strings.Contains(l, "live messages left in the outbox dropped") {
			liveLines++
		}
	}
	h.mu.Unlock()
	if dropLines != 2 || liveLines != 1 {
		t.Errorf("%d log lines about drops by the caps and %d about live rows, want one per trimmed stream (2 and 1): %q", dropLines, liveLines, h.lines)
	}
	// At the cap and offline, handing over log entries never waits: for
	// a broker that does not come back, that is, for ever. (The bound ends
	// a test whose hand-over waits; it is not the hand-over's speed.)
	handed := make(chan struct{})
	go func() {
		defer close(handed)
		for i := range 10000 {
			u.Log(plant.LogEntry{PlantID: "p1", Code: "Test", Message: fmt.Sprint(i)})
		}
	}()
	select {
	case <-handed:
	case <-time.After(30 * time.Second):
		t.Fatal("handing over 10,000 log entries to an offline uplink at its cap still waits 30 s later")
	}
	t.Logf("status: %d log entries refused while the queue was full", u.Status().LogDropped)
}

// TestLiveNeverReplayed: live messages published but not acknowledged
// when their connection ended (a link that hung, then a reconnect; or a
// plantd stopped while its link hung, then a restart) are never published
// again, and never as historical: the live streams carry current values
// only; the messages given up are counted per stream, and a restart
// numbers its live messages above every seq of the run before.
func TestLiveNeverReplayed(t *testing.T) {
	t.Parallel() // its own brokers, stores and uplinks
	liveStreams := []string{"live/p1", "live/devices/inv1"}
	for _, tc := range []struct {
		name    string
		restart bool
	}{
		{"a restart", true},
		{"a reconnect", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBroker(t, nil)
			col := mqtttest.Collect(t, b)
			p := newProxy(t, b.Addr(), 0)
			st := openStore(t, "")
			gw := "gw-live-" + strings.ReplaceAll(tc.name, " ", "-")
			cfg := fastConfig(b, gw)
			cfg.Broker = p.url()
			cfg.PublishTimeout = 2 * time.Second
			u, err := New(cfg, Deps{Outbox: st, Live: fakeLive{}}, testLogger())
			if err != nil {
				t.Fatal(err)
			}
			stop := runUplink(t, u)
			proctest.WaitFor(t, "live values", 10*time.Second, func() bool { return col.Distinct("live/p1") >= 3 && col.Distinct("live/devices/inv1") >= 3 })
			// The link hangs: live messages go out, no PUBACK comes back
			// for those published after the freeze.
			// The PUBACKs of the messages published after the freeze
			// are held (those of earlier ones may pass).
			p.freeze()
			frozen := map[string]uint64{}
			u.live.mu.Lock()
			for _, s := range liveStreams {
				frozen[s] = u.live.streams[s].seq
			}
			u.live.mu.Unlock()
			proctest.WaitFor(t, "two live messages per stream published after the freeze", 10*time.Second, func() bool {
				for _, s := range liveStreams {
					if seqs := col.Seqs(s); len(seqs) == 0 || slices.Max(seqs) < frozen[s]+2 {
						return false
					}
				}
				return true
			})
			if tc.restart {
				stop()
			} else {
				proctest.WaitFor(t, "the connection given up", 30*time.Second, func() bool { return !u.connected.Load() })
			}
			// What the connection that ended had in flight is given up:
			// counted (1 waiting message at most per stream is not, it
			// was never numbered).
			given := map[string]uint64{}
			for _, s := range u.Status().Streams {
				given[s.Stream] = s.Dropped
			}
			high := map[string]uint64{}
			for _, s := range liveStreams {
				if given[s] < 2 {
					t.Errorf("%s: %d given up when the connection ended, want the ones in flight (2 or more)", s, given[s])
				}
				high[s] = slices.Max(col.Seqs(s))
			}
			p.thaw()
			if tc.restart {
				if u, err = New(cfg, Deps{Outbox: st, Live: fakeLive{}}, testLogger()); err != nil {
					t.Fatal(err)
				}
				runUplink(t, u)
			}
			proctest.WaitFor(t, "a new connection", 30*time.Second, func() bool { return u.Status().Connected && u.Status().Published > 0 })
			before := map[string]int{}
			for _, s := range liveStreams {
				before[s] = col.Distinct(s)
			}
			proctest.WaitFor(t, "live values on the new connection", 10*time.Second, func() bool {
				return col.Distinct("live/p1") >= before["live/p1"]+3 && col.Distinct("live/devices/inv1") >= before["live/devices/inv1"]+3
			})
			for _, s := range liveStreams {
				if h := col.Historical(s); h != 0 {
					t.Errorf("%s: %d messages sent as historical, want none", s, h)
				}
				// Sent once: the frozen link held only the PUBACKs, so
				// the broker had every message; one sent again would be a
				// duplicate, and an old seq after the new ones a replay.
				_, dups, _ := col.Check(s, false)
				if dups != 0 {
					t.Errorf("%s: %d seqs arrived twice: live messages sent again", s, dups)
				}
				seqs := col.Seqs(s)
				if !slices.IsSorted(seqs) {
					t.Errorf("%s: seqs out of order (a replay): %v", s, seqs)
				}
				if tc.restart && seqs[before[s]] <= high[s] {
					t.Errorf("%s: the restart's first live seq %d is not above the last run's %d", s, seqs[before[s]], high[s])
				}
				if n := outboxDepth(t, st, s); n != 0 {
					t.Errorf("%s: %d live messages in the outbox", s, n)
				}
			}
		})
	}
}
