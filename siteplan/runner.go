package siteplan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"plantd/config"
	"plantd/consumer"
	"plantd/gridcontrol"
	"plantd/plan"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/tariffs"
)

// Prices is what the runner reads of the tariffs (tariffs.Service).
type Prices interface {
	Slots(from, to time.Time) []tariffs.Slot
	Status() tariffs.Status
}

// PVForecast gives the plant's forecast PV power, W, for n slots of
// plan.DefaultSlot from from; ok false when there is none.
type PVForecast func(from time.Time, n int) (w []float64, ok bool)

// LoadForecast gives the house's base-load forecast from its history, W,
// for n slots of plan.DefaultSlot from from, any time (the profile is by
// quarter-hour of the local day); ok false when there is none
// (forecast.Service.Load).
type LoadForecast func(from time.Time, n int) (w []float64, ok bool)

// BaseLoadSource says where the plan's base load came from.
type BaseLoadSource string

// The sources of the base load.
const (
	// BaseLoadHistory: the forecast from the plant's history, its first
	// two hours blended toward the live load.
	BaseLoadHistory BaseLoadSource = "history"
	// BaseLoadLive: the live load, smoothed, flat over the horizon (no
	// forecast: too little history, or none wired).
	BaseLoadLive BaseLoadSource = "live"
	// BaseLoadNone: neither yet (at start, before the first poll): 0.
	BaseLoadNone BaseLoadSource = "none"
)

// Gate is grid control as the runner uses it (gridcontrol.Controller).
type Gate interface {
	SetBatteryPower(ctx context.Context, by gridcontrol.Origin, plantID string, watts float64, until time.Time) (gridcontrol.Schedule, error)
	SetBatteryNoDischarge(ctx context.Context, by gridcontrol.Origin, plantID string, until time.Time) (gridcontrol.Schedule, error)
	ReleaseBatteryPower(ctx context.Context, by gridcontrol.Origin, plantID string) error
	Submit(ctx context.Context, plantID string, by gridcontrol.Origin, orders []gridcontrol.Order, opts ...gridcontrol.SubmitOption) (gridcontrol.Schedule, error)
	Cancel(ctx context.Context, plantID, scheduleID string, by gridcontrol.Origin) error
	Schedules(plantID string, opts ...gridcontrol.ListOption) ([]gridcontrol.Schedule, error)
}

// Live is the plant's live state (plant.Live).
type Live interface {
	EnergyBalance(plantID string) (plant.Balance, error)
	Devices(plantID string) ([]plant.DeviceLive, error)
}

// Consumers is the energy manager as the runner uses it
// (consumer.Manager): what the plan may schedule, and the plan's step for
// each consumer it planned.
type Consumers interface {
	Flexible(plantID string, from, to time.Time) (*consumer.FlexHeatPump, *consumer.FlexCar)
	SetPlanned(deviceID string, p consumer.Planned) error
	ClearPlanned(plantID string)
}

// Spec is one plant's runner.
type Spec struct {
	PlantID string
	// Horizon is how far the plan looks (default 36 h), Period how often
	// it is made again (default 15 minutes).
	Horizon, Period time.Duration
	// FeedInFloor: feed-in prices below it (EUR/kWh) hold export at 0 W.
	FeedInFloor float64
	// MinSoCPct is the battery's reserve the plan never goes below
	// (default 10 %); GridCharge allows charging from the grid.
	MinSoCPct  float64
	GridCharge bool
	// Now is the plant's clock (the demo's simulated one); nil: time.Now.
	Now func() time.Time
}

// Deps are the runner's links to the daemon.
type Deps struct {
	Prices Prices
	PV     PVForecast // nil: no forecast (PV 0)
	// Load is the base-load forecast (nil: none; the smoothed live load
	// stands flat over the horizon).
	Load LoadForecast
	Gate Gate
	Live Live
	// Consumers is the energy manager (nil: the plan schedules no heat
	// pump and no car).
	Consumers Consumers
	// Log records the plan's log lines in the plant log.
	Log func(plant.LogEntry)
}

