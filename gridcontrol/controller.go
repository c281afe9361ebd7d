package gridcontrol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"plantd/config"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/store"
	"plantd/sunspec"
)

// Config tunes the controller; zero fields take the defaults.
type Config struct {
	// RevertTimeout is written with every control (123 *_RvrtTms, 704
	// reversion points) and renewed at half of it (default 60 s).
	RevertTimeout time.Duration
	// RampPctPerSecond bounds how fast a limit loosens, in % of rated
	// power per second (default 10); a tighter limit applies at once.
	RampPctPerSecond float64
	// Cycle is the control cycle: renewals, ramps, retries and the
	// FeedInLimit loop (default 1 s).
	Cycle time.Duration
	// MeterGrace is how long FeedInLimit holds the last limit when the
	// meter stops answering, before it steps down to the export limit
	// itself (default: gridControl.meterLossGrace of config.Default, 30 s).
	MeterGrace time.Duration
	// LateAfter is how long after its start a command counts as applied
	// late (default 5 s).
	LateAfter time.Duration
	// FailAfter is the number of failed attempts on a device after which
	// the command is reported failed (default 3); plantd keeps retrying.
	FailAfter int
	// DefaultLimitPct, when set, is the limit the fallback holds instead
	// of the device's own default (config gridControl.defaults).
	DefaultLimitPct *float64
	// KeepFinished is how long a schedule whose windows have all ended
	// (or were all superseded) stays listed (default 7 days).
	KeepFinished time.Duration
	// MaxSchedules bounds the schedules kept per plant (default 200): the
	// oldest finished ones go first; a POST that would exceed it with
	// schedules still pending is refused. A quarter of it is the grid
	// operator's alone (capacity).
	MaxSchedules int
	// Clock validates and runs schedules: the cycle, the ramp, renewals
	// and window edges (default: the system's clock). The run loop fires
	// the edges by it, on every clock alike (edges).
	Clock Clock
	// DeviceWait is how long a cycle waits for a device's writes before it
	// goes on without it (default: a cycle, at most an eighth of
	// RevertTimeout). A device that answers slowly (each request just
	// within its timeout) finishes in the background and is left out of
	// the cycles until it has; the other devices' renewals and ramps
	// do not wait for it.
	DeviceWait time.Duration
	// Absorber, when set, is the home energy manager: each cycle of each
	// plant it gets the plant's surplus (grid power, curtailed PV) after
	// the limits were planned, so that switchable consumers take PV
	// surplus before it is curtailed (the FeedInLimit loop then lets the
	// inverters give what the consumers take).
	Absorber Absorber
}

// Absorber takes a plant's surplus once per control cycle
// (*consumer.Manager).
type Absorber interface {
	Absorb(ctx context.Context, plantID string, s plant.Surplus)
}

func (c Config) withDefaults() Config {
	// The configurable ones come from the config's defaults, so that a
	// zero Config and an empty plantd.yaml behave alike.
	def := config.Default().GridControl
	if c.RevertTimeout <= 0 {
		c.RevertTimeout = def.ReversionTimeout
	}
	if c.RampPctPerSecond <= 0 {
		c.RampPctPerSecond = def.RampRatePercentPerSecond
	}
	if c.Cycle <= 0 {
		c.Cycle = time.Second
	}
	if c.MeterGrace <= 0 {
		c.MeterGrace = def.MeterLossGrace
	}
	if c.LateAfter <= 0 {
		c.LateAfter = 5 * time.Second
	}
	if c.FailAfter <= 0 {
		c.FailAfter = 3
	}
	if c.KeepFinished <= 0 {
		c.KeepFinished = 7 * 24 * time.Hour
	}
	if c.MaxSchedules <= 0 {
		c.MaxSchedules = 200
	}
	if c.Clock == nil {
		c.Clock = wallClock{}
	}
	if c.DeviceWait <= 0 {
		c.DeviceWait = min(c.Cycle, c.RevertTimeout/8)
	}
	return c
}

