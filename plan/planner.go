package plan

import (
	"math"
	"slices"
	"time"

	"plantd/plant"
)

// planner holds one computation's state; Compute makes one per call.
type planner struct {
	in      *Input
	dt      time.Duration
	dtH     float64 // slot length in hours
	kWhPerW float64 // kWh of a W over one slot
	bat     batteryModel
	// endValueEURPerWh values energy left in the battery at the end.
	endValueEURPerWh float64

	v        []float64 // (n+1) × states: least cost to the end
	trajWh   []float64 // n+1: the stored energy from the start
	moveW    []float64 // n: the battery's AC power (> 0 charging)
	stageBuf []float64 // per step k+kd: one slot's stage costs

	carW  []float64 // the car's charging per slot
	hp    heatPumpSchedule
	loadW []float64 // base load + heat pump + car: what the battery sees
}

// Compute plans the horizon of in: the battery's moves by dynamic
// programming over its state of charge, the car and the heat pump placed
// greedily by the marginal cost the battery's programme gives each slot,
// then the battery planned again around them. It is pure and
// deterministic: the same input gives the same plan.
func Compute(in *Input) (*Plan, error) {
	dt, err := in.validate()
	if err != nil {
		return nil, err
	}
	n := len(in.Slots)
	p := &planner{in: in, dt: dt, dtH: dt.Hours(), kWhPerW: dt.Hours() / 1000}
	p.bat = newBatteryModel(in.Battery, in.SoCStepPct, p.dtH)
	if p.bat.states > 1 {
		lowest := math.Inf(1)
		for _, s := range in.Slots {
			lowest = math.Min(lowest, s.ImportEURPerKWh)
		}
		p.endValueEURPerWh = math.Max(0, lowest) * p.bat.etaD / 1000
	}
	S := p.bat.states
	p.v = make([]float64, (n+1)*S)
	p.trajWh = make([]float64, n+1)
	p.moveW = make([]float64, n)
	p.stageBuf = make([]float64, p.bat.kc+p.bat.kd+1)
	p.carW = make([]float64, n)
	p.loadW = make([]float64, n)
	p.hp = newHeatPumpSchedule(in, dt)

	// First pass: the battery alone, the heat pump in normal operation.
	p.sumLoads()
	p.solve(p.loadW)
	// The flexible loads by the marginal costs of that pass.
	carShort := p.placeCar()
	p.placeHeatPump()
	// Second pass: the battery around them.
	p.sumLoads()
	p.solve(p.loadW)

	pl := p.steps()
	pl.CarShortWh = carShort
	pl.CarTargetMet = in.Car != nil && in.Car.Connected && carShort == 0
	pl.HeatPumpShortWh = p.hp.shortWh()
	pl.BaselineCostEUR = p.baseline()
	pl.SavingEUR = pl.BaselineCostEUR - pl.CostEUR
	return pl, nil
}

// sumLoads sets loadW: everything the battery sees but PV.
func (p *planner) sumLoads() {
	for t, s := range p.in.Slots {
		p.loadW[t] = s.BaseLoadW + p.hp.drawW(t) + p.carW[t]
	}
}

// steps turns the final trajectory into the plan's steps and cost.
func (p *planner) steps() *Plan {
	n := len(p.in.Slots)
	pl := &Plan{Start: p.in.Start, Slot: p.dt, Steps: make([]Step, n),
		EndValueEURPerKWh: p.endValueEURPerWh * 1000}
	median := medianImport(p.in.Slots)
	total := 0.0
	for t, s := range p.in.Slots {
		ac := p.moveW[t]
		load := p.loadW[t]
		net := load + ac - s.PVW
		st := Step{Start: p.in.Start.Add(time.Duration(t) * p.dt), BatteryW: ac, SGReady: p.hp.state(t),
			HeatPumpW: p.hp.drawW(t), CarW: p.carW[t], CostEUR: p.gridCost(t, net)}
		if p.bat.on {
			st.SoCPct = p.bat.socPct(p.trajWh[t+1])
		}
		if net > 0 {
			st.ImportW = net
			if s.HasMaxImport && net > s.MaxImportW {
				st.OverImportW = net - s.MaxImportW
			}
		} else if net < 0 {
			st.ExportW = p.exportW(t, -net)
			st.CurtailedW = -net - st.ExportW
		}
		switch {
		case ac > 0:
			st.BatteryFromGridW = math.Min(ac, st.ImportW)
			st.Battery = BatteryChargePV
			if st.BatteryFromGridW > 1e-6 {
				st.Battery = BatteryChargeGrid
			}
		case ac < 0:
			st.Battery = BatteryDischarge
		case p.keepsRoom(t):
			st.Battery = BatteryKeepRoom
		default:
			st.Battery = BatteryHold
		}
		st.Reason = p.reason(t, &st, median)
		total += st.CostEUR
		pl.Steps[t] = st
	}
	pl.CostEUR = total - p.endValueEURPerWh*(p.trajWh[n]-p.bat.eStartWh)
	return pl
}

