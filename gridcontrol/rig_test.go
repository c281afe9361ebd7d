package gridcontrol_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"plantd/config"
	"plantd/devices"
	"plantd/devices/channels"
	"plantd/devices/poller"
	"plantd/gridcontrol"
	"plantd/internal/proctest"
	"plantd/modbus"
	"plantd/plant"
	"plantd/sim"
	"plantd/sim/simtest"
	"plantd/store"
	"plantd/sunspec"
)

// rig is a plant under grid control as the daemon runs it: the simulated
// plant on loopback Modbus TCP, the real poller feeding the live state, a
// real SQLite store and a controller on the wall clock. The controller can
// be stopped and started again on the same store, as plantd restarting.
//
// A stepped rig (rigOpts.stepped) is the decision-test harness: the same
// simulated plant, store and controller, but in process and on a clock the
// test steps (r.clk): the controller reaches the simulator's register
// model without a socket (sim.Device.Registers), the rig feeds the live
// state itself after every step (r.poll, what the poller would have read)
// instead of a poller on the wall clock, and the simulator's physics run
// on the same clock. Nothing in it waits for the wall clock: an hour's
// window is stepped through in milliseconds, and waitFor steps the clock
// a cycle at a time until its condition holds.
type rig struct {
	t       testing.TB
	sim     *sim.Plant
	pool    *modbus.Pool
	live    *plant.Live
	st      *store.Store
	clients map[string]sunspec.ReadWriter
	cfg     gridcontrol.Config
	// gst is the store the controller gets: st, or rigOpts.store's wrap.
	gst gridcontrol.Store

	// A stepped rig's clock, device discovery and read plans, and the
	// devices its polls find offline (SetOffline).
	clk     *stepClock
	polled  map[string]*channels.Device
	plans   map[string]*devices.ReadPlan
	offline sync.Map // device id -> struct{}

	answers sync.Map // device id -> *atomic.Int64: its poll answers applied to live
	// tamperOK is set by a test that writes held points behind plantd's
	// back; any other test fails on a ControlTampered entry (plantd's own
	// writes, ramps and toggles are never one).
	tamperOK atomic.Bool
	// dead cuts the controller's connections (kill: plantd's sockets
	// die with its process).
	dead atomic.Bool

	mu     sync.Mutex
	gc     *gridcontrol.Controller
	cancel context.CancelFunc
	done   chan struct{}
}

type rigOpts struct {
	devices []sim.DeviceConfig // nil: the demo plant (inv1 classic, inv2 DER, meter, bat, wx)
	cfg     gridcontrol.Config // zero fields: the rig's fast defaults
	poll    time.Duration      // the poll interval (zero: 250 ms)
	// before runs once every device is discovered, before plantd first
	// touches them (an installer's settings).
	before func(r *rig)
	// stepped makes the rig the decision-test harness (see rig);
	// clockAt is where the simulated plant's clock starts, stepped or
	// not (zero: noon, the simulator's start).
	stepped bool
	clockAt time.Time
	// store wraps the store the controller gets (a store that stalls).
	store func(st gridcontrol.Store) gridcontrol.Store
}

// summer noon in Munich: the inverters run near their rating.
var noon = time.Date(2026, 6, 21, 12, 0, 0, 0, mustLoc("Europe/Berlin"))

func mustLoc(name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return l
}

