package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"plantd/internal/backoff"
	"plantd/plant"
)

// Spec is one consumer as the manager runs it; cmd/plantd builds it from
// the config.
type Spec struct {
	ID, PlantID, Name string
	// DriverName is the config's driver word (relay, sgready, shelly,
	// ocpp).
	DriverName string
	Driver     Driver
	// Setpoint is the output the driver takes (default SetpointSwitch).
	Setpoint Setpoint
	// Charger is a charger's current bounds and delays (Setpoint
	// SetpointCurrent).
	Charger ChargerSpec
	// Controllable: a §14a EnWG controllable consumer, limited while the
	// grid operator dims the plant (Dim).
	Controllable bool
	// PartOf names the consumer this one is part of as one §14a device
	// (a heat pump's immersion heater): it is dimmed with the others but
	// does not count in the minimum's number of devices.
	PartOf string
	RatedW float64
	// Meter is the id of a meter device measuring this consumer alone
	// (its live activePower and gridConsumptionTotal are the consumer's
	// power and energy); "" = none.
	Meter string
	// Mode is the configured start mode; a mode kept in Deps.Marks wins.
	Mode               plant.ConsumerMode
	Priority           int
	MinOn, MinOff      time.Duration
	MaxSwitchesPerHour int
	// OnW and OffW are the surplus thresholds (on at OnW, off below OffW).
	OnW, OffW float64
	MustRun   []MustRun
	// Interval between polls (wall clock) and Timeout of each.
	Interval, Timeout time.Duration
	// Location is the plant's time zone (today's energy, must-run rules).
	Location *time.Location
	// PlanLock lets the day-ahead plan lock an SG-Ready heat pump (state
	// 1) within its lock rules (config consumer.planLock, default false:
	// state 1 is the grid operator's). SGReadyW is its draw in states 2,
	// 3 and 4 for the plan (0: RatedW).
	PlanLock bool
	SGReadyW [3]float64
}

// ChargerSpec is an EV charger's part of a Spec.
type ChargerSpec struct {
	// MinA and MaxA bound the current per phase (A); Phases is 1 or 3.
	MinA, MaxA float64
	Phases     int
	// VoltageV is the phase voltage the decision turns watts into amps
	// with (default 230).
	VoltageV float64
	// EnableDelay and DisableDelay: in PV mode the charger starts after
	// the surplus carried MinA this long, and stops after it did not this
	// long (MinPV stays at MinA).
	EnableDelay, DisableDelay time.Duration
	// VehicleCapacityWh is the car's usable battery capacity, for a Plan
	// target given as a SoC (0: SoC targets are refused).
	VehicleCapacityWh float64
}

// wattsPerAmp is the power one ampere per phase draws.
func (c ChargerSpec) wattsPerAmp() float64 { return c.VoltageV * float64(c.Phases) }

// MustRun is a parsed must-run rule (consumerconfig.MustRun): At runs the
// consumer For from each of its times; By has it run For in total between
// two of its times.
type MustRun struct {
	At, By cron.Schedule
	For    time.Duration
}

// Deps are the manager's links to the daemon.
type Deps struct {
	// Sink takes every poll's sample (the daemon hands it to the live
	// state and the store). Required.
	Sink func(plant.Sample)
	// Live reads a consumer's meter (plant.Live.Value). Required when a
	// consumer has a Meter.
	Live interface {
		Value(id string, c plant.Channel) (float64, time.Time, bool)
	}
	// Log records a consumer's switchings and faults in the device log.
	Log func(plant.LogEntry)
	// Marks keeps modes set over the API across restarts (the store's
	// marks), and the estimated energy counters when Guards is nil; nil
	// keeps them in memory.
	Marks Marks
	// Guards keeps each consumer's guard state across restarts (the
	// store's consumer_guard), written at every switch; nil keeps it in
	// memory.
	Guards Guards
	// DimmingMinW is what a plant's controllable consumers may draw
	// while dimmed; 0 = the BNetzA minimum for their number (MinPower14a).
	DimmingMinW float64
	// Batteries is each plant's battery priority by plant id (config
	// plants[].battery); a plant not in it has the zero Battery.
	Batteries map[string]Battery
	// Now is the plant's clock (the demo's simulated one): guards,
	// must-run windows, energy. Nil = time.Now. Polls and watchdog
	// renewals always run on the wall clock.
	Now func() time.Time
}

// Marks is a small durable key/value store of int64 (store.Store).
type Marks interface {
	Mark(ctx context.Context, key string) (int64, bool, error)
	SetMark(ctx context.Context, key string, value int64) error
}

// Manager runs the consumers: a loop per consumer that polls and switches
// it, the surplus decision grid control calls each cycle (Absorb), and
// the modes the API sets.
type Manager struct {
	deps Deps
	log  *slog.Logger
	now  func() time.Time

	mu      sync.Mutex
	cons    []*cons            // priority order, then config order
	byID    map[string]*cons   //
	byPlant map[string][]*cons // priority order
	slots   []slot             // the decision's buffer, reused
	// probes is each plant's record of its probes: when the last was
	// made and whether it is still to be judged, the failures in a row,
	// and until when no probe is made after a failed one
	// (judgeProbeLocked).
	probes map[string]*probeRecord
	dimmed map[string]bool // plants the grid operator dims (§14a)
	// limited is each plant's consumption limit in W from the grid
	// operator's control box over EEBus (LimitConsumption).
	limited map[string]float64
	// last is each plant's surplus of the last control cycle: a change of
	// the dimming decides again with it at once.
	last map[string]plant.Surplus
	// reducing counts, per plant, the consumers whose last decision lowered
	// their output and whose loop has not written it yet; reduced is
	// closed when that count falls to 0. A loop that raises an output
	// waits for it (writeOrder), so that a decision's reductions reach
	// the devices before its increases.
	reducing map[string]int
	reduced  map[string]chan struct{}
	// maxTimeout is the longest write timeout of any consumer: how long
	// a raise waits at most for the reductions before it.
	maxTimeout time.Duration
}

// probePeriod is how long after a switch on that only curtailed PV
// carried the next such switch on waits: the inverters' output and the
// meter must show whether the power was really there.
const probePeriod = 30 * time.Second

