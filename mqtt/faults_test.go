package mqtt

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
	"plantd/plant"
)

// proxy forwards TCP connections to a broker; it can close every
// connection a while after it was accepted (a broker that accepts and
// drops), sever all connections at once (a crash, as the broker sees
// it), and freeze the way back from the broker (a link that hangs: what
// plantd sends arrives, no PUBACK or PINGRESP comes back).
type proxy struct {
	ln        net.Listener
	target    string
	dropAfter atomic.Int64 // ns; 0: never
	accepted  atomic.Int64
	mu        sync.Mutex
	conns     []net.Conn
	// thawed is closed by thaw; nil while not frozen.
	thawed chan struct{}
}

// openGate is the gate of a proxy not frozen.
var openGate = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// freeze holds what the broker sends until thaw.
func (p *proxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.thawed == nil {
		p.thawed = make(chan struct{})
	}
}

// thaw lets what was held, and what comes after, through.
func (p *proxy) thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.thawed != nil {
		close(p.thawed)
		p.thawed = nil
	}
}

// gate is closed while the proxy is not frozen.
func (p *proxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.thawed == nil {
		return openGate
	}
	return p.thawed
}

func newProxy(t testing.TB, target string, dropAfter time.Duration) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.dropAfter.Store(int64(dropAfter))
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) url() string { return "tcp://" + p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { io.Copy(s, c); s.Close() }()
		go func() { p.back(c, s); c.Close() }()
		if d := time.Duration(p.dropAfter.Load()); d > 0 {
			time.AfterFunc(d, func() { c.Close(); s.Close() })
		}
	}
}

