package gridcontrol

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"plantd/config"

	"github.com/robfig/cron/v3"

	"plantd/devices"
	"plantd/modbus"
	"plantd/plant"
	"plantd/store"
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
	// schedules still pending is refused.
	MaxSchedules int
	// Clock validates and runs schedules: the cycle, the ramp, renewals
	// and window boundaries (default: the system's clock, on which
	// robfig/cron fires the boundaries; on another clock the run loop
	// fires the same cron entries by that clock).
	Clock Clock
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
	return c
}

// Store is what the controller keeps in the database (a *store.Store).
type Store interface {
	Schedules(ctx context.Context, plantID string) ([]store.Schedule, error)
	PutSchedule(ctx context.Context, sc store.Schedule) error
	Log(e store.LogEntry) bool
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
	// Device is one device with its latest readings (the follow check
	// reads its output there, not over Modbus).
	Device(id string) (plant.DeviceLive, bool)
}

// Conns returns the Modbus client of a device (shared with the poller, so
// requests to one endpoint stay serialised).
type Conns func(deviceID string) (devices.ReadWriter, bool)

// Controller stores schedules and applies them to the plant's inverters:
// cron entries at every window start and end, and a control cycle that
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
	cron  *cron.Cron
	// edgesUntil is the time up to which the run loop fired the cron
	// entries itself (a clock other than the system's); zero on the
	// system's clock, where cron fires them.
	edgesUntil time.Time
	kick       chan struct{}
	// cycleDevs is the device list of step, reused every cycle; only the
	// run loop (step) touches it.
	cycleDevs []plant.DeviceLive
	// due is when a ramp wants its next step (zero: none); set during a
	// cycle, read and cleared by the run loop. Guarded by mu.
	due time.Time

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
	// EdgeToWrite are the latencies from a window's start or end (cron) to
	// the first write it caused, last 1000.
	EdgeToWrite []time.Duration
	// Cycles are the durations of the last 1000 control cycles that wrote
	// or ran the FeedInLimit loop (reads, computation and writes).
	Cycles []time.Duration
	// NotFollowing is the number of inverters whose output stays above
	// their limit although the register reads back right and the enable
	// was toggled.
	NotFollowing int
}

// plantCtl is the controller's state of one plant.
type plantCtl struct {
	id     string
	scheds []*Schedule
	cronID []cron.EntryID
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
}

// devCtl is the controller's state of one device.
type devCtl struct {
	id       string
	defaults map[uint16]*devices.Instance
	// defaultsStored is set once the defaults are in the store: an
	// untouched device's are dropped from memory (2.5 KB per inverter)
	// and loaded from the store again when a command needs them.
	defaultsStored bool
	ctl            map[control]*ctlState
	// rvrtIgnored is set once the device was seen not counting its
	// reversion timer down (warned once).
	rvrtIgnored bool
	// needsToggle is set once the device was seen applying a new limit
	// only after its enable went from 0 to 1 (kept in the store).
	needsToggle bool
	// notFollowing is set while the device's output stays above its
	// limit after the enable toggle (checkFollow).
	notFollowing bool
	// noRevertSaid is set once the plant log said that the device's
	// limits are written without a reversion time (limitRevert).
	noRevertSaid bool
	busy         bool
}

// ctlState is one control of a device.
type ctlState struct {
	owned     bool
	key       string  // the window last applied ("" for the fallback)
	pct       float64 // the limit last written (limit control)
	writtenAt time.Time
	failures  int
	nextTry   time.Time
	lastErr   string
	// The limit control only:
	// known is set once pct is what the device holds: written by this
	// run of plantd, or read from the device after a restart.
	known bool
	// rising is set while a looser limit ramps; upAt is when the ramp
	// started or last stepped up.
	rising bool
	upAt   time.Time
	// changedAt is when the limit last changed (the follow check counts
	// the device's output from followGrace cycles after it); aboveSince
	// is the first sample since then with the output above the limit;
	// sampleAt the last sample the check looked at.
	changedAt, aboveSince, sampleAt time.Time
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
		kick: make(chan struct{}, 1), plants: map[string]*plantCtl{}, devs: map[string]*devCtl{}}
	c.cron = cron.New(cron.WithSeconds(), cron.WithLocation(time.UTC), cron.WithLogger(cron.DiscardLogger))
	for _, p := range live.Plants() {
		c.plants[p.ID] = &plantCtl{id: p.ID, applied: map[string]map[string]time.Time{}}
	}
	return c, nil
}