// A probe is judged probeSettle after it, once the inverters had time to
// ramp up to the consumer (at grid control's default 10 % of nominal per
// second, 10 s): it failed when the plant then imports, or its battery
// pays, more than probeLossW, which means the curtailed PV was not there
// (a cloud, not a limit, held the inverters back). The consumer it switched
// on goes off as its guard allows (its minimum on time protects the
// device), but no other probe follows for probeHold after the first
// failure, doubling with each failure in a row up to probeHoldMax: without
// that, the next consumer in line was probed as soon as the first went
// off, each on the home battery (plantd demo at 15 % sky and 100 % SoC
// under a FeedInLimit of 0: a heater for its 2 minutes' minimum on time,
// the battery paying 2.5 kW, then the heat pump at once). probeHold
// outlasts a usual minimum on time; a cloud's passing is a matter of
// minutes. A probe that holds ends the run of failures.
const (
	probeSettle  = 15 * time.Second
	probeLossW   = 200
	probeHold    = 10 * time.Minute
	probeHoldMax = time.Hour
)

// probeRecord is a plant's probes' record (Manager.probes).
type probeRecord struct {
	at      time.Time // the last probe
	pending bool      // it is not judged yet
	fails   int       // failed probes in a row
	until   time.Time // no probe before
}

// judgeProbeLocked judges the plant's last probe once probeSettle has
// passed, from s: the meter's export less the battery's discharge (above
// BufferSoC too: a switch on is never the battery's, whatever running
// consumers may keep drawing from it), and reports whether a probe may be
// made now.
func (m *Manager) judgeProbeLocked(plantID string, now time.Time, s plant.Surplus) bool {
	r := m.probes[plantID]
	if r == nil {
		r = &probeRecord{}
		m.probes[plantID] = r
	}
	if r.pending && now.Sub(r.at) >= probeSettle {
		r.pending = false
		exportW := -s.GridW
		if s.BatteryOK {
			exportW -= s.BatteryDischargeW
		}
		if exportW < -probeLossW {
			r.fails++
			r.until = now.Add(min(probeHoldMax, probeHold<<min(r.fails-1, 10)))
			m.log.Info("probe for curtailed PV failed: the plant imports or its battery pays", "plant", plantID,
				"exportW", exportW, "noProbeUntil", r.until)
		} else {
			r.fails = 0
		}
	}
	return now.Sub(r.at) >= probePeriod && !now.Before(r.until) // judged by then: probeSettle < probePeriod
}

// startSettle is how long after a switch on a consumer's rating, not its
// measured draw, counts under a grid operator's cap (dim): a heat pump's
// compressor or a car's charger starts seconds to minutes after its
// contact closes, and a measured 0 W would let the next consumer on, both
// to draw together a moment later. The surplus decision keeps the
// measured draw (what switching it off would free).
const startSettle = 2 * time.Minute

// failBackoff spaces the polls of a consumer that does not answer.
var failBackoff = backoff.Exp{First: time.Second, Max: 30 * time.Second, Jitter: 0.2}

// cons is one consumer's state (guarded by Manager.mu, but for spec).
type cons struct {
	spec Spec
	kick chan struct{} // wakes the loop to write now

	mode   plant.ConsumerMode
	g      guard
	want   Output // what plantd commands
	has    bool   // want was decided
	reason string

	read     Reading // last read back
	readOK   bool
	readAt   time.Time // plant clock
	lastOKAt time.Time // wall clock
	state    plant.CommState
	fails    int
	started  bool // the first successful read was handled

	estWh  float64 // estimated lifetime energy (no meter, no power reading)
	estAt  time.Time
	estKey string

	day      string // plant-local date of dayWh
	dayWh    float64
	dayOK    bool
	energyWh float64 // the counter of the last reading
	energyOK bool

	byRan []time.Duration // per By rule: on-time in its current period
	byEnd []time.Time     // per By rule: the period's deadline

	lastSet time.Time // wall clock of the last write (watchdog renewal)
	keepDue bool      // the guard state is to be kept (after a switch, at a new day)
	// kept is the guard state restored at New (nil: none), for the first
	// reading to compare the device with.
	kept  *kept
	stats plant.PollStats
	// fallback is the driver's fail-safe output.
	fallback Output
	// delays are a charger's enable and disable timers.
	delays delays
	// lowering: the last decision lowered the output and the loop has not
	// written it yet (counted in Manager.reducing).
	lowering bool
	// plan is a charger's target in mode Plan (nil in other modes);
	// planned the day-ahead plan's step (SetPlanned), nil when none.
	plan    *planState
	planned *planned
}