// Store is what the controller keeps in the database (a *store.Store).
type Store interface {
	Schedules(ctx context.Context, plantID string) ([]plant.Schedule, error)
	PutSchedule(ctx context.Context, sc plant.Schedule) error
	Log(e plant.LogEntry) bool
	DeleteSchedule(ctx context.Context, id string) error
	ControlDefaults(ctx context.Context, deviceID string) (map[uint16]store.ControlDefault, error)
	PutControlDefault(ctx context.Context, d store.ControlDefault) error
	SetControlOwned(ctx context.Context, deviceID, control string, owned bool) error
	OwnedControls(ctx context.Context) (map[string][]string, error)
	SetDeviceQuirk(ctx context.Context, deviceID, quirk string, on bool) error
	DeviceQuirks(ctx context.Context) (map[string][]string, error)
}

// Live is the live state the controller reads devices from (a *plant.Live).
type Live interface {
	Plants() []plant.Plant
	DeviceStatuses(plantID string) ([]plant.DeviceLive, error)
	// AppendDeviceStatuses is DeviceStatuses into a slice the cycle keeps.
	AppendDeviceStatuses(dst []plant.DeviceLive, plantID string) ([]plant.DeviceLive, error)
	// Value is a device's latest value of a channel and the time of its
	// poll (the follow check reads the output there, not over Modbus).
	Value(id string, c plant.Channel) (float64, time.Time, bool)
	// PolledRegs is a device's latest poll of a control model (123, 704)
	// and the number of that poll (the tamper check compares what plantd
	// holds with it, not over Modbus).
	PolledRegs(id string, model uint16, dst []uint16) ([]uint16, uint64)
}

// Conns returns the Modbus client of a device (shared with the poller, so
// requests to one endpoint stay serialised).
type Conns func(deviceID string) (sunspec.ReadWriter, bool)

// Controller stores schedules and applies them to the plant's inverters:
// an edge armed at every window start and end, and a control cycle that
// writes, ramps, renews reversion timeouts, retries and runs the
// FeedInLimit loop. Create it with New, run it with Run.
type Controller struct {
	cfg   Config
	log   *slog.Logger
	st    Store
	live  Live
	conns Conns
	clock Clock
	now   func() time.Time // clock.Now
	// edges are the window edges armed on the clock. Guarded by mu.
	edges edges
	// sleepUntil is when the run loop's timer fires while the loop waits
	// (zero: it is not waiting, and looks at the edges before it does):
	// an edge armed before it kicks the loop. Guarded by mu.
	sleepUntil time.Time
	kick       chan struct{}
	// loaded is closed once Run has loaded the stored schedules (Loaded).
	loaded chan struct{}
	// cycleDevs is the device list of step, reused every cycle; only the
	// run loop (step) touches it.
	cycleDevs []plant.DeviceLive
	// slots bound the reconciles running at once (maxReconciles), those
	// of earlier cycles still running included; reconciling counts them
	// all, for Run to wait for at its end.
	slots       chan struct{}
	reconciling sync.WaitGroup
	// due is when a ramp wants its next step (zero: none); set during a
	// cycle, read and cleared by the run loop. Guarded by mu.
	due time.Time

	// dirty are the schedules queued for the persister (persister.go),
	// persisting whether it runs; guarded by mu. dirtyKick wakes it;
	// persistMu orders its writes with forget's deletes.
	dirty      []*Schedule
	persisting bool
	dirtyKick  chan struct{}
	persistMu  sync.Mutex

	mu     sync.Mutex
	plants map[string]*plantCtl
	devs   map[string]*devCtl
	stats  Stats
}

// Stats are the controller's counters for /metrics.
type Stats struct {
	Writes, WriteErrors, Restores uint64
	// Edges counts the window starts and ends that caused a write.
	Edges uint64
	// EdgeToWrite are the latencies from a window's start or end (an edge) to
	// the first write it caused, last 1000.
	EdgeToWrite []time.Duration
	// Cycles are the durations of the last 1000 control cycles that wrote
	// or ran the FeedInLimit loop (reads, computation and writes; a slow
	// device's writes only up to Config.DeviceWait, the rest goes on
	// after the cycle).
	Cycles []time.Duration
	// LastCycle is when the last of those cycles began (its reads came
	// after it).
	LastCycle time.Time
	// NotFollowing is the number of inverters whose output stays above
	// their limit although the register reads back right and the enable
	// was toggled.
	NotFollowing int
	// Tampered counts, per device, the episodes in which a control plantd
	// held read back changed by someone else (ControlTampered).
	Tampered map[string]uint64
	// HeldReads counts the reads of a held control model the cycle made
	// itself because the device's poll brought nothing new within
	// heldReadEvery (a device polled slower than every second).
	HeldReads uint64
}