// Run loads the stored schedules, applies the windows open now (a window
// that closed while plantd was down is not replayed), and runs the control
// cycle until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	for id, pc := range c.plants {
		list, err := c.st.Schedules(ctx, id)
		if err != nil {
			return fmt.Errorf("grid control: load schedules of %s: %w", id, err)
		}
		for _, s := range list {
			var sc Schedule
			if err := json.Unmarshal(s.Body, &sc); err != nil {
				c.log.Error("stored schedule unreadable, ignored", "plant", id, "schedule", s.ID, "err", err)
				continue
			}
			// A schedule submitted before Run is already held.
			c.mu.Lock()
			if !slices.ContainsFunc(pc.scheds, func(h *Schedule) bool { return h.ScheduleID == sc.ScheduleID }) {
				pc.scheds = append(pc.scheds, &sc)
			}
			c.mu.Unlock()
		}
	}
	for _, pc := range c.plants {
		c.mu.Lock()
		drop, _ := c.prunable(pc, c.now(), 0)
		c.mu.Unlock()
		c.forget(ctx, pc, drop)
	}
	owned, err := c.st.OwnedControls(ctx)
	if err != nil {
		return fmt.Errorf("grid control: %w", err)
	}
	quirks, err := c.st.DeviceQuirks(ctx)
	if err != nil {
		return fmt.Errorf("grid control: %w", err)
	}
	c.mu.Lock()
	for dev, ctls := range owned {
		dc := c.dev(dev)
		for _, n := range ctls {
			// Owned but not known: the limit continues from what the
			// device holds (reconcileLimit reads it first).
			dc.state(control(n)).owned = true
		}
	}
	for dev, qs := range quirks {
		c.dev(dev).needsToggle = slices.Contains(qs, quirkNeedsToggle)
	}
	for _, pc := range c.plants {
		c.arm(pc)
	}
	c.mu.Unlock()
	_, onWall := c.clock.(wallClock)
	if onWall {
		c.cron.Start()
		defer func() { <-c.cron.Stop().Done() }()
	} else {
		c.edgesUntil = c.now()
	}

	// The cycle keeps its cadence on the clock: the next tick is a cycle
	// after the last one, however long the step took.
	tick := c.now().Add(c.cfg.Cycle)
	for {
		began := time.Now()
		c.mu.Lock()
		writes := c.stats.Writes + c.stats.WriteErrors
		c.due = time.Time{}
		c.mu.Unlock()
		// While a window waits for a device (offline at its start, or
		// plantd just started), look again every tenth of a cycle, so the
		// write follows the device's first answer within its poll.
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
		if due := c.due; !due.IsZero() {
			// A ramp's next step is due a cycle after its last one, which
			// the cycle's phase need not match.
			wait = min(wait, max(due.Sub(now), 0))
		}
		if c.stats.Writes+c.stats.WriteErrors != writes || c.feeding() {
			c.stats.Cycles = append(c.stats.Cycles, took)
			if len(c.stats.Cycles) > 1000 {
				c.stats.Cycles = c.stats.Cycles[1:]
			}
		}
		c.mu.Unlock()
		if !onWall {
			if next := c.fireEdges(now); !next.IsZero() {
				wait = min(wait, max(next.Sub(now), 0))
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(wait):
			if !onWall {
				c.fireEdges(c.now())
			}
		case <-c.kick:
		}
	}
}

