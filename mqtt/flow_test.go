package mqtt

import (
	"fmt"
	"testing"
	"time"

	"plantd/internal/proctest"
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
	proctest.WaitFor(t, "connected", 10*time.Second, u.connected.Load)
	// One message through and acknowledged first: the session is past its
	// online state (whose PUBACK it waits for) when the proxy freezes.
	u.Log(plant.LogEntry{PlantID: "p1", Code: "Test", Message: "0"})
	proctest.WaitFor(t, "the first message acknowledged", 10*time.Second, func() bool {
		return col.Distinct("log/p1") == 1 && outboxDepth(t, st) == 0
	})
	p.freeze()
	const n = 1000
	for i := 1; i < n; i++ {
		u.Log(plant.LogEntry{PlantID: "p1", Code: "Test", Message: fmt.Sprint(i)})
	}
	proctest.WaitFor(t, "the first window", 10*time.Second, func() bool { return col.Distinct("log/p1") >= 1+16 })
	// Every message in the outbox, and a fill of the sender after that
	// has completed: it published nothing beyond the window.
	proctest.WaitFor(t, "every message in the outbox", 10*time.Second, func() bool { return outboxDepth(t, st, "log/p1") == n-1 })
	senderTurns(t, u, 2)
	if p := u.Status().Published - 1; p != 16 {
		t.Errorf("%d messages published without a PUBACK, want the window (16)", p)
	}
	if d := col.Distinct("log/p1") - 1; d != 16 {
		t.Errorf("%d messages at the broker without a PUBACK, want the window (16)", d)
	}
	p.thaw()
	proctest.WaitFor(t, "every message", 30*time.Second, func() bool { return col.Distinct("log/p1") >= n })
	distinct, dups, gaps := col.Check("log/p1", true)
	t.Logf("window 16: %d seqs, %d duplicates, gaps %v", distinct, dups, gaps)
	if distinct != n || len(gaps) > 0 {
		t.Errorf("%d of %d delivered, gaps %v", distinct, n, gaps)
	}
}

// senderTurns wakes the session's loop k times, each after it took the
// last wake-up: after the second, the fill of the first has completed
// (the loop takes a wake-up only between fills).
func senderTurns(t *testing.T, u *Uplink, k int) {
	t.Helper()
	for range k {
		u.notify()
		proctest.WaitFor(t, "the sender to take a wake-up", 10*time.Second, func() bool { return len(u.wake) == 0 })
	}
}

// TestBacklogRateCapLiveFirst: a backlog drains under its message rate
// cap while live values go out at every tick beside it. The test waits
// for messages, not for time: by any moment the cap allows at most a
// second's worth (the bucket starts full) plus the cap times the time
// since the start, whatever the load; and while 150 backlog messages
// drain (3 s at the cap) live values keep arriving.
func TestBacklogRateCapLiveFirst(t *testing.T) {
	t.Parallel() // its own broker, store and uplink
	const capRate = 50
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	st := openStore(t, "")
	cfg := fastConfig(b, "gw-cap")
	cfg.BatchBytes = 1 // one outbox message per MQTT message
	cfg.BacklogMessagesPerSecond = capRate
	u, err := New(cfg, Deps{Outbox: st, Live: fakeLive{}}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		u.Log(plant.LogEntry{PlantID: "p1", Code: "Test", Message: fmt.Sprint(i)})
	}
	start := time.Now()
	runUplink(t, u)
	// After the first second's worth.
	proctest.WaitFor(t, "the first live values and backlog", 10*time.Second, func() bool {
		return col.Distinct("live/p1") > 0 && col.Distinct("log/p1") > capRate+10
	})
	log0, live0 := col.Distinct("log/p1"), col.Distinct("live/p1")
	proctest.WaitFor(t, "150 more backlog messages", 30*time.Second, func() bool { return col.Distinct("log/p1") >= log0+150 })
	el := time.Since(start)
	logs, lives := col.Distinct("log/p1"), col.Distinct("live/p1")-live0
	t.Logf("%d backlog messages in %s under a cap of %d/s (at most %.0f allowed), %d live messages beside the last 150",
		logs, el.Round(time.Millisecond), capRate, capRate*(1+el.Seconds()), lives)
	if float64(logs) > capRate*(1+el.Seconds())+2 {
		t.Errorf("%d backlog messages %s after the start, more than the cap of %d/s allows", logs, el.Round(time.Millisecond), capRate)
	}
	if lives < 10 {
		t.Errorf("%d live messages while 150 backlog messages drained (3 s at the cap, a 50 ms tick): live values wait behind the backlog", lives)
	}
}
