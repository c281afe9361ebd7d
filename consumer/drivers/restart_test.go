package drivers

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"plantd/consumer"
	"plantd/modbus"
	"plantd/plant"
	"plantd/sim"
	"plantd/sim/simtest"
	"plantd/store"
)

// restartRig runs managers one after the other on the rig's relay board
// (the simulator, over Modbus TCP) and a real SQLite file, as plantd
// restarts: each run opens the store, builds its drivers and a manager,
// and its stop closes them.
type restartRig struct {
	*rig
	path string

	mu   sync.Mutex
	got  []plant.Sample
	note chan struct{}
	// rows and bytes count the guard states written to the store.
	rows, bytes int
	// dimMinW is the managers' DimmingMinW (0: the BNetzA minimum).
	dimMinW float64
}

// countGuards is the store as the manager keeps guards in it, counting
// the rows and bytes written.
type countGuards struct {
	*store.Store
	rr *restartRig
}

func (g countGuards) SetConsumerGuard(ctx context.Context, id string, state []byte) error {
	g.rr.mu.Lock()
	g.rr.rows++
	g.rr.bytes += len(id) + len(state)
	g.rr.mu.Unlock()
	return g.Store.SetConsumerGuard(ctx, id, state)
}

func (rr *restartRig) written() (rows, bytes int) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.rows, rr.bytes
}

// run is one plantd run: its manager and how to stop it.
type run struct {
	m    *consumer.Manager
	st   *store.Store
	stop func()
}

func (rr *restartRig) sink(s plant.Sample) {
	rr.mu.Lock()
	rr.got = append(rr.got, s)
	rr.mu.Unlock()
	select {
	case rr.note <- struct{}{}:
	default:
	}
}

// wait waits for a sample of device, from now on, that satisfies ok.
func (rr *restartRig) wait(t *testing.T, device, what string, ok func(*plant.ConsumerReading) bool) {
	t.Helper()
	rr.mu.Lock()
	from := len(rr.got)
	rr.mu.Unlock()
	deadline := time.After(30 * time.Second) // a backstop only: a poll is 50 ms
	for {
		rr.mu.Lock()
		for _, s := range rr.got[from:] {
			if s.Device == device && s.Consumer != nil && ok(s.Consumer) {
				rr.mu.Unlock()
				return
			}
		}
		from = len(rr.got)
		rr.mu.Unlock()
		select {
		case <-rr.note:
		case <-deadline:
			rr.mu.Lock()
			for _, s := range rr.got[max(0, len(rr.got)-6):] {
				t.Logf("sample %s %v %+v", s.Device, s.Err, s.Consumer)
			}
			rr.mu.Unlock()
			t.Logf("writes %v", rr.coilWrites(0))
			t.Fatalf("%s: no sample: %s", device, what)
		}
	}
}

func sgIs(state int) func(*plant.ConsumerReading) bool {
	return func(r *plant.ConsumerReading) bool { return r.SGReady == state }
}

func switchIs(st plant.SwitchingState) func(*plant.ConsumerReading) bool {
	return func(r *plant.ConsumerReading) bool { return r.Switch == st }
}

