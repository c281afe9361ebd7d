package sunspecserver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"plantd/gridcontrol"
	"plantd/internal/proctest"
)

// fakeGrid keeps grid control's channel rules for opModMaxLimW: within a
// channel the newest window wins, across channels the lowest; a channel's
// window is cancelled and extended by that channel alone.
type fakeGrid struct {
	mu     sync.Mutex
	n      int
	scheds []*fakeSched
}

type fakeSched struct {
	id, channel, by, role string
	pct                   float64
	end                   time.Time
}

func (g *fakeGrid) Submit(_ context.Context, _ string, by gridcontrol.Origin, orders []gridcontrol.Order, _ ...gridcontrol.SubmitOption) (gridcontrol.Schedule, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	o := orders[0]
	s := &fakeSched{id: fmt.Sprintf("s%02d", g.n), channel: by.Role + "/" + by.Channel, by: by.String(), role: by.Role, pct: *o.Value,
		end: time.Now().Add(o.For)}
	g.scheds = append(g.scheds, s)
	return gridcontrol.Schedule{ScheduleID: s.id, CreatedBy: s.by, Commands: []gridcontrol.ScheduledCmd{{Command: o.Command, End: s.end}}}, nil
}

func (g *fakeGrid) find(id string, by gridcontrol.Origin) (*fakeSched, error) {
	for _, s := range g.scheds {
		if s.id == id {
			if s.channel != by.Role+"/"+by.Channel {
				return nil, gridcontrol.ErrNotPermitted
			}
			if !time.Now().Before(s.end) {
				return nil, gridcontrol.ErrUnknownSchedule
			}
			return s, nil
		}
	}
	return nil, gridcontrol.ErrUnknownSchedule
}

func (g *fakeGrid) Cancel(_ context.Context, _, id string, by gridcontrol.Origin) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, err := g.find(id, by)
	if err == nil {
		s.end = time.Now()
	}
	return err
}

func (g *fakeGrid) Extend(_ context.Context, _, id string, end time.Time, by gridcontrol.Origin) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, err := g.find(id, by)
	if err == nil && end.After(s.end) {
		s.end = end
	}
	return err
}

func (g *fakeGrid) GoverningLimit(string) (gridcontrol.LimitInForce, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	newest := map[string]*fakeSched{}
	for _, s := range g.scheds {
		if time.Now().Before(s.end) {
			newest[s.channel] = s // appended in order: the last is the newest
		}
	}
	var gov *fakeSched
	for _, s := range newest {
		if gov == nil || s.pct < gov.pct {
			gov = s
		}
	}
	if gov == nil {
		return gridcontrol.LimitInForce{}, false, nil
	}
	return gridcontrol.LimitInForce{Pct: gov.pct, Command: "opModMaxLimW", ScheduleID: gov.id, CreatedBy: gov.by, Role: gov.role, End: gov.end}, true, nil
}

// open returns the active windows as "by pct".
func (g *fakeGrid) open() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, s := range g.scheds {
		if time.Now().Before(s.end) {
			out = append(out, fmt.Sprintf("%s %g", s.by, s.pct))
		}
	}
	return out
}

// master is a Modbus TCP master on a loopback address of its own (Linux
// routes all of 127/8 to lo).
type master struct {
	t    *testing.T
	conn net.Conn
	tid  uint16
}

func dialFrom(t *testing.T, local, addr string) (*master, error) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Close() })
	return &master{t: t, conn: c}, nil
}

// do sends one PDU to unit 1 and returns the answer's PDU.
func (m *master) do(pdu []byte) ([]byte, error) {
	m.tid++
	frame := binary.BigEndian.AppendUint16(nil, m.tid)
	frame = binary.BigEndian.AppendUint16(frame, 0)
	frame = binary.BigEndian.AppendUint16(frame, uint16(len(pdu)+1))
	frame = append(append(frame, 1), pdu...)
	_ = m.conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := m.conn.Write(frame); err != nil {
		return nil, err
	}
	head := make([]byte, 7)
	if _, err := io.ReadFull(m.conn, head); err != nil {
		return nil, err
	}
	body := make([]byte, int(binary.BigEndian.Uint16(head[4:]))-1)
	if _, err := io.ReadFull(m.conn, body); err != nil {
		return nil, err
	}
	if body[0]&0x80 != 0 {
		return nil, fmt.Errorf("exception %d", body[1])
	}
	return body, nil
}

// write writes one register (function 6).
func (m *master) write(addr, v uint16) error {
	_, err := m.do([]byte{6, byte(addr >> 8), byte(addr), byte(v >> 8), byte(v)})
	return err
}

// read reads n registers (function 3).
func (m *master) read(addr, n uint16) []uint16 {
	m.t.Helper()
	b, err := m.do([]byte{3, byte(addr >> 8), byte(addr), byte(n >> 8), byte(n)})
	if err != nil {
		m.t.Fatalf("read %d: %v", addr, err)
	}
	out := make([]uint16, n)
	for i := range out {
		out[i] = binary.BigEndian.Uint16(b[2+2*i:])
	}
	return out
}