// New builds a manager for the given consumers. It loads the kept modes
// and estimated counters; it starts nothing.
func New(ctx context.Context, specs []Spec, deps Deps, logger *slog.Logger) (*Manager, error) {
	if deps.Sink == nil {
		return nil, errors.New("consumer: a sink is required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{deps: deps, log: logger, now: deps.Now, byID: map[string]*cons{}, byPlant: map[string][]*cons{}, probes: map[string]*probeRecord{}, dimmed: map[string]bool{}, limited: map[string]float64{}, last: map[string]plant.Surplus{},
		reducing: map[string]int{}, reduced: map[string]chan struct{}{}}
	if m.now == nil {
		m.now = time.Now
	}
	for _, s := range specs {
		if s.Driver == nil {
			return nil, fmt.Errorf("consumer %s: no driver", s.ID)
		}
		if s.Meter != "" && deps.Live == nil {
			return nil, fmt.Errorf("consumer %s: a meter needs the live state", s.ID)
		}
		if _, dup := m.byID[s.ID]; dup {
			return nil, fmt.Errorf("consumer %s listed twice", s.ID)
		}
		if s.Interval <= 0 {
			s.Interval = 5 * time.Second
		}
		if s.Timeout <= 0 {
			s.Timeout = 2 * time.Second
		}
		if s.Location == nil {
			s.Location = time.UTC
		}
		if s.Setpoint == 0 {
			s.Setpoint = SetpointSwitch
		}
		if s.Setpoint == SetpointCurrent {
			ch := &s.Charger
			if ch.Phases != 1 && ch.Phases != 3 || ch.MinA <= 0 || ch.MaxA < ch.MinA {
				return nil, fmt.Errorf("consumer %s: charger bounds %v..%v A on %d phases", s.ID, ch.MinA, ch.MaxA, ch.Phases)
			}
			if ch.VoltageV <= 0 {
				ch.VoltageV = 230
			}
			if s.RatedW <= 0 {
				s.RatedW = ch.MaxA * ch.wattsPerAmp()
			}
		}
		c := &cons{spec: s, kick: make(chan struct{}, 1), mode: s.Mode, reason: plant.ReasonStarting, fallback: s.Driver.Fallback(),
			g: newGuard(s.MinOn, s.MinOff, s.MaxSwitchesPerHour), estKey: "consumer.energyWh." + s.ID,
			byRan: make([]time.Duration, len(s.MustRun)), byEnd: make([]time.Time, len(s.MustRun))}
		if c.mode == "" {
			c.mode = plant.ModeAuto
		}
		if deps.Marks != nil {
			if v, ok, err := deps.Marks.Mark(ctx, modeKey(s.ID)); err != nil {
				return nil, fmt.Errorf("consumer %s: kept mode: %w", s.ID, err)
			} else if ok && v >= 0 && int(v) < len(modes) {
				c.mode = modes[v]
			}
			if c.mode == plant.ModePlan {
				if ok, err := m.restorePlan(ctx, c); err != nil {
					return nil, err
				} else if !ok || s.Setpoint != SetpointCurrent {
					c.mode, c.plan = plant.ModeAuto, nil
				}
			}
			if v, ok, err := deps.Marks.Mark(ctx, c.estKey); err != nil {
				return nil, fmt.Errorf("consumer %s: kept energy: %w", s.ID, err)
			} else if ok {
				c.estWh = float64(v) // kept by a plantd before the guard state, or without Guards
			}
		}
		if deps.Guards != nil {
			if err := m.restore(ctx, c); err != nil {
				return nil, err
			}
		}
		m.cons = append(m.cons, c)
		m.byID[s.ID] = c
		m.maxTimeout = max(m.maxTimeout, s.Timeout)
	}
	slices.SortStableFunc(m.cons, func(a, b *cons) int { return cmp.Compare(a.spec.Priority, b.spec.Priority) })
	for _, c := range m.cons {
		m.byPlant[c.spec.PlantID] = append(m.byPlant[c.spec.PlantID], c)
	}
	m.slots = make([]slot, 0, len(m.cons))
	return m, nil
}

// modes indexes the modes kept in marks.
var modes = []plant.ConsumerMode{plant.ModeAuto, plant.ModeOn, plant.ModeOff, plant.ModeMinPV, plant.ModePlan}

func modeKey(id string) string { return "consumer.mode." + id }

// Run polls and switches every consumer until ctx ends. It leaves the
// outputs as they are: a device's watchdog brings them to their safe
// state if plantd does not come back in time (a quick restart does not
// switch a compressor off and on). The guard states and estimated
// counters are kept.
func (m *Manager) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, c := range m.cons {
		wg.Go(func() { m.loop(ctx, c) })
	}
	wg.Wait()
	m.keep(context.WithoutCancel(ctx))
	for _, c := range m.cons {
		if err := c.spec.Driver.Close(); err != nil {
			m.log.Warn("consumer: close", "device", c.spec.ID, "err", err)
		}
	}
	return nil
}

// loop is one consumer's poll-and-switch loop.
func (m *Manager) loop(ctx context.Context, c *cons) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.kick:
			t.Stop() // Go 1.23 timers: nothing to drain before Reset
		}
		m.poll(ctx, c)
		m.write(ctx, c)
		m.mu.Lock()
		keep := c.keepDue
		m.mu.Unlock()
		if keep {
			m.keepOf(ctx, c)
		}
		m.mu.Lock()
		wait := c.spec.Interval
		if c.fails > 0 {
			wait = min(wait, failBackoff.Wait(c.fails, rand.Float64()))
		}
		m.mu.Unlock()
		t.Reset(wait)
	}
}

