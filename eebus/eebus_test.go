package eebus_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	eebusapi "github.com/enbility/eebus-go/api"
	ucapi "github.com/enbility/eebus-go/usecases/api"
	eglpc "github.com/enbility/eebus-go/usecases/eg/lpc"
	eglpp "github.com/enbility/eebus-go/usecases/eg/lpp"
	shipcert "github.com/enbility/ship-go/cert"
	spineapi "github.com/enbility/spine-go/api"
	"github.com/enbility/spine-go/model"

	"plantd/eebus"
	"plantd/gridcontrol"
	"plantd/internal/proctest"
	"plantd/plant"
	"plantd/store"
	"plantd/sunspec"
)

const wait = 30 * time.Second

// box is a control box made of eebus-go's Energy Guard use cases (eg/lpc,
// eg/lpp) on a node of its own: a grid guard entity of an electricity
// supply system, which trusts plantd's SKI.
type box struct {
	node *eebus.Node
	lpc  *eglpc.LPC
	lpp  *eglpp.LPP

	mu               sync.Mutex
	lpcPeer, lppPeer spineapi.EntityRemoteInterface
}

func newBox(t *testing.T, trust string, peers map[string]string) *box {
	t.Helper()
	c, err := shipcert.CreateCertificate("box", "Demo", "DE", "box-1")
	if err != nil {
		t.Fatal(err)
	}
	b := &box{}
	b.node, err = eebus.NewNode(eebus.NodeSpec{Cert: c, Port: proctest.FreePort(t), Brand: "Demo", Model: "ControlBox", Serial: "1",
		DeviceType: model.DeviceTypeTypeElectricitySupplySystem, EntityType: model.EntityTypeTypeGridGuard,
		Heartbeat: 200 * time.Millisecond, Trusted: []string{trust}, Peers: peers}, eebus.NodeEvents{})
	if err != nil {
		t.Fatal(err)
	}
	b.lpc = eglpc.NewLPC(b.node.Entity(), func(_ string, _ spineapi.DeviceRemoteInterface, e spineapi.EntityRemoteInterface, ev eebusapi.EventType) {
		if ev == eglpc.UseCaseSupportUpdate {
			b.mu.Lock()
			b.lpcPeer = e
			b.mu.Unlock()
		}
	})
	b.lpp = eglpp.NewLPP(b.node.Entity(), func(_ string, _ spineapi.DeviceRemoteInterface, e spineapi.EntityRemoteInterface, ev eebusapi.EventType) {
		if ev == eglpp.UseCaseSupportUpdate {
			b.mu.Lock()
			b.lppPeer = e
			b.mu.Unlock()
		}
	})
	for _, uc := range []eebusapi.UseCaseInterface{b.lpc, b.lpp} {
		uc.AddFeatures()
		uc.AddUseCase()
	}
	return b
}