// fireEdges runs, on a clock other than the system's, the cron entries
// (window boundaries) the clock passed since the last look, and returns
// the time of the next one (zero: none).
func (c *Controller) fireEdges(now time.Time) (next time.Time) {
	for _, e := range c.cron.Entries() {
		at := e.Schedule.Next(c.edgesUntil)
		if at.IsZero() {
			continue
		}
		if !at.After(now) {
			e.Job.Run()
			continue
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if now.After(c.edgesUntil) {
		c.edgesUntil = now
	}
	return next
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

// once is a cron schedule that fires at one time.
type once time.Time

func (o once) Next(t time.Time) time.Time {
	if time.Time(o).After(t) {
		return time.Time(o)
	}
	return time.Time{}
}

// arm replaces a plant's cron entries by one per future window boundary.
// c.mu is held.
func (c *Controller) arm(pc *plantCtl) {
	for _, id := range pc.cronID {
		c.cron.Remove(id)
	}
	pc.cronID = pc.cronID[:0]
	for _, t := range boundaries(pc.scheds, c.now()) {
		id := c.cron.Schedule(once(t), cron.FuncJob(func() { c.edge(pc.id, t) }))
		pc.cronID = append(pc.cronID, id)
	}
}

// edge runs at a window boundary: it wakes the control cycle at once.
func (c *Controller) edge(plantID string, t time.Time) {
	c.mu.Lock()
	if pc := c.plants[plantID]; pc != nil {
		pc.pendingEdge = t
	}
	c.mu.Unlock()
	c.wake()
}

func (c *Controller) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *Controller) dev(id string) *devCtl {
	dc := c.devs[id]
	if dc == nil {
		dc = &devCtl{id: id, ctl: map[control]*ctlState{}}
		c.devs[id] = dc
	}
	return dc
}

// untouched reports whether the device's defaults are stored and plantd
// holds none of its controls; c.mu held.
func (dc *devCtl) untouched() bool {
	if !dc.defaultsStored || dc.busy {
		return false
	}
	for _, st := range dc.ctl {
		if st.owned {
			return false
		}
	}
	return true
}

// peek returns a copy of control k's state (the zero state when plantd
// never wrote it) without adding it: a device plantd never controlled
// keeps no state per control.
func (dc *devCtl) peek(k control) ctlState {
	if s := dc.ctl[k]; s != nil {
		return *s
	}
	return ctlState{}
}

func (dc *devCtl) state(k control) *ctlState {
	s := dc.ctl[k]
	if s == nil {
		s = &ctlState{}
		dc.ctl[k] = s
	}
	return s
}

// Stats returns a copy of the counters.
func (c *Controller) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.EdgeToWrite = slices.Clone(s.EdgeToWrite)
	s.Cycles = slices.Clone(s.Cycles)
	for _, dc := range c.devs {
		if dc.notFollowing {
			s.NotFollowing++
		}
	}
	return s
}

// newID returns a random schedule id.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// SubmitOption tunes one Submit.
type SubmitOption func(*submitOpts)

type submitOpts struct{ requireAll bool }

// RequireAll makes Submit all or nothing: a command that some active
// inverter of the plant would not act on (another platform, no model that
// carries it, not discovered yet, no grid meter) is refused as not
// eligible, also when the eligibility check is skipped.
func RequireAll(on bool) SubmitOption { return func(o *submitOpts) { o.requireAll = on } }

// Submit validates a schedule body for a plant, runs the eligibility check
// against the plant's devices unless skipCheck, stores it and arms it. by
// names the credential, for the plant log. A command that only some of the
// plant's active inverters act on is accepted, its windows marked partial
// (with the share of rated power and the inverters that act and do not),
// and logged; with RequireAll it is refused. Errors: *ValidationError (the
// request), or the store's.
func (c *Controller) Submit(ctx context.Context, plantID string, body []byte, skipCheck bool, by Origin, opts ...SubmitOption) (Schedule, error) {
	var o submitOpts
	for _, f := range opts {
		f(&o)
	}
	now := c.now()
	cmds, err := ParseSchedule(body, now)
	if err != nil {
		return Schedule{}, err
	}
	devs, err := c.live.DeviceStatuses(plantID)
	if err != nil {
		return Schedule{}, err
	}
	elig := assessAll(cmds, devs)
	var errs []FieldError
	if !skipCheck {
		errs = c.check(ctx, cmds, devs, elig)
	}
	if o.requireAll {
		errs = append(errs, wholePlant(cmds, elig, !skipCheck)...)
	}
	if len(errs) > 0 {
		return Schedule{}, &ValidationError{Fields: errs, NotEligible: true}
	}
	for i := range cmds {
		markCoverage(&cmds[i], elig[cmds[i].Command])
	}
	sc := Schedule{ScheduleID: newID(), PlantID: plantID, Commands: cmds, CreatedAt: now.UTC().Truncate(time.Millisecond), CreatedBy: by.String(), Role: by.Role}
	c.mu.Lock()
	pc := c.plants[plantID]
	if pc == nil {
		c.mu.Unlock()
		return Schedule{}, fmt.Errorf("grid control: unknown plant %s", plantID)
	}
	// Keep creation times strictly increasing, so that newest-wins is
	// decided by time even for two schedules in one millisecond.
	for _, o := range pc.scheds {
		if !sc.CreatedAt.After(o.CreatedAt) {
			sc.CreatedAt = o.CreatedAt.Add(time.Millisecond)
		}
	}
	drop, full := c.prunable(pc, now, 1)
	c.mu.Unlock()
	if full {
		return Schedule{}, &ValidationError{Fields: []FieldError{{Field: "commands",
			Message: fmt.Sprintf("the plant holds %d schedules that have not ended yet (at most %d): wait until some end, or overwrite their commands", len(pc.scheds)-len(drop), c.cfg.MaxSchedules)}}}
	}
	c.forget(ctx, pc, drop)
	if err := c.persist(ctx, &sc); err != nil {
		return Schedule{}, err
	}
	c.mu.Lock()
	pc.scheds = append(pc.scheds, &sc)
	c.arm(pc)
	out := c.view(pc, &sc, nil, now) // the newest: nothing supersedes it
	c.mu.Unlock()
	names := map[string]int{}
	for _, cm := range cmds {
		names[cm.Command]++
	}
	var parts []string
	for _, cm := range Commands {
		if n := names[cm.Name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s ×%d", cm.Name, n))
		}
	}
	c.st.Log(store.LogEntry{Time: now.UTC(), PlantID: plantID, Level: store.LevelInfo, Code: "ScheduleAccepted",
		Message: fmt.Sprintf("schedule %s from %s accepted: %s", sc.ScheduleID, by, strings.Join(parts, ", "))})
	for _, cm := range Commands {
		if e, ok := elig[cm.Name]; ok && !e.whole() {
			c.st.Log(store.LogEntry{Time: now.UTC(), PlantID: plantID, Level: store.LevelWarning, Code: "CommandPartial",
				Message: fmt.Sprintf("schedule %s: %s", sc.ScheduleID, e.Describe())})
		}
	}
	c.wake()
	return out, nil
}

// prunable returns the schedules of a plant to drop (every window ended,
// or superseded, more than KeepFinished ago; then the oldest finished ones
// while more than MaxSchedules-room would be kept), and whether room
// cannot be made. Called with c.mu held.
func (c *Controller) prunable(pc *plantCtl, now time.Time, room int) (drop []*Schedule, full bool) {
	sup := supersededSet(pc.scheds)
	finishedAt := func(s *Schedule) (time.Time, bool) {
		var last time.Time
		for i := range s.Commands {
			cm := &s.Commands[i]
			switch {
			case sup[cm]:
				// Over, but listed until its time has passed.
				last = maxTime(last, minTime(cm.End, now))
			case cm.End.After(now):
				return time.Time{}, false
			default:
				last = maxTime(last, cm.End)
			}
		}
		return last, true
	}
	var finished []*Schedule
	for _, s := range pc.scheds {
		at, ok := finishedAt(s)
		switch {
		case !ok:
		case now.Sub(at) > c.cfg.KeepFinished:
			drop = append(drop, s)
		default:
			finished = append(finished, s)
		}
	}
	// pc.scheds is in creation order: finished is oldest first.
	for len(pc.scheds)-len(drop)+room > c.cfg.MaxSchedules && len(finished) > 0 {
		drop, finished = append(drop, finished[0]), finished[1:]
	}
	return drop, len(pc.scheds)-len(drop)+room > c.cfg.MaxSchedules
}

// forget removes schedules from the plant and the store.
func (c *Controller) forget(ctx context.Context, pc *plantCtl, drop []*Schedule) {
	if len(drop) == 0 {
		return
	}
	c.mu.Lock()
	pc.scheds = slices.DeleteFunc(pc.scheds, func(s *Schedule) bool { return slices.Contains(drop, s) })
	c.mu.Unlock()
	for _, s := range drop {
		if err := c.st.DeleteSchedule(ctx, s.ScheduleID); err != nil {
			c.log.Warn("delete finished schedule", "schedule", s.ScheduleID, "err", err)
		}
	}
	c.log.Debug("finished schedules dropped", "plant", pc.id, "count", len(drop))
}

// persist stores a schedule with its statuses. Called without c.mu.
func (c *Controller) persist(ctx context.Context, sc *Schedule) error {
	c.mu.Lock()
	body, err := json.Marshal(sc)
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("grid control: encode schedule: %w", err)
	}
	return c.st.PutSchedule(ctx, store.Schedule{ID: sc.ScheduleID, PlantID: sc.PlantID, CreatedAt: sc.CreatedAt, Body: body})
}

