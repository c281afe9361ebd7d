package mqtt

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
	"plantd/plant"
	"plantd/store"
)

// floorWatch subscribes to a gateway's up/ topics and checks every
// message as it arrives against the durable floor in the store's
// database at that moment (the stream's floor; for live streams the
// live mark): the floor is committed, synced, before the publish, so a
// message above it was published first.
type floorWatch struct {
	t  *testing.T
	st *store.Store

	mu    sync.Mutex
	high  map[string]uint64
	above []string
}

func watchFloors(t *testing.T, b *mqtttest.Broker, st *store.Store, gw string) *floorWatch {
	w := &floorWatch{t: t, st: st, high: map[string]uint64{}}
	o := paho.NewClientOptions().AddBroker(b.URL()).SetClientID("floors-" + gw).SetOrderMatters(true)
	c := paho.NewClient(o)
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("watcher connect: %v", tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(0) })
	if tok := c.Subscribe("plantd/v1/"+gw+"/up/#", 1, w.handle); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("watcher subscribe: %v", tok.Error())
	}
	return w
}

func (w *floorWatch) handle(_ paho.Client, m paho.Message) {
	var e struct {
		Stream       string
		Seq, LastSeq uint64
	}
	if err := json.Unmarshal(m.Payload(), &e); err != nil || e.Seq == 0 {
		w.t.Errorf("bad envelope on %s: %v", m.Topic(), err)
		return
	}
	last := max(e.Seq, e.LastSeq)
	var floor uint64
	if strings.HasPrefix(e.Stream, "live/") {
		v, _, err := w.st.Mark(context.Background(), liveSeqMark)
		if err != nil {
			w.t.Errorf("read the live mark: %v", err)
		}
		floor = uint64(v)
	} else {
		f, err := w.st.SeqFloor(context.Background(), e.Stream)
		if err != nil {
			w.t.Errorf("read the floor of %s: %v", e.Stream, err)
		}
		floor = f
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.high[e.Stream] = max(w.high[e.Stream], last)
	if last > floor {
		w.above = append(w.above, fmt.Sprintf("%s seq %d above its floor %d", e.Stream, last, floor))
	}
}

func (w *floorWatch) highest(stream string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.high[stream]
}

// TestSeqsUnderDurableFloor: against mosquitto, no message arrives with
// a seq above the durable floor its stream had in the database at that
// moment: with a floor 8 seqs ahead, many reservations while a backlog
// of log entries and live values go out; a clean stop lowers the floor
// to the last seq numbered; the next run, at the default block, costs
// one synced write for the log stream and one for the live mark.
func TestSeqsUnderDurableFloor(t *testing.T) {
	t.Parallel() // its own broker, store and uplinks
	b := newBroker(t, nil)
	st := openStore(t, "")
	w := watchFloors(t, b, st, "gw-floor")
	cfg := fastConfig(b, "gw-floor")
	cfg.BatchBytes = 200 // a few items per message

	run := func(block uint64, from, n int) *Uplink {
		u, err := New(cfg, Deps{Outbox: st, Live: fakeLive{}}, testLogger())
		if err != nil {
			t.Fatal(err)
		}
		if block > 0 {
			u.seqBlock = block
		}
		live0 := w.highest("live/p1")
		stop := runUplink(t, u)
		// In waves of 50, each published before the next is logged: a
		// reservation each at a small block.
		for k := 0; k < n; k += 50 {
			for i := k; i < min(k+50, n); i++ {
				u.Log(plant.LogEntry{PlantID: "p1", Code: "Test", Message: fmt.Sprint(from + i)})
			}
			proctest.WaitFor(t, "a wave of log entries", 30*time.Second, func() bool {
				return w.highest("log/p1") >= uint64(from+min(k+50, n)-1)
			})
		}
		proctest.WaitFor(t, "live values", 30*time.Second, func() bool { return w.highest("live/p1") >= live0+3 })
		stop()
		return u
	}

	u1 := run(8, 1, 300)
	f, err := st.SeqFloor(t.Context(), "log/p1")
	if err != nil || f != 300 {
		t.Errorf("log/p1's floor after a clean stop: %d (%v), want 300, the last seq numbered", f, err)
	}
	n1 := u1.reservations.Load()
	u2 := run(0, 301, 100)
	n2 := u2.reservations.Load()
	w.mu.Lock()
	above := w.above
	w.mu.Unlock()
	t.Logf("block 8: %d synced reservations for 300 log seqs and %d live seqs; block 65536: %d for 100 more", n1, w.highest("live/p1"), n2)
	if len(above) > 0 {
		t.Errorf("%d messages above the durable floor, first %v", len(above), above[:min(len(above), 5)])
	}
	if n1 < 7 {
		t.Errorf("%d reservations with a block of 8 for 6 waves of 50 seqs, want at least 7 (a wave's and the live mark's): the floor was not kept close", n1)
	}
	if n2 != 2 {
		t.Errorf("%d reservations in a run at the default block, want 2 (log/p1 and the live mark)", n2)
	}
}
