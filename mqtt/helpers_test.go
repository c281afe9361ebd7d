package mqtt

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"plantd/store"
)

// testBroker is a broker of one test: mosquitto from PATH on a free
// loopback port with a config file the test writes, or, outside CI when
// mosquitto is missing, the embedded broker.
type testBroker struct {
	t       testing.TB
	port    int
	dir     string
	users   map[string]string // username → password; nil: anonymous
	cmd     *exec.Cmd
	exited  chan struct{}
	stderr  *bytes.Buffer
	embed   *Broker
	useMoch bool
}

// mosquittoPath finds mosquitto, failing under CI=true when it is absent.
func mosquittoPath(t testing.TB) string {
	for _, p := range []string{"mosquitto", "/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("mosquitto is not installed; CI must install it (apt-get install mosquitto)")
	}
	t.Log("mosquitto not found: using the embedded broker")
	return ""
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// newBroker starts a broker; users (may be nil) switches on password
// authentication (mosquitto only).
func newBroker(t testing.TB, users map[string]string) *testBroker {
	t.Helper()
	b := &testBroker{t: t, port: freePort(t), dir: t.TempDir(), users: users}
	b.useMoch = mosquittoPath(t) == ""
	if b.useMoch && users != nil {
		t.Skip("password authentication needs mosquitto")
	}
	b.start()
	t.Cleanup(b.stop)
	return b
}

func (b *testBroker) url() string  { return fmt.Sprintf("tcp://127.0.0.1:%d", b.port) }
func (b *testBroker) addr() string { return fmt.Sprintf("127.0.0.1:%d", b.port) }

// mosquittoHash is a mosquitto 2 password file hash ($6$: SHA-512 of
// password and salt).
func mosquittoHash(password string) string {
	salt := make([]byte, 12)
	_, _ = rand.Read(salt)
	h := sha512.Sum512(append([]byte(password), salt...))
	return "$6$" + base64.StdEncoding.EncodeToString(salt) + "$" + base64.StdEncoding.EncodeToString(h[:])
}

// start starts (or restarts, on the same port) the broker and waits until
// it accepts connections.
func (b *testBroker) start() {
	t := b.t
	t.Helper()
	if b.useMoch {
		var err error
		deadline := time.Now().Add(5 * time.Second)
		for {
			b.embed, err = StartBroker(b.addr(), false, nil)
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond) // the old socket may linger a moment
		}
		if err != nil {
			t.Fatalf("embedded broker: %v", err)
		}
		return
	}
	conf := fmt.Sprintf("listener %d 127.0.0.1\nuser root\npersistence true\npersistence_location %s/\nautosave_interval 0\n"+
		"max_queued_messages 0\nmax_inflight_messages 0\nlog_dest stderr\nlog_type error\nlog_type warning\n", b.port, b.dir)
	if b.users != nil {
		var pw strings.Builder
		for u, p := range b.users {
			fmt.Fprintf(&pw, "%s:%s\n", u, mosquittoHash(p))
		}
		pf := filepath.Join(b.dir, "passwd")
		if err := os.WriteFile(pf, []byte(pw.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		conf += "allow_anonymous false\npassword_file " + pf + "\n"
	} else {
		conf += "allow_anonymous true\n"
	}
	cf := filepath.Join(b.dir, "mosquitto.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	b.startWith(cf)
}

// startWith starts mosquitto with the config file cf and waits until it
// listens on b.port.
func (b *testBroker) startWith(cf string) {
	t := b.t
	t.Helper()
	b.stderr = &bytes.Buffer{}
	b.cmd = exec.Command(mosquittoPath(t), "-c", cf)
	b.cmd.Stderr = &lockedWriter{w: b.stderr}
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start mosquitto: %v", err)
	}
	b.exited = make(chan struct{})
	go func(cmd *exec.Cmd, ch chan struct{}) { cmd.Wait(); close(ch) }(b.cmd, b.exited)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", b.addr(), time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-b.exited:
			t.Fatalf("mosquitto exited: %s", b.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto does not listen on %s: %v", b.addr(), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop stops the broker (SIGTERM: mosquitto saves its persistent
// sessions) and waits until it is gone.
func (b *testBroker) stop() {
	if b.embed != nil {
		b.embed.Close()
		b.embed = nil
		return
	}
	if b.cmd == nil {
		return
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		b.cmd.Process.Kill()
		<-b.exited
	}
	b.cmd = nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// collector subscribes to plantd/# with a persistent session (QoS 1) and
// keeps every envelope per stream, and the state messages.
type collector struct {
	t      testing.TB
	client paho.Client

	mu     sync.Mutex
	seqs   map[string][]uint64 // stream → seqs in arrival order (lastSeq runs expanded)
	items  map[string]int      // stream → items received
	states []stateMessage
	acks   []ackItem
	hist   map[string]int // stream → historical messages
}

func newCollector(t testing.TB, b *testBroker) *collector {
	t.Helper()
	c := &collector{t: t, seqs: map[string][]uint64{}, items: map[string]int{}, hist: map[string]int{}}
	id := fmt.Sprintf("collector-%d", time.Now().UnixNano())
	o := paho.NewClientOptions().AddBroker(b.url()).SetClientID(id).SetCleanSession(false).
		SetAutoReconnect(true).SetMaxReconnectInterval(100 * time.Millisecond).SetConnectRetry(true).
		SetConnectRetryInterval(100 * time.Millisecond).SetOrderMatters(true)
	for u, p := range b.users {
		o.SetUsername(u).SetPassword(p)
		break
	}
	o.SetOnConnectHandler(func(cl paho.Client) {
		cl.Subscribe("plantd/#", 1, c.handle)
	})
	c.client = paho.NewClient(o)
	tok := c.client.Connect()
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("collector connect: %v", tok.Error())
	}
	// Wait for the subscription (a retained state or nothing: a short
	// round trip through the broker).
	probe := c.client.Publish("plantd/probe", 1, false, "x")
	probe.WaitTimeout(5 * time.Second)
	t.Cleanup(func() { c.client.Disconnect(0) })
	return c
}

func (c *collector) handle(_ paho.Client, m paho.Message) {
	topic := m.Topic()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case strings.HasSuffix(topic, "/state"):
		var s stateMessage
		if json.Unmarshal(m.Payload(), &s) == nil {
			c.states = append(c.states, s)
		}
	case strings.Contains(topic, "/up/"):
		var e envelope
		if err := json.Unmarshal(m.Payload(), &e); err != nil {
			c.t.Errorf("bad envelope on %s: %v", topic, err)
			return
		}
		last := max(e.LastSeq, e.Seq)
		for s := e.Seq; s <= last; s++ {
			c.seqs[e.Stream] = append(c.seqs[e.Stream], s)
		}
		var items []json.RawMessage
		json.Unmarshal(e.Items, &items)
		c.items[e.Stream] += len(items)
		if e.Historical {
			c.hist[e.Stream]++
		}
		if e.Stream == streamAck {
			for _, it := range items {
				var a ackItem
				json.Unmarshal(it, &a)
				c.acks = append(c.acks, a)
			}
		}
	}
}

// check reports per stream the gaps (seqs missing between the lowest and
// the highest seen, from 1 when from1) and the out-of-order arrivals of
// new seqs, and returns the distinct count and duplicates.
func (c *collector) check(stream string, from1 bool) (distinct, dups int, gaps []uint64) {
	c.mu.Lock()
	seqs := slices.Clone(c.seqs[stream])
	c.mu.Unlock()
	seen := map[uint64]bool{}
	var hi uint64
	lo := ^uint64(0)
	for _, s := range seqs {
		if seen[s] {
			dups++
			continue
		}
		if s < hi {
			c.t.Errorf("stream %s: new seq %d arrived after %d", stream, s, hi)
		}
		seen[s] = true
		hi, lo = max(hi, s), min(lo, s)
	}
	if from1 {
		lo = 1
	}
	for s := lo; s <= hi; s++ {
		if !seen[s] {
			gaps = append(gaps, s)
		}
	}
	return len(seen), dups, gaps
}

func (c *collector) distinct(stream string) int {
	n, _, _ := c.check(stream, false)
	return n
}

func (c *collector) lastState() (stateMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.states) == 0 {
		return stateMessage{}, false
	}
	return c.states[len(c.states)-1], true
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openStore opens a store in a temporary directory (one plant "p1").
func openStore(t testing.TB, path string) *store.Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "plantd.db")
	}
	st, err := store.Open(context.Background(), store.Config{Path: path, Plants: []store.PlantInfo{{ID: "p1"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// testLogger logs to stderr with -v, else discards.
func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.DiscardHandler)
}

// runUplink starts u.Run; the returned stop cancels it and waits.
func runUplink(t testing.TB, u *Uplink) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { u.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Error("uplink did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// outboxDepth is the number of messages in the outbox.
func outboxDepth(t testing.TB, st *store.Store) int {
	ss, err := st.OutboxStreams(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range ss {
		n += s.Depth
	}
	return n
}