// back copies from the broker to the client, holding the data while the
// proxy is frozen.
func (p *proxy) back(c, s net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			<-p.gate()
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// sever closes every connection (and, with stop, accepts no more).
func (p *proxy) sever(stop bool) {
	if stop {
		p.ln.Close()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) close() { p.sever(true) }

// countingHandler counts log records at Warn and above.
type countingHandler struct {
	slog.Handler
	warns atomic.Int64
	mu    sync.Mutex
	lines []string
}

func newCountingHandler() *countingHandler {
	return &countingHandler{Handler: testLogger().Handler()}
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.warns.Add(1)
		var b strings.Builder
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
		h.mu.Lock()
		h.lines = append(h.lines, b.String())
		h.mu.Unlock()
	}
	if h.Handler.Enabled(ctx, r.Level) {
		return h.Handler.Handle(ctx, r)
	}
	return nil
}

// TestBadBrokers: refused connections, a wrong password, a wrong CA and a
// broker that drops every connection after a while: the uplink retries
// with backoff (no busy loop), logs once per change of state, never logs
// the password, and loses nothing. The test counts attempts, not time:
// however fast they fail, the backoff spaces them.
func TestBadBrokers(t *testing.T) {
	t.Parallel() // its own broker, store and uplink
	// With BackoffMin 100 ms and BackoffMax 400 ms the wait before attempt
	// n+1 is at least 50, 100, 200, 200, ... ms (jitter takes d/2..d), so
	// in el there are at most 3 + el/200ms attempts, and six take at
	// least 750 ms.
	maxAttempts := func(el time.Duration) uint64 { return 3 + uint64(el/(200*time.Millisecond)) }
	const six, sixTake = 6, 750 * time.Millisecond
	attempts := func(t *testing.T, cfg Config) (*Uplink, *countingHandler) {
		cfg.GatewayID = "gw-bad"
		cfg.BackoffMin, cfg.BackoffMax = 100*time.Millisecond, 400*time.Millisecond
		cfg.ConnectTimeout = time.Second
		h := newCountingHandler()
		u, err := New(cfg, Deps{Outbox: openStore(t, "")}, slog.New(h))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		stop := runUplink(t, u)
		proctest.WaitFor(t, "six connection attempts", 30*time.Second, func() bool { return u.Status().Attempts >= six })
		el := time.Since(start)
		stop()
		st := u.Status()
		t.Logf("%d connection attempts in %s, %d warnings: %q", st.Attempts, el.Round(time.Millisecond), h.warns.Load(), h.lines)
		if el < sixTake-10*time.Millisecond {
			t.Errorf("%d attempts in %s, the backoff allows them no sooner than %s", six, el.Round(time.Millisecond), sixTake)
		}
		return u, h
	}
	t.Run("unresolvable host", func(t *testing.T) {
		t.Parallel()
		_, h := attempts(t, Config{Broker: "tcp://plantd-broker.invalid:1883"})
		if h.warns.Load() != 1 {
			t.Errorf("%d warnings for one state, want 1: %q", h.warns.Load(), h.lines)
		}
	})
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		_, h := attempts(t, Config{Broker: "tcp://" + proctest.DeadAddr(t)})
		if h.warns.Load() != 1 {
			t.Errorf("%d warnings for one state, want 1", h.warns.Load())
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		t.Parallel()
		b := newBroker(t, map[string]string{"plantd": "right-secret"})
		mqtttest.Collect(t, b) // the right password is taken
		_, h := attempts(t, Config{Broker: b.URL(), Username: "plantd", Password: "wrong-secret"})
		if h.warns.Load() != 1 {
			t.Errorf("%d warnings for one state, want 1", h.warns.Load())
		}
		for _, l := range h.lines {
			if strings.Contains(l, "secret") {
				t.Errorf("password logged: %s", l)
			}
		}
	})
	t.Run("wrong CA", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		_, srvCert, srvKey := makeCA(t, dir, "server")
		caOther, _, _ := makeCA(t, dir, "other")
		b := newTLSBroker(t, dir, srvCert, srvKey)
		_, h := attempts(t, Config{Broker: "ssl://" + b, CAFile: caOther})
		if h.warns.Load() != 1 || !strings.Contains(strings.Join(h.lines, " "), "certificate") {
			t.Errorf("warnings %q, want one about the certificate", h.lines)
		}
	})
	t.Run("drops after 300ms", func(t *testing.T) {
		t.Parallel()
		b := newBroker(t, nil)
		col := mqtttest.Collect(t, b)
		p := newProxy(t, b.Addr(), 300*time.Millisecond)
		st := openStore(t, "")
		cfg := fastConfig(b, "gw-drop")
		cfg.Broker = p.url()
		cfg.BackoffMin, cfg.BackoffMax = 100*time.Millisecond, 400*time.Millisecond
		h := newCountingHandler()
		u, err := New(cfg, Deps{Outbox: st, Live: fakeLive{}}, slog.New(h))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		stop := runUplink(t, u)
		for i := range 300 {
			u.Log(plant.LogEntry{PlantID: "p1", Code: "Test", Message: fmt.Sprint(i)})
			time.Sleep(10 * time.Millisecond)
		}
		p.dropAfter.Store(0)
		proctest.WaitFor(t, "every log entry", 20*time.Second, func() bool { return col.Distinct("log/p1") >= 300 })
		stop()
		el := time.Since(start)
		s := u.Status()
		t.Logf("%d connections accepted by the dropping broker, %d attempts in %s, %d warnings", p.accepted.Load(), s.Attempts, el.Round(time.Millisecond), h.warns.Load())
		if s.Attempts > maxAttempts(el) {
			t.Errorf("%d attempts in %s, the backoff allows %d: busy loop", s.Attempts, el.Round(time.Millisecond), maxAttempts(el))
		}
		dropped := map[string]uint64{}
		for _, s := range s.Streams {
			dropped[s.Stream] = s.Dropped
		}
		for _, s := range []string{"log/p1", "live/p1"} {
			// A live stream's only gaps: live messages left
			// unacknowledged by a dropped connection, dropped and
			// counted rather than replayed.
			_, _, gaps := col.Check(s, true)
			if uint64(len(gaps)) > dropped[s] {
				t.Errorf("stream %s: gaps %v, %d dropped", s, gaps, dropped[s])
			}
		}
	})
}