// plantCtl is the controller's state of one plant.
type plantCtl struct {
	id     string
	scheds []*Schedule
	// pendingEdge is the time of the last window boundary not yet followed
	// by a write (for the latency figures).
	pendingEdge time.Time
	// limitRatedW is the rated power of the inverters taking the limit,
	// as the last cycle found it: limits in % and in W compare with it.
	limitRatedW float64
	feed        feedState
	// applied holds, per open window not yet applied everywhere, when each
	// device took it.
	applied map[string]map[string]time.Time
}

// feedState is the FeedInLimit loop of a plant.
type feedState struct {
	active      bool
	pct         float64 // limit in % of rated power the loop asks for
	lastMeterOK time.Time
	meterLost   bool
	// probeW is what the last cycle raised PV by for a battery that could
	// charge faster; fullUntil stops such raises after one showed as
	// export, refused such raises in a row.
	probeW    float64
	fullUntil time.Time
	refused   int
	// gridW (import > 0) and pvW are the meter's and the inverters'
	// power the loop read this cycle (gridOK: it read them): a battery
	// setpoint's discharge is capped with them (planBattery).
	gridW, pvW float64
	gridOK     bool
}

// New returns a controller. Schedules are loaded and devices touched only
// by Run.
func New(cfg Config, st Store, live Live, conns Conns, logger *slog.Logger) (*Controller, error) {
	if st == nil || live == nil || conns == nil {
		return nil, errors.New("gridcontrol: store, live state and connections are required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	c := &Controller{cfg: cfg, log: logger, st: st, live: live, conns: conns, clock: cfg.Clock, now: cfg.Clock.Now,
		kick: make(chan struct{}, 1), dirtyKick: make(chan struct{}, 1), loaded: make(chan struct{}),
		slots: make(chan struct{}, maxReconciles), plants: map[string]*plantCtl{}, devs: map[string]*devCtl{}}
	for _, p := range live.Plants() {
		c.plants[p.ID] = &plantCtl{id: p.ID, applied: map[string]map[string]time.Time{}}
	}
	return c, nil
}

// Loaded is closed once Run has loaded the stored schedules: a caller that
// lists schedules at its own start (an input looking for the windows its
// earlier run left open) waits for it.
func (c *Controller) Loaded() <-chan struct{} { return c.loaded }

// Run loads the stored schedules, applies the windows open now (a window
// that closed while plantd was down is not replayed), and runs the control
// cycle until ctx ends: load, restore, arm, loop.
func (c *Controller) Run(ctx context.Context) error {
	if err := c.load(ctx); err != nil {
		return err
	}
	if err := c.restore(ctx); err != nil {
		return err
	}
	c.armAll()
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); c.watchHeld(wctx) }()
	defer func() { stopWatch(); <-watched }()
	pctx, stopPersist := context.WithCancel(context.WithoutCancel(ctx))
	persisted := make(chan struct{})
	c.mu.Lock()
	c.persisting = true
	c.mu.Unlock()
	go func() { defer close(persisted); c.runPersister(pctx) }()
	// Last out: the statuses the last cycles and the batteries' release
	// changed are written before Run returns.
	defer func() { stopPersist(); <-persisted }()
	c.loop(ctx)
	// A slow device's writes may still be under way (step waits for them
	// at most Config.DeviceWait); they end with ctx.
	c.reconciling.Wait()
	c.releaseBatteries(context.WithoutCancel(ctx))
	return nil
}

