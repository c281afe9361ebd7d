package powercut

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// Watcher subscribes to every gateway's up/ topics at a broker and
// records, per stream, the highest seq received and when: what plantd
// had published by a time is at least what the watcher received before
// it.
type Watcher struct {
	c  paho.Client
	mu sync.Mutex
	// seen are per stream the receipts that raised its highest seq, in
	// order of arrival.
	seen map[string][]receipt
}

type receipt struct {
	at  time.Time
	seq uint64
}

// Watch connects a watcher to the broker at addr (HOST:PORT) and
// subscribes to plantd/v1/+/up/# (QoS 1).
func Watch(ctx context.Context, addr string) (*Watcher, error) {
	w := &Watcher{seen: map[string][]receipt{}}
	o := paho.NewClientOptions().AddBroker("tcp://" + addr).
		SetClientID(fmt.Sprintf("powercut-%d", time.Now().UnixNano())).
		SetAutoReconnect(true).SetOrderMatters(false).
		SetOnConnectHandler(func(c paho.Client) { c.Subscribe("plantd/v1/+/up/#", 1, w.handle) })
	w.c = paho.NewClient(o)
	tok := w.c.Connect()
	select {
	case <-tok.Done():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := tok.Error(); err != nil {
		return nil, fmt.Errorf("powercut: watch broker %s: %w", addr, err)
	}
	// A round trip: the subscription is in place after its PUBACK.
	probe := w.c.Publish("plantd/v1/powercut-probe/up/probe", 1, false, "{}")
	probe.WaitTimeout(10 * time.Second)
	return w, nil
}

func (w *Watcher) handle(_ paho.Client, m paho.Message) {
	at := time.Now()
	var e struct {
		Stream       string
		Seq, LastSeq uint64
	}
	if json.Unmarshal(m.Payload(), &e) != nil || e.Seq == 0 || e.Stream == "" {
		return
	}
	last := max(e.Seq, e.LastSeq)
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.seen[e.Stream]
	if len(r) == 0 || r[len(r)-1].seq < last {
		w.seen[e.Stream] = append(r, receipt{at, last})
	}
}

// Before returns per stream the highest seq received before t.
func (w *Watcher) Before(t time.Time) map[string]uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]uint64{}
	for name, rs := range w.seen {
		i := sort.Search(len(rs), func(i int) bool { return !rs[i].at.Before(t) })
		if i > 0 {
			out[name] = rs[i-1].seq
		}
	}
	return out
}

// Close disconnects.
func (w *Watcher) Close() { w.c.Disconnect(0) }

// Reused names the streams whose seqs published (highest per stream)
// plantd could hand out again when it starts on st after a power cut:
// an outbox stream whose next seq after a reboot (NextAfterReboot) is
// at or below its highest published one, a live stream whose highest
// published seq is above the live mark (the next run numbers live
// streams above the mark).
func (st State) Reused(published map[string]uint64) []string {
	var out []string
	for name, hi := range published {
		if strings.HasPrefix(name, "live/") {
			if int64(hi) > st.LiveMark {
				out = append(out, fmt.Sprintf("%s: published up to %d, live mark %d", name, hi, st.LiveMark))
			}
			continue
		}
		if next := st.Outbox[name].NextAfterReboot(); next <= int64(hi) {
			out = append(out, fmt.Sprintf("%s: published up to %d, next start numbers from %d", name, hi, next))
		}
	}
	sort.Strings(out)
	return out
}