// TestMastersOwnWindows: two masters on 127.0.0.1 and 127.0.0.2 each hold
// their own window; one's enable 0 ends nothing of the other's; reads
// show the limit in force with its holder, RvrtTms as each wrote it; a
// master outside allow is closed at connect.
func TestMastersOwnWindows(t *testing.T) {
	g := &fakeGrid{}
	allow := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("127.0.0.2/32")}
	s, addr := serveAt(t, Config{Writes: true, Allow: allow}, testLive(t, demoReadings()), g)
	a, err := dialFrom(t, "127.0.0.1", addr)
	if err != nil {
		t.Fatal(err)
	}
	b, err := dialFrom(t, "127.0.0.2", addr)
	if err != nil {
		t.Fatal(err)
	}
	pt := func(model uint16, point string) uint16 {
		for _, m := range s.Models() {
			if m.ID == model {
				def := modelDef(model)
				return m.Addr + def.Group.Points[def.Group.PointIndex(point)].Offset
			}
		}
		t.Fatalf("no model %d", model)
		return 0
	}
	lim, rvrt, ena := pt(123, "WMaxLimPct"), pt(123, "WMaxLimPct_RvrtTms"), pt(123, "WMaxLim_Ena")
	holder := pt(modelHolder, "Role")

	// A: RvrtTms 600, 50 %, enable: a window of A's channel.
	for _, w := range [][2]uint16{{rvrt, 600}, {lim, 50}, {ena, 1}} {
		if err := a.write(w[0], w[1]); err != nil {
			t.Fatalf("A writes %v: %v", w, err)
		}
	}
	if got := g.open(); !slices.Equal(got, []string{"modbus:127.0.0.1 (installer) 50"}) {
		t.Fatalf("open windows after A: %q", got)
	}
	// B's enable 0 (it holds nothing) ends nothing of A's.
	if err := b.write(ena, 0); err != nil {
		t.Fatalf("B writes Ena 0: %v", err)
	}
	if got := g.open(); !slices.Equal(got, []string{"modbus:127.0.0.1 (installer) 50"}) {
		t.Fatalf("open windows after B's Ena 0: %q", got)
	}
	// B's own 70 %: a window of its own; 50 % (A's) stays in force and
	// both read it, each its own RvrtTms, only A as the holder.
	if err := b.write(lim, 70); err != nil {
		t.Fatal(err)
	}
	if err := b.write(ena, 1); err != nil {
		t.Fatal(err)
	}
	if got := g.open(); len(got) != 2 {
		t.Fatalf("open windows after B's 70 %%: %q", got)
	}
	for _, m := range []struct {
		name      string
		m         *master
		rvrt, own uint16
	}{{"A", a, 600, 1}, {"B", b, 0, 0}} {
		r := m.m.read(lim, 5) // WMaxLimPct, WinTms, RvrtTms, RmpTms, Ena
		h := m.m.read(holder, 3+8+32)
		by := string(trimNUL(h, 11))
		if r[0] != 50 || r[4] != 1 || r[2] != m.rvrt || h[0] != 1 || h[1] != m.own || h[2] != 1 || by != "modbus:127.0.0.1 (installer)" {
			t.Errorf("%s reads WMaxLimPct %d Ena %d RvrtTms %d, holder role %d own %d cmd %d by %q; want 50, 1, %d, 1, %d, 1, A",
				m.name, r[0], r[4], r[2], h[0], h[1], h[2], by, m.rvrt, m.own)
		}
	}
	// B lifts its own: A's goes on.
	if err := b.write(ena, 0); err != nil {
		t.Fatal(err)
	}
	if got := g.open(); !slices.Equal(got, []string{"modbus:127.0.0.1 (installer) 50"}) {
		t.Fatalf("open windows after B lifted its own: %q", got)
	}
	// A lifts its own: no limit in force.
	if err := a.write(ena, 0); err != nil {
		t.Fatal(err)
	}
	if r := b.read(lim, 5); r[0] != 100 || r[4] != 0 {
		t.Errorf("no window: WMaxLimPct %d Ena %d, want 100, 0", r[0], r[4])
	}
	if h := a.read(holder, 3); h[0] != 0 || h[1] != 0 || h[2] != 0 {
		t.Errorf("no window: holder %v, want 0 0 0", h)
	}
	// 127.0.0.3 is not in allow: closed at connect, before any request.
	c, err := dialFrom(t, "127.0.0.3", addr)
	if err == nil {
		_, err = c.do([]byte{3, byte(lim >> 8), byte(lim), 0, 1})
	}
	if err == nil {
		t.Error("a master outside allow was answered")
	}
}