// Runner makes and follows one plant's plan.
type Runner struct {
	spec Spec
	deps Deps
	log  *slog.Logger

	mu       sync.Mutex
	last     *plan.Plan
	lastIn   plan.Input
	lastSrc  BaseLoadSource
	lastErr  string
	fallback bool
	loadW    float64 // smoothed total consumption
	loadOK   bool
	loadAt   time.Time // the plan's clock at the last sample folded in
	battery  float64   // the setpoint in force from us (W, <0 charge), NaN: released
	fetched  time.Time
	// hpID and carID are the heat pump and the car of the last input;
	// following the consumers the last plan gave a step; car the charger
	// in Plan mode the last sample saw.
	hpID, carID string
	// plannedLoad: the last plan had a load sample (before the first one
	// its base load is 0 and the plan is made again once it comes).
	plannedLoad bool
	following   []string
	car         *consumer.FlexCar
}

// batteryOrigin is the plan's origin of battery setpoints; windowOrigin
// that of the negative-price windows (installer's role, so that a grid
// operator's stricter window still governs and an API token of the
// standard role cannot end them).
var (
	batteryOrigin = gridcontrol.PlanOrigin("day-ahead")
	windowOrigin  = gridcontrol.Origin{Door: gridcontrol.DoorPlan, Name: "negative-price", Role: config.RoleInstaller, Channel: string(gridcontrol.DoorPlan)}
)

