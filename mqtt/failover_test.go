package mqtt

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
)

// TestFailover: an uplink with three brokers, as the nodes of a cluster
// (no bridge: a collector subscribes at each). The broker in use is killed
// (SIGKILL) mid-stream, twice: each time the uplink moves to another one
// within seconds, and across the brokers every seq of the log stream
// arrives but those a killed broker acknowledged (PUBACK) and died before
// forwarding: those are the broker's to keep (a cluster that replicates
// before it acknowledges), not plantd's; a tap between plantd and each
// broker sees the PUBACKs. The messages left unacknowledged by the dead
// broker arrive again (duplicates).
func TestFailover(t *testing.T) {
	t.Parallel() // its own brokers, store and uplink
	var (
		brokers []*mqtttest.Broker
		cols    []*mqtttest.Collector
		urls    []string
	)
	var taps []*pubackTap
	for range 3 {
		b := newBroker(t, nil)
		brokers = append(brokers, b)
		cols = append(cols, mqtttest.Collect(t, b))
		tp := newPubackTap(t, b.Addr())
		taps = append(taps, tp)
		urls = append(urls, tp.url())
	}
	st := openStore(t, "")
	cfg := fastConfig(brokers[0], "gw-failover")
	cfg.Broker, cfg.Brokers = "", urls
	u, err := New(cfg, Deps{Outbox: st, Live: fakeLive{}}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	stop := runUplink(t, u)
	stopLogging := logSteadily(t, u)
	// union is the distinct seqs of a stream across the brokers and the
	// number of duplicates.
	union := func(stream string) (map[uint64]bool, int) {
		seen, dups := map[uint64]bool{}, 0
		for _, c := range cols {
			for _, s := range c.Seqs(stream) {
				if seen[s] {
					dups++
				}
				seen[s] = true
			}
		}
		return seen, dups
	}
	inUse := func() int {
		st := u.Status()
		if !st.Connected {
			return -1
		}
		return slices.Index(urls, st.Broker)
	}
	proctest.WaitFor(t, "first messages", 10*time.Second, func() bool {
		seen, _ := union("log/p1")
		return inUse() >= 0 && len(seen) > 50
	})
	var killed []int
	for round := range 2 {
		i := inUse()
		if i < 0 {
			t.Fatalf("round %d: not connected: %+v", round, u.Status())
		}
		connects := u.Status().Connects
		before := len(cols[i].Seqs("log/p1"))
		if before == 0 {
			t.Fatalf("round %d: broker %d in use has carried nothing", round, i)
		}
		killedAt := time.Now()
		brokers[i].Kill()
		killed = append(killed, i)
		var next int
		proctest.WaitFor(t, "the uplink on another broker", 10*time.Second, func() bool {
			next = inUse()
			return next >= 0 && next != i && u.Status().Connects > connects
		})
		t.Logf("round %d: broker %d killed after %d log seqs; the uplink on broker %d after %v", round, i, before, next,
			time.Since(killedAt).Round(time.Millisecond))
		n := len(cols[next].Seqs("log/p1"))
		proctest.WaitFor(t, "log messages through the new broker", 10*time.Second, func() bool { return len(cols[next].Seqs("log/p1")) > n+50 })
		brokers[i].Start() // back for the next round's choice
	}
	n := stopLogging()
	proctest.WaitFor(t, "an empty log stream in the outbox", 30*time.Second, func() bool { return outboxDepth(t, st, "log/p1") == 0 })
	// What the brokers acknowledged reaches their collectors (on loopback
	// at once): a missing seq is reported after a few seconds.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if seen, _ := union("log/p1"); len(seen) >= n {
			break
		}
	}
	stop()
	seen, dups := union("log/p1")
	var missing, lostByBroker []uint64
	for s := uint64(1); s <= uint64(n); s++ {
		switch {
		case seen[s]:
		case slices.ContainsFunc(killed, func(i int) bool { return taps[i].acked("log/p1", s) }):
			lostByBroker = append(lostByBroker, s)
		default:
			missing = append(missing, s)
		}
	}
	t.Logf("log/p1: %d entries logged, %d distinct seqs across 3 brokers, %d duplicates, %d missing, %d acknowledged by a killed broker and lost with it %v; %d connection attempts, %d connections",
		n, len(seen), dups, len(missing), len(lostByBroker), lostByBroker, u.Status().Attempts, u.Status().Connects)
	if len(missing) > 0 {
		t.Errorf("log/p1: missing seqs (not acknowledged by a killed broker) %v", missing[:min(len(missing), 20)])
		for i, c := range cols {
			seqs := c.Seqs("log/p1")
			t.Logf("broker %d: %d seqs, first %v, last %v", i, len(seqs), seqs[:min(len(seqs), 3)], seqs[max(len(seqs)-3, 0):])
		}
	}
	if len(seen)+len(lostByBroker) != n {
		t.Errorf("log/p1: %d distinct seqs and %d lost by a broker, %d entries logged", len(seen), len(lostByBroker), n)
	}
	if st := u.Status(); st.Connects < 3 || !slices.Contains(urls, st.Broker) {
		t.Errorf("status after two failovers: %d connections, broker %q", st.Connects, st.Broker)
	}
}