func newRig(t testing.TB, o rigOpts) *rig {
	t.Helper()
	scfg := sim.DefaultConfig()
	scfg.Start, scfg.ClearSky = cmp.Or(o.clockAt, noon), true
	if o.devices != nil {
		scfg.Devices = o.devices
	}
	r := &rig{t: t, pool: modbus.NewPool(nil), clients: map[string]sunspec.ReadWriter{}}
	t.Cleanup(func() { _ = r.pool.Close() })
	if o.stepped {
		r.clk = newStepClock(t, cmp.Or(o.clockAt, noon))
		scfg.Now = r.clk.Now
		p, err := sim.New(scfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("simulated plant: %v", err)
		}
		t.Cleanup(func() { _ = p.Close() })
		r.sim = p
	} else {
		r.sim = simtest.Start(t, scfg)
	}
	plants := []plant.Plant{{ID: "demo", Name: "Demo", Location: noon.Location()}}
	var infos []plant.DeviceInfo
	for _, d := range r.sim.Devices() {
		infos = append(infos, plant.DeviceInfo{ID: d.ID(), PlantID: "demo", Name: d.ID(), Kind: d.Kind()})
	}
	var err error
	r.st, err = store.Open(context.Background(), store.Config{Path: filepath.Join(t.TempDir(), "plantd.db"),
		Plants: []store.PlantInfo{{ID: "demo", Location: noon.Location()}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithCancel(context.Background())
	sdone := make(chan struct{})
	go func() { defer close(sdone); _ = r.st.Run(sctx) }()
	t.Cleanup(func() { scancel(); <-sdone; _ = r.st.Close() })

	r.gst = r.st
	if o.store != nil {
		r.gst = o.store(r.st)
	}
	r.cfg = o.cfg
	if r.cfg.RevertTimeout == 0 {
		r.cfg.RevertTimeout = 20 * time.Second
	}
	if r.cfg.RampPctPerSecond == 0 {
		r.cfg.RampPctPerSecond = 100
	}
	if r.cfg.Cycle == 0 {
		r.cfg.Cycle = 200 * time.Millisecond
	}
	if (o.stepped || r.cfg.Clock != nil) && r.cfg.DeviceWait == 0 {
		// On a clock the test steps, a cycle waits for all its devices,
		// whatever the machine's load: the tests count what each cycle
		// wrote.
		r.cfg.DeviceWait = time.Minute
	}
	if o.stepped {
		r.cfg.Clock = r.clk
		r.live = plant.NewLive(plants, infos, r.clk.Now)
		r.polled, r.plans = map[string]*channels.Device{}, map[string]*devices.ReadPlan{}
		for _, d := range r.sim.Devices() {
			r.clients[d.ID()] = inProcess{r: r, id: d.ID(), regs: d.Registers()}
		}
		r.poll()
	} else {
		r.live = plant.NewLive(plants, infos, time.Now)
		r.startPoller(o)
	}
	r.await("every device discovered", 20*time.Second, func() bool {
		devs, _ := r.live.DeviceStatuses("demo")
		for _, d := range devs {
			if d.Discovered == nil {
				return false
			}
		}
		return len(devs) == len(infos)
	})
	if o.before != nil {
		o.before(r)
	}
	t.Cleanup(func() {
		if n := r.logCount("ControlTampered"); n > 0 && !r.tamperOK.Load() {
			t.Errorf("%d ControlTampered entries, but nobody else wrote to the devices", n)
		}
	})
	r.start()
	t.Cleanup(r.stop)
	return r
}

// startPoller runs the real poller over loopback Modbus TCP into the live
// state until the test ends.
func (r *rig) startPoller(o rigOpts) {
	var pcfgs []poller.DeviceConfig
	poll := cmp.Or(o.poll, 250*time.Millisecond)
	for _, d := range r.sim.Devices() {
		pcfgs = append(pcfgs, poller.DeviceConfig{ID: d.ID(), Address: d.Addr(), Unit: d.Unit(), Interval: poll, Timeout: time.Second})
		r.clients[d.ID()] = r.pool.Endpoint(modbus.EndpointConfig{Address: d.Addr(), Timeout: time.Second}).ControlUnit(d.Unit(), time.Second)
	}
	p, err := poller.New(pcfgs, r.pool, func(s plant.Sample) {
		r.live.Apply(s)
		r.countAnswer(s.Device)
	}, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pdone := make(chan struct{})
	go func() { defer close(pdone); _ = p.Run(ctx) }()
	r.t.Cleanup(func() { cancel(); <-pdone })
}

func (r *rig) countAnswer(device string) {
	n, _ := r.answers.LoadOrStore(device, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
}

// errOffline is the error of a stepped rig's device set offline.
var errOffline = errors.New("test: device offline")

// inProcess is a stepped rig's connection to a device: the simulator's
// register model, or errOffline while the test holds the device offline.
type inProcess struct {
	r    *rig
	id   string
	regs sim.Registers
}

func (c inProcess) ReadHoldingRegisters(ctx context.Context, addr, quantity uint16, dst []uint16) ([]uint16, error) {
	if c.r.isOffline(c.id) {
		return nil, errOffline
	}
	return c.regs.ReadHoldingRegisters(ctx, addr, quantity, dst)
}

func (c inProcess) WriteRegisters(ctx context.Context, addr uint16, values []uint16) error {
	if c.r.isOffline(c.id) {
		return errOffline
	}
	return c.regs.WriteRegisters(ctx, addr, values)
}

// SetOffline makes a stepped rig's device answer nothing (its polls and
// the controller's requests fail) or answer again.
func (r *rig) setOffline(id string, off bool) {
	if off {
		r.offline.Store(id, struct{}{})
	} else {
		r.offline.Delete(id)
	}
}

func (r *rig) isOffline(id string) bool {
	_, off := r.offline.Load(id)
	return off
}

// poll feeds a stepped rig's live state: every device read once at the
// clock's time, as the poller would (discovery at the first answer, and
// again after the device was offline).
func (r *rig) poll() {
	r.t.Helper()
	ctx := context.Background()
	for _, d := range r.sim.Devices() {
		id := d.ID()
		s, err := r.pollOne(ctx, id, r.clk.Now().UTC())
		if err != nil {
			s = plant.Sample{Device: id, Time: r.clk.Now().UTC(), Err: err, State: plant.StateOffline}
			r.polled[id], r.plans[id] = nil, nil
		}
		r.live.Apply(s)
		r.countAnswer(id)
	}
}

// pollOne reads device id once at t: the sample the poller would emit.
func (r *rig) pollOne(ctx context.Context, id string, t time.Time) (plant.Sample, error) {
	conn := r.clients[id]
	if r.polled[id] == nil {
		info, err := devices.DiscoverAt(ctx, conn, devices.Bases)
		if err != nil {
			return plant.Sample{}, fmt.Errorf("discover %s: %w", id, err)
		}
		plan, err := devices.NewReadPlan(info, info.PollModels())
		if err != nil {
			r.t.Fatalf("read plan of %s: %v", id, err)
		}
		r.polled[id], r.plans[id] = channels.NewDevice(info), plan
	}
	insts, err := r.plans[id].Read(ctx, conn)
	if err != nil {
		return plant.Sample{}, err
	}
	return r.polled[id].Sample(id, t, insts), nil
}

// start runs a new controller on the rig's store, as plantd starting;
// the last one must have been stopped (two would fight over the devices,
// and the first would outlive the test).
func (r *rig) start() {
	r.t.Helper()
	r.mu.Lock()
	running := r.cancel != nil
	r.mu.Unlock()
	if running {
		r.t.Fatal("rig: start with a controller running (stop it first)")
	}
	var logger *slog.Logger
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	gc, err := gridcontrol.New(r.cfg, r.gst, r.live, func(id string) (sunspec.ReadWriter, bool) {
		if r.dead.Load() {
			return nil, false
		}
		c, ok := r.clients[id]
		return c, ok
	}, logger)
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := gc.Run(ctx); err != nil && ctx.Err() == nil {
			r.t.Errorf("controller: %v", err)
		}
	}()
	r.mu.Lock()
	r.gc, r.cancel, r.done = gc, cancel, done
	r.mu.Unlock()
}

// stop ends the controller (as plantd dying: nothing is written on the
// way out).
func (r *rig) stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.cancel = nil
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// kill ends the controller as a killed process: its connections are gone
// before it could write anything on the way out.
func (r *rig) kill() {
	r.dead.Store(true)
	r.stop()
	r.dead.Store(false)
}

func (r *rig) controller() *gridcontrol.Controller {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gc
}

// installer and gridOperator send the rig's schedules.
var (
	installer    = gridcontrol.Origin{Name: "test", Role: config.RoleInstaller}
	gridOperator = gridcontrol.Origin{Name: "dso", Role: config.RoleGridOperator}
)

// submit posts a schedule as an installer would.
func (r *rig) submit(body string) (gridcontrol.Schedule, error) {
	return r.controller().SubmitJSON(context.Background(), "demo", installer, []byte(body))
}

func (r *rig) mustSubmit(body string) gridcontrol.Schedule {
	r.t.Helper()
	s, err := r.submit(body)
	if err != nil {
		r.t.Fatalf("submit: %v\n%s", err, body)
	}
	return s
}

// read reads a model of a device over Modbus, as a second client would.
func (r *rig) read(id string, model uint16) *sunspec.Instance {
	r.t.Helper()
	d, ok := r.live.Device(id)
	if !ok || d.Discovered == nil {
		r.t.Fatalf("device %s not discovered", id)
	}
	ref, ok := d.Discovered.(*sunspec.Device).Ref(model)
	if !ok {
		r.t.Fatalf("device %s has no model %d", id, model)
	}
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		inst, err := sunspec.ReadModel(ctx, r.clients[id], ref)
		cancel()
		if err == nil {
			return inst
		}
		if attempt == 3 {
			r.t.Fatalf("read model %d of %s: %v", model, id, err)
		}
	}
}

// await waits until cond holds, in proctest.WaitFor's argument order: on
// the wall clock with proctest.WaitFor; on a stepped rig by stepping the
// clock a cycle at a time (each step runs the controller's cycle and a
// poll), timeout being the plant's time.
func (r *rig) await(what string, timeout time.Duration, cond func() bool) {
	r.t.Helper()
	if r.clk != nil && r.polled != nil {
		deadline := r.clk.Now().Add(timeout)
		for !cond() {
			if r.clk.Now().After(deadline) {
				r.t.Fatalf("after %s of the plant's time: still not %s", timeout, what)
			}
			r.step(r.clk, r.cfg.Cycle)
		}
		return
	}
	proctest.WaitFor(r.t, what, timeout, cond)
}

// stepTo steps a stepped rig's clock a cycle at a time until it reaches
// t (it may pass t by less than a cycle).
func (r *rig) stepTo(t time.Time) {
	r.t.Helper()
	for r.clk.Now().Before(t) {
		r.step(r.clk, r.cfg.Cycle)
	}
}

// now is the rig's time: its clock's on a stepped rig, else the wall's.
func (r *rig) now() time.Time {
	if r.clk != nil {
		return r.clk.Now()
	}
	return time.Now()
}

// window is a command window on the rig's clock, starting at a whole
// second after startIn.
func (r *rig) window(startIn, length time.Duration) (time.Time, time.Time) {
	start := r.now().Add(startIn).Truncate(time.Second).Add(time.Second)
	return start, start.Add(length)
}

// answered returns how many poll answers of device the live state took.
func (r *rig) answered(device string) int64 {
	if n, ok := r.answers.Load(device); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// command returns the status of the i-th command of a stored schedule.
func (r *rig) command(id string, i int) gridcontrol.ScheduledCmd {
	r.t.Helper()
	list, err := r.controller().Schedules("demo")
	if err != nil {
		r.t.Fatal(err)
	}
	for _, s := range list {
		if s.ScheduleID == id {
			return s.Commands[i]
		}
	}
	r.t.Fatalf("schedule %s not listed", id)
	return gridcontrol.ScheduledCmd{}
}

// logHas reports whether the plant log holds an entry with the code whose
// message contains every part.
func (r *rig) logHas(code string, parts ...string) bool {
	r.t.Helper()
	r.flush()
	entries, _, err := r.st.Logs(context.Background(), plant.LogQuery{PlantID: "demo", Limit: 1000})
	if err != nil {
		r.t.Fatal(err)
	}
next:
	for _, e := range entries {
		if e.Code != code {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(e.Message, p) {
				continue next
			}
		}
		return true
	}
	return false
}

// flush commits what the controller queued for the store (the plant log
// is written behind its back), so that a stepped rig reads it at once.
func (r *rig) flush() {
	r.t.Helper()
	if err := r.st.Flush(context.Background()); err != nil {
		r.t.Fatalf("flush the store: %v", err)
	}
}

// logCount is the number of plant log entries with the code whose message
// contains every part.
func (r *rig) logCount(code string, parts ...string) int {
	r.t.Helper()
	r.flush()
	entries, _, err := r.st.Logs(context.Background(), plant.LogQuery{PlantID: "demo", Limit: 1000})
	if err != nil {
		r.t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Code == code && !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(e.Message, p) }) {
			n++
		}
	}
	return n
}

// window is a command window of a schedule body, starting at a whole
// second (cron's resolution) in the near future.
func window(startIn, length time.Duration) (time.Time, time.Time) {
	start := time.Now().Add(startIn).Truncate(time.Second).Add(time.Second)
	return start, start.Add(length)
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// limitCmd is a limit command of a schedule body.
func limitCmd(command string, start, end time.Time, pct float64) string {
	return fmt.Sprintf(`{"command":%q,"start":%q,"end":%q,"value":%g,"unit":"%%"}`, command, ts(start), ts(end), pct)
}

func body(cmds ...string) string { return `{"commands":[` + strings.Join(cmds, ",") + `]}` }

// limitOf is an inverter's limit in effect now, as its simulator applies it.
func (r *rig) limitOf(id string) float64 {
	return simtest.Device(r.t, r.sim, id).State().EffectiveLimitPct
}

// highestLimits samples the limits in effect of ids (the simulator's
// registers) at 10 Hz until stop is ready, once more after it, and
// returns the number of samples and each device's highest.
func highestLimits[T any](r *rig, stop <-chan T, ids ...string) (int, []float64) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	samples, highest := 0, make([]float64, len(ids))
	for running := true; running; {
		select {
		case <-stop:
			running = false
		case <-tick.C:
		}
		for i, id := range ids {
			highest[i] = max(highest[i], r.limitOf(id))
		}
		samples++
	}
	return samples, highest
}

// write sets points of a model as an installer's tool would.
func (r *rig) write(id string, model uint16, points map[string]float64) {
	r.t.Helper()
	d, _ := r.live.Device(id)
	ref, ok := d.Discovered.(*sunspec.Device).Ref(model)
	if !ok {
		r.t.Fatalf("device %s has no model %d", id, model)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := sunspec.WriteModel(ctx, r.clients[id], ref, func(inst *sunspec.Instance) error {
		for n, v := range points {
			if err := inst.Set(n, v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		r.t.Fatalf("write model %d of %s: %v", model, id, err)
	}
}