// load reads every plant's stored schedules (one submitted before Run is
// held already), drops those past keeping, and closes loaded.
func (c *Controller) load(ctx context.Context) error {
	for id, pc := range c.plants {
		list, err := c.st.Schedules(ctx, id)
		if err != nil {
			return fmt.Errorf("grid control: load schedules of %s: %w", id, err)
		}
		for _, sc := range list {
			// A schedule submitted before Run is already held.
			c.mu.Lock()
			if !slices.ContainsFunc(pc.scheds, func(h *Schedule) bool { return h.ScheduleID == sc.ScheduleID }) {
				pc.scheds = append(pc.scheds, &sc)
			}
			c.mu.Unlock()
			// A Submit that stored its schedule before this read and
			// holds it only after: hold replaces this copy.
		}
	}
	for _, pc := range c.plants {
		c.mu.Lock()
		drop, _ := c.prunable(pc, c.now(), 0, c.cfg.MaxSchedules)
		c.mu.Unlock()
		c.forget(ctx, pc, drop)
	}
	close(c.loaded)
	return nil
}

// hold puts a submitted schedule among the plant's, in place of the copy
// of it load may have read from the store meanwhile (Submit stores before
// it holds): a schedule held twice would supersede itself. c.mu is held.
func (pc *plantCtl) hold(sc *Schedule) {
	if i := slices.IndexFunc(pc.scheds, func(h *Schedule) bool { return h.ScheduleID == sc.ScheduleID }); i >= 0 {
		pc.scheds[i] = sc
		return
	}
	pc.scheds = append(pc.scheds, sc)
}

// restore takes back what an earlier run left: the controls plantd owns
// (the limit continues from what the device holds: reconcileLimit reads
// it first) and the devices' quirks.
func (c *Controller) restore(ctx context.Context) error {
	owned, err := c.st.OwnedControls(ctx)
	if err != nil {
		return fmt.Errorf("grid control: owned controls: %w", err)
	}
	quirks, err := c.st.DeviceQuirks(ctx)
	if err != nil {
		return fmt.Errorf("grid control: device quirks: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for dev, ctls := range owned {
		dc := c.dev(dev)
		for _, n := range ctls {
			dc.state(control(n)).owned = true
		}
	}
	for dev, qs := range quirks {
		c.dev(dev).needsToggle = slices.Contains(qs, quirkNeedsToggle)
	}
	return nil
}

// loop runs the control cycle until ctx ends: it fires the edges the
// clock passed, runs a cycle, and waits on one timer of the clock for the
// next cycle, ramp step or edge, whichever is first, or for a kick (a
// schedule submitted, cancelled or extended, a held control changed).
func (c *Controller) loop(ctx context.Context) {
	// The cycle keeps its cadence on the clock: the next tick is a cycle
	// after the last one, however long the step took.
	tick := c.now().Add(c.cfg.Cycle)
	for {
		c.mu.Lock()
		c.sleepUntil = time.Time{}
		c.edges.fire(c.now())
		c.mu.Unlock()
		var wait time.Duration
		wait, tick = c.cycle(ctx, tick)
		select {
		case <-ctx.Done():
			return
		case <-c.clock.After(wait):
		case <-c.kick:
		}
	}
}

// cycle runs one control cycle and returns how long the loop may wait
// (until the next tick, a ramp step due or the nearest edge; a tenth of a
// cycle while a window waits for a device) and the next tick. It records
// the loop's wake-up time for arm.
func (c *Controller) cycle(ctx context.Context, tick time.Time) (time.Duration, time.Time) {
	began := time.Now()
	c.mu.Lock()
	writes := c.stats.Writes + c.stats.WriteErrors
	c.due = time.Time{}
	c.mu.Unlock()
	// While a window waits for a device (offline at its start, or plantd
	// just started), look again every tenth of a cycle, so the write
	// follows the device's first answer within its poll.
	wait := c.cfg.Cycle
	if c.step(ctx) {
		wait = c.cfg.Cycle / 10
	}
	took := time.Since(began)
	now := c.now()
	if !now.Before(tick) {
		tick = now.Add(c.cfg.Cycle)
	}
	wait = min(wait, tick.Sub(now))
	c.mu.Lock()
	defer c.mu.Unlock()
	if due := c.due; !due.IsZero() {
		// A ramp's next step is due a cycle after its last one, which the
		// cycle's phase need not match.
		wait = min(wait, max(due.Sub(now), 0))
	}
	if next, ok := c.edges.nearest(); ok {
		wait = min(wait, max(next.Sub(now), 0))
	}
	c.sleepUntil = now.Add(wait)
	if c.stats.Writes+c.stats.WriteErrors != writes || c.feeding() {
		c.stats.Cycles = append(c.stats.Cycles, took)
		c.stats.LastCycle = began
		if len(c.stats.Cycles) > 1000 {
			c.stats.Cycles = c.stats.Cycles[1:]
		}
	}
	return wait, tick
}

// feeding reports whether a FeedInLimit loop runs. Called with c.mu held.
func (c *Controller) feeding() bool {
	for _, pc := range c.plants {
		if pc.feed.active {
			return true
		}
	}
	return false
}

// armAll arms the edges of every plant's windows (the loaded ones).
func (c *Controller) armAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, pc := range c.plants {
		c.arm(pc)
	}
}