// TestBrokersConfig: Broker and Brokers are alternatives; an empty URL in
// the list is refused.
func TestBrokersConfig(t *testing.T) {
	st := openStore(t, "")
	for _, tt := range []struct {
		name    string
		cfg     Config
		want    []string
		wantErr bool
	}{
		{"broker", Config{Broker: "tcp://a:1883"}, []string{"tcp://a:1883"}, false},
		{"brokers", Config{Brokers: []string{"tcp://a:1883", "tcp://b:1883"}}, []string{"tcp://a:1883", "tcp://b:1883"}, false},
		{"both", Config{Broker: "tcp://a:1883", Brokers: []string{"tcp://b:1883"}}, nil, true},
		{"none", Config{}, nil, true},
		{"an empty one", Config{Brokers: []string{"tcp://a:1883", ""}}, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.GatewayID = "gw"
			u, err := New(tt.cfg, Deps{Outbox: st}, nil)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("no error, brokers %v", u.cfg.Brokers)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(u.cfg.Brokers, tt.want) {
				t.Errorf("brokers %v, want %v", u.cfg.Brokers, tt.want)
			}
		})
	}
}

// pubackTap forwards TCP connections to a broker and reads the MQTT
// packets both ways: which (stream, seq) each QoS 1 PUBLISH of plantd
// carried (seq..lastSeq), and which of them the broker acknowledged. A
// connection ends when either side closes.
type pubackTap struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	ackedS map[string]map[uint64]bool // stream → seqs acknowledged
}

func newPubackTap(t testing.TB, target string) *pubackTap {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pubackTap{ln: ln, target: target, ackedS: map[string]map[uint64]bool{}}
	go p.serve()
	t.Cleanup(func() { ln.Close() })
	return p
}

func (p *pubackTap) url() string { return "tcp://" + p.ln.Addr().String() }

// acked reports whether the broker acknowledged seq of stream.
func (p *pubackTap) acked(stream string, seq uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ackedS[stream][seq]
}

func (p *pubackTap) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		// The envelopes in flight on this connection, by packet id.
		var mu sync.Mutex
		inFlight := map[uint16]tapEnvelope{}
		go func() {
			defer s.Close()
			defer c.Close()
			tapPackets(c, s, func(typ byte, flags byte, body []byte) {
				if typ != 3 || (flags>>1)&3 != 1 || len(body) < 2 {
					return
				}
				tl := int(binary.BigEndian.Uint16(body))
				if len(body) < 2+tl+2 {
					return
				}
				id := binary.BigEndian.Uint16(body[2+tl:])
				var e tapEnvelope
				if json.Unmarshal(body[2+tl+2:], &e) == nil && e.Seq > 0 {
					mu.Lock()
					inFlight[id] = e
					mu.Unlock()
				}
			})
		}()
		go func() {
			defer c.Close()
			defer s.Close()
			tapPackets(s, c, func(typ byte, _ byte, body []byte) {
				if typ != 4 || len(body) < 2 {
					return
				}
				id := binary.BigEndian.Uint16(body)
				mu.Lock()
				e, ok := inFlight[id]
				delete(inFlight, id)
				mu.Unlock()
				if !ok {
					return
				}
				p.mu.Lock()
				if p.ackedS[e.Stream] == nil {
					p.ackedS[e.Stream] = map[uint64]bool{}
				}
				for q := e.Seq; q <= max(e.LastSeq, e.Seq); q++ {
					p.ackedS[e.Stream][q] = true
				}
				p.mu.Unlock()
			})
		}()
	}
}

// tapEnvelope is what the tap reads of an envelope.
type tapEnvelope struct {
	Stream       string
	Seq, LastSeq uint64
}

// tapPackets copies MQTT packets from src to dst, each whole, and hands
// each packet's type, flags and body to seen before it is written.
func tapPackets(src io.Reader, dst io.Writer, seen func(typ, flags byte, body []byte)) {
	r := bufio.NewReader(src)
	for {
		h, err := r.ReadByte()
		if err != nil {
			return
		}
		hdr := []byte{h}
		n, mul := 0, 1
		for {
			b, err := r.ReadByte()
			if err != nil {
				return
			}
			hdr = append(hdr, b)
			n += int(b&127) * mul
			mul *= 128
			if b&128 == 0 {
				break
			}
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		// Seen before it is passed on: a PUBLISH must be in flight
		// before the broker's PUBACK can come back (seen after the
		// write, a quick PUBACK found no PUBLISH and went unrecorded).
		seen(h>>4, h&15, body)
		if _, err := dst.Write(append(hdr, body...)); err != nil {
			return
		}
	}
}