// assessAll is the eligibility of every command a schedule names, with
// the answer of each active inverter (Assess).
func assessAll(cmds []ScheduledCmd, devs []plant.DeviceLive) map[string]Eligibility {
	elig := map[string]Eligibility{}
	for _, sc := range cmds {
		if _, ok := elig[sc.Command]; !ok {
			cmd, _ := CommandByName(sc.Command)
			elig[sc.Command] = Assess(cmd, devs)
		}
	}
	return elig
}

// whole reports whether every active inverter of the plant acts on the
// command (and the plant has one).
func (e Eligibility) whole() bool {
	for _, ic := range e.Inverters {
		if !ic.Acts {
			return false
		}
	}
	return len(e.Inverters) > 0
}

// wholePlant lists the windows of commands that not every active inverter
// acts on, for an all-or-nothing request; a command the eligibility check
// (when it ran: checked) already refused is not named twice.
func wholePlant(cmds []ScheduledCmd, elig map[string]Eligibility, checked bool) []FieldError {
	var out []FieldError
	for i, sc := range cmds {
		e := elig[sc.Command]
		if e.whole() || (checked && !e.Eligible) {
			continue
		}
		f := fmt.Sprintf("commands[%d].command", i)
		msg := sc.Command + ": not every active inverter acts on it (all or nothing was asked): " + e.Describe()
		if len(e.Inverters) == 0 {
			msg = sc.Command + ": the plant has no active inverter"
		}
		out = append(out, FieldError{Field: f, Message: msg, Code: ReasonNotEveryInverter})
	}
	return out
}

// markCoverage marks a window partial, with its coverage, when some active
// inverter does not act on its command, and clears the mark otherwise.
func markCoverage(sc *ScheduledCmd, e Eligibility) {
	if e.whole() {
		sc.Partial, sc.Coverage, sc.Inverters = false, nil, nil
		return
	}
	sc.Partial, sc.Coverage, sc.Inverters = true, e.Coverage, e.Inverters
}

// check runs the eligibility check of every command and the checks that
// depend on the devices (rated power, curve points and parameters, as the
// devices' control models first read report them).
func (c *Controller) check(ctx context.Context, cmds []ScheduledCmd, devs []plant.DeviceLive, elig map[string]Eligibility) []FieldError {
	var errs []FieldError
	for i, sc := range cmds {
		cmd, _ := CommandByName(sc.Command)
		e := elig[cmd.Name]
		f := fmt.Sprintf("commands[%d]", i)
		if !e.Eligible {
			errs = append(errs, FieldError{Field: f + ".command", Code: e.Reasons[0].Code, Message: fmt.Sprintf("%s not eligible: %s: %s", cmd.Name, e.Reasons[0].Code, e.Reasons[0].Message)})
			continue
		}
		switch cmd.Value {
		case ValuePower:
			if sc.Unit == "W" {
				if rated := ratedOf(devs, e.Devices); rated > 0 && *sc.Value > rated {
					errs = append(errs, FieldError{Field: f + ".value", Message: fmt.Sprintf("%s: %g W exceeds the rated power of the plant's inverters (%g W)", cmd.Name, *sc.Value, rated)})
				}
			}
		case ValueCurve:
			if field, msg := c.checkCurve(ctx, cmd, &cmds[i], devs, e.Devices); msg != "" {
				errs = append(errs, FieldError{Field: f + ".curve" + field, Message: cmd.Name + ": " + msg})
			}
		}
	}
	return errs
}

// checkCurve tries a curve on the default image of every device that
// carries it (from memory, else from the store, else read from the device
// now when plantd has not yet), in volts converted with the device's
// reference voltage. It returns what is wrong, and the field below
// "curve" that it concerns (".points[j]" or "").
func (c *Controller) checkCurve(ctx context.Context, cmd Command, sc *ScheduledCmd, devs []plant.DeviceLive, ids []string) (string, string) {
	for _, d := range devs {
		if !slices.Contains(ids, d.Info.ID) || d.Discovered == nil {
			continue
		}
		ref, ok := cmd.model(d.Discovered)
		if !ok {
			continue
		}
		c.mu.Lock()
		var snap *devices.Instance
		if dc := c.devs[d.Info.ID]; dc != nil {
			snap = dc.defaults[ref.ID]
		}
		c.mu.Unlock()
		if snap == nil {
			// A quiet inverter's defaults are in the store only.
			if stored, err := c.st.ControlDefaults(ctx, d.Info.ID); err == nil {
				snap = storedDefault(stored, ref)
			}
		}
		if snap == nil {
			rw, ok := c.conns(d.Info.ID)
			if !ok {
				continue
			}
			inst, err := devices.ReadModel(ctx, rw, ref)
			if err != nil {
				continue // offline now: checked when written
			}
			snap = inst
		}
		cv := sc.Curve
		if sc.Unit == "V" {
			rw, ok := c.conns(d.Info.ID)
			if !ok {
				continue
			}
			var err error
			if cv, err = deviceCurve(ctx, rw, d.Discovered, ref, sc); err != nil {
				if pe := (*pointError)(nil); errors.As(err, &pe) {
					return fmt.Sprintf(".points[%d]", pe.j), fmt.Sprintf("device %s (model %d): %s", d.Info.ID, ref.ID, pe.msg)
				}
				if IsRefusal(err) {
					return "", fmt.Sprintf("device %s (model %d): %v", d.Info.ID, ref.ID, err)
				}
				continue // offline now: checked when written
			}
		}
		try := &devices.Instance{Model: snap.Model, Addr: snap.Addr, Regs: slices.Clone(snap.Regs), Root: snap.Root}
		if err := editCurve(try, cv, c.cfg.RevertTimeout.Seconds(), false); err != nil {
			return "", fmt.Sprintf("device %s (model %d): %v", d.Info.ID, ref.ID, err)
		}
		if err := editCurve(try, cv, c.cfg.RevertTimeout.Seconds(), true); err != nil {
			return "", fmt.Sprintf("device %s (model %d): %v", d.Info.ID, ref.ID, err)
		}
	}
	return "", ""
}