// poll reads the consumer and hands its sample on.
func (m *Manager) poll(ctx context.Context, c *cons) {
	began := time.Now()
	rctx, cancel := context.WithTimeout(ctx, c.spec.Timeout)
	r, err := c.spec.Driver.Read(rctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	now := m.now()
	s := plant.Sample{Device: c.spec.ID, Time: time.Now().UTC(), Duration: time.Since(began)}
	m.mu.Lock()
	c.stats.Polls++
	c.stats.LastPoll, c.stats.LastDuration = s.Time, s.Duration
	if err == nil {
		c.stats.Successes++
		c.stats.LastError = ""
	} else {
		c.stats.LastError = err.Error()
	}
	if err != nil {
		c.fails++
		s.Err = fmt.Errorf("consumer %s: %w", c.spec.ID, err)
		s.State = plant.StateOffline
		if !c.lastOKAt.IsZero() && time.Since(c.lastOKAt) < 3*c.spec.Interval {
			s.State = plant.StateStale
		}
		c.state = s.State
		if s.State == plant.StateOffline {
			c.readOK = false
			c.reason = plant.ReasonOffline
		}
		m.mu.Unlock()
		m.deps.Sink(s)
		return
	}
	first := !c.started
	c.started = true
	c.fails, c.state, c.lastOKAt = 0, plant.StateOnline, time.Now()
	m.account(c, now)
	c.read, c.readOK, c.readAt = r, true, now
	s.State = plant.StateOnline
	s.Consumer = m.readingLocked(c, r, now)
	if first {
		m.startLocked(c, r, now)
	}
	m.mu.Unlock()
	m.deps.Sink(s)
}

// readingLocked turns a driver's reading into the domain's: the power and
// energy from the consumer's meter, else from the device, else estimated
// from the rated power while on.
func (m *Manager) readingLocked(c *cons, r Reading, now time.Time) *plant.ConsumerReading {
	out := &plant.ConsumerReading{Switch: plant.SwitchedOff, SGReady: r.Output.SGReady, CurrentA: r.Output.CurrentA, Phases: r.Output.Phases}
	if ch := r.Charger; ch != nil {
		out.ChargerStatus, out.VehicleSoC, out.HasVehicleSoC = ch.Status, ch.SoC, ch.HasSoC
	}
	if r.Output.On {
		out.Switch = plant.SwitchedOn
	}
	switch {
	case c.spec.Meter != "":
		if w, _, ok := m.deps.Live.Value(c.spec.Meter, plant.ActivePower); ok {
			out.PowerW, out.HasPower = math.Max(0, w), true
		}
		if wh, _, ok := m.deps.Live.Value(c.spec.Meter, plant.GridConsumptionTotal); ok {
			out.EnergyWh, out.HasEnergy = wh, true
		}
	case r.HasPower || r.HasEnergy:
		out.PowerW, out.HasPower = math.Max(0, r.PowerW), r.HasPower
		out.EnergyWh, out.HasEnergy = r.EnergyWh, r.HasEnergy
	default:
		out.PowerW, out.HasPower, out.Estimated = 0, true, true
		if r.Output.On {
			out.PowerW = c.spec.RatedW
		}
		out.EnergyWh, out.HasEnergy = math.Round(c.estWh), true
	}
	if out.HasEnergy {
		c.energyWh, c.energyOK = out.EnergyWh, true
		if c.plan != nil && math.IsNaN(c.plan.startWh) {
			c.plan.startWh = out.EnergyWh // the first counter since the plan was set
		}
		if d := now.In(c.spec.Location).Format(time.DateOnly); d != c.day || !c.dayOK {
			c.keepDue = c.keepDue || c.dayOK // a new day: kept once, for energy today
			c.day, c.dayWh, c.dayOK = d, out.EnergyWh, true
		}
	}
	return out
}

// account integrates the estimated energy and the must-run on-time from
// the last reading to now (plant clock).
func (m *Manager) account(c *cons, now time.Time) {
	if c.readOK && now.After(c.readAt) {
		dt := now.Sub(c.readAt)
		if c.read.Output.On {
			c.estWh += c.spec.RatedW * dt.Hours()
			for i := range c.byRan {
				c.byRan[i] += dt
			}
		}
	}
	for i, r := range c.spec.MustRun {
		if r.By == nil {
			continue
		}
		if c.byEnd[i].IsZero() || !now.Before(c.byEnd[i]) {
			c.byEnd[i], c.byRan[i] = r.By.Next(now), 0
		}
	}
}

// startLocked handles a consumer's first reading: plantd takes the output
// as it finds it and keeps it until its first decision, which the
// restored guards hold (no 4 → 2 → 4 of an SG-Ready pair, no off-on of a
// relay at start). An output that differs from what plantd last
// commanded switched while plantd was away (its watchdog, a person, a
// power cut): that counts as a switch now, so the guard protects the
// machine from the moment plantd learns of it. An SG-Ready pair found
// locked or forced that plantd did not set so is logged (contacts
// swapped, or another controller); the decision sets it to normal unless
// a rule or a guard wants otherwise.
func (m *Manager) startLocked(c *cons, r Reading, now time.Time) {
	k := c.kept
	c.kept = nil
	if !c.has {
		c.want, c.has = r.Output, true
	}
	if k != nil && k.has && onOf(k.out, c.spec.Setpoint) != onOf(r.Output, c.spec.Setpoint) {
		c.g.switched(now)
		c.keepDue = true
		m.logf(c, now, plant.LevelInfo, "ConsumerFoundSwitched", "%s: found %s at start, plantd had left it %s; the guards count a switch now",
			c.spec.ID, describe(r.Output, c.spec.Setpoint), describe(k.out, c.spec.Setpoint))
	}
	setByPlantd := k != nil && k.has && k.out.SGReady == r.Output.SGReady
	if c.spec.Setpoint == SetpointSGReady && !setByPlantd && (r.Output.SGReady == plant.SGLocked || r.Output.SGReady == plant.SGForced) {
		m.logf(c, now, plant.LevelWarning, "SGReadyUnexpectedState",
			"%s: SG-Ready state %d (%s) read at start, which plantd did not set; if the heat pump shows another state, contacts A and B (coils) may be swapped; plantd keeps it until its first decision",
			c.spec.ID, r.Output.SGReady, sgWords[r.Output.SGReady])
	}
}

var sgWords = [...]string{"", "locked", "normal", "recommended", "forced"}

// write puts the commanded output on the device when it differs from
// what was read back, and renews it within the watchdog time while it is
// not the safe state.
func (m *Manager) write(ctx context.Context, c *cons) {
	m.mu.Lock()
	if !c.has || !c.readOK {
		m.loweredLocked(c)
		m.mu.Unlock()
		return
	}
	want, read := c.want, c.read.Output
	renew := false
	if wd := c.spec.Driver.Watchdog(); wd > 0 && want != c.fallback {
		renew = time.Since(c.lastSet) >= wd/3
	}
	var reductions chan struct{}
	if level(want, c.spec.Setpoint) > level(read, c.spec.Setpoint) && !c.lowering {
		reductions = m.reduced[c.spec.PlantID] // nil: none pending
	}
	m.mu.Unlock()
	if want == read && !renew {
		m.mu.Lock()
		m.loweredLocked(c)
		m.mu.Unlock()
		return
	}
	if reductions != nil {
		// Another consumer of the plant is being lowered by the same (or
		// an earlier) decision: raise this one after it, so that a cap
		// of the grid operator is not exceeded between the two writes.
		// Bounded by the longest a write may take.
		t := time.NewTimer(m.maxTimeout)
		select {
		case <-reductions:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	wctx, cancel := context.WithTimeout(ctx, c.spec.Timeout)
	err := c.spec.Driver.Set(wctx, want)
	cancel()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loweredLocked(c)
	if err != nil {
		if ctx.Err() == nil {
			m.logf(c, m.now(), plant.LevelError, "ConsumerSwitchFailed", "%s: switching to %s failed: %v", c.spec.ID, describe(want, c.spec.Setpoint), err)
		}
		return
	}
	c.lastSet = time.Now()
	if want != read {
		c.read.Output = want // read back at the next poll
	}
}

// level orders a consumer's outputs by what they draw: off < on, a
// charger's current on its phases, SG-Ready 1 < 2 < 3 < 4.
func level(out Output, sp Setpoint) float64 {
	switch sp {
	case SetpointCurrent:
		return out.CurrentA * float64(max(out.Phases, 1))
	case SetpointSGReady:
		return float64(out.SGReady)
	}
	if out.On {
		return 1
	}
	return 0
}

// loweringLocked records that c's new output want lowers what it
// commanded before: raising loops of its plant wait until c's loop has
// written it (write).
func (m *Manager) loweringLocked(c *cons, want Output, wasHas bool) {
	if c.lowering || !wasHas || level(want, c.spec.Setpoint) >= level(c.want, c.spec.Setpoint) {
		return
	}
	c.lowering = true
	id := c.spec.PlantID
	if m.reducing[id] == 0 {
		m.reduced[id] = make(chan struct{})
	}
	m.reducing[id]++
}

// loweredLocked ends c's pending reduction (written, failed or given up).
func (m *Manager) loweredLocked(c *cons) {
	if !c.lowering {
		return
	}
	c.lowering = false
	id := c.spec.PlantID
	if m.reducing[id]--; m.reducing[id] == 0 {
		close(m.reduced[id])
		delete(m.reduced, id)
	}
}

func describe(out Output, sp Setpoint) string {
	switch sp {
	case SetpointCurrent:
		if out.CurrentA <= 0 {
			return "0 A (paused)"
		}
		return fmt.Sprintf("%.1f A on %d phases", out.CurrentA, out.Phases)
	case SetpointSGReady:
		if out.SGReady > 0 && out.SGReady < len(sgWords) {
			return fmt.Sprintf("SG-Ready %d (%s)", out.SGReady, sgWords[out.SGReady])
		}
		return "SG-Ready " + strconv.Itoa(out.SGReady)
	}
	if out.On {
		return "on"
	}
	return "off"
}

// Absorb is grid control's call once per control cycle of a plant: it
// decides every consumer of the plant (must-run windows, modes, the
// surplus in priority order, the guards) and wakes the loops of those
// whose output changes, which write at once.
func (m *Manager) Absorb(ctx context.Context, plantID string, s plant.Surplus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.absorbLocked(plantID, s)
}

// absorbLocked is Absorb with m.mu held.
func (m *Manager) absorbLocked(plantID string, s plant.Surplus) {
	list := m.byPlant[plantID]
	if len(list) == 0 {
		return
	}
	now := s.Time
	if now.IsZero() {
		now = m.now()
	}
	m.last[plantID] = s
	slots := m.slots[:0]
	for _, c := range list {
		slots = append(slots, m.slotLocked(c, now))
	}
	export := exportOf(s, m.deps.Batteries[plantID])
	probe := m.judgeProbeLocked(plantID, now, s)
	if m.decideLocked(slots, export, s.CurtailedW, s.GridOK, probe) {
		r := m.probes[plantID]
		r.at, r.pending = now, true
	}
	if w, ok := m.capLocked(plantID, list); ok {
		dim(slots, w)
	}
	for i, c := range list {
		m.applyLocked(c, &slots[i], now)
	}
	m.slots = slots[:0]
}

// decideLocked is decide; a method so that tests and benchmarks share the
// manager's buffer.
func (m *Manager) decideLocked(slots []slot, exportW, curtailedW float64, gridOK, probe bool) bool {
	return decide(slots, exportW, curtailedW, gridOK, probe)
}

// slotLocked fills a consumer's slot for a decision at now; a consumer
// that is not Auto (manual, must-run, offline) gets its outcome here.
func (m *Manager) slotLocked(c *cons, now time.Time) slot {
	sp := c.spec.Setpoint
	on := c.has && onOf(c.want, sp)
	s := slot{on: on, ratedW: c.spec.RatedW, drawW: c.spec.RatedW, onW: c.spec.OnW, offW: c.spec.OffW, want: on,
		ctl: c.spec.Controllable, sg: sp == SetpointSGReady, plugged: true}
	// Switched on a short while ago: what it draws now (0 W before a
	// compressor starts) is not what it will draw; under a cap its rating
	// counts (dim). The surplus decision takes what it draws.
	s.starting = on && !c.g.last.IsZero() && now.Sub(c.g.last) < startSettle
	switch {
	case c.readOK && c.spec.Meter == "" && c.read.HasPower:
		s.drawW = c.read.PowerW
	case on:
		if w, ok := m.meterW(c); ok {
			s.drawW = w
		}
	}
	if sp == SetpointCurrent {
		ch := c.spec.Charger
		s.amps, s.minA, s.maxA, s.wPerA = true, ch.MinA, ch.MaxA, ch.wattsPerAmp()
		s.onW, s.offW = ch.MinA*s.wPerA, ch.MinA*s.wPerA
		if on {
			s.curA = c.want.CurrentA
		}
		s.delays, s.enableDelay, s.disableDelay, s.now = &c.delays, ch.EnableDelay, ch.DisableDelay, now
		s.plugged = c.readOK && c.read.Charger != nil && c.read.Charger.Plugged
		s.minPV = c.mode == plant.ModeMinPV
	}
	mayToggle, why := c.g.allows(on, now)
	s.mayOn, s.mayOff, s.whyNot = mayToggle, mayToggle, why
	switch {
	case !c.readOK:
		s.reason = plant.ReasonOffline
		if !c.started {
			s.reason = plant.ReasonStarting
		}
	case c.mode == plant.ModeOn || c.mode == plant.ModeOff:
		s.want, s.reason = c.mode == plant.ModeOn, plant.ReasonManual
		s.wantA = s.maxA
	case m.mustRunLocked(c, now):
		s.want, s.reason = true, plant.ReasonMustRun
		s.wantA = s.maxA
	default:
		// The day-ahead plan's step, where it has one for this slot, else
		// the surplus.
		s.auto = !m.planSlotLocked(c, &s, now)
	}
	if !s.auto && s.want != on && !mayToggle && c.readOK {
		s.want, s.reason = on, why
		s.wantA = s.curA
	}
	return s
}

// meterW is the power the consumer's meter shows.
func (m *Manager) meterW(c *cons) (float64, bool) {
	if c.spec.Meter == "" {
		return 0, false
	}
	w, _, ok := m.deps.Live.Value(c.spec.Meter, plant.ActivePower)
	return math.Max(0, w), ok
}

func onOf(out Output, sp Setpoint) bool {
	switch sp {
	case SetpointSGReady:
		return out.SGReady >= plant.SGRecommend
	case SetpointCurrent:
		return out.CurrentA > 0
	}
	return out.On
}

// applyLocked takes a slot's outcome: a switch is recorded by the guard,
// logged and written by the loop at once; a charger's new current is
// written at once, and logged only when it starts or stops.
func (m *Manager) applyLocked(c *cons, s *slot, now time.Time) {
	c.reason = s.reason
	if !c.readOK {
		return
	}
	want := m.outputLocked(c, s)
	if c.has && want == c.want {
		return
	}
	sp := c.spec.Setpoint
	wasOn := c.has && onOf(c.want, sp)
	m.loweringLocked(c, want, c.has)
	c.want, c.has = want, true
	select {
	case c.kick <- struct{}{}:
	default:
	}
	if onOf(want, sp) == wasOn && sp == SetpointCurrent {
		return // a charger's current follows the surplus: no switch, no log line
	}
	if onOf(want, sp) != wasOn {
		c.g.switched(now)
	}
	c.keepDue = true // the loop keeps the guard state, outside the lock and the control cycle
	m.logf(c, now, plant.LevelInfo, "ConsumerSwitched", "%s: %s (%s)", c.spec.ID, describe(want, sp), s.reason)
}

// outputLocked maps a decision onto the consumer's output. SG-Ready: Auto
// on surplus recommends (3), On and must-run force (4), off is normal
// operation (2): plantd never locks a heat pump (state 1 is the grid
// operator's, through its own channel). A charger: the decided current
// on its phases, 0 A when off.
func (m *Manager) outputLocked(c *cons, s *slot) Output {
	switch s.reason {
	case plant.ReasonMinOnTime, plant.ReasonMinOffTime, plant.ReasonMaxSwitches:
		if c.has {
			return c.want // a guard holds the output as it is
		}
	}
	switch c.spec.Setpoint {
	case SetpointCurrent:
		if !s.want {
			return Output{Phases: c.spec.Charger.Phases}
		}
		a := math.Min(math.Max(s.wantA, c.spec.Charger.MinA), c.spec.Charger.MaxA)
		return Output{On: true, CurrentA: a, Phases: c.spec.Charger.Phases}
	case SetpointSGReady:
	default:
		return Output{On: s.want}
	}
	switch {
	case s.reason == plant.ReasonDimmed:
		return Output{SGReady: plant.SGLocked} // the pump protects its compressor itself
	case s.reason == plant.ReasonPlan:
		return Output{On: s.sgState >= plant.SGRecommend, SGReady: s.sgState}
	case !s.want:
		return Output{SGReady: plant.SGNormal}
	case s.reason == plant.ReasonSurplus || s.auto:
		return Output{On: true, SGReady: plant.SGRecommend}
	default:
		return Output{On: true, SGReady: plant.SGForced}
	}
}

// mustRunLocked reports whether a must-run rule holds the consumer on now.
func (m *Manager) mustRunLocked(c *cons, now time.Time) bool {
	local := now.In(c.spec.Location)
	for i, r := range c.spec.MustRun {
		switch {
		case r.At != nil:
			// The first start after now-For that is not after now lies in
			// its window.
			if !r.At.Next(local.Add(-r.For)).After(local) {
				return true
			}
		case r.By != nil:
			if c.byEnd[i].IsZero() {
				continue
			}
			left := r.For - c.byRan[i]
			if left > 0 && !c.byEnd[i].Add(-left).After(now) {
				return true
			}
		}
	}
	return false
}

// nextMustRunLocked is the start of the next must-run window after now.
func (m *Manager) nextMustRunLocked(c *cons, now time.Time) (time.Time, bool) {
	local := now.In(c.spec.Location)
	var next time.Time
	for i, r := range c.spec.MustRun {
		var t time.Time
		switch {
		case r.At != nil:
			t = r.At.Next(local)
		case r.By != nil && !c.byEnd[i].IsZero():
			left := r.For - c.byRan[i]
			if left <= 0 {
				t = r.By.Next(c.byEnd[i]).Add(-r.For) // done: the next period's latest start
			} else {
				t = c.byEnd[i].Add(-left)
			}
		}
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next, !next.IsZero()
}

// SetMode sets a consumer's mode (by names who, for the log), keeps it
// and applies it at once, within the guard.
func (m *Manager) SetMode(ctx context.Context, deviceID string, mode plant.ConsumerMode, by string) (plant.ConsumerStatus, error) {
	mode, ok := plant.ParseConsumerMode(string(mode))
	if !ok {
		return plant.ConsumerStatus{}, fmt.Errorf("consumer mode %q: want Auto, On or Off (a charger: Off, Now, MinPV or PV)", mode)
	}
	m.mu.Lock()
	c := m.byID[deviceID]
	if c == nil {
		m.mu.Unlock()
		return plant.ConsumerStatus{}, fmt.Errorf("consumer %q: %w", deviceID, plant.ErrUnknownDevice)
	}
	if mode == plant.ModeMinPV && c.spec.Setpoint != SetpointCurrent {
		m.mu.Unlock()
		return plant.ConsumerStatus{}, fmt.Errorf("%s is no charger (Auto, On or Off): %w", deviceID, plant.ErrModeNotForConsumer)
	}
	prev, prevPlan := c.mode, c.plan
	c.mode = mode
	c.plan = nil // a Plan target ends with its mode
	m.mu.Unlock()
	if m.deps.Marks != nil {
		if err := m.deps.Marks.SetMark(ctx, modeKey(deviceID), int64(slices.Index(modes, mode))); err != nil {
			m.mu.Lock()
			c.mode, c.plan = prev, prevPlan
			m.mu.Unlock()
			return plant.ConsumerStatus{}, fmt.Errorf("consumer %s: keep mode: %w", deviceID, err)
		}
	}
	m.mu.Lock()
	now := m.now()
	if prev != mode {
		m.logf(c, now, plant.LevelInfo, "ConsumerModeSet", "%s: mode %s (was %s), set by %s", deviceID, mode, prev, by)
	}
	if c.spec.PlantID != "" && mode != plant.ModeAuto {
		if _, capped := m.capLocked(c.spec.PlantID, m.byPlant[c.spec.PlantID]); capped {
			// A grid operator's cap holds: the manual mode gets what the
			// cap leaves, decided with the plant's other consumers.
			m.decideNowLocked(c.spec.PlantID)
		} else {
			// A manual mode needs no surplus: decide this consumer now.
			s := m.slotLocked(c, now)
			m.applyLocked(c, &s, now)
		}
	}
	st := m.statusLocked(c, now)
	m.mu.Unlock()
	return st, nil
}

// Stats returns the poll counts of every consumer, in priority order.
func (m *Manager) Stats() []plant.PollStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]plant.PollStats, len(m.cons))
	for i, c := range m.cons {
		out[i] = c.stats
		out[i].ID, out[i].State = c.spec.ID, c.state
	}
	return out
}

// Dim starts (on) or ends the grid operator's dimming of a plant's
// controllable consumers (§14a EnWG): at once (decided again with the
// last control cycle's surplus) and in every cycle after,
// they draw together at most the plant's minimum power (DimmingMinW, or
// MinPower14a of their number; an SG-Ready pump in normal operation
// counted at its rated power), the last in priority order switched off
// first (an SG-Ready pump locked, state 1), whatever their mode, must-run
// rules and guards say: the grid operator's signal wins. Ending it lets
// the usual decision take them back.
func (m *Manager) Dim(plantID string, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dimmed[plantID] == on {
		return
	}
	m.dimmed[plantID] = on
	n := devices14a(m.byPlant[plantID])
	msg := fmt.Sprintf("§14a dimming ended: the controllable consumers of plant %s are free again", plantID)
	if on {
		devs := fmt.Sprintf("%d §14a devices", n)
		if n == 1 {
			devs = "one §14a device"
		}
		msg = fmt.Sprintf("§14a dimming: the controllable consumers of plant %s (%s) draw at most %.0f W together", plantID, devs, m.minPowerLocked(n))
	}
	m.log.Warn(msg, "plant", plantID)
	if m.deps.Log != nil {
		m.deps.Log(plant.LogEntry{Time: m.now().UTC(), PlantID: plantID, Level: plant.LevelWarning, Code: "ConsumersDimmed", Message: msg})
	}
	// Decide now rather than a cycle later: the switch is written at once.
	m.decideNowLocked(plantID)
}

// LimitConsumption starts (on) or ends a grid operator's consumption
// limit of limitW for a plant's controllable consumers (§14a EnWG over
// EEBus, use case LPC; package eebus): applied as Dim applies the
// contact's dimming, at once and in every cycle after, but at limitW,
// never below the plant's §14a minimum (DimmingMinW, or MinPower14a of
// their number). With the contact's dimming on too, the stricter (the
// minimum) governs.
func (m *Manager) LimitConsumption(plantID string, on bool, limitW float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, had := m.limited[plantID]
	if had == on && (!on || old == limitW) {
		return
	}
	n := devices14a(m.byPlant[plantID])
	msg := fmt.Sprintf("§14a consumption limit ended: the controllable consumers of plant %s are free again", plantID)
	if on {
		m.limited[plantID] = limitW
		msg = fmt.Sprintf("§14a consumption limit %.0f W: the controllable consumers of plant %s draw at most %.0f W together",
			limitW, plantID, max(limitW, m.minPowerLocked(n)))
	} else {
		delete(m.limited, plantID)
	}
	m.log.Warn(msg, "plant", plantID)
	if m.deps.Log != nil {
		m.deps.Log(plant.LogEntry{Time: m.now().UTC(), PlantID: plantID, Level: plant.LevelWarning, Code: "ConsumersLimited", Message: msg})
	}
	m.decideNowLocked(plantID)
}

// decideNowLocked decides a plant's consumers at once, outside the
// control cycle (a change of the grid operator's cap, a manual mode under
// it): with the last cycle's surplus; before the first cycle, Auto
// consumers are kept as they are (plantd keeps what a device does until
// it has decided) and only the cap is applied.
func (m *Manager) decideNowLocked(plantID string) {
	now := m.now()
	if s, ok := m.last[plantID]; ok {
		s.Time = now
		m.absorbLocked(plantID, s)
		return
	}
	list := m.byPlant[plantID]
	w, capped := m.capLocked(plantID, list)
	if !capped {
		return
	}
	slots := m.slots[:0]
	for _, c := range list {
		s := m.slotLocked(c, now)
		if s.auto {
			s.auto, s.want, s.wantA, s.reason = false, s.on, s.curA, c.reason
		}
		slots = append(slots, s)
	}
	dim(slots, w)
	for i, c := range list {
		m.applyLocked(c, &slots[i], now)
	}
	m.slots = slots[:0]
}

// capLocked is what a plant's controllable consumers may draw together
// now: the §14a minimum while dimmed, the control box's limit (not below
// that minimum) while limited; ok false when neither.
func (m *Manager) capLocked(plantID string, list []*cons) (float64, bool) {
	minW := m.minPowerLocked(devices14a(list))
	if m.dimmed[plantID] {
		return minW, true
	}
	if w, ok := m.limited[plantID]; ok {
		return max(w, minW), true
	}
	return 0, false
}

// minPowerLocked is the power n controllable consumers keep while dimmed.
func (m *Manager) minPowerLocked(n int) float64 {
	if m.deps.DimmingMinW > 0 {
		return m.deps.DimmingMinW
	}
	return MinPower14a(n)
}

// devices14a is the number of §14a devices among cs: the controllable
// consumers, a part of one (PartOf) counted with its whole.
func devices14a(cs []*cons) int {
	n := 0
	for _, c := range cs {
		if c.spec.Controllable && c.spec.PartOf == "" {
			n++
		}
	}
	return n
}

// MinPower14a is the power n controllable consumers behind one energy
// manager keep while the grid operator dims them, in W: the Bundesnetzagentur's
// determination BK6-22-300 (Anlage 1) on §14a EnWG, P_min = 4.2 kW +
// (n − 1) × GZF × 4.2 kW, with the simultaneity factor GZF 0.8 for two
// consumers, 0.75 for three, 0.7, 0.65, 0.6, 0.55 and 0.5 for four to
// eight, and 0.45 from nine on; 4.2 kW for one (and for none, as a
// floor). Never 0 W: a fixed 0 W makes §14a unusable. (A heat pump or air
// conditioner above 11 kW has its own minimum of 40 % of its rating,
// which this does not model; set gridControl.dimmingMinPowerW then.)
func MinPower14a(n int) float64 {
	const p = 4200
	if n <= 1 {
		return p
	}
	gzf := 0.45
	if n <= 8 {
		gzf = []float64{2: 0.8, 3: 0.75, 4: 0.7, 5: 0.65, 6: 0.6, 7: 0.55, 8: 0.5}[n]
	}
	return p + float64(n-1)*gzf*p
}

// Consumers returns the status of every consumer, in priority order.
func (m *Manager) Consumers() []plant.ConsumerStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	out := make([]plant.ConsumerStatus, 0, len(m.cons))
	for _, c := range m.cons {
		out = append(out, m.statusLocked(c, now))
	}
	return out
}

