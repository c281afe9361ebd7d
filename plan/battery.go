package plan

import "math"

// The battery's dynamic programme: v holds the least cost from each slot
// and state to the horizon's end; states are stored energies on a grid of
// stepWh anchored at the start's energy, moves are hold, self-consumption
// (cover the shortfall, take the surplus: exact, v read linearly between
// states) or whole steps up (charging, from the grid where allowed) or
// down. The trajectory is then walked forward from the start's energy,
// each slot's move chosen again by the same rule, off the grid where
// self-consumption leaves it.

// overImportEURPerKWh prices import above the grid operator's limit, so
// that the programme always has an answer and avoids it wherever any
// move or schedule can.
const overImportEURPerKWh = 10

// tieEUR is the margin a choice must beat another by to win, so that
// rounding noise does not decide between equal costs: ties keep the
// candidate tried first (see best; the earlier slot first).
const tieEUR = 1e-9

type batteryModel struct {
	on            bool
	capWh         float64
	stepWh        float64
	states        int // state count
	start         int // the start's state
	eStartWh      float64
	minWh, maxWh  float64 // the reserve and the top
	loWh, hiWh    float64 // the lowest and the highest state's energy
	minI, maxI    int     // the lowest and the highest state within them
	maxChargeW    float64
	maxDischargeW float64
	kc, kd        int // most whole steps up, down in one slot
	etaC, etaD    float64
	gridCharge    bool
	toGrid        bool
	// order lists the steps k from hold outwards (0, 1, −1, 2, −2, …).
	order []int
}

// newBatteryModel discretises b for slots of dtH hours; a nil b is a
// battery of one state that never moves.
func newBatteryModel(b *Battery, stepPct, dtH float64) batteryModel {
	if b == nil || b.MaxChargeW == 0 && b.MaxDischargeW == 0 {
		m := batteryModel{states: 1, order: []int{0}}
		if b != nil {
			m.on, m.capWh, m.eStartWh = true, b.CapacityWh, b.SoCPct/100*b.CapacityWh
		}
		return m
	}
	if stepPct == 0 {
		stepPct = 0.5
	}
	m := batteryModel{on: true, capWh: b.CapacityWh, stepWh: stepPct / 100 * b.CapacityWh,
		maxChargeW: b.MaxChargeW, maxDischargeW: b.MaxDischargeW,
		etaC: or(b.ChargeEfficiency, 0.95), etaD: or(b.DischargeEfficiency, 0.95),
		gridCharge: b.GridCharge, toGrid: b.DischargeToGrid}
	m.eStartWh = b.SoCPct / 100 * b.CapacityWh
	m.minWh, m.maxWh = b.MinSoCPct/100*b.CapacityWh, or(b.MaxSoCPct, 100)/100*b.CapacityWh
	down := steps(math.Max(0, m.eStartWh-m.minWh), m.stepWh) // states below the start
	up := steps(math.Max(0, m.maxWh-m.eStartWh), m.stepWh)   // states above it
	m.start, m.states = down, down+up+1
	m.loWh, m.hiWh = m.energyWh(0), m.energyWh(m.states-1)
	m.minI, m.maxI = m.states, -1
	for i := range m.states {
		if e := m.energyWh(i); e >= m.minWh-1e-6 && e <= m.maxWh+1e-6 {
			m.minI, m.maxI = min(m.minI, i), i
		}
	}
	// A move beyond the states is no move: a battery that can fill in one
	// slot has as many moves as states.
	m.kc = min(steps(b.MaxChargeW*dtH*m.etaC, m.stepWh), m.states-1)
	m.kd = min(steps(b.MaxDischargeW*dtH/m.etaD, m.stepWh), m.states-1)
	m.order = append(m.order, 0)
	for k := 1; k <= max(m.kc, m.kd); k++ {
		if k <= m.kc {
			m.order = append(m.order, k)
		}
		if k <= m.kd {
			m.order = append(m.order, -k)
		}
	}
	return m
}