// limitDevices are the inverters that take the active-power limit now
// (FeedInLimit and opModMaxLimW share it).
func limitDevices(devs []plant.DeviceLive) []string {
	if ids := Eligible(Commands[0], devs).Devices; len(ids) > 0 {
		return ids
	}
	return Eligible(Commands[2], devs).Devices
}

// ratedOf sums the rated power of the named devices.
func ratedOf(devs []plant.DeviceLive, ids []string) float64 {
	sum := 0.0
	for _, d := range devs {
		if d.Discovered != nil && slices.Contains(ids, d.Info.ID) {
			sum += d.Discovered.RatedPowerW
		}
	}
	return sum
}

// Schedules returns a plant's schedules with the status of every command,
// oldest first.
func (c *Controller) Schedules(plantID string) ([]Schedule, error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	pc := c.plants[plantID]
	if pc == nil {
		return nil, fmt.Errorf("grid control: unknown plant %s", plantID)
	}
	out := make([]Schedule, 0, len(pc.scheds))
	sup := supersededSet(pc.scheds)
	for _, s := range pc.scheds {
		out = append(out, c.view(pc, s, sup, now))
	}
	return out, nil
}

// view is a copy of a schedule with each command's status at now: an open
// window that another role's window governs is overridden, naming that
// schedule. c.mu is held.
func (c *Controller) view(pc *plantCtl, s *Schedule, sup map[*ScheduledCmd]bool, now time.Time) Schedule {
	v := *s
	v.Commands = slices.Clone(s.Commands)
	var gov map[string]window
	for i := range v.Commands {
		cm := &v.Commands[i]
		switch {
		case sup[&s.Commands[i]]:
			cm.Status = StatusSuperseded
		case cm.Status == StatusFailed:
		case now.Before(cm.Start):
			cm.Status = StatusPending
		case now.Before(cm.End):
			cm.Status = StatusActive
			if gov == nil {
				gov = activeAt(pc.scheds, now, pc.limitRatedW)
			}
			if w, ok := gov[cm.Command]; ok && w.cmd != &s.Commands[i] {
				cm.Status, cm.OverriddenBy = StatusOverridden, w.sched.ScheduleID
			}
		default:
			cm.Status = StatusDone
		}
	}
	return v
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
		rated := ratedOf(devs, limitDevices(devs))
		pc.limitRatedW = rated
		act := activeAt(pc.scheds, now, rated)
		c.mu.Unlock()
		plan := c.plan(ctx, pc, act, devs, now)
		// Nothing to hold, renew or restore: an inverter whose defaults are
		// stored and of which plantd holds no control is left alone (no
		// goroutine, no per-control state, its defaults dropped from
		// memory until a window loads them again), which is every inverter
		// of a plant most of the time.
		quiet := len(act) == 0 && plan.limitPct == nil && c.cfg.DefaultLimitPct == nil
		var wg sync.WaitGroup
		for i := range devs {
			// A pointer into devs: a loop variable the goroutine below
			// captured would be moved to the heap on every iteration.
			d := &devs[i]
			if d.Info.Kind != plant.KindInverter || !d.Info.Active() || d.Discovered == nil || !reachable(*d) {
				continue
			}
			c.mu.Lock()
			dc := c.dev(d.Info.ID)
			if quiet && dc.untouched() {
				dc.defaults = nil
				c.mu.Unlock()
				continue
			}
			if dc.busy {
				// A slow device still busy with the last cycle's writes.
				c.mu.Unlock()
				continue
			}
			dc.busy = true
			c.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.reconcile(ctx, pc, dc, *d, plan, now)
				c.mu.Lock()
				dc.busy = false
				c.mu.Unlock()
			}()
		}
		wg.Wait()
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

