// Command mqtt-subscriber is a reference consumer of plantd's MQTT uplink,
// written from docs/mqtt.md alone (it imports no plantd package). It
// subscribes to plantd/# (QoS 1), and checks per gateway and stream that
// the sequence numbers have no gaps and arrive in order, printing every
// gap, late arrival and duplicate as it sees it and a summary per stream
// at the end. Exit status 1 when a stream still has gaps at the end.
//
//	go run ./scripts/mqtt-subscriber -broker tcp://127.0.0.1:1883 -for 60s
//
// With -session NAME it keeps a persistent session (clean session off)
// under that client id, so that a broker with persistence queues messages
// for it while it is away; MQTT_PASSWORD gives the password of -user.
//
// Imports: none
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// envelope is what plantd publishes on up/... topics.
type envelope struct {
	GatewayID  string            `json:"gatewayId"`
	BootID     string            `json:"bootId"`
	Stream     string            `json:"stream"`
	Seq        uint64            `json:"seq"`
	LastSeq    uint64            `json:"lastSeq"`
	Historical bool              `json:"historical"`
	Items      []json.RawMessage `json:"items"`
}

// stream is what was seen of one (gateway, stream).
type stream struct {
	seen                  map[uint64]bool
	first, high           uint64
	messages, items, dups int
	late, historical      int
}

type checker struct {
	mu      sync.Mutex
	streams map[string]*stream
	from1   bool
	quiet   bool
	states  map[string]string
}

func (c *checker) handle(m paho.Message) {
	topic := m.Topic()
	c.mu.Lock()
	defer c.mu.Unlock()
	if strings.HasSuffix(topic, "/state") {
		var s struct{ GatewayID, State, BootID string }
		json.Unmarshal(m.Payload(), &s)
		if c.states[s.GatewayID] != s.State && !c.quiet {
			fmt.Printf("state   %s %s (boot %s)\n", s.GatewayID, s.State, s.BootID)
		}
		c.states[s.GatewayID] = s.State
		return
	}
	if !strings.Contains(topic, "/up/") {
		return
	}
	var e envelope
	if err := json.Unmarshal(m.Payload(), &e); err != nil || e.Stream == "" || e.Seq == 0 {
		fmt.Printf("bad     %s: not an envelope: %v\n", topic, err)
		return
	}
	key := e.GatewayID + " " + e.Stream
	s := c.streams[key]
	if s == nil {
		s = &stream{seen: map[uint64]bool{}, first: e.Seq}
		if c.from1 {
			s.first = 1
		}
		c.streams[key] = s
	}
	s.messages++
	s.items += len(e.Items)
	if e.Historical {
		s.historical++
	}
	last := max(e.LastSeq, e.Seq)
	for seq := e.Seq; seq <= last; seq++ {
		switch {
		case s.seen[seq]:
			s.dups++
			if !c.quiet {
				fmt.Printf("dup     %s seq %d\n", key, seq)
			}
		case seq < s.high:
			s.late++
			s.seen[seq] = true
			fmt.Printf("late    %s seq %d after %d (fills a gap)\n", key, seq, s.high)
		default:
			if s.high > 0 && seq > s.high+1 {
				fmt.Printf("gap     %s seq %d..%d missing so far\n", key, s.high+1, seq-1)
			}
			s.seen[seq] = true
			s.high = seq
		}
		s.first = min(s.first, seq)
	}
}

// ranges formats missing seqs as a..b runs.
func ranges(missing []uint64) string {
	var parts []string
	for i := 0; i < len(missing); {
		j := i
		for j+1 < len(missing) && missing[j+1] == missing[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, fmt.Sprint(missing[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d..%d", missing[i], missing[j]))
		}
		i = j + 1
	}
	if len(parts) > 20 {
		parts = append(parts[:20], "...")
	}
	return strings.Join(parts, ",")
}

// summary prints one line per stream; it reports whether every stream is
// complete.
func (c *checker) summary() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.streams))
	for k := range c.streams {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ok := true
	fmt.Printf("%-40s %10s %10s %8s %8s %6s %6s %s\n", "gateway stream", "seqs", "messages", "items", "histor.", "dups", "late", "missing")
	for _, k := range keys {
		s := c.streams[k]
		var missing []uint64
		for seq := s.first; seq <= s.high; seq++ {
			if !s.seen[seq] {
				missing = append(missing, seq)
			}
		}
		// A live stream's gaps are live messages plantd dropped rather
		// than replay late (docs/mqtt.md); they are shown, not failed.
		if _, stream, _ := strings.Cut(k, " "); len(missing) > 0 && !strings.HasPrefix(stream, "live/") {
			ok = false
		}
		fmt.Printf("%-40s %10s %10d %8d %8d %6d %6d %d %s\n", k, fmt.Sprintf("%d..%d", s.first, s.high), s.messages, s.items,
			s.historical, s.dups, s.late, len(missing), ranges(missing))
	}
	return ok
}

func main() {
	broker := flag.String("broker", "tcp://127.0.0.1:1883", "broker URL")
	topic := flag.String("topic", "plantd/#", "topic filter")
	session := flag.String("session", "", "client id of a persistent session (clean session off); empty: a fresh clean session")
	user := flag.String("user", "", "username (password from MQTT_PASSWORD)")
	dur := flag.Duration("for", 0, "stop after this long (0: until Ctrl-C)")
	from1 := flag.Bool("from1", false, "expect every stream to start at seq 1 (a fresh gateway database)")
	quiet := flag.Bool("quiet", false, "do not print duplicates and state changes as they come")
	flag.Parse()

	c := &checker{streams: map[string]*stream{}, from1: *from1, quiet: *quiet, states: map[string]string{}}
	id := *session
	if id == "" {
		id = fmt.Sprintf("mqtt-subscriber-%d", time.Now().UnixNano())
	}
	o := paho.NewClientOptions().AddBroker(*broker).SetClientID(id).SetCleanSession(*session == "").
		SetAutoReconnect(true).SetMaxReconnectInterval(2 * time.Second).SetConnectRetry(true).SetOrderMatters(true)
	if *user != "" {
		o.SetUsername(*user).SetPassword(os.Getenv("MQTT_PASSWORD"))
	}
	o.SetOnConnectHandler(func(cl paho.Client) {
		cl.Subscribe(*topic, 1, func(_ paho.Client, m paho.Message) { c.handle(m) })
	})
	o.SetConnectionLostHandler(func(_ paho.Client, err error) { fmt.Fprintf(os.Stderr, "connection lost: %v\n", err) })
	cl := paho.NewClient(o)
	if tok := cl.Connect(); !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
		fmt.Fprintf(os.Stderr, "connect %s: %v\n", *broker, tok.Error())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *dur)
		defer cancel()
	}
	<-ctx.Done()
	cl.Disconnect(250)
	if !c.summary() {
		os.Exit(1)
	}
}