func or(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// steps is how many whole steps fit in e (rounding noise aside).
func steps(e, step float64) int { return int(math.Floor(e/step + 1e-9)) }

// energyWh is state i's stored energy.
func (m *batteryModel) energyWh(i int) float64 {
	return m.eStartWh + float64(i-m.start)*m.stepWh
}

// socPct is the state of charge of eWh.
func (m *batteryModel) socPct(eWh float64) float64 {
	if m.capWh == 0 {
		return 0
	}
	return eWh / m.capWh * 100
}

// acW is the AC power of k steps in a slot of dtH hours: > 0 charging.
func (m *batteryModel) acW(k int, dtH float64) float64 {
	switch {
	case k > 0:
		return float64(k) * m.stepWh / m.etaC / dtH
	case k < 0:
		return float64(k) * m.stepWh * m.etaD / dtH
	}
	return 0
}

// allowed says whether a slot may move the battery from e to f (Wh):
// within the states, never down below the reserve or up above the top
// (a start outside them may only move towards them).
func (m *batteryModel) allowed(e, f float64) bool {
	const eps = 1e-6
	return f >= m.loWh-eps && f <= m.hiWh+eps &&
		(f >= m.minWh-eps || f >= e) && (f <= m.maxWh+eps || f <= e)
}

// gridCost is slot t's grid cost (EUR) for a net draw of netW (> 0 import).
func (p *planner) gridCost(t int, netW float64) float64 {
	s := &p.in.Slots[t]
	if netW >= 0 {
		c := netW * p.kWhPerW * s.ImportEURPerKWh
		if s.HasMaxImport && netW > s.MaxImportW {
			c += (netW - s.MaxImportW) * p.kWhPerW * overImportEURPerKWh
		}
		return c
	}
	return -p.exportW(t, -netW) * p.kWhPerW * s.FeedInEURPerKWh
}

// exportW is what of a surplus of surplusW slot t exports: nothing below
// the feed-in floor, at most the grid operator's limit; the rest is held
// back.
func (p *planner) exportW(t int, surplusW float64) float64 {
	s := &p.in.Slots[t]
	if s.FeedInEURPerKWh < p.in.FeedInFloorEURPerKWh {
		return 0
	}
	if s.HasMaxExport {
		return math.Min(surplusW, s.MaxExportW)
	}
	return surplusW
}

// stage is slot t's grid cost with the house drawing loadW and the battery
// moving k steps; ok false when the battery may not do that (grid charging
// or discharging into the grid not allowed).
func (p *planner) stage(t int, loadW float64, k int) (float64, bool) {
	m := &p.bat
	ac := m.acW(k, p.dtH)
	pv := p.in.Slots[t].PVW
	const eps = 1e-6
	if k > 0 && !m.gridCharge && ac > math.Max(0, pv-loadW)+eps {
		return 0, false
	}
	if k < 0 && !m.toGrid && -ac > math.Max(0, loadW-pv)+eps {
		return 0, false
	}
	return p.gridCost(t, loadW+ac-pv), true
}

// selfConsumption is the battery's self-consumption move in slot t from
// energy eWh: covering the house's shortfall (discharging) or taking the
// PV surplus (charging), as far as its power and the reserve or the top
// allow; the stored change and the AC power.
func (p *planner) selfConsumption(t int, loadW, eWh float64) (dWh, acW float64) {
	m := &p.bat
	pv := p.in.Slots[t].PVW
	switch {
	case loadW > pv && m.maxDischargeW > 0:
		acW = -math.Min(loadW-pv, m.maxDischargeW)
		dWh = acW * p.dtH / m.etaD
		if eWh+dWh < m.minWh {
			dWh = math.Min(0, m.minWh-eWh)
			acW = dWh * m.etaD / p.dtH
		}
	case pv > loadW && m.maxChargeW > 0:
		acW = math.Min(pv-loadW, m.maxChargeW)
		dWh = acW * p.dtH * m.etaC
		if eWh+dWh > m.maxWh {
			dWh = math.Max(0, m.maxWh-eWh)
			acW = dWh / m.etaC / p.dtH
		}
	}
	return dWh, acW
}

// valueAt is v of slot t at energy eWh, linear between states.
func (p *planner) valueAt(t int, eWh float64) float64 {
	m := &p.bat
	S := m.states
	row := p.v[t*S : (t+1)*S]
	if S == 1 {
		return row[0]
	}
	x := (eWh - m.loWh) / m.stepWh
	i := int(math.Floor(x))
	switch {
	case i < 0:
		return row[0]
	case i >= S-1:
		return row[S-1]
	}
	f := x - float64(i)
	return row[i] + f*(row[i+1]-row[i])
}

// move is one choice of the battery in a slot.
type move struct {
	dWh, acW, costEUR float64
}

// best is the battery's cheapest move in slot t from energy eWh with the
// house drawing loadW (the slot's grid cost plus v after it): the
// self-consumption move, hold, or whole steps up or down, in that order on
// ties.
// onGrid says eWh is state i's energy, so whole steps land on states and
// the stage costs of the steps (stageBuf, per k+kd) apply.
func (p *planner) best(t int, loadW, eWh float64, i int, onGrid bool) move {
	m := &p.bat
	S := m.states
	b := move{costEUR: p.gridCost(t, loadW-p.in.Slots[t].PVW) + p.valueAt(t+1, eWh)}
	if S == 1 {
		return b
	}
	// Self-consumption wins a tie with hold: what the site loop does by
	// itself, and PV that would be held back is stored now rather than
	// in a later hour the forecast may not keep.
	if d, ac := p.selfConsumption(t, loadW, eWh); d != 0 {
		c := p.gridCost(t, loadW+ac-p.in.Slots[t].PVW) + p.valueAt(t+1, eWh+d)
		if c <= b.costEUR+tieEUR {
			b = move{dWh: d, acW: ac, costEUR: c}
		}
	}
	if onGrid {
		next := p.v[(t+1)*S : (t+2)*S]
		bk := 0
		for _, k := range m.order[1:] {
			j := i + k
			if j < 0 || j >= S || k < 0 && j < m.minI || k > 0 && j > m.maxI {
				continue
			}
			if c := p.stageBuf[k+m.kd] + next[j]; c < b.costEUR-tieEUR {
				b.costEUR, bk = c, k
			}
		}
		if bk != 0 {
			b = move{dWh: float64(bk) * m.stepWh, acW: m.acW(bk, p.dtH), costEUR: b.costEUR}
		}
		return b
	}
	for _, k := range m.order[1:] {
		d := float64(k) * m.stepWh
		e := eWh + d
		if !m.allowed(eWh, e) {
			continue
		}
		sc, ok := p.stage(t, loadW, k)
		if !ok {
			continue
		}
		if c := sc + p.valueAt(t+1, e); c < b.costEUR-tieEUR {
			b = move{dWh: d, acW: m.acW(k, p.dtH), costEUR: c}
		}
	}
	return b
}

// solve runs the programme for the loads loadW (W per slot, everything
// but the battery): v for every slot and state, then the trajectory from
// the start, each slot's move chosen again from the energy the moves
// before left (trajWh, moveW).
func (p *planner) solve(loadW []float64) {
	m := &p.bat
	n, S := len(p.in.Slots), m.states
	for i := range S {
		p.v[n*S+i] = -p.endValueEURPerWh * (m.energyWh(i) - m.eStartWh)
	}
	for t := n - 1; t >= 0; t-- {
		for _, k := range m.order {
			c, ok := p.stage(t, loadW[t], k)
			if !ok {
				c = math.Inf(1)
			}
			p.stageBuf[k+m.kd] = c
		}
		for i := range S {
			p.v[t*S+i] = p.best(t, loadW[t], m.energyWh(i), i, true).costEUR
		}
	}
	p.trajWh[0] = m.eStartWh
	for t := range n {
		mv := p.best(t, loadW[t], p.trajWh[t], 0, false)
		p.moveW[t] = mv.acW
		p.trajWh[t+1] = p.trajWh[t] + mv.dWh
	}
}

// marginal is slot t's cost from the plan's energy there to the end when
// the house draws loadW in slot t: the battery's move in t is chosen
// again, the rest of the horizon is valued by v. Flexible loads are placed
// by its differences.
func (p *planner) marginal(t int, loadW float64) float64 {
	return p.best(t, loadW, p.trajWh[t], 0, false).costEUR
}
