package eebus_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"plantd/eebus"
	"plantd/eebus/controlbox"
	"plantd/gridcontrol"
	"plantd/internal/proctest"
	"plantd/plant"
	"plantd/store"
	"plantd/sunspec"
)

const wait = 30 * time.Second

// The control box runs as a process of its own (this test binary with
// PLANTD_EEBUS_BOX set, package controlbox's Box and Serve on its stdin
// and stdout), as a real box is: eebus-go's use cases subscribe to
// spine-go's one global event bus, so two devices in one process see
// each other's events, on which the stack's own code races.
const boxEnv = "PLANTD_EEBUS_BOX"

func TestMain(m *testing.M) {
	if os.Getenv(boxEnv) != "" {
		os.Exit(runBox())
	}
	os.Exit(m.Run())
}

// runBox is the box process: PLANTD_EEBUS_BOX="<port> <trusted SKI>
// [<its address>]"; it prints "ski <SKI>" and serves commands until its
// stdin closes.
func runBox() int {
	f := strings.Fields(os.Getenv(boxEnv))
	port, _ := strconv.Atoi(f[0])
	spec := controlbox.Spec{Port: port, Trust: f[1], Heartbeat: 200 * time.Millisecond}
	if len(f) > 2 {
		spec.PeerAddr = f[2]
	}
	b, err := controlbox.New(spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b.Start()
	defer b.Stop()
	fmt.Println("ski", b.SKI())
	if err := controlbox.Serve(context.Background(), b, os.Stdin, os.Stdout, wait); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type boxProc struct {
	t      *testing.T
	ski    string
	port   int
	in     io.WriteCloser
	lines  chan string
	stderr *proctest.Buffer
}

// startBox starts a box process that trusts trust (and dials peer, when
// given).
func startBox(t *testing.T, trust, peer string) *boxProc {
	t.Helper()
	p := &boxProc{t: t, port: proctest.FreePort(t), lines: make(chan string, 16), stderr: &proctest.Buffer{}}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %s %s", boxEnv, p.port, trust, peer))
	cmd.Stderr = p.stderr
	var err error
	if p.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		_ = p.in.Close()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("box %s stderr:\n%s", p.ski, p.stderr.String())
		}
	})
	p.ski = strings.TrimPrefix(p.answer("its SKI"), "ski ")
	return p
}

// stop ends the box (its stdin closed, it stops its node and exits).
func (p *boxProc) stop() {
	_ = p.in.Close()
	for range p.lines {
	}
}

func (p *boxProc) answer(what string) string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("box: no answer to %s: it ended (stderr: %s)", what, p.stderr.String())
		}
		return l
	case <-time.After(2 * wait):
		p.t.Fatalf("box: no answer to %s", what)
	}
	return ""
}

// do runs a command of the box and returns its answer's value ("ok 7":
// "7"); an "error" answer fails the test.
func (p *boxProc) do(cmd string) string {
	p.t.Helper()
	if _, err := fmt.Fprintln(p.in, cmd); err != nil {
		p.t.Fatalf("box %s: %v", cmd, err)
	}
	a := p.answer(cmd)
	if !strings.HasPrefix(a, "ok") {
		p.t.Fatalf("box %s: %s", cmd, a)
	}
	return strings.TrimSpace(strings.TrimPrefix(a, "ok"))
}

// recorder is the energy manager's side of LPC as plantd calls it.
type recorder struct {
	mu sync.Mutex
	on bool
	w  float64
	n  int
}

func (r *recorder) LimitConsumption(_ string, on bool, w float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on, r.w, r.n = on, w, r.n+1
}

func (r *recorder) is(on bool, w float64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n > 0 && r.on == on && (!on || r.w == w)
}

type plantLog struct {
	mu sync.Mutex
	es []plant.LogEntry
}

func (l *plantLog) add(e plant.LogEntry) {
	l.mu.Lock()
	l.es = append(l.es, e)
	l.mu.Unlock()
}

func (l *plantLog) has(code, part string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.es {
		if e.Code == code && strings.Contains(e.Message, part) {
			return true
		}
	}
	return false
}

