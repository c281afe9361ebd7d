package consumer

import (
	"context"
	"fmt"
	"math"
	"time"

	"plantd/plant"
)

// The day-ahead plan's side of the manager: a charger's Plan mode and
// its target (SetPlan), what the plan may schedule (Flexible), and the
// plan's step for the slot of now (SetPlanned), which the decision
// honours below the grid operator's cap and the installer's modes and
// must-run rules, above the surplus (DESIGN §6.2).

// maxPlanAhead bounds a Plan target's deadline: a week ahead.
const maxPlanAhead = 7 * 24 * time.Hour

// maxPlanWh bounds a Plan target's energy: 1 MWh.
const maxPlanWh = 1e6

// planState is a charger's Plan target and the energy counter at its set.
type planState struct {
	target plant.ChargePlan
	// startWh is the consumer's energy counter when the target was set
	// (NaN: not known yet; the first reading with energy sets it).
	startWh float64
}

// planned is the plan's step for a consumer: a car's power (W) or a heat
// pump's SG-Ready state, until until (plant clock).
type planned struct {
	watts float64
	sg    int
	until time.Time
}

// Planned is the plan's step for one consumer: a car's charging power
// (W; 0 = surplus only in this slot) or a heat pump's SG-Ready state
// (plant.SGLocked..SGForced; plant.SGNormal = its own controller, and surplus may
// still recommend), until Until on the plant's clock.
type Planned struct {
	PowerW  float64
	SGReady int
	Until   time.Time
}

// Plan mode's marks: the target's energy (Wh), SoC (‰), deadline (Unix
// s) and the energy counter at its set (Wh, −1 unknown).
func planKeys(id string) (wh, soc, by, start string) {
	p := "consumer.plan." + id + "."
	return p + "energyWh", p + "socPermille", p + "deadline", p + "startWh"
}