func (b *box) peers() (lpc, lpp spineapi.EntityRemoteInterface) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lpcPeer, b.lppPeer
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
			if cm.Status == gridcontrol.StatusActive || cm.Status == gridcontrol.StatusPending {
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
// below zero is refused; the failsafe values the box writes are kept in
// the state directory; a box whose SKI is not trusted is refused and
// logged; the heartbeat stopped applies the failsafe limits.
func TestControlBox(t *testing.T) {
	if proctest.Race() {
		// The stack itself races, upstream, with several devices in one
		// process: ship-go v0.6.0's Hub.Shutdown reads its connections map
		// unlocked while a connection registers, eebus-go v0.7.0's cs/lpc
		// sets its heartbeat client from two devices' events at once
		// (spine-go's one global event bus), and spine-go v0.7.0's remote
		// device address is written during detailed discovery while read.
		// None is in plantd's code; run it without -race.
		t.Skip("eebus-go/ship-go/spine-go race among themselves with several devices in one process; run without -race")
	}
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

	// Every node's use cases are made before any node runs: they
	// subscribe to spine-go's one event bus, which is not safe to
	// subscribe to while another device publishes on it.
	b := newBox(t, ski, nil)
	plantdPort := proctest.FreePort(t)
	intruder := newBox(t, ski, map[string]string{ski: fmt.Sprintf("127.0.0.1:%d", plantdPort)})
	b.node.Start()
	t.Cleanup(b.node.Stop)
	boxAddr := fmt.Sprintf("127.0.0.1:%d", boxPort(t, b))

	gc := gate(t)
	rec := &recorder{}
	var log plantLog
	prodFailsafe := 3000.0
	svc, err := eebus.New(eebus.Spec{PlantID: "demo", Cert: cert, StateDir: dir, Port: plantdPort,
		Brand: "plantd", Model: "plantd", Serial: "gw1", Trusted: []string{b.node.SKI()},
		Peers: map[string]string{b.node.SKI(): boxAddr}, HeartbeatTimeout: time.Second,
		Failsafe:            eebus.Failsafe{ConsumptionW: 4200, ProductionW: &prodFailsafe, Duration: 500 * time.Millisecond},
		ConsumptionNominalW: 20000, ProductionNominalW: 18000},
		eebus.Deps{Gate: gc, Consumers: rec, Log: log.add}, slog.New(slog.DiscardHandler))
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
	by := "eebus:" + b.node.SKI() + " (gridoperator)"
	failsafeBy := "eebus:" + b.node.SKI() + "/failsafe (gridoperator)"
	proctest.WaitFor(t, "the start's failsafe: consumption 4200 W", wait, func() bool { return rec.is(true, 4200) })
	proctest.WaitFor(t, "pairing and the box's first heartbeat end the start's failsafe", wait, func() bool {
		st := svc.Status()
		return st.Connected && !st.Failsafe && log.has("EEBusRecovered", "speaks")
	})
	proctest.WaitFor(t, "the start's failsafe production window ended", wait, func() bool {
		_, open := window(gc, failsafeBy)
		return !open && rec.is(false, 0)
	})
	peers := proctest.WaitValue(t, "the box sees plantd's LPC and LPP", wait, func() ([2]spineapi.EntityRemoteInterface, bool) {
		a, c := b.peers()
		return [2]spineapi.EntityRemoteInterface{a, c}, a != nil && c != nil
	})
	lpcPeer, lppPeer := peers[0], peers[1]

	// LPP: 5 kW for an hour becomes the grid operator's FeedInLimit window.
	if n := write(t, "LPP 5 kW", func(cb func(model.ResultDataType)) (*model.MsgCounterType, error) {
		return b.lpp.WriteProductionLimit(lppPeer, ucapi.LoadLimit{IsActive: true, Value: 5000, Duration: time.Hour}, cb)
	}); n != model.ErrorNumberTypeNoError {
		t.Fatalf("LPP 5 kW refused: %d", n)
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
	// Nobody else ends it: it is held like an input's.
	if err := gc.Cancel(context.Background(), "demo", sc.ScheduleID, gridcontrol.Origin{Name: "api", Role: "gridoperator"}); err == nil {
		t.Error("an API token ended the control box's window")
	}

	// LPC: 6 kW reaches the energy manager.
	if n := write(t, "LPC 6 kW", func(cb func(model.ResultDataType)) (*model.MsgCounterType, error) {
		return b.lpc.WriteConsumptionLimit(lpcPeer, ucapi.LoadLimit{IsActive: true, Value: 6000}, cb)
	}); n != model.ErrorNumberTypeNoError {
		t.Fatalf("LPC 6 kW refused: %d", n)
	}
	proctest.WaitFor(t, "the LPC limit at the energy manager", wait, func() bool { return rec.is(true, 6000) })

	// Bad input: a negative limit is refused, the others stand.
	if n := write(t, "LPC -10 W", func(cb func(model.ResultDataType)) (*model.MsgCounterType, error) {
		return b.lpc.WriteConsumptionLimit(lpcPeer, ucapi.LoadLimit{IsActive: true, Value: -10}, cb)
	}); n == model.ErrorNumberTypeNoError {
		t.Error("a negative limit was accepted")
	}
	if !log.has("EEBusLimitRefused", "not a power") || !rec.is(true, 6000) {
		t.Error("the refused limit is not logged, or it touched the 6 kW limit")
	}

	// The ends: the window ends, the consumers are free.
	if _, err := b.lpp.WriteProductionLimit(lppPeer, ucapi.LoadLimit{IsActive: false, Value: 5000}, nil); err != nil {
		t.Fatal(err)
	}
	proctest.WaitFor(t, "the LPP window ended", wait, func() bool {
		_, open := window(gc, by)
		return !open
	})
	if _, err := b.lpc.WriteConsumptionLimit(lpcPeer, ucapi.LoadLimit{IsActive: false, Value: 6000}, nil); err != nil {
		t.Fatal(err)
	}
	proctest.WaitFor(t, "the LPC limit released", wait, func() bool { return rec.is(false, 0) })

	// Failsafe values written by the box are kept.
	if _, err := b.lpc.WriteFailsafeConsumptionActivePowerLimit(lpcPeer, 5000); err != nil {
		t.Fatal(err)
	}
	proctest.WaitFor(t, "the box's failsafe value kept in the state directory", wait, func() bool {
		data, err := os.ReadFile(filepath.Join(dir, eebus.StateFile))
		return err == nil && strings.Contains(string(data), `"consumptionW":5000`)
	})

	// An untrusted box is refused and logged.
	intruder.node.Start()
	t.Cleanup(intruder.node.Stop)
	proctest.WaitFor(t, "the untrusted SKI refused and logged", wait, func() bool {
		return log.has("EEBusUntrusted", intruder.node.SKI())
	})
	if log.has("EEBusConnected", intruder.node.SKI()) {
		t.Error("the untrusted box counts as connected")
	}

	// Heartbeat stopped: the failsafe limits apply.
	b.node.Entity().HeartbeatManager().StopHeartbeat()
	proctest.WaitFor(t, "heartbeat lost: failsafe", wait, func() bool {
		return log.has("EEBusHeartbeatLost", "no heartbeat") && log.has("EEBusFailsafe", "failsafe for at least") && svc.Status().Failsafe
	})
	proctest.WaitFor(t, "the failsafe limits applied: the box's 5000 W and a 3000 W production window", wait, func() bool {
		fsw, open := window(gc, failsafeBy)
		return rec.is(true, 5000) && open && *fsw.Commands[0].Value == 3000
	})
	// The heartbeat back within the failsafe duration (the box wrote 2 h,
	// the use cases' least): the failsafe holds.
	lost := svc.Status().LastHeartbeat
	if err := b.node.Entity().HeartbeatManager().StartHeartbeat(); err != nil {
		t.Fatal(err)
	}
	proctest.WaitFor(t, "the heartbeat back", wait, func() bool { return svc.Status().LastHeartbeat.After(lost) })
	if _, open := window(gc, failsafeBy); !svc.Status().Failsafe || !open || !rec.is(true, 5000) || log.has("EEBusRecovered", "heartbeat is back") {
		t.Error("the failsafe ended before its duration when the heartbeat came back")
	}
}

// write sends one write of the box and waits for plantd's answer: the
// LoadControl feature LPC and LPP share approves a write once both use
// cases did, and spine-go v0.7.0 counts those approvals per SKI in a map
// that a second write in flight resets, so the box writes one at a time
// (as eebus-go's cmd/controlbox does).
func write(t *testing.T, what string, send func(cb func(model.ResultDataType)) (*model.MsgCounterType, error)) model.ErrorNumberType {
	t.Helper()
	got := make(chan model.ResultDataType, 1)
	if _, err := send(func(r model.ResultDataType) { got <- r }); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	select {
	case r := <-got:
		if r.ErrorNumber == nil {
			return model.ErrorNumberTypeNoError
		}
		return *r.ErrorNumber
	case <-time.After(wait):
		t.Fatalf("%s: no answer", what)
	}
	return 0
}

func boxPort(t *testing.T, b *box) int {
	t.Helper()
	return b.node.Port()
}