func (m *Manager) statusLocked(c *cons, now time.Time) plant.ConsumerStatus {
	s := c.spec
	st := plant.ConsumerStatus{DeviceID: s.ID, PlantID: s.PlantID, Name: s.Name, Driver: s.DriverName, Mode: c.mode,
		Priority: s.Priority, RatedPowerW: s.RatedW, Reason: c.reason, MaxSwitchesPerHour: s.MaxSwitchesPerHour,
		SwitchesLastHour: c.g.lastHour(now), MinOnTimeS: s.MinOn.Seconds(), MinOffTimeS: s.MinOff.Seconds()}
	if c.readOK {
		r := m.readingLocked(c, c.read, now)
		st.SwitchingState, st.SGReady, st.Estimated = r.Switch, r.SGReady, r.Estimated
		if r.HasPower {
			st.ConsumptionW = &r.PowerW
		}
	}
	if s.Setpoint == SetpointCurrent {
		ch := &plant.ChargerStatus{Phases: s.Charger.Phases, MinCurrentA: s.Charger.MinA, MaxCurrentA: s.Charger.MaxA}
		if c.readOK {
			ch.CurrentA = c.read.Output.CurrentA
			if cs := c.read.Charger; cs != nil {
				ch.Status = cs.Status
				if cs.HasSoC {
					soc := cs.SoC
					ch.VehicleSoC = &soc
				}
			}
		}
		st.Charger = ch
	}
	if c.energyOK && c.dayOK && c.day == now.In(s.Location).Format(time.DateOnly) {
		wh := math.Max(0, c.energyWh-c.dayWh)
		st.EnergyTodayWh = &wh
	}
	if t, ok := m.nextMustRunLocked(c, now); ok {
		st.NextMustRun = &t
	}
	if c.plan != nil {
		p := c.plan.target
		if left, ok := remainingLocked(c); ok {
			p.RemainingWh = &left
		}
		st.Plan = &p
	}
	if p := plannedLocked(c, now); p != nil {
		pl := &plant.Planned{SGReady: p.sg, Until: p.until}
		if s.Setpoint == SetpointCurrent {
			w := p.watts
			pl.PowerW, pl.SGReady = &w, 0
		}
		st.Planned = pl
	}
	return st
}

