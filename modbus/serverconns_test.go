package modbus

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"plantd/internal/proctest"
)

// Loopback addresses a test dials from: Linux routes all of 127/8 to lo.
var (
	loA = netip.MustParseAddr("127.0.0.1")
	loB = netip.MustParseAddr("127.0.0.2")
	loC = netip.MustParseAddr("127.0.0.3")
)

// dialFrom connects to addr from the loopback address from.
func dialFrom(t *testing.T, from netip.Addr, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(from, 0)), Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, from, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// readOne reads holding register 0 of unit 1 over c with transaction id
// tx: nil when the answer came.
func readOne(c net.Conn, tx uint16) error {
	req := []byte{0, 0, 0, 0, 0, 6, 1, 3, 0, 0, 0, 1}
	binary.BigEndian.PutUint16(req, tx)
	// A deadline against a hang only; the test waits for the answer.
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(req); err != nil {
		return err
	}
	var ans [11]byte
	if _, err := io.ReadFull(c, ans[:]); err != nil {
		return err
	}
	if binary.BigEndian.Uint16(ans[:]) != tx || ans[7] != 3 {
		return fmt.Errorf("answer % x", ans)
	}
	return nil
}

// closedByServer reports whether the server closed c: a read sees EOF
// or a reset (10 s at most, against a hang).
func closedByServer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestServerEvict: a connection past a bound closes the idle connection
// the rule picks (see ServerConfig.MaxConnsPerClient), and every other
// connection, the newcomer's too, goes on answering.
func TestServerEvict(t *testing.T) {
	type step struct {
		dial netip.Addr // dial from here, or
		read int        // (dial unset) a read on connection read
	}
	dial := func(a netip.Addr) step { return step{dial: a} }
	read := func(i int) step { return step{read: i} }
	for _, tc := range []struct {
		name              string
		maxConns, perAddr int
		steps             []step
		newcomer          netip.Addr
		evicted           int // the connection the newcomer closes
	}{
		{"the client's bound: its connection idle the longest", 32, 4,
			[]step{dial(loA), dial(loA), dial(loA), dial(loA), dial(loB), read(0)}, loA, 1},
		{"the client's bound: none of another client's", 32, 2,
			[]step{dial(loB), dial(loA), dial(loA)}, loA, 1},
		{"the server full: the client holding the most", 4, 4,
			[]step{dial(loA), dial(loB), dial(loB), dial(loB)}, loC, 1},
		{"the server full, equal holdings: idle the longest", 4, 4,
			[]step{dial(loA), dial(loA), dial(loB), dial(loB), read(0)}, loC, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, addr := startServer(t, ServerConfig{MaxConns: tc.maxConns, MaxConnsPerClient: tc.perAddr}, &memHandler{})
			var conns []net.Conn
			for _, st := range tc.steps {
				if !st.dial.IsValid() {
					if err := readOne(conns[st.read], 1); err != nil {
						t.Fatalf("read on connection %d: %v", st.read, err)
					}
					continue
				}
				conns = append(conns, dialFrom(t, st.dial, addr))
				// Accepted in this order: each waits for the last.
				proctest.WaitFor(t, "the connection accepted", 5*time.Second, func() bool { return srv.Stats().Accepted == int64(len(conns)) })
			}
			nc := dialFrom(t, tc.newcomer, addr)
			if !closedByServer(conns[tc.evicted]) {
				t.Fatalf("connection %d was not closed for the newcomer", tc.evicted)
			}
			if err := readOne(nc, 2); err != nil {
				t.Errorf("the newcomer: %v", err)
			}
			for i, c := range conns {
				if i == tc.evicted {
					continue
				}
				if err := readOne(c, 3); err != nil {
					t.Errorf("connection %d after the eviction: %v", i, err)
				}
			}
			if st := srv.Stats(); st.Evicted != 1 || st.Full != 0 || st.Open != int64(len(conns)) {
				t.Errorf("stats %+v, want 1 evicted, %d open", st, len(conns))
			}
		})
	}
}

// TestServerIdleFlood: 32 idle connections from one address (the
// default bounds, and a per-client bound as large as the server's) do not
// keep a second address from reading.
func TestServerIdleFlood(t *testing.T) {
	for _, perAddr := range []int{0, DefaultMaxConns} {
		t.Run(fmt.Sprintf("maxConnsPerClient %d", perAddr), func(t *testing.T) {
			srv, addr := startServer(t, ServerConfig{MaxConnsPerClient: perAddr}, &memHandler{})
			idle := make([]net.Conn, DefaultMaxConns)
			for i := range idle {
				idle[i] = dialFrom(t, loA, addr)
			}
			proctest.WaitFor(t, "32 connections accepted", 10*time.Second, func() bool { return srv.Stats().Accepted == DefaultMaxConns })
			c := dialFrom(t, loB, addr)
			for i := range 10 {
				if err := readOne(c, uint16(i)); err != nil {
					t.Fatalf("read %d from a second address: %v", i, err)
				}
			}
			st := srv.Stats()
			t.Logf("stats after 32 idle connections and a second address: %+v", st)
			wantOpen := int64(DefaultMaxConnsPerClient + 1)
			if perAddr == DefaultMaxConns {
				wantOpen = DefaultMaxConns
			}
			if st.Open != wantOpen || st.Full != 0 || st.Evicted != DefaultMaxConns+1-wantOpen {
				t.Errorf("stats %+v, want %d open, %d evicted", st, wantOpen, DefaultMaxConns+1-wantOpen)
			}
		})
	}
}