// start starts a plantd run: the store reopened, new drivers, a manager
// with the heat pump (SG-Ready, coils 2, 3; minimum on time 10 min) and
// the heater (coil 0; at most 2 switchings an hour).
func (rr *restartRig) start(t *testing.T) *run {
	t.Helper()
	hp, err := NewSGReady(rr.client("rb"), SGReadyConfig{CoilA: 2, CoilB: 3, Watchdog: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	heater, err := NewRelay(rr.client("rb"), RelayConfig{Coil: 0, Watchdog: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return rr.startSpecs(t,
		consumer.Spec{ID: "hp", PlantID: "p", DriverName: "sgready", Driver: hp, Setpoint: consumer.SetpointSGReady, RatedW: 1600, Mode: plant.ModeAuto,
			Priority: 1, MinOn: 10 * time.Minute, MinOff: time.Minute, OnW: 1600, OffW: 1400,
			Interval: 50 * time.Millisecond, Timeout: time.Second},
		consumer.Spec{ID: "heater", PlantID: "p", DriverName: "relay", Driver: heater, RatedW: 3000, Mode: plant.ModeAuto,
			Priority: 2, MaxSwitchesPerHour: 2, OnW: 3000, OffW: 2700,
			Interval: 50 * time.Millisecond, Timeout: time.Second})
}

// startSpecs starts a plantd run of the given consumers on the store.
func (rr *restartRig) startSpecs(t *testing.T, specs ...consumer.Spec) *run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := store.Open(ctx, store.Config{Path: rr.path, Plants: []store.PlantInfo{{ID: "p", Location: time.UTC}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := consumer.New(ctx, specs, consumer.Deps{Sink: rr.sink, Marks: st, Guards: countGuards{st, rr}, Now: rr.clk.Now, DimmingMinW: rr.dimMinW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	r := &run{m: m, st: st}
	r.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			r.stop()
		}
	})
	return r
}

func (r *run) absorb(ctx context.Context, now time.Time, exportW float64) {
	r.m.Absorb(ctx, "p", plant.Surplus{Time: now, GridW: -exportW, GridOK: true})
}

func (r *run) status(t *testing.T, id string) plant.ConsumerStatus {
	t.Helper()
	for _, s := range r.m.Consumers() {
		if s.DeviceID == id {
			return s
		}
	}
	t.Fatalf("no consumer %s", id)
	return plant.ConsumerStatus{}
}

// coilWrites returns the coil values the board's writes since from set,
// one map per write.
func (rr *restartRig) coilWrites(from int) []map[int]bool {
	var out []map[int]bool
	for _, e := range rr.p.Trace("rb")[from:] {
		w := map[int]bool{}
		for _, p := range e.Points {
			var i int
			if _, err := fmt.Sscanf(p.Name, "coil[%d]", &i); err == nil && strings.HasPrefix(p.Name, "coil[") {
				w[i] = p.Value == 1
			}
		}
		if len(w) > 0 && e.Error == "" {
			out = append(out, w)
		}
	}
	return out
}

// sameCoils fails when a coil write since from set a coil other than it
// was: a write at start may renew the state (the watchdog), never change
// it.
func (rr *restartRig) sameCoils(t *testing.T, from int, coils map[int]bool, when string) {
	t.Helper()
	for _, w := range rr.coilWrites(from) {
		for i, v := range w {
			if want, ok := coils[i]; ok && v != want {
				t.Errorf("%s: coil %d written %v, was %v (writes %v)", when, i, v, want, rr.coilWrites(from))
			}
		}
	}
}

// TestRestartKeepsGuards restarts plantd's energy manager, with its
// store, twice: a heat pump switched on 2 min into its 10-min minimum on
// time stays on (SG-Ready 3) for the remaining 8 min without surplus, a
// heater at its bound of 2 switchings an hour stays off on surplus, a
// forced pump (mode On, 4) stays forced, and the coils are never
// written to another state from the restart to the first decision
// (the simulator's write trace).
func TestRestartKeepsGuards(t *testing.T) {
	// The simulator runs on the wall clock, as the board's watchdog and
	// the manager's renewals do; the plant's clock, which the guards
	// read, is the test's.
	p := simtest.Start(t, sim.Config{
		Devices: []sim.DeviceConfig{{ID: "rb", Relay: true, Unit: 3}},
		Loads: []sim.LoadConfig{
			{ID: "heater", Kind: sim.LoadHeater, Board: "rb", Coil: 0, RatedW: 3000},
			{ID: "hp", Kind: sim.LoadSGReady, Board: "rb", Coil: 2},
		},
	})
	pool := modbus.NewPool(nil)
	t.Cleanup(func() { _ = pool.Close() })
	rg := &rig{clk: simtest.NewClock(time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC)), p: p, rb: simtest.Device(t, p, "rb"), pool: pool}
	rr := &restartRig{rig: rg, path: filepath.Join(t.TempDir(), "plantd.db"), note: make(chan struct{}, 1)}
	ctx := t.Context()
	clk := rr.clk

	// First run: surplus switches both on; an import switches the
	// heater off (its second switching) and the guard holds the pump.
	r1 := rr.start(t)
	rr.wait(t, "hp", "normal operation at start", sgIs(consumer.SGNormal))
	rr.wait(t, "heater", "off at start", switchIs(plant.SwitchedOff))
	onAt := clk.Now()
	r1.absorb(ctx, onAt, 6000)
	rr.wait(t, "hp", "recommended on surplus", sgIs(consumer.SGRecommend))
	rr.wait(t, "heater", "on on surplus", switchIs(plant.SwitchedOn))
	clk.Add(time.Minute)
	r1.absorb(ctx, clk.Now(), -6000)
	rr.wait(t, "heater", "off on import", switchIs(plant.SwitchedOff))
	if st := r1.status(t, "hp"); st.Reason != plant.ReasonMinOnTime || st.SGReady != consumer.SGRecommend {
		t.Fatalf("pump 1 min into its minimum on time: %s, SG-Ready %d", st.Reason, st.SGReady)
	}
	if st := r1.status(t, "heater"); st.SwitchesLastHour != 2 {
		t.Fatalf("heater: %d switchings in the last hour, want 2", st.SwitchesLastHour)
	}
	// Three switches (pump on, heater on, heater off): three rows, one
	// each, none per cycle; 33 bytes of state, 8 more a switching kept
	// for the hour's bound (the heater's two), plus the key.
	if rows, bytes := rr.written(); rows != 3 || bytes != (2+33)+(6+33+8)+(6+33+16) {
		t.Errorf("3 switches wrote %d rows, %d bytes; want 3 rows, %d bytes", rows, bytes, (2+33)+(6+33+8)+(6+33+16))
	}
	clk.Add(time.Minute)
	r1.stop()

	// Restart 2 min into the pump's minimum on time.
	coils := map[int]bool{0: false, 2: false, 3: true}
	from := len(rr.p.Trace("rb"))
	r2 := rr.start(t)
	rr.wait(t, "hp", "recommended, as left", sgIs(consumer.SGRecommend))
	rr.wait(t, "heater", "off, as left", switchIs(plant.SwitchedOff))
	rr.sameCoils(t, from, coils, "restart before the first decision")
	// The first decision: surplus, but the heater is at its bound.
	r2.absorb(ctx, clk.Now(), 6000)
	if st := r2.status(t, "heater"); st.Reason != plant.ReasonMaxSwitches || st.SwitchesLastHour != 2 || st.SwitchingState != plant.SwitchedOff {
		t.Errorf("heater after restart on surplus: %s, %d switchings, %s; want held off by %s", st.Reason, st.SwitchesLastHour, st.SwitchingState, plant.ReasonMaxSwitches)
	}
	// No surplus: the pump stays recommended until its 10 min are over.
	for _, step := range []time.Duration{0, 4 * time.Minute, 3*time.Minute + 59*time.Second} {
		clk.Add(step)
		r2.absorb(ctx, clk.Now(), -6000)
		rr.wait(t, "hp", "still recommended", sgIs(consumer.SGRecommend))
		if st := r2.status(t, "hp"); st.Reason != plant.ReasonMinOnTime {
			t.Fatalf("pump %v after its switch on: %s, want %s", clk.Now().Sub(onAt), st.Reason, plant.ReasonMinOnTime)
		}
	}
	rr.sameCoils(t, from, coils, "within the minimum on time")
	clk.Add(time.Second) // 10 min since the switch on
	r2.absorb(ctx, clk.Now(), -6000)
	rr.wait(t, "hp", "normal after 10 min", sgIs(consumer.SGNormal))
	if st := rr.board(t); st.Coils[2] || st.Coils[3] {
		t.Errorf("coils 2, 3 = %v, %v after 10 min, want normal (off, off)", st.Coils[2], st.Coils[3])
	}

	// Forced by mode On; the restart keeps it forced (no 4 → 2 → 4).
	clk.Add(time.Minute) // the pump's minimum off time
	if _, err := r2.m.SetMode(ctx, "hp", plant.ModeOn, "test"); err != nil {
		t.Fatal(err)
	}
	rr.wait(t, "hp", "forced by mode On", sgIs(consumer.SGForced))
	r2.stop()
	from = len(rr.p.Trace("rb"))
	r3 := rr.start(t)
	rr.wait(t, "hp", "forced, as left", sgIs(consumer.SGForced))
	r3.absorb(ctx, clk.Now(), -6000)
	rr.wait(t, "hp", "forced after the first decision", sgIs(consumer.SGForced))
	rr.sameCoils(t, from, map[int]bool{2: true, 3: true}, "restart of a forced pump")
	r3.stop()
}

// TestRestartKeepsMustRun: a heater that ran 40 min of its "by 12:00 for
// 1 h" rule, switched off and restarted, still owes 20 min (its latest
// start 11:40, not 11:00), and its energy today (estimated, 2000 Wh) is
// still today's after the restart.
func TestRestartKeepsMustRun(t *testing.T) {
	p := simtest.Start(t, sim.Config{
		Devices: []sim.DeviceConfig{{ID: "rb", Relay: true, Unit: 3}},
		Loads:   []sim.LoadConfig{{ID: "heater", Kind: sim.LoadHeater, Board: "rb", Coil: 0, RatedW: 3000}},
	})
	pool := modbus.NewPool(nil)
	t.Cleanup(func() { _ = pool.Close() })
	clk := simtest.NewClock(time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC))
	rr := &restartRig{rig: &rig{clk: clk, p: p, rb: simtest.Device(t, p, "rb"), pool: pool},
		path: filepath.Join(t.TempDir(), "plantd.db"), note: make(chan struct{}, 1)}
	by, err := cron.ParseStandard("0 12 * * *")
	if err != nil {
		t.Fatal(err)
	}
	start := func() *run {
		heater, err := NewRelay(rr.client("rb"), RelayConfig{Coil: 0})
		if err != nil {
			t.Fatal(err)
		}
		return rr.startSpecs(t, consumer.Spec{ID: "heater", PlantID: "p", DriverName: "relay", Driver: heater, RatedW: 3000,
			Mode: plant.ModeAuto, OnW: 3000, OffW: 2700, MustRun: []consumer.MustRun{{By: by, For: time.Hour}},
			Interval: 50 * time.Millisecond, Timeout: time.Second, Location: time.UTC})
	}
	ctx := t.Context()
	r1 := start()
	rr.wait(t, "heater", "off at start", switchIs(plant.SwitchedOff))
	if st := r1.status(t, "heater"); st.NextMustRun == nil || !st.NextMustRun.Equal(clk.Now().Add(time.Hour)) {
		t.Fatalf("next must-run %v, want 11:00", st.NextMustRun)
	}
	r1.absorb(ctx, clk.Now(), 6000)
	rr.wait(t, "heater", "on on surplus", switchIs(plant.SwitchedOn))
	clk.Add(40 * time.Minute)
	rr.wait(t, "heater", "a poll 40 min on", switchIs(plant.SwitchedOn))
	r1.absorb(ctx, clk.Now(), -6000)
	rr.wait(t, "heater", "off on import", switchIs(plant.SwitchedOff))
	r1.stop()

	r2 := start()
	rr.wait(t, "heater", "off after the restart", switchIs(plant.SwitchedOff))
	st := r2.status(t, "heater")
	if want := time.Date(2026, 6, 21, 11, 40, 0, 0, time.UTC); st.NextMustRun == nil || !st.NextMustRun.Equal(want) {
		t.Errorf("next must-run after the restart %v, want %v (20 min left of 1 h)", st.NextMustRun, want)
	}
	if st.EnergyTodayWh == nil || *st.EnergyTodayWh != 2000 {
		wh := "none"
		if st.EnergyTodayWh != nil {
			wh = fmt.Sprintf("%.0f Wh", *st.EnergyTodayWh)
		}
		t.Errorf("energy today after the restart %s, want 2000 Wh", wh)
	}
	r2.stop()
}