// settle marks the open windows applied once every inverter that carries
// their command took them (late when that was more than LateAfter after
// the start, naming the devices that were late).
func (c *Controller) settle(ctx context.Context, pc *plantCtl, act map[string]window, devs []plant.DeviceLive) (pending bool) {
	var persist []*Schedule
	var logs []store.LogEntry
	c.mu.Lock()
	open := map[string]bool{}
	for _, w := range act {
		cm := &w.sched.Commands[w.idx]
		wk := key([]window{w})
		open[wk] = true
		if cm.AppliedAt != nil || cm.Status == StatusFailed {
			continue
		}
		cmd, _ := CommandByName(cm.Command)
		got := pc.applied[wk]
		var last time.Time
		var late []string
		all := true
		for _, id := range carriers(cmd, devs) {
			at, ok := got[id]
			if !ok {
				all = false
				break
			}
			last = maxTime(last, at)
			if at.Sub(cm.Start) > c.cfg.LateAfter {
				late = append(late, fmt.Sprintf("%s %s late", id, at.Sub(cm.Start).Round(time.Second)))
			}
		}
		if !all || last.IsZero() {
			pending = true
			continue
		}
		t := last.UTC()
		cm.AppliedAt = &t
		// What the window governs as applied: the plant may have changed
		// since it was accepted (an inverter discovered, added, retired).
		e := Eligibility{Command: cmd.Name}
		e.Inverters, e.Coverage = coverage(cmd, devs, false)
		if was := cm.Partial; was || !e.whole() {
			markCoverage(cm, e)
			if !cm.Partial || !was {
				logs = append(logs, store.LogEntry{Time: t, PlantID: pc.id, Level: store.LevelWarning, Code: "CommandPartial",
					Message: fmt.Sprintf("schedule %s: applied: %s", w.sched.ScheduleID, e.Describe())})
			}
		}
		if len(late) > 0 {
			cm.Late = true
			cm.Reason = "applied after its start on devices that were not reachable: " + strings.Join(late, ", ")
		}
		persist = append(persist, w.sched)
	}
	for wk := range pc.applied {
		if !open[wk] {
			delete(pc.applied, wk)
		}
	}
	c.mu.Unlock()
	for _, e := range logs {
		c.st.Log(e)
	}
	c.persistAll(ctx, persist)
	return pending
}

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
}

// plan resolves the active windows of a plant into per-control targets and
// runs the FeedInLimit loop.
func (c *Controller) plan(ctx context.Context, pc *plantCtl, act map[string]window, devs []plant.DeviceLive, now time.Time) plantPlan {
	pl := plantPlan{act: act}
	limitDevs := limitDevices(devs)
	rated := ratedOf(devs, limitDevs)
	lower := func(pct float64, w window) {
		if pl.limitPct == nil || pct < *pl.limitPct {
			pl.limitPct = &pct
		}
		pl.limitBy = append(pl.limitBy, w)
	}
	if w, ok := act["opModMaxLimW"]; ok {
		pct := *w.cmd.Value
		if w.cmd.Unit == "W" {
			pct = pctOfRated(*w.cmd.Value, rated)
		}
		lower(pct, w)
	}
	if w, ok := act["FeedInLimit"]; ok {
		lower(c.feedIn(ctx, pc, w, devs, limitDevs, rated, now), w)
	} else {
		c.mu.Lock()
		pc.feed = feedState{}
		c.mu.Unlock()
	}
	return pl
}

// reconcile brings the controls of one inverter to what the plan asks:
// first contact reads its defaults; then each control is written, ramped,
// renewed or restored.
func (c *Controller) reconcile(ctx context.Context, pc *plantCtl, dc *devCtl, d plant.DeviceLive, pl plantPlan, now time.Time) {
	rw, ok := c.conns(d.Info.ID)
	if !ok {
		return
	}
	if err := c.loadDefaults(ctx, dc, d, rw); err != nil {
		c.log.Warn("read control defaults", "device", d.Info.ID, "err", err)
		return
	}
	// The limit.
	if ref, ok := firstRef(d.Discovered, 704, 123); ok {
		c.reconcileLimit(ctx, pc, dc, d, rw, ref, pl, now)
	}
	// The other controls, one per command.
	for _, cmd := range Commands[1:] {
		k := controlOf(cmd.Name)
		if k == ctlLimit {
			continue
		}
		ref, ok := cmd.model(d.Discovered)
		if !ok {
			continue
		}
		if cmd.DEROnly && d.Discovered.Platform != devices.PlatformDER {
			continue
		}
		w, active := pl.act[cmd.Name]
		c.reconcileControl(ctx, pc, dc, d, rw, ref, cmd, k, w, active, now)
	}
}

func firstRef(d *devices.Device, ids ...uint16) (devices.ModelRef, bool) {
	for _, id := range ids {
		if ref, ok := d.Ref(id); ok {
			return ref, true
		}
	}
	return devices.ModelRef{}, false
}