// gateHandler is a memHandler whose register reads wait for release,
// each telling entered first.
type gateHandler struct {
	memHandler
	entered chan struct{}
	release chan struct{}
}

func (h *gateHandler) Registers(req *Request) ([]uint16, error) {
	if !req.IsWrite() {
		h.entered <- struct{}{}
		<-h.release
	}
	return h.memHandler.Registers(req)
}

// TestServerAllBusy: when every connection that could make room is
// answering a request, the newcomer is closed at once (Full) and the busy
// ones are answered.
func TestServerAllBusy(t *testing.T) {
	h := &gateHandler{entered: make(chan struct{}), release: make(chan struct{})}
	srv, addr := startServer(t, ServerConfig{MaxConnsPerClient: 2}, h)
	busy := []net.Conn{dialFrom(t, loA, addr), dialFrom(t, loA, addr)}
	done := make(chan error, len(busy))
	for i, c := range busy {
		go func() { done <- readOne(c, uint16(i)) }()
	}
	for range busy {
		<-h.entered
	}
	if nc := dialFrom(t, loA, addr); !closedByServer(nc) {
		t.Error("a third connection from the address was kept while both were busy")
	}
	close(h.release)
	for range busy {
		if err := <-done; err != nil {
			t.Errorf("a busy connection's read: %v", err)
		}
	}
	if st := srv.Stats(); st.Full != 1 || st.Evicted != 0 || st.Open != 2 {
		t.Errorf("stats %+v, want 1 full, 0 evicted, 2 open", st)
	}
}

// TestServerRefusalLogs: 2,000 connections from outside the allow-list
// and 200 frames that are no Modbus TCP write a line each for the first
// and one with the count of the rest when the server stops.
func TestServerRefusalLogs(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		n         int
		allow     func(netip.Addr) bool
		frame     []byte // written on each connection
	}{
		{"allow-list", "connection refused: not in the allow-list", 2000,
			func(a netip.Addr) bool { return a == netip.MustParseAddr("192.0.2.1") }, nil},
		{"protocol id 1", "connection closed: a frame that is no Modbus TCP", 200,
			nil, []byte{0, 1, 0, 1, 0, 6, 1, 3, 0, 0, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			srv := NewServer(ServerConfig{Allow: tc.allow}, &memHandler{}, slog.New(rec))
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ctx, ln) }()
			for range tc.n {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				if tc.frame != nil {
					_, _ = c.Write(tc.frame)
				}
				if !closedByServer(c) {
					t.Fatal("the server kept the connection")
				}
				_ = c.Close()
			}
			proctest.WaitFor(t, "every event counted", 10*time.Second, func() bool {
				st := srv.Stats()
				return st.Refused+st.Malformed == int64(tc.n)
			})
			cancel()
			if err := <-served; err != nil {
				t.Fatal(err)
			}
			lines := rec.lines(tc.msg)
			t.Logf("%d events, %d lines: %v", tc.n, len(lines), lines)
			if len(lines) == 0 || len(lines) > 3 {
				t.Fatalf("%d lines for %d events, want 1 to 3", len(lines), tc.n)
			}
			if lines[0].attrs["suppressed"] != "" || lines[0].attrs["client"] != "127.0.0.1" {
				t.Errorf("first line %v, want the event itself", lines[0])
			}
			if n := len(lines) - countWithSuppressed(lines) + suppressed(lines); n != tc.n {
				t.Errorf("the lines account for %d events, want %d", n, tc.n)
			}
		})
	}
}

// logRecord is one line a recorder saw: its message and attributes.
type logRecord struct {
	msg   string
	attrs map[string]string
}

// recorder is a slog.Handler keeping every record.
type recorder struct {
	mu  sync.Mutex
	out []logRecord
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	lr := logRecord{msg: rec.Message, attrs: map[string]string{}}
	rec.Attrs(func(a slog.Attr) bool {
		lr.attrs[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	r.out = append(r.out, lr)
	r.mu.Unlock()
	return nil
}

// lines returns the records with message msg.
func (r *recorder) lines(msg string) []logRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logRecord
	for _, l := range r.out {
		if l.msg == msg {
			out = append(out, l)
		}
	}
	return out
}

// suppressed sums the suppressed counts of lines.
func suppressed(lines []logRecord) int {
	n := 0
	for _, l := range lines {
		var k int
		_, _ = fmt.Sscan(l.attrs["suppressed"], &k)
		n += k
	}
	return n
}

// countWithSuppressed is the lines that only report a count (written by
// a flush, not by an event).
func countWithSuppressed(lines []logRecord) int {
	n := 0
	for _, l := range lines {
		if l.attrs["suppressed"] != "" {
			n++
		}
	}
	return n
}