// keep keeps every consumer's guard state (or, without Guards, its
// estimated counter).
func (m *Manager) keep(ctx context.Context) {
	for _, c := range m.cons {
		m.keepOf(ctx, c)
	}
}

// keepOf keeps a consumer's guard state, with its estimated counter, in
// one row (after every switch, at a new day and at stop: a crash while
// on loses the on-time and estimate since the switch on, never more); a
// consumer not read since its restore keeps what was kept.
// Without Guards it keeps the estimated counter in the marks. It writes
// to the store: never under m.mu, which the control cycle takes.
func (m *Manager) keepOf(ctx context.Context, c *cons) {
	m.mu.Lock()
	c.keepDue = false
	if m.deps.Guards != nil {
		if c.kept != nil {
			// Never read since the restore: what is kept stays.
			m.mu.Unlock()
			return
		}
		now := m.now()
		k := kept{has: c.has, out: c.want, last: c.g.last, switches: c.g.history(now),
			byRan: c.byRan, byEnd: c.byEnd, dayOK: c.dayOK, day: c.day, dayWh: c.dayWh, estWh: c.estWh}
		state := k.encode()
		m.mu.Unlock()
		if err := m.deps.Guards.SetConsumerGuard(ctx, c.spec.ID, state); err != nil {
			m.log.Warn("consumer: keep guard state", "device", c.spec.ID, "err", err)
		}
		return
	}
	skip := m.deps.Marks == nil || c.spec.Meter != "" || c.read.HasPower || c.estWh == 0
	wh := int64(math.Round(c.estWh))
	m.mu.Unlock()
	if skip {
		return
	}
	if err := m.deps.Marks.SetMark(ctx, c.estKey, wh); err != nil {
		m.log.Warn("consumer: keep estimated energy", "device", c.spec.ID, "err", err)
	}
}