// New makes a runner; Run runs it.
func New(spec Spec, deps Deps, logger *slog.Logger) (*Runner, error) {
	if deps.Prices == nil || deps.Gate == nil || deps.Live == nil {
		return nil, errors.New("siteplan: prices, gate and live state are required")
	}
	if spec.Horizon <= 0 {
		spec.Horizon = 36 * time.Hour
	}
	if spec.Period <= 0 {
		spec.Period = plan.DefaultSlot
	}
	if spec.MinSoCPct <= 0 {
		spec.MinSoCPct = 10
	}
	if spec.Now == nil {
		spec.Now = time.Now
	}
	if deps.Log == nil {
		deps.Log = func(plant.LogEntry) {}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{spec: spec, deps: deps, log: logger, battery: math.NaN()}, nil
}

// lookEvery is how often Run looks for new prices and samples the load,
// in the plan's clock's time; minLook is the shortest wall-clock wait
// between looks (a demo's clock at --speed 288 runs 288 times the wall
// clock's rate).
const (
	lookEvery = 10 * time.Second
	minLook   = 100 * time.Millisecond
)

// Run makes and follows the plan until ctx ends: at each slot's start,
// when the tariffs fetched new prices (looked at every lookEvery of the
// plan's clock), and once at the start. At its end the battery setpoint
// is released; the windows stay (they are stored schedules with their own
// ends).
func (r *Runner) Run(ctx context.Context) error {
	timer := time.NewTimer(lookEvery)
	defer timer.Stop()
	next := time.Time{}
	wallThen, then := time.Now(), r.spec.Now()
	for {
		now := r.spec.Now()
		fetched := r.deps.Prices.Status().LastFetch
		if !now.Before(next) || !fetched.Equal(r.fetched) || r.learned() {
			r.fetched = fetched
			r.Step(ctx, now)
			next = now.Truncate(r.spec.Period).Add(r.spec.Period)
		}
		wall := time.Now()
		timer.Reset(lookWait(wall.Sub(wallThen), now.Sub(then)))
		wallThen, then = wall, now
		select {
		case <-ctx.Done():
			r.release(context.WithoutCancel(ctx))
			r.clearPlanned()
			return nil
		case <-timer.C:
		}
	}
}

// lookWait is the wall-clock wait before the next look, given that the
// plan's clock advanced planElapsed while the wall clock advanced
// wallElapsed: lookEvery of the plan's clock at its rate (so that a
// slot's setpoint, which ends a minute after the slot, is renewed in
// time on a demo's fast clock too), between minLook and lookEvery.
func lookWait(wallElapsed, planElapsed time.Duration) time.Duration {
	if wallElapsed <= 0 || planElapsed <= wallElapsed {
		return lookEvery
	}
	return max(minLook, time.Duration(float64(lookEvery)*float64(wallElapsed)/float64(planElapsed)))
}

// learned reports whether the live state now knows what the last plan
// lacked (the battery, the load: at start, before the first polls), so
// that the plan is made again without waiting for the next slot. It
// samples the load.
func (r *Runner) learned() bool {
	car := r.sample()
	r.mu.Lock()
	in, loadOK, was := r.lastIn, r.loadOK, r.car
	r.car = car
	r.mu.Unlock()
	if len(in.Slots) == 0 {
		return false
	}
	return (in.Battery == nil && r.battery0() != nil) || (!r.plannedLoad && loadOK) || carChanged(was, car)
}

// carChanged reports whether a charger's Plan changed (set, ended, a new
// target or deadline, the car plugged in or out): the plan is made again.
func carChanged(was, now *consumer.FlexCar) bool {
	switch {
	case was == nil || now == nil:
		return (was == nil) != (now == nil)
	case was.ID != now.ID || !was.Deadline.Equal(now.Deadline) || was.Connected != now.Connected:
		return true
	}
	return now.RemainingWh > was.RemainingWh+1 // a new, larger target (charging only lowers it)
}

// sample folds the live consumption, less what the consumers the plan
// schedules draw now, into the smoothed base load: an exponential mean
// with a time constant of an hour of the plan's clock. It returns the
// charger in Plan mode it saw (nil: none).
func (r *Runner) sample() *consumer.FlexCar {
	now := r.spec.Now()
	var car *consumer.FlexCar
	var flexW float64
	if r.deps.Consumers != nil {
		var hp *consumer.FlexHeatPump
		hp, car = r.deps.Consumers.Flexible(r.spec.PlantID, now, now)
		if hp != nil && hp.DrawOK {
			flexW += hp.DrawW
		}
		if car != nil && car.DrawOK {
			flexW += car.DrawW
		}
	}
	b, err := r.deps.Live.EnergyBalance(r.spec.PlantID)
	if err != nil || b.TotalConsumptionW == nil {
		return car
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w := math.Max(0, *b.TotalConsumptionW-flexW)
	if !r.loadOK {
		r.loadW, r.loadOK, r.loadAt = w, true, now
		return car
	}
	if dt := now.Sub(r.loadAt); dt > 0 {
		r.loadW += (w - r.loadW) * min(1, float64(dt)/float64(time.Hour))
		r.loadAt = now
	}
	return car
}

// Step makes the plan at now and acts on its first slot. Run calls it;
// tests call it with the plant's clock.
func (r *Runner) Step(ctx context.Context, now time.Time) {
	r.sample()
	start := now.Truncate(plan.DefaultSlot)
	n := int(r.spec.Horizon / plan.DefaultSlot)
	prices := r.deps.Prices.Slots(start, start.Add(r.spec.Horizon))
	st := r.deps.Prices.Status()
	in, src, why := r.input(start, n, prices, st.Stale)
	if why != "" {
		r.fallBack(ctx, now, why)
		return
	}
	p, err := plan.Compute(&in)
	if err != nil {
		r.fallBack(ctx, now, err.Error())
		return
	}
	r.mu.Lock()
	wasFallback := r.fallback
	r.last, r.lastIn, r.lastSrc, r.lastErr, r.fallback = p, in, src, "", false
	r.plannedLoad = r.loadOK
	r.mu.Unlock()
	if wasFallback {
		r.entry(now, plant.LevelInfo, "PlanResumed", "the day-ahead plan governs again: prices for the next hours are known")
	}
	r.followBattery(ctx, now, p, in.Battery != nil)
	r.followConsumers(&in, p)
	r.followPrices(ctx, now, prices)
}

// input builds the planner's input and says where its base load came
// from; why says what is missing for one.
func (r *Runner) input(start time.Time, n int, prices []tariffs.Slot, stale bool) (plan.Input, BaseLoadSource, string) {
	in := plan.Input{Start: start, Slot: plan.DefaultSlot, Slots: make([]plan.Slot, 0, n)}
	if stale {
		return in, "", "the prices are stale (the provider failed)"
	}
	var pv []float64
	if r.deps.PV != nil {
		pv, _ = r.deps.PV(start, n)
	}
	load, src := r.baseLoad(start, n)
	j := 0
	for i := range n {
		t := start.Add(time.Duration(i) * plan.DefaultSlot)
		for j < len(prices) && !prices[j].End.After(t) {
			j++
		}
		if j == len(prices) || prices[j].Start.After(t) {
			break // the plan ends where the known prices end
		}
		s := plan.Slot{ImportEURPerKWh: prices[j].Import, FeedInEURPerKWh: prices[j].FeedIn, BaseLoadW: load[i]}
		if i < len(pv) {
			s.PVW = pv[i]
		}
		in.Slots = append(in.Slots, s)
	}
	if len(in.Slots) < int(time.Hour/plan.DefaultSlot) {
		return in, src, "no prices for the next hour"
	}
	in.FeedInFloorEURPerKWh = r.spec.FeedInFloor
	in.Battery = r.battery0()
	r.flexible(&in)
	return in, src, ""
}

// Blending the base-load forecast toward the live load: the live load's
// departure from the forecast now is added to the forecast's slots,
// weighted 1 at now and falling linearly to 0 at blendHorizon ahead. The
// live load is smoothed (an hour's time constant), so it is compared
// with the forecast smoothed alike over the refSlots slots up to now
// (an evening's rise is in both, not taken for a departure).
const (
	blendHorizon = 2 * time.Hour
	refSlots     = 8
)

// baseLoad is the base load of n slots from start: the forecast from the
// plant's history blended toward the live load in its first hours, else
// the smoothed live load flat over the horizon.
func (r *Runner) baseLoad(start time.Time, n int) ([]float64, BaseLoadSource) {
	r.mu.Lock()
	live, liveOK := r.loadW, r.loadOK
	r.mu.Unlock()
	out := make([]float64, n)
	if r.deps.Load != nil {
		// The forecast from refSlots-1 slots before start: the reference.
		w, ok := r.deps.Load(start.Add(-(refSlots-1)*plan.DefaultSlot), n+refSlots-1)
		if ok && len(w) == n+refSlots-1 {
			var ref, sum float64
			for k := range refSlots {
				wt := math.Exp(-float64(k) * plan.DefaultSlot.Hours())
				ref += wt * w[refSlots-1-k]
				sum += wt
			}
			departure := 0.0
			if liveOK {
				departure = live - ref/sum
			}
			for i := range out {
				weight := max(0, 1-float64(time.Duration(i)*plan.DefaultSlot)/float64(blendHorizon))
				out[i] = max(0, w[refSlots-1+i]+weight*departure)
			}
			return out, BaseLoadHistory
		}
	}
	if !liveOK {
		return out, BaseLoadNone
	}
	for i := range out {
		out[i] = live
	}
	return out, BaseLoadLive
}

// heatAheadHours is the heating ahead a day the plan may give a heat pump
// without a known buffer: two hours of its normal draw (a 300 l tank
// warmed by 10 K holds 3.5 kWh of heat, 1.2 kWh of electricity at a COP
// of 3: about 1.5 h of an 800 W pump).
const heatAheadHours = 2

// flexible adds the heat pump and the car the energy manager lets the
// plan schedule (consumer.Manager.Flexible): the first SG-Ready pump in
// mode Auto (its draw per state, its must-run rules' energy within the
// horizon as RequiredWh, the utilities' lock rules where its config lets
// the plan lock it) and the first charger in mode Plan (its target's
// remaining energy by its deadline, between its minimum and maximum
// current × phases × voltage).
func (r *Runner) flexible(in *plan.Input) {
	if r.deps.Consumers == nil {
		return
	}
	end := in.Start.Add(time.Duration(len(in.Slots)) * plan.DefaultSlot)
	hp, car := r.deps.Consumers.Flexible(r.spec.PlantID, in.Start, end)
	if hp != nil {
		in.HeatPump = &plan.HeatPump{NormalW: hp.NormalW, RecommendedW: hp.RecommendedW, ForcedW: hp.ForcedW,
			RequiredWh: hp.MustRunWh, BufferWh: heatAheadHours * hp.NormalW}
		if hp.MayLock {
			l := plan.UtilityLockRules()
			in.HeatPump.Lock = &l
		}
	}
	if car != nil {
		in.Car = &plan.Car{Connected: car.Connected, TargetWh: car.RemainingWh, Deadline: car.Deadline, MinW: car.MinW, MaxW: car.MaxW}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.car, r.hpID, r.carID = car, "", ""
	if hp != nil {
		r.hpID = hp.ID
	}
	if car != nil {
		r.carID = car.ID
	}
}

// followConsumers hands the first slot's heat pump state and car power
// to the energy manager, until the slot's end and a minute (the next
// slot's step takes over without a gap); a consumer the plan no longer
// schedules loses its step.
func (r *Runner) followConsumers(in *plan.Input, p *plan.Plan) {
	c := r.deps.Consumers
	if c == nil || len(p.Steps) == 0 {
		return
	}
	s := p.Steps[0]
	until := s.Start.Add(p.Slot + time.Minute)
	r.mu.Lock()
	hpID, carID := r.hpID, r.carID
	r.mu.Unlock()
	var set []string
	if in.HeatPump != nil && hpID != "" {
		if err := c.SetPlanned(hpID, consumer.Planned{SGReady: s.SGReady, Until: until}); err != nil {
			r.log.Warn("plan: heat pump step", "device", hpID, "err", err)
		}
		set = append(set, hpID)
	}
	if in.Car != nil && carID != "" {
		if err := c.SetPlanned(carID, consumer.Planned{PowerW: s.CarW, Until: until}); err != nil {
			r.log.Warn("plan: car step", "device", carID, "err", err)
		}
		set = append(set, carID)
	}
	r.mu.Lock()
	gone := slices.DeleteFunc(slices.Clone(r.following), func(id string) bool { return slices.Contains(set, id) })
	r.following = set
	r.mu.Unlock()
	for _, id := range gone {
		_ = c.SetPlanned(id, consumer.Planned{}) // clears it
	}
}

// clearPlanned ends every step the plan gave (fallback, stop).
func (r *Runner) clearPlanned() {
	if r.deps.Consumers == nil {
		return
	}
	r.deps.Consumers.ClearPlanned(r.spec.PlantID)
	r.mu.Lock()
	r.following = nil
	r.mu.Unlock()
}

// battery0 is the plant's batteries as one: capacity and power summed,
// the balance's SoC; nil without a battery with a rated capacity.
func (r *Runner) battery0() *plan.Battery {
	devs, err := r.deps.Live.Devices(r.spec.PlantID)
	if err != nil {
		return nil
	}
	var capWh, powerW float64
	for _, d := range devs {
		if d.Info.Kind != kind.Battery || !d.Info.Active() || d.Nameplate == nil || d.Nameplate.RatedEnergyWh <= 0 {
			continue
		}
		capWh += d.Nameplate.RatedEnergyWh
		powerW += d.Nameplate.RatedPowerW
	}
	b, err := r.deps.Live.EnergyBalance(r.spec.PlantID)
	if capWh <= 0 || powerW <= 0 || err != nil || b.BatteryStateOfChargePct == nil {
		return nil
	}
	soc := *b.BatteryStateOfChargePct
	return &plan.Battery{CapacityWh: capWh, SoCPct: soc, MinSoCPct: r.spec.MinSoCPct, MaxChargeW: powerW, MaxDischargeW: powerW,
		GridCharge: r.spec.GridCharge}
}

// followBattery puts the first slot's battery action through the gate: a
// charge from the grid or a hold is a setpoint until the slot's end (and
// a minute, so that the next slot's takes over without a gap): a hold
// (plan.BatteryHold) keeps the batteries from discharging, PV surplus
// still charging them; keeping room (plan.BatteryKeepRoom) holds them at
// 0 W both ways. Anything else releases it, as does a plan made without
// the battery (before the live state knew it: its steps say hold).
func (r *Runner) followBattery(ctx context.Context, now time.Time, p *plan.Plan, planned bool) {
	if len(p.Steps) == 0 {
		return
	}
	if !planned {
		r.release(ctx)
		return
	}
	s := p.Steps[0]
	until := s.Start.Add(p.Slot + time.Minute)
	var err error
	watts := math.NaN()
	switch s.Battery {
	case plan.BatteryChargeGrid:
		watts = -math.Round(s.BatteryW)
		_, err = r.deps.Gate.SetBatteryPower(ctx, batteryOrigin, r.spec.PlantID, watts, until)
	case plan.BatteryKeepRoom:
		watts = 0
		_, err = r.deps.Gate.SetBatteryPower(ctx, batteryOrigin, r.spec.PlantID, watts, until)
	case plan.BatteryHold:
		watts = 0
		_, err = r.deps.Gate.SetBatteryNoDischarge(ctx, batteryOrigin, r.spec.PlantID, until)
	default:
		r.release(ctx)
		return
	}
	if err != nil {
		r.log.Warn("plan: battery setpoint refused", "plant", r.spec.PlantID, "action", s.Battery, "watts", watts, "err", err)
		return
	}
	r.mu.Lock()
	r.battery = watts
	r.mu.Unlock()
}

// release ends the plan's battery setpoint, if it set one.
func (r *Runner) release(ctx context.Context) {
	r.mu.Lock()
	had := !math.IsNaN(r.battery)
	r.battery = math.NaN()
	r.mu.Unlock()
	if !had {
		return
	}
	if err := r.deps.Gate.ReleaseBatteryPower(ctx, batteryOrigin, r.spec.PlantID); err != nil {
		r.log.Warn("plan: release the battery setpoint", "plant", r.spec.PlantID, "err", err)
	}
}

// window is a run of slots whose feed-in price is below the floor.
type window struct {
	start, end time.Time
	price      float64 // the lowest feed-in price in it
}

// negativeRuns are the runs of slots with a feed-in price below floor,
// from now on (a run under way starts now).
func negativeRuns(prices []tariffs.Slot, floor float64, now time.Time) []window {
	var out []window
	for _, s := range prices {
		if s.FeedIn >= floor || !s.End.After(now) {
			continue
		}
		start := s.Start
		if start.Before(now) {
			start = now
		}
		if k := len(out) - 1; k >= 0 && !out[k].end.Before(s.Start) {
			out[k].end = s.End
			out[k].price = min(out[k].price, s.FeedIn)
			continue
		}
		out = append(out, window{start: start, end: s.End, price: s.FeedIn})
	}
	return out
}

// followPrices keeps one installer's FeedInLimit 0 W window per run of
// slots below the floor: windows that no run wants any more (the prices
// changed) are cancelled, missing ones submitted.
func (r *Runner) followPrices(ctx context.Context, now time.Time, prices []tariffs.Slot) {
	want := negativeRuns(prices, r.spec.FeedInFloor, now)
	have := r.windows()
	for _, sc := range have {
		cm := sc.Commands[0]
		keep := slices.ContainsFunc(want, func(w window) bool { return !cm.End.Before(w.end) && !cm.End.After(w.end) && !cm.Start.After(w.start) })
		if !keep {
			if err := r.deps.Gate.Cancel(ctx, r.spec.PlantID, sc.ScheduleID, windowOrigin); err != nil {
				r.log.Warn("plan: cancel a negative-price window", "schedule", sc.ScheduleID, "err", err)
			}
		}
	}
	zero := 0.0
	for _, w := range want {
		covered := slices.ContainsFunc(have, func(sc gridcontrol.Schedule) bool {
			cm := sc.Commands[0]
			return cm.End.Equal(w.end.UTC().Truncate(time.Millisecond)) && !cm.Start.After(w.start)
		})
		if covered {
			continue
		}
		sc, err := r.deps.Gate.Submit(ctx, r.spec.PlantID, windowOrigin,
			[]gridcontrol.Order{{Command: "FeedInLimit", Start: w.start, End: w.end, Value: &zero, Unit: "W"}},
			gridcontrol.SkipEligibilityCheck(true))
		if err != nil {
			r.log.Warn("plan: negative-price window refused", "plant", r.spec.PlantID, "err", err)
			continue
		}
		r.entry(now, plant.LevelInfo, "PriceNegative", fmt.Sprintf(
			"feed-in price %.3f EUR/kWh below %.3f from %s to %s: export held at 0 W (schedule %s); PV goes to the battery and the consumers",
			w.price, r.spec.FeedInFloor, w.start.UTC().Format(time.RFC3339), w.end.UTC().Format(time.RFC3339), sc.ScheduleID))
	}
}

// windows are the negative-price windows of this plant not yet over.
func (r *Runner) windows() []gridcontrol.Schedule {
	scheds, err := r.deps.Gate.Schedules(r.spec.PlantID)
	if err != nil {
		return nil
	}
	var out []gridcontrol.Schedule
	for _, sc := range scheds {
		if sc.CreatedBy != windowOrigin.String() || len(sc.Commands) != 1 {
			continue
		}
		switch sc.Commands[0].Status {
		case gridcontrol.StatusActive, gridcontrol.StatusPending, gridcontrol.StatusOverridden:
			out = append(out, sc)
		}
	}
	return out
}

// fallBack is surplus-only control: the battery setpoint released, the
// windows cancelled, logged once per episode.
func (r *Runner) fallBack(ctx context.Context, now time.Time, why string) {
	r.mu.Lock()
	first := !r.fallback
	r.fallback, r.lastErr, r.last = true, why, nil
	r.mu.Unlock()
	r.release(ctx)
	r.clearPlanned()
	for _, sc := range r.windows() {
		if err := r.deps.Gate.Cancel(ctx, r.spec.PlantID, sc.ScheduleID, windowOrigin); err != nil {
			r.log.Warn("plan: cancel a negative-price window", "schedule", sc.ScheduleID, "err", err)
		}
	}
	if first {
		r.entry(now, plant.LevelWarning, "PlanFallback", "no day-ahead plan: "+why+"; control is surplus-only")
	}
}

func (r *Runner) entry(now time.Time, level, code, msg string) {
	r.log.Info("plan: "+msg, "plant", r.spec.PlantID, "code", code)
	r.deps.Log(plant.LogEntry{Time: now.UTC(), PlantID: r.spec.PlantID, Level: level, Code: code, Message: msg})
}

// Snapshot is the plan in force for the API.
type Snapshot struct {
	PlantID string
	// Plan is nil while control is surplus-only (Fallback says why).
	Plan  *plan.Plan
	Input plan.Input
	// BaseLoadSource says where the input's base load came from.
	BaseLoadSource BaseLoadSource
	Fallback       string
	// HeatPumpID and CarID are the consumers the plan schedules as its
	// heat pump and car ("": none).
	HeatPumpID, CarID string
}

// Snapshot returns the plan in force.
func (r *Runner) Snapshot() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	sn := Snapshot{PlantID: r.spec.PlantID, Plan: r.last, Input: r.lastIn, BaseLoadSource: r.lastSrc, Fallback: r.lastErr}
	if r.last != nil {
		sn.HeatPumpID, sn.CarID = r.hpID, r.carID
	}
	return sn
}