// TestMasterNewValueEndsItsOldWindow: a master's new value replaces its
// window (the old one ended, not left to show through after the new one
// or after the master's enable 0), so a master writing value after value
// holds one window, not one per value.
func TestMasterNewValueEndsItsOldWindow(t *testing.T) {
	g := &fakeGrid{}
	s, addr := serveAt(t, Config{Writes: true, Allow: loopback}, testLive(t, demoReadings()), g)
	a, err := dialFrom(t, "127.0.0.1", addr)
	if err != nil {
		t.Fatal(err)
	}
	var lim, rvrt, ena uint16
	for _, m := range s.Models() {
		if m.ID == 123 {
			def := modelDef(123)
			at := func(p string) uint16 { return m.Addr + def.Group.Points[def.Group.PointIndex(p)].Offset }
			lim, rvrt, ena = at("WMaxLimPct"), at("WMaxLimPct_RvrtTms"), at("WMaxLim_Ena")
		}
	}
	for _, w := range [][2]uint16{{rvrt, 600}, {lim, 50}, {ena, 1}, {lim, 41}, {lim, 42}, {lim, 41}, {rvrt, 300}, {lim, 100}} {
		if err := a.write(w[0], w[1]); err != nil {
			t.Fatalf("write %v: %v", w, err)
		}
	}
	if got := g.open(); !slices.Equal(got, []string{"modbus:127.0.0.1 (installer) 100"}) {
		t.Fatalf("open windows after 50, 41, 42, 41, 100 %%: %q, want the 100 %% alone", got)
	}
	if err := a.write(ena, 0); err != nil {
		t.Fatal(err)
	}
	if got := g.open(); len(got) != 0 {
		t.Errorf("open windows after the master's enable 0: %q, want none", got)
	}
}

// trimNUL is the string of registers regs[from:] without the NUL padding.
func trimNUL(regs []uint16, from int) []byte {
	var b []byte
	for _, r := range regs[from:] {
		b = append(b, byte(r>>8), byte(r))
	}
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}

// TestMastersBounded: at most maxMasters states; a master gone (no window,
// no write for forgetAfter) is forgotten, the least recently written
// windowless one makes room, and with every state holding a window a new
// master is refused.
func TestMastersBounded(t *testing.T) {
	s, _ := serveAt(t, Config{Writes: true, Allow: loopback}, testLive(t, demoReadings()), &fakeGrid{})
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{127, 0, byte(i >> 8), byte(i)}) }
	for i := range maxMasters {
		c, err := s.masterLocked(addr(i), now, now)
		if err != nil {
			t.Fatal(err)
		}
		c.held, c.heldEnd, c.wrote = "w", now.Add(time.Hour), now
	}
	if _, err := s.masterLocked(addr(maxMasters), now, now); !errors.Is(err, errTooManyMasters) {
		t.Fatalf("a new master with %d windows held: %v", maxMasters, err)
	}
	// Master 3's window ended: it makes room once forgetAfter passed
	// since its last write, master 5 (no window, written earlier than
	// the others) when none has.
	s.masters[addr(3)].heldEnd = now
	if _, err := s.masterLocked(addr(100), now.Add(time.Second), now.Add(forgetAfter)); err != nil || s.masters[addr(3)] != nil {
		t.Fatalf("master 3 not forgotten: %v", err)
	}
	s.masters[addr(5)].held, s.masters[addr(5)].wrote = "", now.Add(-time.Second)
	s.masters[addr(6)].held = ""
	if _, err := s.masterLocked(addr(101), now, now); err != nil || s.masters[addr(5)] != nil || s.masters[addr(6)] == nil {
		t.Fatalf("the least recently written windowless master (5) made no room: %v", err)
	}
	if len(s.masters) != maxMasters {
		t.Errorf("%d states kept, at most %d", len(s.masters), maxMasters)
	}
}

// syncBuf is a log sink safe for the server's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

// TestGridOperatorRoleWarned: writes with the grid operator's role are
// logged at start as a warning naming the allowed masters; writes
// without an allow-list are refused at New.
func TestGridOperatorRoleWarned(t *testing.T) {
	live := testLive(t, demoReadings())
	if _, err := New(Config{PlantID: "p", Writes: true}, live, &fakeGrid{}, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("writes without allow: New made a server")
	}
	var buf syncBuf
	s, err := New(Config{PlantID: "p", Writes: true, Role: "gridoperator", Allow: []netip.Prefix{netip.MustParsePrefix("192.0.2.7/32")}},
		live, &fakeGrid{}, slog.New(slog.NewTextHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	proctest.ServeTCP(t, s.Serve)
	proctest.WaitValue(t, "a warning at start (last: the log)", 5*time.Second, func() (string, bool) {
		l := buf.String()
		return l, strings.Contains(l, "level=WARN")
	})
	if l := buf.String(); !strings.Contains(l, "grid operator's role") || !strings.Contains(l, "192.0.2.7/32") {
		t.Errorf("the warning names neither the role nor the masters:\n%s", l)
	}
}