// arm replaces a plant's edges by one per future window boundary, and
// kicks the run loop when one of them comes before the loop's timer (a
// schedule submitted while it waits). c.mu is held.
func (c *Controller) arm(pc *plantCtl) {
	now := c.now()
	ts := boundaries(pc.scheds, now)
	add := make([]edge, 0, len(ts))
	for _, t := range ts {
		add = append(add, edge{plant: pc.id, sched: once(t), job: func(due time.Time) { pc.pendingEdge = due }})
	}
	c.edges.replace(pc.id, now, add)
	if next, ok := c.edges.nearest(); ok && !c.sleepUntil.IsZero() && next.Before(c.sleepUntil) {
		c.wake()
	}
}

func (c *Controller) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Stats returns a copy of the counters.
func (c *Controller) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.EdgeToWrite = slices.Clone(s.EdgeToWrite)
	s.Cycles = slices.Clone(s.Cycles)
	s.Tampered = maps.Clone(s.Tampered)
	for _, dc := range c.devs {
		if dc.notFollowing {
			s.NotFollowing++
		}
	}
	return s
}

// step runs one control cycle over every plant. It reports whether a
// device is awaited: a control plantd owns on a device not reached since
// start, or an open window some inverter has not taken yet.
func (c *Controller) step(ctx context.Context) (waiting bool) {
	now := c.now()
	for _, p := range c.live.Plants() {
		// The devices go into the slice of the last cycle: nothing keeps
		// them past this iteration (reconcile gets copies and is waited
		// for below).
		devs, err := c.live.AppendDeviceStatuses(c.cycleDevs[:0], p.ID)
		c.cycleDevs = devs[:0]
		if err != nil {
			continue
		}
		c.mu.Lock()
		pc := c.plants[p.ID]
		if pc == nil {
			c.mu.Unlock()
			continue
		}
		limitDevs := limitDevices(devs)
		rated := ratedOf(devs, limitDevs)
		pc.limitRatedW = rated
		moved, logs := c.advance(pc, now)
		act := activeAt(pc.scheds, now, rated)
		c.mu.Unlock()
		for _, e := range logs {
			c.st.Log(e)
		}
		c.persistAll(ctx, moved)
		plan := c.plan(ctx, pc, act, devs, limitDevs, rated, now)
		if c.cfg.Absorber != nil {
			c.cfg.Absorber.Absorb(ctx, p.ID, c.surplus(devs, limitDevs, rated, plan.limitPct, plan.capPct, now))
		}
		// Nothing to hold, renew or restore: an inverter whose defaults are
		// stored and of which plantd holds no control is left alone (no
		// goroutine, no per-control state, its defaults dropped from
		// memory until a window loads them again), which is every inverter
		// of a plant most of the time.
		quiet := len(act) == 0 && plan.limitPct == nil && c.cfg.DefaultLimitPct == nil
		// Each device is reconciled in its own goroutine. The cycle waits
		// for them at most DeviceWait: a device that answers slowly
		// finishes in the background, busy and so left out of the cycles
		// until it has, and the others' renewals go on (before, one
		// inverter answering each request in 0.9 s of its 1 s timeout
		// kept a healthy one from its renewals until its limit lapsed).
		launched := 0
		finished := make(chan struct{}, len(devs))
		for i := range devs {
			d := &devs[i]
			if (d.Info.Kind != kind.Inverter && d.Info.Kind != kind.Battery) || !d.Info.Active() || sunspecOf(d.Discovered) == nil || !reachable(*d) {
				continue
			}
			c.mu.Lock()
			dc := c.dev(d.Info.ID)
			if dc.busy {
				// A slow device still busy with an earlier cycle's writes.
				c.mu.Unlock()
				continue
			}
			if st := dc.peek(ctlBattery); d.Info.Kind == kind.Battery && !plan.battery.active && !st.owned && !st.claimed {
				// A battery carries no command but BatteryPower.
				c.mu.Unlock()
				continue
			}
			if quiet && dc.untouched() {
				dc.defaults = nil
				c.mu.Unlock()
				continue
			}
			dc.busy = true
			c.mu.Unlock()
			select {
			case c.slots <- struct{}{}:
			case <-ctx.Done():
				c.mu.Lock()
				dc.busy = false
				c.mu.Unlock()
				continue
			}
			launched++
			c.reconciling.Add(1)
			// The goroutine gets a copy of the device: devs is the next
			// cycle's list too.
			go func(d plant.DeviceLive) {
				defer func() { <-c.slots; finished <- struct{}{}; c.reconciling.Done() }()
				c.reconcile(ctx, pc, dc, d, plan, now)
				c.mu.Lock()
				dc.busy = false
				c.mu.Unlock()
			}(*d)
		}
		c.awaitReconciles(finished, launched)
		if c.settle(ctx, pc, act, devs) {
			waiting = true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, dc := range c.devs {
		if dc.defaults == nil {
			for _, st := range dc.ctl {
				if st.owned {
					return true
				}
			}
		}
	}
	return waiting
}

// awaitReconciles waits until n reconciles have sent on finished, or
// Config.DeviceWait has passed (on the system's clock: it bounds a wait
// for devices' answers, which take real time on every clock).
func (c *Controller) awaitReconciles(finished <-chan struct{}, n int) {
	if n == 0 {
		return
	}
	timer := time.NewTimer(c.cfg.DeviceWait)
	defer timer.Stop()
	for range n {
		select {
		case <-finished:
		case <-timer.C:
			return
		}
	}
}

// maxReconciles bounds the devices a cycle reconciles at once. The first
// cycle loads every inverter's defaults: 1,000 inverters behind 50
// gateway addresses (scripts/scale 1000 50) had 976 goroutines waiting
// for their gateway's connection, 10.4 MB of stacks, which set the
// daemon's peak RSS. Devices are listed in configuration order, so 64 keep
// up to 64 addresses busy; the units behind one address are served one
// after the other by its connection in any case.
const maxReconciles = 64

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// plantPlan is what a plant's active windows ask of its inverters now.
type plantPlan struct {
	act map[string]window
	// limitPct is the limit in % of rated power every taking-part inverter
	// gets (nil: no limit command active), from opModMaxLimW and the
	// FeedInLimit loop, the lowest winning.
	limitPct *float64
	limitBy  []window
	// capPct is opModMaxLimW's limit alone (nil: none), which caps PV
	// whatever the plant consumes.
	capPct *float64
	// battery is what a BatteryPower window asks of each battery.
	battery batteryPlan
}

// plan resolves the active windows of a plant into per-control targets and
// runs the FeedInLimit loop; limitDevs are the inverters taking the limit,
// rated their rated power.
func (c *Controller) plan(ctx context.Context, pc *plantCtl, act map[string]window, devs []plant.DeviceLive, limitDevs []string, rated float64, now time.Time) plantPlan {
	pl := plantPlan{act: act}
	lower := func(pct float64, w window) {
		if pl.limitPct == nil || pct < *pl.limitPct {
			pl.limitPct = &pct
		}
		pl.limitBy = append(pl.limitBy, w)
	}
	if w, ok := act[CmdMaxLimW]; ok {
		pct := *w.cmd.Value
		if w.cmd.Unit == "W" {
			pct = pctOfRated(*w.cmd.Value, rated)
		}
		lower(pct, w)
		pl.capPct = &pct
	}
	var feedPct *float64
	forced := forcedBattery(act)
	if w, ok := act[CmdFeedInLimit]; ok {
		pct := c.feedIn(ctx, pc, w, devs, limitDevs, rated, now, forced)
		lower(pct, w)
		feedPct = &pct
	} else {
		c.mu.Lock()
		pc.feed = feedState{}
		c.mu.Unlock()
	}
	pl.battery = c.planBattery(pc, act, devs, rated, feedPct)
	return pl
}