// TestBackoffSchedule: with the defaults (1 s doubling to 60 s, jitter
// d/2..d), a broker that never answers sees about 8 attempts in the first
// minute and at most 2 a minute after that.
func TestBackoffSchedule(t *testing.T) {
	t.Parallel() // its own store and uplink
	u, err := New(Config{Broker: "tcp://127.0.0.1:1", GatewayID: "gw"}, Deps{Outbox: openStore(t, "")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var el time.Duration
	first, later := 0, 0
	for n := 1; el < 11*time.Minute; n++ {
		d := u.backoff(n)
		if d > 60*time.Second || d < 0 {
			t.Fatalf("backoff(%d) = %s", n, d)
		}
		el += d
		switch {
		case el < time.Minute:
			first++
		case el >= 10*time.Minute && el < 11*time.Minute:
			later++
		}
	}
	t.Logf("attempts: %d in the first minute, %d in the 11th", first+1, later)
	if first+1 > 10 || later > 2 {
		t.Errorf("%d attempts in the first minute, %d in the 11th", first+1, later)
	}
}

// TestLastWill: the retained state is online while connected, offline
// (the broker's last will) after the connection dies without DISCONNECT,
// and offline again after a clean stop.
func TestLastWill(t *testing.T) {
	t.Parallel() // its own broker, store and uplink
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	p := newProxy(t, b.Addr(), 0)
	cfg := fastConfig(b, "gw-lwt")
	cfg.Broker = p.url()
	u, err := New(cfg, Deps{Outbox: openStore(t, "")}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	runUplink(t, u)
	proctest.WaitFor(t, "online", 10*time.Second, func() bool { s, _ := col.LastState(); return s.State == "online" })
	p.sever(true) // as if plantd were killed: no DISCONNECT
	proctest.WaitFor(t, "the last will", 10*time.Second, func() bool { s, _ := col.LastState(); return s.State == "offline" })
	s, _ := col.LastState()
	if s.BootID != u.BootID() || s.GatewayID != "gw-lwt" {
		t.Errorf("last will %+v", s)
	}
	// A new subscriber gets the retained offline state.
	col2 := mqtttest.Collect(t, b)
	proctest.WaitFor(t, "the retained state", 5*time.Second, func() bool { s, ok := col2.LastState(); return ok && s.State == "offline" })
}

// makeCA writes a self-signed CA and a server certificate for 127.0.0.1
// signed by it; it returns the files of the CA, the certificate and the
// key.
func makeCA(t testing.TB, dir, name string) (caFile, certFile, keyFile string) {
	t.Helper()
	ca := newTestCA(t, dir, name)
	certFile, keyFile = ca.leaf(name, 2, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	return ca.file, certFile, keyFile
}

// newTLSBroker starts a TLS broker (mosquitto, or a TLS front of the
// embedded broker) and returns its host:port.
func newTLSBroker(t testing.TB, dir, cert, key string) string {
	t.Helper()
	if mqtttest.MosquittoPath(t) == "" {
		b := newBroker(t, nil)
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					s, err := net.Dial("tcp", b.Addr())
					if err != nil {
						return
					}
					defer s.Close()
					// A client that fails the handshake ends the broker's
					// side too (else the embedded broker's Close waits for
					// it forever).
					go func() { io.Copy(s, c); s.Close() }()
					io.Copy(c, s)
				}()
			}
		}()
		return ln.Addr().String()
	}
	port := proctest.FreePort(t)
	conf := fmt.Sprintf("listener %d 127.0.0.1\nuser root\nallow_anonymous true\ncertfile %s\nkeyfile %s\nlog_dest stderr\nlog_type error\n", port, cert, key)
	cf := filepath.Join(dir, "tls.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return mqtttest.StartMosquitto(t, port, cf).Addr()
}

// TestHungLink: the way back from the broker hangs (messages arrive, no
// PUBACK returns): no publish token is waited for longer than
// PublishTimeout, the connection is given up, nothing is deleted from the
// outbox without its PUBACK, and after the link recovers every message is
// sent again on the new connection: duplicates at the backend, no gap.
func TestHungLink(t *testing.T) {
	t.Parallel() // its own broker, store and uplink
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	p := newProxy(t, b.Addr(), 0)
	st := openStore(t, "")
	cfg := fastConfig(b, "gw-hung")
	cfg.Broker = p.url()
	cfg.PublishTimeout = 2 * time.Second
	u, err := New(cfg, Deps{Outbox: st}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	runUplink(t, u)
	logs := func(from, to int) {
		for i := from; i <= to; i++ {
			u.Log(plant.LogEntry{PlantID: "p1", Code: "Test", Message: fmt.Sprint(i)})
		}
	}
	logs(1, 100)
	proctest.WaitFor(t, "the first 100", 30*time.Second, func() bool { return col.Distinct("log/p1") >= 100 })
	proctest.WaitFor(t, "their PUBACKs", 30*time.Second, func() bool { return outboxDepth(t, st, "log/p1") == 0 })

	p.freeze()
	connects := u.Status().Connects
	logs(101, 200)
	// They reach the broker (and the collector), but plantd hears nothing.
	proctest.WaitFor(t, "the next 100 at the broker", 30*time.Second, func() bool { return col.Distinct("log/p1") >= 200 })
	proctest.WaitFor(t, "the connection given up", 30*time.Second, func() bool { return !u.connected.Load() })
	if d := outboxDepth(t, st, "log/p1"); d != 100 {
		t.Errorf("outbox holds %d log messages while no PUBACK came, want 100", d)
	}
	p.thaw()
	proctest.WaitFor(t, "a new connection", 60*time.Second, func() bool { return u.Status().Connects > connects })
	proctest.WaitFor(t, "the outbox emptied on the new connection", 30*time.Second, func() bool { return outboxDepth(t, st, "log/p1") == 0 })
	distinct, dups, gaps := col.Check("log/p1", true)
	t.Logf("after the hung link: %d seqs, %d duplicates (resent, never acknowledged), gaps %v", distinct, dups, gaps)
	if distinct != 200 || len(gaps) > 0 || dups == 0 {
		t.Errorf("%d distinct, %d duplicates, gaps %v; want 200, some duplicates, none missing", distinct, dups, gaps)
	}
}