// restore takes a consumer's kept guard state (New, before anything
// runs): the guard's history, the "by" rules' on-time while their period
// lasts and the rules are the same, the day's start counter and the
// estimated counter. A damaged state is logged and ignored.
func (m *Manager) restore(ctx context.Context, c *cons) error {
	b, ok, err := m.deps.Guards.ConsumerGuard(ctx, c.spec.ID)
	if err != nil {
		return fmt.Errorf("consumer %s: kept guard state: %w", c.spec.ID, err)
	}
	if !ok {
		return nil
	}
	k := new(kept)
	if err := k.decode(b); err != nil {
		m.log.Warn("consumer: kept guard state ignored", "device", c.spec.ID, "err", err)
		return nil
	}
	now := m.now()
	c.g.restore(k.last, k.switches, now)
	if len(k.byRan) == len(c.spec.MustRun) {
		for i, r := range c.spec.MustRun {
			if r.By != nil && k.byEnd[i].After(now) && r.By.Next(now).Equal(k.byEnd[i]) {
				c.byRan[i], c.byEnd[i] = k.byRan[i], k.byEnd[i]
			}
		}
	}
	c.day, c.dayWh, c.dayOK = k.day, k.dayWh, k.dayOK
	c.estWh = k.estWh
	c.kept = k
	return nil
}

func (m *Manager) logf(c *cons, now time.Time, level string, code, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	m.log.Log(context.Background(), slogLevel(level), msg, "device", c.spec.ID, "code", code)
	if m.deps.Log != nil {
		m.deps.Log(plant.LogEntry{Time: now.UTC(), PlantID: c.spec.PlantID, DeviceID: c.spec.ID, Level: level, Code: code, Message: msg})
	}
}

func slogLevel(l string) slog.Level {
	switch l {
	case plant.LevelError:
		return slog.LevelError
	case plant.LevelWarning:
		return slog.LevelWarn
	}
	return slog.LevelInfo
}
