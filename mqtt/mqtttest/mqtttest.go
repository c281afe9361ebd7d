// Package mqtttest starts a broker per test and collects what plantd
// publishes, for the tests of mqtt and cmd/plantd. The broker is
// mosquitto from PATH on a free loopback port with a config file the test
// writes; outside CI, when mosquitto is missing, the embedded mochi
// broker; under CI=true a missing mosquitto fails the test. The collector
// decodes the wire format of docs/mqtt.md on its own (it imports no
// plantd package).
//
// Imports: plantd/internal/proctest
package mqtttest

import (
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
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
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"

	"plantd/internal/proctest"
)

// Broker is a broker of one test.
type Broker struct {
	t      testing.TB
	port   int
	dir    string
	users  map[string]string
	extra  string
	cmd    *exec.Cmd
	exited chan struct{}
	stderr *proctest.Buffer
	embed  *mochi.Server
	moch   bool
}

// Options configure a Broker.
type Options struct {
	// Users (username → password) switch on password authentication
	// (mosquitto only: the test is skipped on the embedded broker).
	Users map[string]string
	// Extra is appended to mosquitto's config file.
	Extra string
}

// MosquittoPath finds mosquitto; "" when it is absent (outside CI).
func MosquittoPath(t testing.TB) string {
	for _, p := range []string{"mosquitto", "/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("mosquitto is not installed; CI must install it (apt-get install mosquitto)")
	}
	return ""
}