// controlModels are the models whose defaults plantd keeps.
func controlModels() []uint16 {
	var ids []uint16
	for _, cm := range Commands {
		for _, id := range cm.Models {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// storedDefault lays out the stored default image of ref's model; nil when
// none is stored or it no longer fits the model where discovery found it.
func storedDefault(stored map[uint16]store.ControlDefault, ref devices.ModelRef) *devices.Instance {
	sd, ok := stored[ref.ID]
	if !ok || sd.Addr != ref.Addr || len(sd.Regs) != int(ref.Len)+2 {
		return nil
	}
	inst, err := devices.NewInstance(devices.ModelByID(ref.ID), sd.Addr, sd.Regs)
	if err != nil {
		return nil
	}
	return inst
}

// loadDefaults makes sure the device's default images are known: from the
// store, or read now at first contact and stored.
func (c *Controller) loadDefaults(ctx context.Context, dc *devCtl, d plant.DeviceLive, rw devices.ReadWriter) error {
	c.mu.Lock()
	loaded := dc.defaults != nil
	c.mu.Unlock()
	if loaded {
		return nil
	}
	stored, err := c.st.ControlDefaults(ctx, d.Info.ID)
	if err != nil {
		return err
	}
	defs := map[uint16]*devices.Instance{}
	var read []uint16
	for _, id := range controlModels() {
		ref, ok := d.Discovered.Ref(id)
		if !ok {
			continue
		}
		if inst := storedDefault(stored, ref); inst != nil {
			defs[id] = inst
			continue
		}
		inst, err := devices.ReadModel(ctx, rw, ref)
		if err != nil {
			return fmt.Errorf("read default of model %d: %w", id, err)
		}
		if err := c.st.PutControlDefault(ctx, store.ControlDefault{DeviceID: d.Info.ID, Model: id, Addr: ref.Addr, Regs: inst.Regs, Read: c.now().UTC()}); err != nil {
			return err
		}
		defs[id] = inst
		read = append(read, id)
	}
	if len(read) > 0 {
		c.log.Info("control defaults read at first contact", "device", d.Info.ID, "models", fmt.Sprint(read))
	}
	c.mu.Lock()
	dc.defaults, dc.defaultsStored = defs, true
	c.mu.Unlock()
	return nil
}

// key names the windows that set a control.
func key(ws []window) string {
	var parts []string
	for _, w := range ws {
		parts = append(parts, fmt.Sprintf("%s/%d", w.sched.ScheduleID, w.idx))
	}
	return strings.Join(parts, ",")
}

// reconcileControl drives a control other than the limit: written when its
// window starts, renewed at half the reversion timeout, restored when no
// window holds it.
func (c *Controller) reconcileControl(ctx context.Context, pc *plantCtl, dc *devCtl, d plant.DeviceLive, rw devices.ReadWriter, ref devices.ModelRef, cmd Command, k control, w window, active bool, now time.Time) {
	c.mu.Lock()
	snap := dc.defaults[ref.ID]
	st := dc.peek(k)
	owned, prevKey, writtenAt, nextTry := st.owned, st.key, st.writtenAt, st.nextTry
	c.mu.Unlock()
	if snap == nil || now.Before(nextTry) {
		return
	}
	if !active {
		if owned {
			c.restoreControl(ctx, pc, dc, d, rw, ref, k, now)
		}
		return
	}
	ws := []window{w}
	wk := key(ws)
	renew := has(snap, "RvrtTms") || has(snap, "Conn_RvrtTms") || has(snap, "OutPFSet_RvrtTms") || has(snap, "PFWInjRvrtTms")
	if owned && wk == prevKey && (!renew || now.Sub(writtenAt) < c.cfg.RevertTimeout/2) {
		return
	}
	rvrt := c.cfg.RevertTimeout.Seconds()
	var err error
	var what string
	switch cmd.Value {
	case ValueNone:
		what = fmt.Sprintf("model %d Conn = disconnected", ref.ID)
		_, err = devices.WriteModelRenew(ctx, rw, ref, renewPoints(k), nil, func(inst *devices.Instance) error { return editDisconnect(inst, rvrt) })
	case ValuePF:
		what = fmt.Sprintf("model %d PF %g (%s)", ref.ID, *w.cmd.Value, k)
		_, err = devices.WriteModelRenew(ctx, rw, ref, renewPoints(k), nil, func(inst *devices.Instance) error { return editPF(inst, snap, k, *w.cmd.Value, rvrt) })
	case ValueCurve:
		what = fmt.Sprintf("model %d curve (%d points, %d params)", ref.ID, len(w.cmd.Curve.Points), len(w.cmd.Curve.Params))
		if w.cmd.Unit == "V" {
			what = fmt.Sprintf("model %d curve (%d points in V, %d params)", ref.ID, len(w.cmd.Curve.Points), len(w.cmd.Curve.Params))
		}
		lay := curveLayouts[ref.ID]
		// The curve as this device takes it (volts converted).
		var cv *Curve
		cv, err = deviceCurve(ctx, rw, d.Discovered, ref, w.cmd)
		if err == nil && lay.der && (wk != prevKey || !owned) {
			_, err = devices.WriteModel(ctx, rw, ref, func(inst *devices.Instance) error { return editCurve(inst, cv, rvrt, false) })
		}
		if err == nil {
			err = adopt(ctx, rw, ref, renewPoints(k), func(inst *devices.Instance) error { return editCurve(inst, cv, rvrt, true) })
		}
	}
	c.outcome(ctx, pc, dc, d, k, wk, ws, what, wk != prevKey || !owned, err, now, nil)
}

// adopt writes a 7xx adopt request (with what edit sets beside it): the
// request is written even when it holds the same index already, since
// writing it is what makes the device adopt, and a device that answers
// the adoption failed is a refusal. The renew points are written even when
// unchanged (see renewPoints).
func adopt(ctx context.Context, rw devices.ReadWriter, ref devices.ModelRef, renew []string, edit func(*devices.Instance) error) error {
	after, err := devices.WriteModelRenew(ctx, rw, ref, renew, []string{"AdptCrvReq", "AdptCtlReq"}, edit)
	if err != nil {
		return err
	}
	for _, rslt := range []string{"AdptCrvRslt", "AdptCtlRslt"} {
		if v, err := after.Float(rslt); err == nil && v == 2 {
			return fmt.Errorf("model %d: %s FAILED: %w", ref.ID, rslt, devices.ErrReadBack)
		}
	}
	return nil
}

// restoreControl writes a control's default back and releases it.
func (c *Controller) restoreControl(ctx context.Context, pc *plantCtl, dc *devCtl, d plant.DeviceLive, rw devices.ReadWriter, ref devices.ModelRef, k control, now time.Time) {
	c.mu.Lock()
	snap := dc.defaults[ref.ID]
	c.mu.Unlock()
	var note string
	var err error
	if curveLayouts[ref.ID].der {
		note, err = restoreDER(ctx, rw, ref, snap)
	} else {
		_, err = devices.WriteModel(ctx, rw, ref, func(inst *devices.Instance) error { return restore(inst, snap, k) })
	}
	if err != nil {
		c.outcome(ctx, pc, dc, d, k, "", nil, fmt.Sprintf("model %d default", ref.ID), true, err, now, nil)
		return
	}
	c.mu.Lock()
	st := dc.state(k)
	*st = ctlState{}
	c.stats.Restores++
	c.mu.Unlock()
	if err := c.st.SetControlOwned(ctx, d.Info.ID, string(k), false); err != nil {
		c.log.Warn("record control released", "device", d.Info.ID, "control", k, "err", err)
	}
	c.st.Log(store.LogEntry{Time: now.UTC(), PlantID: d.Info.PlantID, DeviceID: d.Info.ID, Level: store.LevelInfo, Code: "GridControlRestored",
		Message: fmt.Sprintf("device %s: %s restored to its default (model %d), read back ok", d.Info.ID, k, ref.ID)})
	if note != "" {
		c.st.Log(store.LogEntry{Time: now.UTC(), PlantID: d.Info.PlantID, DeviceID: d.Info.ID, Level: store.LevelWarning, Code: "GridControlRestoreNote",
			Message: fmt.Sprintf("device %s: %s (model %d): %s", d.Info.ID, k, ref.ID, note)})
	}
}

// outcome records a write: success makes the control owned (persisted
// before anything else is written, so a crash still restores it), marks
// the windows applied (late if so) and logs changes; failure backs off and,
// after FailAfter attempts, marks the windows failed with the reason.
func (c *Controller) outcome(ctx context.Context, pc *plantCtl, dc *devCtl, d plant.DeviceLive, k control, wk string, ws []window, what string, changed bool, err error, now time.Time, ok func(*ctlState)) {
	var persist []*Schedule
	c.mu.Lock()
	st := dc.state(k)
	if err != nil {
		c.stats.WriteErrors++
		st.failures++
		backoff := time.Duration(min(30, 1<<min(st.failures-1, 5))) * time.Second
		st.nextTry = now.Add(backoff)
		first := st.lastErr != err.Error()
		st.lastErr = err.Error()
		failed := IsRefusal(err) && (st.failures >= c.cfg.FailAfter || errors.Is(err, errUnsupported))
		if failed {
			for _, w := range ws {
				cm := &w.sched.Commands[w.idx]
				if cm.Status != StatusFailed {
					cm.Status, cm.Reason = StatusFailed, fmt.Sprintf("device %s refused %s: %v", d.Info.ID, what, err)
					persist = append(persist, w.sched)
				}
			}
		}
		c.mu.Unlock()
		if first || failed {
			c.st.Log(store.LogEntry{Time: now.UTC(), PlantID: d.Info.PlantID, DeviceID: d.Info.ID, Level: store.LevelError, Code: "GridControlWriteFailed",
				Message: fmt.Sprintf("device %s: %s failed (attempt %d, next in %s): %v", d.Info.ID, what, st.failures, backoff, err)})
		}
		c.log.Warn("grid control write failed", "device", d.Info.ID, "control", k, "attempt", st.failures, "err", err)
		c.persistAll(ctx, persist)
		return
	}
	c.stats.Writes++
	if !pc.pendingEdge.IsZero() {
		c.stats.Edges++
		c.stats.EdgeToWrite = append(c.stats.EdgeToWrite, c.now().Sub(pc.pendingEdge))
		if len(c.stats.EdgeToWrite) > 1000 {
			c.stats.EdgeToWrite = c.stats.EdgeToWrite[1:]
		}
		pc.pendingEdge = time.Time{}
	}
	wasOwned := st.owned
	st.owned, st.key, st.writtenAt, st.failures, st.nextTry, st.lastErr = true, wk, now, 0, time.Time{}, ""
	if ok != nil {
		ok(st)
	}
	var by []string
	for _, w := range ws {
		cm := &w.sched.Commands[w.idx]
		by = append(by, fmt.Sprintf("%s of schedule %s by %s", cm.Command, w.sched.ScheduleID, w.sched.CreatedBy))
		if cm.AppliedAt == nil {
			wk := key([]window{w})
			if pc.applied[wk] == nil {
				pc.applied[wk] = map[string]time.Time{}
			}
			if _, ok := pc.applied[wk][d.Info.ID]; !ok {
				pc.applied[wk][d.Info.ID] = now
			}
		}
	}
	c.mu.Unlock()
	if !wasOwned {
		if err := c.st.SetControlOwned(ctx, d.Info.ID, string(k), true); err != nil {
			c.log.Warn("record control owned", "device", d.Info.ID, "control", k, "err", err)
		}
	}
	if changed {
		src := "fallback ramp to the default"
		if len(by) > 0 {
			src = strings.Join(by, "; ")
		}
		c.st.Log(store.LogEntry{Time: now.UTC(), PlantID: d.Info.PlantID, DeviceID: d.Info.ID, Level: store.LevelInfo, Code: "GridControlWrite",
			Message: fmt.Sprintf("device %s: %s (%s), read back ok", d.Info.ID, what, src)})
	}
	c.persistAll(ctx, persist)
}

func (c *Controller) persistAll(ctx context.Context, scheds []*Schedule) {
	for _, s := range slices.Compact(scheds) {
		if err := c.persist(ctx, s); err != nil {
			c.log.Warn("store schedule status", "schedule", s.ScheduleID, "err", err)
		}
	}
}

// IsRefusal reports whether a write error is the device refusing (a
// Modbus exception or a read-back that differs) rather than a link fault.
func IsRefusal(err error) bool {
	var ex *modbus.ExceptionError
	return errors.As(err, &ex) || errors.Is(err, devices.ErrReadBack) || errors.Is(err, errUnsupported)
}