// keepsRoom says whether slot t's hold keeps room in the battery: the
// slot's forecast has PV surplus (PV above everything but the battery)
// that the battery, not full and able to charge, could have taken, and
// the plan chose not to (self-consumption wins a tie with hold, so that
// was a choice). Any other hold only keeps the battery from discharging.
func (p *planner) keepsRoom(t int) bool {
	m := &p.bat
	return m.on && m.maxChargeW > 0 && p.in.Slots[t].PVW > p.loadW[t] && p.trajWh[t] < m.maxWh-1e-6
}

// reason says in a few words why slot t's step is what it is.
func (p *planner) reason(t int, st *Step, median float64) string {
	s := &p.in.Slots[t]
	switch {
	case st.OverImportW > 0:
		return ReasonImportLimit
	case s.FeedInEURPerKWh < p.in.FeedInFloorEURPerKWh && s.PVW > s.BaseLoadW:
		return ReasonNegativeFeedIn
	case st.Battery == BatteryChargeGrid:
		return ReasonGridCharge
	case st.SGReady == plant.SGLocked:
		return ReasonHeatPumpLock
	case st.CarW > 0:
		return ReasonCar
	case st.Battery == BatteryDischarge && s.ImportEURPerKWh > median:
		return ReasonPeak
	case st.SGReady == plant.SGRecommend || st.SGReady == plant.SGForced:
		return ReasonHeatPumpBoost
	case st.Battery == BatteryChargePV:
		return ReasonStorePV
	case st.Battery == BatteryKeepRoom:
		return ReasonKeepRoom
	case st.ExportW > 0:
		return ReasonExport
	}
	return ReasonSelfConsume
}

func medianImport(slots []Slot) float64 {
	prices := make([]float64, len(slots))
	for i, s := range slots {
		prices[i] = s.ImportEURPerKWh
	}
	slices.Sort(prices)
	return prices[len(prices)/2]
}

// baseline is the cost without a plan: the heat pump in normal operation,
// the car charging at its maximum from the start until its target is in
// or its deadline has come (evcc's "Now", what an owner does without a
// plan; the same energy as the plan's, a target it cannot meet
// included), the battery charging
// from PV surplus and discharging to cover load (self-consumption, never
// from or into the grid), surplus exported at any price up to the grid
// operator's limit. Its end energy is valued as the plan's.
func (p *planner) baseline() float64 {
	in := p.in
	var e, eMin, eMax, etaC, etaD, maxC, maxD float64
	if b := in.Battery; b != nil {
		e = b.SoCPct / 100 * b.CapacityWh
		eMin, eMax = b.MinSoCPct/100*b.CapacityWh, or(b.MaxSoCPct, 100)/100*b.CapacityWh
		etaC, etaD = or(b.ChargeEfficiency, 0.95), or(b.DischargeEfficiency, 0.95)
		maxC, maxD = b.MaxChargeW, b.MaxDischargeW
	}
	e0 := e
	carLeft, carLast := 0.0, 0
	if c := in.Car; c != nil && c.Connected {
		carLeft, carLast = c.TargetWh, p.carSlots()
	}
	cost := 0.0
	for t, s := range in.Slots {
		load := s.BaseLoadW + p.hp.normalDrawW
		if carLeft > 0 && t < carLast {
			w := math.Max(in.Car.MinW, math.Min(in.Car.MaxW, carLeft/p.dtH))
			load += w
			carLeft -= w * p.dtH
		}
		net := load - s.PVW
		if net < 0 && e < eMax && maxC > 0 {
			ch := math.Min(math.Min(-net, maxC), (eMax-e)/etaC/p.dtH)
			e += ch * etaC * p.dtH
			net += ch
		} else if net > 0 && e > eMin && maxD > 0 {
			dis := math.Min(math.Min(net, maxD), (e-eMin)*etaD/p.dtH)
			e -= dis / etaD * p.dtH
			net -= dis
		}
		if net >= 0 {
			cost += p.gridCost(t, net)
			continue
		}
		exp := -net
		if s.HasMaxExport {
			exp = math.Min(exp, s.MaxExportW)
		}
		cost -= exp * p.kWhPerW * s.FeedInEURPerKWh
	}
	return cost - p.endValueEURPerWh*(e-e0)
}