// SetPlan puts a charger in mode Plan with target p (by names who, for
// the log): EnergyWh (1..1000000) or SoCPct (1..100, with the car's
// capacity configured), by p.Deadline (after now, within a week). The
// target and the mode are kept in the marks. Errors wrap
// plant.ErrUnknownDevice, plant.ErrModeNotForConsumer (no charger) or
// plant.ErrBadPlan.
func (m *Manager) SetPlan(ctx context.Context, deviceID string, p plant.ChargePlan, by string) (plant.ConsumerStatus, error) {
	m.mu.Lock()
	c := m.byID[deviceID]
	if c == nil {
		m.mu.Unlock()
		return plant.ConsumerStatus{}, fmt.Errorf("consumer %q: %w", deviceID, plant.ErrUnknownDevice)
	}
	now := m.now()
	err := checkPlan(c, p, now)
	var start float64
	if c.energyOK {
		start = c.energyWh
	} else {
		start = math.NaN()
	}
	m.mu.Unlock()
	if err != nil {
		return plant.ConsumerStatus{}, err
	}
	p.RemainingWh = nil
	p.Deadline = p.Deadline.UTC().Truncate(time.Second)
	if m.deps.Marks != nil {
		kwh, ksoc, kby, kstart := planKeys(deviceID)
		s := int64(-1)
		if !math.IsNaN(start) {
			s = int64(math.Round(start))
		}
		for _, kv := range []struct {
			k string
			v int64
		}{{kwh, int64(math.Round(p.EnergyWh))}, {ksoc, int64(math.Round(p.SoCPct * 10))}, {kby, p.Deadline.Unix()}, {kstart, s},
			{modeKey(deviceID), int64(modeIndex(plant.ModePlan))}} {
			if err := m.deps.Marks.SetMark(ctx, kv.k, kv.v); err != nil {
				return plant.ConsumerStatus{}, fmt.Errorf("consumer %s: keep plan: %w", deviceID, err)
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	prev := c.mode
	c.mode, c.plan = plant.ModePlan, &planState{target: p, startWh: start}
	now = m.now()
	what := fmt.Sprintf("%.0f Wh", p.EnergyWh)
	if p.SoCPct > 0 {
		what = fmt.Sprintf("%.0f %%", p.SoCPct)
	}
	m.logf(c, now, plant.LevelInfo, "ConsumerModeSet", "%s: mode Plan, %s by %s (was %s), set by %s",
		deviceID, what, p.Deadline.Format(time.RFC3339), prev, by)
	return m.statusLocked(c, now), nil
}

// checkPlan validates a Plan target for c at now.
func checkPlan(c *cons, p plant.ChargePlan, now time.Time) error {
	switch {
	case c.spec.Setpoint != SetpointCurrent:
		return fmt.Errorf("%s is no charger: Plan is a charger's mode: %w", c.spec.ID, plant.ErrModeNotForConsumer)
	case math.IsNaN(p.EnergyWh) || math.IsNaN(p.SoCPct) || (p.EnergyWh > 0) == (p.SoCPct > 0) || p.EnergyWh < 0 || p.SoCPct < 0:
		return fmt.Errorf("give either an energy (Wh) or a SoC (%%) above 0: %w", plant.ErrBadPlan)
	case p.EnergyWh > maxPlanWh:
		return fmt.Errorf("energy %v Wh is out of range (1..%v): %w", p.EnergyWh, maxPlanWh, plant.ErrBadPlan)
	case p.SoCPct > 100:
		return fmt.Errorf("SoC %v %% is out of range (1..100): %w", p.SoCPct, plant.ErrBadPlan)
	case p.SoCPct > 0 && c.spec.Charger.VehicleCapacityWh <= 0:
		return fmt.Errorf("a SoC target needs the car's battery capacity (consumer vehicleCapacity): %w", plant.ErrBadPlan)
	case p.Deadline.IsZero() || !p.Deadline.After(now):
		return fmt.Errorf("deadline %s is not in the future: %w", p.Deadline.UTC().Format(time.RFC3339), plant.ErrBadPlan)
	case p.Deadline.Sub(now) > maxPlanAhead:
		return fmt.Errorf("deadline %s is more than %v ahead: %w", p.Deadline.UTC().Format(time.RFC3339), maxPlanAhead, plant.ErrBadPlan)
	}
	return nil
}

// restorePlan loads a kept Plan target (New); false when none is kept.
func (m *Manager) restorePlan(ctx context.Context, c *cons) (bool, error) {
	kwh, ksoc, kby, kstart := planKeys(c.spec.ID)
	var v [4]int64
	for i, k := range []string{kwh, ksoc, kby, kstart} {
		x, ok, err := m.deps.Marks.Mark(ctx, k)
		if err != nil {
			return false, fmt.Errorf("consumer %s: kept plan: %w", c.spec.ID, err)
		}
		if !ok {
			return false, nil
		}
		v[i] = x
	}
	ps := &planState{target: plant.ChargePlan{EnergyWh: float64(v[0]), SoCPct: float64(v[1]) / 10, Deadline: time.Unix(v[2], 0).UTC()},
		startWh: float64(v[3])}
	if v[3] < 0 {
		ps.startWh = math.NaN()
	}
	c.plan = ps
	return true, nil
}

// remainingLocked is what a charger in Plan mode still has to charge
// (Wh); ok false when unknown (a SoC target without the car's SoC).
func remainingLocked(c *cons) (float64, bool) {
	p := c.plan
	if p == nil {
		return 0, false
	}
	if p.target.SoCPct > 0 {
		ch := c.read.Charger
		if !c.readOK || ch == nil || !ch.HasSoC || c.spec.Charger.VehicleCapacityWh <= 0 {
			return 0, false
		}
		return math.Max(0, (p.target.SoCPct-ch.SoC)/100*c.spec.Charger.VehicleCapacityWh), true
	}
	done := 0.0
	if !math.IsNaN(p.startWh) && c.energyOK {
		done = math.Max(0, c.energyWh-p.startWh)
	}
	return math.Max(0, p.target.EnergyWh-done), true
}

// SetPlanned sets the plan's step for a consumer (the site plan's runner
// calls it each slot); a zero Until, or one past, clears it. A heat
// pump's step counts in mode Auto (SG-Ready 3 and 4 run it, 1 locks it
// only where its Spec.PlanLock allows, 2 leaves it to surplus); a
// charger's in mode Plan (its power in whole amperes between its bounds;
// 0 W: surplus charging). It is decided in the next control cycle.
func (m *Manager) SetPlanned(deviceID string, p Planned) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.byID[deviceID]
	if c == nil {
		return fmt.Errorf("consumer %q: %w", deviceID, plant.ErrUnknownDevice)
	}
	if p.Until.IsZero() {
		c.planned = nil
		return nil
	}
	if p.SGReady != 0 && (p.SGReady < plant.SGLocked || p.SGReady > plant.SGForced) || math.IsNaN(p.PowerW) || p.PowerW < 0 {
		return fmt.Errorf("consumer %s: planned %v W, SG-Ready %d: %w", deviceID, p.PowerW, p.SGReady, plant.ErrBadPlan)
	}
	c.planned = &planned{watts: p.PowerW, sg: p.SGReady, until: p.Until}
	return nil
}

// ClearPlanned ends the plan's steps of every consumer of a plant (the
// plan's fallback to surplus-only, its end).
func (m *Manager) ClearPlanned(plantID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.byPlant[plantID] {
		c.planned = nil
	}
}

// plannedLocked is c's plan step in force at now, nil when none.
func plannedLocked(c *cons, now time.Time) *planned {
	if p := c.planned; p != nil && now.Before(p.until) {
		return p
	}
	return nil
}

// planSlotLocked applies the plan's step to a slot that would be Auto:
// it reports whether the step decides it (the slot is then no longer
// Auto, its reason Plan; the guards still hold it, dim still caps it).
func (m *Manager) planSlotLocked(c *cons, s *slot, now time.Time) bool {
	p := plannedLocked(c, now)
	if p == nil {
		return false
	}
	switch c.spec.Setpoint {
	case SetpointSGReady:
		if c.mode != plant.ModeAuto {
			return false
		}
		switch p.sg {
		case plant.SGRecommend, plant.SGForced:
			s.want, s.sgState, s.reason = true, p.sg, plant.ReasonPlan
			return true
		case plant.SGLocked:
			if !c.spec.PlanLock {
				return false
			}
			s.want, s.sgState, s.reason = false, plant.SGLocked, plant.ReasonPlan
			return true
		}
	case SetpointCurrent:
		if c.mode != plant.ModePlan || p.watts <= 0 || !s.plugged {
			return false
		}
		a := math.Floor(p.watts/s.wPerA + 1e-6)
		s.want, s.wantA, s.reason = true, math.Min(math.Max(a, s.minA), s.maxA), plant.ReasonPlan
		return true
	}
	return false
}

// FlexHeatPump is an SG-Ready heat pump the plan may schedule.
type FlexHeatPump struct {
	ID string
	// RatedW is its configured power; NormalW, RecommendedW and ForcedW
	// its draw in states 2, 3 and 4 (the config's, else RatedW).
	RatedW, NormalW, RecommendedW, ForcedW float64
	// MayLock: the config lets the plan lock it (state 1).
	MayLock bool
	// MustRunWh is the energy its must-run rules ask within the horizon.
	MustRunWh float64
	// DrawW is what it draws now, for the base load, when measured
	// (DrawOK; a pump nothing measures: false).
	DrawW  float64
	DrawOK bool
}

// FlexCar is a charger in Plan mode with its target.
type FlexCar struct {
	ID         string
	MinW, MaxW float64
	// RemainingWh is what the target still needs, by Deadline.
	RemainingWh float64
	Deadline    time.Time
	Connected   bool
	DrawW       float64
	DrawOK      bool
}

// Flexible is what the plan may schedule of a plant's consumers over
// [from, to): the first SG-Ready heat pump in priority order that is in
// mode Auto and online, and the first charger in mode Plan whose target
// is known and not reached before its deadline; nil where none.
func (m *Manager) Flexible(plantID string, from, to time.Time) (*FlexHeatPump, *FlexCar) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var hp *FlexHeatPump
	var car *FlexCar
	for _, c := range m.byPlant[plantID] {
		if !c.readOK {
			continue
		}
		r := m.readingLocked(c, c.read, m.now())
		switch {
		case hp == nil && c.spec.Setpoint == SetpointSGReady && c.mode == plant.ModeAuto:
			sg := c.spec.SGReadyW
			hp = &FlexHeatPump{ID: c.spec.ID, RatedW: c.spec.RatedW, NormalW: orRated(sg[0], c), RecommendedW: orRated(sg[1], c),
				ForcedW: orRated(sg[2], c), MayLock: c.spec.PlanLock, MustRunWh: c.spec.RatedW * m.mustRunWithinLocked(c, from, to).Hours(),
				DrawW: r.PowerW, DrawOK: r.HasPower}
			if r.Estimated {
				// Nothing measures it: what it draws is unknown (in state 2
				// its own controller runs it or not). It stays in the base
				// load, which then counts it beside the plan's heat pump:
				// an estimate subtracted could take the base load to 0
				// (a 1.6 kW rating against a house drawing 1 kW) and the
				// plan would see no demand to store energy for.
				hp.DrawW, hp.DrawOK = 0, false
			}
		case car == nil && c.spec.Setpoint == SetpointCurrent && c.mode == plant.ModePlan && c.plan != nil && c.plan.target.Deadline.After(from):
			left, ok := remainingLocked(c)
			if !ok || left <= 0 {
				continue
			}
			w := c.spec.Charger.wattsPerAmp()
			car = &FlexCar{ID: c.spec.ID, MinW: c.spec.Charger.MinA * w, MaxW: c.spec.Charger.MaxA * w, RemainingWh: left,
				Deadline: c.plan.target.Deadline, Connected: c.read.Charger != nil && c.read.Charger.Plugged, DrawW: r.PowerW, DrawOK: r.HasPower}
		}
	}
	return hp, car
}

func orRated(w float64, c *cons) float64 {
	if w > 0 {
		return w
	}
	return c.spec.RatedW
}

// mustRunWithinLocked is the on-time c's must-run rules ask within
// [from, to): each "at" window's overlap, each "by" period that ends in
// it with its For (the period under way less what ran already).
func (m *Manager) mustRunWithinLocked(c *cons, from, to time.Time) time.Duration {
	const most = 400 // occurrences a rule counts at most (a rule every few minutes)
	var sum time.Duration
	lf, lt := from.In(c.spec.Location), to.In(c.spec.Location)
	for i, r := range c.spec.MustRun {
		switch {
		case r.At != nil:
			for t, n := r.At.Next(lf.Add(-r.For)), 0; t.Before(lt) && n < most && !t.IsZero(); t, n = r.At.Next(t), n+1 {
				s, e := t, t.Add(r.For)
				if s.Before(lf) {
					s = lf
				}
				if e.After(lt) {
					e = lt
				}
				sum += max(0, e.Sub(s))
			}
		case r.By != nil:
			for e, n := r.By.Next(lf), 0; !e.After(lt) && n < most && !e.IsZero(); e, n = r.By.Next(e), n+1 {
				need := r.For
				if n == 0 && c.byEnd[i].Equal(e) {
					need -= c.byRan[i]
				}
				sum += max(0, need)
			}
		}
	}
	return sum
}

// modeIndex is mode's index in the marks.
func modeIndex(mode plant.ConsumerMode) int {
	for i, x := range modes {
		if x == mode {
			return i
		}
	}
	return -1
}