// Start starts a broker for the test; it stops at the test's end.
func Start(t testing.TB, o Options) *Broker {
	t.Helper()
	b := &Broker{t: t, port: proctest.FreePort(t), dir: t.TempDir(), users: o.Users, extra: o.Extra}
	b.moch = MosquittoPath(t) == ""
	if b.moch {
		if o.Users != nil {
			t.Skip("password authentication needs mosquitto")
		}
		t.Log("mosquitto not found: using the embedded broker")
	}
	// Another program may take the free port before mosquitto binds it
	// (proctest.FreePort closes its probe): then mosquitto exits and the
	// broker starts again on another port.
	err := b.start()
	for try := 1; err != nil && !b.moch && try < 3; try++ {
		t.Logf("mosquitto on %s: %v; trying another port", b.Addr(), err)
		b.port = proctest.FreePort(t)
		err = b.start()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

// URL is the broker's tcp:// URL.
func (b *Broker) URL() string { return fmt.Sprintf("tcp://127.0.0.1:%d", b.port) }

// Addr is the broker's host:port.
func (b *Broker) Addr() string { return fmt.Sprintf("127.0.0.1:%d", b.port) }

// Pid is the process id of mosquitto (0 for the embedded broker or when
// stopped).
func (b *Broker) Pid() int {
	if b.cmd == nil || b.cmd.Process == nil {
		return 0
	}
	return b.cmd.Process.Pid
}

// Embedded reports whether the broker is the embedded one (no
// persistence across Stop and Start).
func (b *Broker) Embedded() bool { return b.moch }

// mosquittoHash is a mosquitto 2 password file hash ($6$: SHA-512 of
// password and salt).
func mosquittoHash(password string) string {
	salt := make([]byte, 12)
	_, _ = rand.Read(salt)
	h := sha512.Sum512(append([]byte(password), salt...))
	return "$6$" + base64.StdEncoding.EncodeToString(salt) + "$" + base64.StdEncoding.EncodeToString(h[:])
}

// Start starts the broker again on the same port (after Stop) and waits
// until it accepts connections. mosquitto keeps its sessions and queued
// messages across Stop and Start (persistence on).
func (b *Broker) Start() {
	b.t.Helper()
	if err := b.start(); err != nil {
		b.t.Fatal(err)
	}
}

func (b *Broker) start() error {
	t := b.t
	t.Helper()
	if b.moch {
		deadline := time.Now().Add(5 * time.Second)
		var err error
		for {
			b.embed, err = startEmbedded(b.Addr())
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("embedded broker: %w", err)
		}
		return nil
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
	conf += b.extra
	cf := filepath.Join(b.dir, "mosquitto.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return b.startWith(cf, true)
}

// StartMosquitto starts mosquitto with a config file of the caller's
// (which must listen on port) and stops it at the test's end; it skips
// the test when mosquitto is missing outside CI.
func StartMosquitto(t testing.TB, port int, confFile string) *Broker {
	t.Helper()
	if MosquittoPath(t) == "" {
		t.Skip("needs mosquitto")
	}
	b := &Broker{t: t, port: port}
	if err := b.startWith(confFile, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

// startWith starts mosquitto with the config file cf and waits until it
// answers: with an MQTT CONNACK when plain (another program may hold the
// port mosquitto failed to bind), with an accepted connection when the
// listener is the caller's (TLS).
func (b *Broker) startWith(cf string, plain bool) error {
	t := b.t
	t.Helper()
	b.stderr = &proctest.Buffer{}
	b.cmd = exec.Command(MosquittoPath(t), "-c", cf)
	b.cmd.Stderr = b.stderr
	if err := b.cmd.Start(); err != nil {
		return fmt.Errorf("start mosquitto: %w", err)
	}
	b.exited = make(chan struct{})
	go func(cmd *exec.Cmd, ch chan struct{}) { cmd.Wait(); close(ch) }(b.cmd, b.exited)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := listening(b.Addr())
		if err == nil && plain {
			err = mqttAnswers(b.Addr())
		}
		select {
		case <-b.exited:
			return fmt.Errorf("mosquitto exited: %s", b.stderr.String())
		default:
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			b.cmd.Process.Kill()
			<-b.exited
			return fmt.Errorf("mosquitto does not answer on %s: %w", b.Addr(), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// listening reports whether addr accepts a connection.
func listening(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err
}

// mqttAnswers sends an MQTT 3.1.1 CONNECT to addr and reports whether a
// CONNACK comes back (any return code: a broker with passwords refuses
// the probe, but answers it).
func mqttAnswers(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	// CONNECT: protocol "MQTT" level 4, clean session, keep-alive 60 s,
	// client id "probe".
	connect := []byte{0x10, 17, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 60, 0, 5, 'p', 'r', 'o', 'b', 'e'}
	if _, err := c.Write(connect); err != nil {
		return err
	}
	var ack [4]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil {
		return fmt.Errorf("no CONNACK: %w", err)
	}
	if ack[0] != 0x20 || ack[1] != 2 {
		return fmt.Errorf("not an MQTT broker: answered % x", ack)
	}
	return nil
}

// Stop stops the broker (SIGTERM: mosquitto saves its sessions) and waits
// until it is gone.
func (b *Broker) Stop() {
	if b.embed != nil {
		b.embed.Close()
		b.embed = nil
		return
	}
	if b.cmd == nil {
		return
	}
	b.end(syscall.SIGTERM)
}

// end sends mosquitto sig, kills it when it has not exited 10 s later, and
// waits until it is gone.
func (b *Broker) end(sig syscall.Signal) {
	b.cmd.Process.Signal(sig)
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		b.cmd.Process.Kill()
		<-b.exited
	}
	b.cmd = nil
}

// Kill kills mosquitto with SIGKILL (a crashed node: no goodbye to its
// clients, no session saved) and waits until it is gone; the embedded
// broker is closed. Start starts it again.
func (b *Broker) Kill() {
	if b.embed != nil || b.cmd == nil {
		b.Stop()
		return
	}
	b.end(syscall.SIGKILL)
}

// startEmbedded starts the embedded broker on addr.
func startEmbedded(addr string) (*mochi.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := mochi.New(&mochi.Options{InlineClient: false, Logger: nil})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		ln.Close()
		return nil, err
	}
	if err := srv.AddListener(listeners.NewNet("test", ln)); err != nil {
		ln.Close()
		return nil, err
	}
	if err := srv.Serve(); err != nil {
		srv.Close()
		return nil, err
	}
	return srv, nil
}

// State is a message of the state topic.
type State struct {
	GatewayID string `json:"gatewayId"`
	BootID    string `json:"bootId"`
	State     string `json:"state"`
	Version   string `json:"version"`
	StartedAt string `json:"startedAt"`
}

// Ack is one item of up/ack.
type Ack struct {
	RequestID string          `json:"requestId"`
	Topic     string          `json:"topic"`
	Command   string          `json:"command"`
	Version   int64           `json:"version"`
	Status    int             `json:"status"`
	Body      json.RawMessage `json:"body"`
	// Retrying: plantd keeps the schedule and evaluates it again when
	// the plant's devices answer (a further ack follows).
	Retrying bool `json:"retrying"`
	// MigratedTo is the plant a schedule on a migrated plant id was
	// applied to.
	MigratedTo string `json:"migratedTo"`
	// Seq is the ack stream's sequence number of this item: a
	// redelivered envelope (at least once) repeats it.
	Seq uint64 `json:"-"`
}

// Collector subscribes to plantd/# (QoS 1) with a persistent session and
// keeps, per stream, the seqs in arrival order, and the states and acks.
type Collector struct {
	t      testing.TB
	client paho.Client

	mu     sync.Mutex
	seqs   map[string][]uint64
	items  map[string]int
	raw    map[string][]json.RawMessage
	hist   map[string]int
	states []State
	acks   []Ack
}

// Collect connects a collector (with the broker's first user, if any).
func Collect(t testing.TB, b *Broker) *Collector {
	t.Helper()
	c := &Collector{t: t, seqs: map[string][]uint64{}, items: map[string]int{}, hist: map[string]int{}, raw: map[string][]json.RawMessage{}}
	id := fmt.Sprintf("collector-%d", time.Now().UnixNano())
	o := paho.NewClientOptions().AddBroker(b.URL()).SetClientID(id).SetCleanSession(false).
		SetAutoReconnect(true).SetMaxReconnectInterval(100 * time.Millisecond).SetConnectRetry(true).
		SetConnectRetryInterval(100 * time.Millisecond).SetOrderMatters(true)
	for u, p := range b.users {
		o.SetUsername(u).SetPassword(p)
		break
	}
	o.SetOnConnectHandler(func(cl paho.Client) { cl.Subscribe("plantd/#", 1, c.handle) })
	c.client = paho.NewClient(o)
	tok := c.client.Connect()
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("collector connect: %v", tok.Error())
	}
	// A round trip through the broker: the subscription is in place after.
	c.client.Publish("plantd/probe", 1, false, "x").WaitTimeout(5 * time.Second)
	t.Cleanup(func() { c.client.Disconnect(0) })
	return c
}

// Client is the collector's MQTT client (to publish commands).
func (c *Collector) Client() paho.Client { return c.client }

// Publish publishes with QoS 1 and waits for the PUBACK.
func (c *Collector) Publish(topic string, retained bool, payload string) {
	c.t.Helper()
	tok := c.client.Publish(topic, 1, retained, payload)
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		c.t.Fatalf("publish %s: %v", topic, tok.Error())
	}
}

func (c *Collector) handle(_ paho.Client, m paho.Message) {
	topic := m.Topic()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case strings.HasSuffix(topic, "/state"):
		var s State
		if json.Unmarshal(m.Payload(), &s) == nil {
			c.states = append(c.states, s)
		}
	case strings.Contains(topic, "/up/"):
		var e struct {
			Stream     string
			Seq        uint64
			LastSeq    uint64
			Historical bool
			Items      []json.RawMessage
			GatewayID  string
			BootID     string
		}
		if err := json.Unmarshal(m.Payload(), &e); err != nil || e.Seq == 0 || e.GatewayID == "" || e.BootID == "" {
			c.t.Errorf("bad envelope on %s: %v %s", topic, err, m.Payload())
			return
		}
		if !strings.HasSuffix(topic, "/up/"+e.Stream) {
			c.t.Errorf("stream %s on topic %s", e.Stream, topic)
		}
		for s := e.Seq; s <= max(e.LastSeq, e.Seq); s++ {
			c.seqs[e.Stream] = append(c.seqs[e.Stream], s)
		}
		c.items[e.Stream] += len(e.Items)
		c.raw[e.Stream] = append(c.raw[e.Stream], e.Items...)
		if e.Historical {
			c.hist[e.Stream]++
		}
		if e.Stream == "ack" {
			for i, it := range e.Items {
				var a Ack
				json.Unmarshal(it, &a)
				a.Seq = e.Seq + uint64(i)
				c.acks = append(c.acks, a)
			}
		}
	}
}

// Check reports for a stream the number of distinct seqs, the duplicates
// and the gaps (seqs missing between the lowest, or 1 with from1, and the
// highest seen); a new seq that arrives after a higher one fails the test.
func (c *Collector) Check(stream string, from1 bool) (distinct, dups int, gaps []uint64) {
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
	for s := lo; s <= hi && hi > 0; s++ {
		if !seen[s] {
			gaps = append(gaps, s)
		}
	}
	return len(seen), dups, gaps
}

// Seqs returns the seqs received on a stream in arrival order (duplicates
// included), seq..lastSeq expanded.
func (c *Collector) Seqs(stream string) []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seqs[stream])
}

// Distinct is the number of distinct seqs of a stream.
func (c *Collector) Distinct(stream string) int {
	n, _, _ := c.Check(stream, false)
	return n
}

// Items is the number of items received on a stream (duplicates
// included); Historical the number of historical messages.
func (c *Collector) Items(stream string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.items[stream]
}

// ItemsOf returns the items received on a stream in arrival order
// (duplicates included).
func (c *Collector) ItemsOf(stream string) []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.raw[stream])
}

// Historical is the number of messages of a stream marked historical.
func (c *Collector) Historical(stream string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hist[stream]
}

// Streams lists the streams seen.
func (c *Collector) Streams() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for s := range c.seqs {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// LastState is the last state message received.
func (c *Collector) LastState() (State, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.states) == 0 {
		return State{}, false
	}
	return c.states[len(c.states)-1], true
}

// Acks returns the acks received for a request id, in arrival order,
// each once: an envelope delivered again (its PUBACK lost with the
// connection) repeats the seqs of its acks and is not a second answer.
func (c *Collector) Acks(requestID string) []Ack {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Ack
	seen := map[uint64]bool{}
	for _, a := range c.acks {
		if a.RequestID == requestID && !seen[a.Seq] {
			seen[a.Seq] = true
			out = append(out, a)
		}
	}
	return out
}

// AllAcks returns every ack, once each (a redelivered envelope's items
// are left out), in arrival order.
func (c *Collector) AllAcks() []Ack {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Ack
	seen := map[uint64]bool{}
	for _, a := range c.acks {
		if !seen[a.Seq] {
			seen[a.Seq] = true
			out = append(out, a)
		}
	}
	return out
}
