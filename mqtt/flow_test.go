package mqtt

import (
	"fmt"
	"testing"
	"time"

	"plantd/mqtt/mqtttest"
	"plantd/plant"
)

// TestInFlightWindow: while no PUBACK comes back, no more than Window
// messages are published (the backlog is not pushed out at once), and
// once the PUBACKs flow every message arrives.
func TestInFlightWindow(t *testing.T) {
	t.Parallel() // its own broker, store and uplink
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	p := newProxy(t, b.Addr(), 0)
	st := openStore(t, "")
	cfg := fastConfig(b, "gw-window")
	cfg.Broker = p.url()
	cfg.Window, cfg.BatchBytes, cfg.PublishTimeout = 16, 1, 10*time.Second
	u, err := New(cfg, Deps{Outbox: st}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	runUplink(t, u)
	waitFor(t, 10*time.Second, "connected", u.connected.Load)
	// One message through and acknowledged first: the session is past its
	// online state (whose PUBACK it waits for) when the proxy freezes.
	u.Log(plant.LogEntry{PlantID: "p1", Code: "Test", Message: "0"})
	waitFor(t, 10*time.Second, "the first message acknowledged", func() bool {
		return col.Distinct("log/p1") == 1 && outboxDepth(t, st) == 0
	})
	p.frozen.Store(true)
	const n = 1000
	for i := 1; i < n; i++ {
		u.Log(plant.LogEntry{PlantID: "p1", Code: "Test", Message: fmt.Sprint(i)})
	}
	waitFor(t, 10*time.Second, "the first window", func() bool { return col.Distinct("log/p1") >= 1+16 })
	time.Sleep(time.Second)
	if d := col.Distinct("log/p1") - 1; d != 16 {
		t.Errorf("%d messages published without a PUBACK, want the window (16)", d)
	}
	p.frozen.Store(false)
	waitFor(t, 30*time.Second, "every message", func() bool { return col.Distinct("log/p1") >= n })
	distinct, dups, gaps := col.Check("log/p1", true)
	t.Logf("window 16: %d seqs, %d duplicates, gaps %v", distinct, dups, gaps)
	if distinct != n || len(gaps) > 0 {
		t.Errorf("%d of %d delivered, gaps %v", distinct, n, gaps)
	}
}

// TestBacklogRateCapLiveFirst: a backlog drains under its message rate
// cap while live values go out at every tick beside it.
func TestBacklogRateCapLiveFirst(t *testing.T) {
	t.Parallel() // its own broker, store and uplink
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	st := openStore(t, "")
	cfg := fastConfig(b, "gw-cap")
	cfg.BatchBytes = 1 // one outbox message per MQTT message
	cfg.BacklogMessagesPerSecond = 50
	u, err := New(cfg, Deps{Outbox: st, Live: fakeLive{}}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		u.Log(plant.LogEntry{PlantID: "p1", Code: "Test", Message: fmt.Sprint(i)})
	}
	runUplink(t, u)
	// After the first second's worth (the bucket starts full).
	waitFor(t, 10*time.Second, "the first live values and backlog", func() bool {
		return col.Distinct("live/p1") > 0 && col.Distinct("log/p1") > 60
	})
	log0, live0, start := col.Distinct("log/p1"), col.Distinct("live/p1"), time.Now()
	time.Sleep(3 * time.Second)
	el := time.Since(start).Seconds()
	logRate := float64(col.Distinct("log/p1")-log0) / el
	liveRate := float64(col.Distinct("live/p1")-live0) / el
	t.Logf("backlog %.0f messages/s under a cap of 50, live %.1f messages/s at a 50 ms tick (%d of 1000 log messages so far)",
		logRate, liveRate, col.Distinct("log/p1"))
	if logRate > 65 || logRate < 30 {
		t.Errorf("backlog drained at %.0f messages/s, cap 50", logRate)
	}
	if liveRate < 10 {
		t.Errorf("live values at %.1f messages/s behind the backlog, want about 20", liveRate)
	}
}