// gate is grid control with a real store and a plant without devices:
// windows are submitted without the eligibility check, stored and listed.
func gate(t *testing.T) *gridcontrol.Controller {
	t.Helper()
	loc := time.UTC
	st, err := store.Open(context.Background(), store.Config{Path: filepath.Join(t.TempDir(), "plantd.db"),
		Plants: []store.PlantInfo{{ID: "demo", Location: loc}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = st.Run(ctx) })
	live := plant.NewLive([]plant.Plant{{ID: "demo", Name: "Demo", Location: loc}}, nil, time.Now)
	gc, err := gridcontrol.New(gridcontrol.Config{Cycle: 200 * time.Millisecond}, st, live,
		func(string) (sunspec.ReadWriter, bool) { return nil, false }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { _ = gc.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait(); _ = st.Close() })
	return gc
}

// window is the plant's open FeedInLimit window created by the box.
func window(gc *gridcontrol.Controller, by string) (gridcontrol.Schedule, bool) {
	scheds, err := gc.Schedules("demo")
	if err != nil {
		return gridcontrol.Schedule{}, false
	}
	for _, sc := range scheds {
		if sc.CreatedBy != by {
			continue
		}
		for _, cm := range sc.Commands {
			if cm.Status == gridcontrol.StatusActive || cm.Status == gridcontrol.StatusPending || cm.Status == gridcontrol.StatusOverridden {
				return sc, true
			}
		}
	}
	return gridcontrol.Schedule{}, false
}

// TestControlBox: plantd's EEBus service and a control box of eebus-go's
// Energy Guard use cases in one process over loopback TLS, each trusting
// the other's SKI: pairing completes and plantd leaves its start's
// failsafe; an LPP limit becomes a grid-operator FeedInLimit window in W
// through the gate, created by eebus:<ski>, and its end ends it; an LPC
// limit reaches the energy manager and its end releases it; a limit
// below zero, above the nominal maximum or of a negative duration (also
// written raw, past the use case's checks) is refused; the failsafe values
// the box writes are kept in the state directory; a box whose SKI is not
// trusted is refused and logged; the heartbeat stopped applies the
// failsafe limits, which a restart within their duration resumes.
func TestControlBox(t *testing.T) {
	dir := t.TempDir()
	cert, err := eebus.LoadOrCreateCert(dir, "gw1")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, eebus.CertFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("certificate file: %v, %v; want 0600", fi, err)
	}
	ski, err := eebus.SKI(cert)
	if err != nil {
		t.Fatal(err)
	}
	again, err := eebus.LoadOrCreateCert(dir, "gw1")
	if s2, _ := eebus.SKI(again); err != nil || s2 != ski {
		t.Fatalf("second start: SKI %s, %v; want the kept %s", s2, err, ski)
	}

	b := startBox(t, ski, "")
	gc := gate(t)
	rec := &recorder{}
	var log plantLog
	prodFailsafe := 3000.0
	plantdPort := proctest.FreePort(t)
	// The inverters' rated sum as the daemon learns it: 18 kW, later 30.
	var rated atomic.Uint64
	rated.Store(math.Float64bits(18000))
	svc, err := eebus.New(eebus.Spec{PlantID: "demo", Cert: cert, StateDir: dir, Port: plantdPort,
		Brand: "plantd", Model: "plantd", Serial: "gw1", Trusted: []string{b.ski},
		Peers: map[string]string{b.ski: fmt.Sprintf("127.0.0.1:%d", b.port)}, HeartbeatTimeout: time.Second,
		Failsafe:            eebus.Failsafe{ConsumptionW: 4200, ProductionW: &prodFailsafe, Duration: 2 * time.Hour},
		ConsumptionNominalW: 20000},
		eebus.Deps{Gate: gc, Consumers: rec, Log: log.add, ProductionNominal: func() float64 { return math.Float64frombits(rated.Load()) }},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	t.Cleanup(func() {
		if t.Failed() {
			log.mu.Lock()
			for _, e := range log.es {
				t.Logf("plant log: %s %s", e.Code, e.Message)
			}
			log.mu.Unlock()
			t.Logf("status %+v, consumers %+v", svc.Status(), rec)
		}
	})
	by := "eebus:" + b.ski + " (gridoperator)"
	failsafeBy := "eebus:" + b.ski + "/failsafe (gridoperator)"
	proctest.WaitFor(t, "the start's failsafe: consumption 4200 W", wait, func() bool { return rec.is(true, 4200) })
	proctest.WaitFor(t, "pairing and the box's first heartbeat end the start's failsafe", wait, func() bool {
		st := svc.Status()
		return st.Connected && !st.Failsafe && log.has("EEBusRecovered", "speaks")
	})
	proctest.WaitFor(t, "the start's failsafe production window ended", wait, func() bool {
		_, open := window(gc, failsafeBy)
		return !open && rec.is(false, 0)
	})
	b.do("ready")

	// LPP: 5 kW for an hour becomes the grid operator's FeedInLimit window.
	if n := b.do("lpp 5000 1h"); n != "0" && n != "-" { // "-": the answer was lost (package controlbox)
		t.Fatalf("LPP 5 kW refused: error %s", n)
	}
	sc := proctest.WaitValue(t, "the LPP limit as a window through the gate", wait, func() (gridcontrol.Schedule, bool) {
		return window(gc, by)
	})
	cm := sc.Commands[0]
	if cm.Command != "FeedInLimit" || cm.Value == nil || *cm.Value != 5000 || cm.Unit != "W" || sc.Role != "gridoperator" {
		t.Errorf("window %s %v %s role %s; want FeedInLimit 5000 W of the grid operator", cm.Command, cm.Value, cm.Unit, sc.Role)
	}
	if d := cm.End.Sub(cm.Start); d < 59*time.Minute || d > time.Hour {
		t.Errorf("window of %s, want the limit's hour", d)
	}
	// A stricter grid-operator window of another door (a ripple-control
	// receiver's 2 kW) governs; the box's 5 kW does not loosen it, and
	// governs again when that ends.
	rcr := gridcontrol.Origin{Door: gridcontrol.DoorInput, Name: "rcr/K3", Role: "gridoperator", Channel: "input:rcr"}
	two := 2000.0
	in, err := gc.Submit(context.Background(), "demo", rcr, []gridcontrol.Order{{Command: "FeedInLimit", For: time.Hour, Value: &two, Unit: "W"}},
		gridcontrol.SkipEligibilityCheck(true))
	if err != nil {
		t.Fatal(err)
	}
	proctest.WaitFor(t, "the box's 5 kW overridden by the receiver's 2 kW", wait, func() bool {
		w, _ := window(gc, by)
		return len(w.Commands) == 1 && w.Commands[0].Status == gridcontrol.StatusOverridden && w.Commands[0].OverriddenBy == in.ScheduleID
	})
	if err := gc.Cancel(context.Background(), "demo", in.ScheduleID, rcr); err != nil {
		t.Fatal(err)
	}
	proctest.WaitFor(t, "the box's 5 kW governing again", wait, func() bool {
		w, _ := window(gc, by)
		return len(w.Commands) == 1 && w.Commands[0].Status == gridcontrol.StatusActive
	})

	// Nobody else ends it: it is held like an input's.
	if err := gc.Cancel(context.Background(), "demo", sc.ScheduleID, gridcontrol.Origin{Name: "api", Role: "gridoperator"}); err == nil {
		t.Error("an API token ended the control box's window")
	}

	// LPC: 6 kW reaches the energy manager.
	if n := b.do("lpc 6000"); n != "0" && n != "-" {
		t.Fatalf("LPC 6 kW refused: error %s", n)
	}
	proctest.WaitFor(t, "the LPC limit at the energy manager", wait, func() bool { return rec.is(true, 6000) })

	// Bad input: a negative limit and one above the nominal maximum are
	// refused with a log line; so are data no well-behaved box sends,
	// written raw on the wire (a negative scaled number, a number at the
	// largest scale, a negative duration); the limits in force stand.
	for _, bad := range []struct{ cmd, why string }{
		{"lpc -10", "not a power"}, {"lpp 25000", "above the nominal maximum 18000 W"},
		{"raw lpc -3 3", "limit -3000 W is not a power"}, {"raw lpp 5 127", "e+127 W is above the nominal maximum"},
		{"raw lpc 3 3 -PT10M", "negative duration -10m0s"},
	} {
		// The box may miss the refusal's answer (see package controlbox):
		// plantd's log line is the event waited for.
		if n := b.do(bad.cmd); n == "0" {
			t.Errorf("%s accepted", bad.cmd)
		}
		proctest.WaitFor(t, bad.cmd+" refused and logged", wait, func() bool { return log.has("EEBusLimitRefused", bad.why) })
	}
	if w, open := window(gc, by); !rec.is(true, 6000) || !open || *w.Commands[0].Value != 5000 {
		t.Error("a refused limit touched the limits in force")
	}

	// The nominal maxima the box reads: the consumers' (Spec) and the
	// inverters' rated sum (Deps.ProductionNominal), which follows the
	// inverters: at 30 kW, 25 kW is taken.
	proctest.WaitFor(t, "the box reads the consumption nominal maximum 20 kW", wait, func() bool { return b.do("nominal lpc") == "20000" })
	proctest.WaitFor(t, "the box reads the production nominal maximum 18 kW", wait, func() bool { return b.do("nominal lpp") == "18000" })
	rated.Store(math.Float64bits(30000))
	proctest.WaitFor(t, "the box reads the new production nominal maximum", wait, func() bool { return b.do("nominal lpp") == "30000" })
	if n := b.do("lpp 25000"); n != "0" && n != "-" {
		t.Fatalf("LPP 25 kW under a nominal maximum of 30 kW refused: error %s", n)
	}
	proctest.WaitFor(t, "the 25 kW window", wait, func() bool {
		w, open := window(gc, by)
		return open && *w.Commands[0].Value == 25000
	})

	// The ends: the window ends, the consumers are free.
	b.do("lpp end")
	proctest.WaitFor(t, "the LPP window ended", wait, func() bool {
		_, open := window(gc, by)
		return !open
	})
	b.do("lpc end")
	proctest.WaitFor(t, "the LPC limit released", wait, func() bool { return rec.is(false, 0) })

	// Failsafe values written by the box are kept.
	b.do("failsafe lpc 5000")
	proctest.WaitFor(t, "the box's failsafe value kept in the state directory", wait, func() bool {
		data, err := os.ReadFile(filepath.Join(dir, eebus.StateFile))
		return err == nil && strings.Contains(string(data), `"consumptionW":5000`)
	})

	// An untrusted box is refused and logged.
	intruder := startBox(t, ski, fmt.Sprintf("127.0.0.1:%d", plantdPort))
	proctest.WaitFor(t, "the untrusted SKI refused and logged", wait, func() bool {
		return log.has("EEBusUntrusted", intruder.ski)
	})
	intruder.stop()
	if log.has("EEBusConnected", intruder.ski) {
		t.Error("the untrusted box counts as connected")
	}

	// Heartbeat stopped: the failsafe limits apply.
	b.do("heartbeat stop")
	proctest.WaitFor(t, "heartbeat lost: failsafe", wait, func() bool {
		return log.has("EEBusHeartbeatLost", "no heartbeat") && log.has("EEBusFailsafe", "failsafe for at least") && svc.Status().Failsafe
	})
	proctest.WaitFor(t, "the failsafe limits applied: the box's 5000 W and a 3000 W production window", wait, func() bool {
		fsw, open := window(gc, failsafeBy)
		return rec.is(true, 5000) && open && *fsw.Commands[0].Value == 3000
	})
	// The heartbeat back within the failsafe duration (2 h, the use
	// cases' least): the failsafe holds.
	lost := svc.Status().LastHeartbeat
	b.do("heartbeat start")
	proctest.WaitFor(t, "the heartbeat back", wait, func() bool { return svc.Status().LastHeartbeat.After(lost) })
	if _, open := window(gc, failsafeBy); !svc.Status().Failsafe || !open || !rec.is(true, 5000) || log.has("EEBusRecovered", "heartbeat is back") {
		t.Error("the failsafe ended before its duration when the heartbeat came back")
	}

	// A restart within the failsafe duration: the new run resumes the
	// lost heartbeat's failsafe with the values the box wrote (kept in the
	// state directory), holds its own failsafe window and ends the one the
	// earlier run left open, and holds the failsafe when the box speaks.
	before, _ := window(gc, failsafeBy)
	cancel()
	<-done
	if before.ScheduleID == "" {
		t.Error("the earlier run left no failsafe window to end")
	}
	restart := func() (*eebus.Service, *recorder, *plantLog) {
		t.Helper()
		rec := &recorder{}
		log := &plantLog{}
		svc, err := eebus.New(eebus.Spec{PlantID: "demo", Cert: cert, StateDir: dir, Port: plantdPort,
			Brand: "plantd", Model: "plantd", Serial: "gw1", Trusted: []string{b.ski},
			Peers: map[string]string{b.ski: fmt.Sprintf("127.0.0.1:%d", b.port)}, HeartbeatTimeout: time.Second,
			Failsafe: eebus.Failsafe{ConsumptionW: 4200, ProductionW: &prodFailsafe, Duration: 2 * time.Hour}},
			eebus.Deps{Gate: gc, Consumers: rec, Log: log.add}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = svc.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		return svc, rec, log
	}
	svc2, rec2, log2 := restart()
	proctest.WaitFor(t, "the restart resumes the failsafe with the kept 5000 W", wait, func() bool {
		return rec2.is(true, 5000) && log2.has("EEBusFailsafe", "resuming the failsafe of the lost heartbeat")
	})
	proctest.WaitFor(t, "the box speaks to the restarted run", wait, func() bool { return !svc2.Status().LastHeartbeat.IsZero() })
	proctest.WaitFor(t, "the earlier run's window ended, the restart's own open", wait, func() bool {
		w, open := window(gc, failsafeBy)
		return open && w.ScheduleID != before.ScheduleID
	})
	if !svc2.Status().Failsafe || log2.has("EEBusRecovered", "") || !rec2.is(true, 5000) {
		t.Error("the failsafe ended at the restart when the box spoke, before its duration")
	}
	// A restart after the failsafe duration (it starts in the failsafe until
	// the box speaks, then leaves it): cmd/plantd's TestEEBusHeartbeatLoss,
	// with the real binary. A third run here would stop a node a third time
	// while the box dials it, where ship-go v0.6.0's Hub.Shutdown reads its
	// connections without their lock (a data race -race reports).

}
