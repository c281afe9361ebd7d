package plan

import "math"

// The battery's dynamic programme: states are stored energies on a grid
// of stepWh anchored at the start's energy (so the start is exact and the
// reserve is rounded inwards, never crossed), actions are whole steps up
// (charging) or down (discharging) per slot, and v holds the least cost
// from each slot and state to the horizon's end.

// overImportEURPerKWh prices import above the grid operator's limit, so
// that the programme always has an answer and avoids it wherever any
// action or schedule can.
const overImportEURPerKWh = 10

// tieEUR is the margin a choice must beat another by to win, so that
// rounding noise does not decide between equal costs: ties keep the
// earlier candidate (hold before moving, the earlier slot first).
const tieEUR = 1e-9

type batteryModel struct {
	on         bool
	capWh      float64
	stepWh     float64
	states     int // state count
	start      int // state at slot 0
	eStartWh   float64
	minI, maxI int // states the plan may move into (the reserve and the top)
	kc, kd     int // most steps up, down in one slot
	etaC, etaD float64
	gridCharge bool
	toGrid     bool
	// order lists the actions k from hold outwards (0, 1, −1, 2, −2, …).
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
		etaC: or(b.ChargeEfficiency, 0.95), etaD: or(b.DischargeEfficiency, 0.95),
		gridCharge: b.GridCharge, toGrid: b.DischargeToGrid}
	maxPct := or(b.MaxSoCPct, 100)
	m.eStartWh = b.SoCPct / 100 * b.CapacityWh
	minWh, maxWh := b.MinSoCPct/100*b.CapacityWh, maxPct/100*b.CapacityWh
	down := steps(math.Max(0, m.eStartWh-minWh), m.stepWh) // states below the start
	up := steps(math.Max(0, maxWh-m.eStartWh), m.stepWh)   // states above it
	m.start, m.states = down, down+up+1
	m.minI, m.maxI = 0, m.states-1
	if m.eStartWh < minWh { // below the reserve: it may only rise into it
		m.minI = steps(minWh-m.eStartWh+m.stepWh*(1-1e-9), m.stepWh)
		m.minI = min(m.minI, m.maxI)
	}
	if m.eStartWh > maxWh {
		m.maxI = m.start
	}
	m.kc = steps(b.MaxChargeW*dtH*m.etaC, m.stepWh)
	m.kd = steps(b.MaxDischargeW*dtH/m.etaD, m.stepWh)
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

// socPct is state i's state of charge.
func (m *batteryModel) socPct(i int) float64 {
	if m.capWh == 0 {
		return 0
	}
	return m.energyWh(i) / m.capWh * 100
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

// allowed says whether a slot may move the battery from state i to j:
// within the states, never down below the reserve or up above the top
// (a start outside them may only move towards them).
func (m *batteryModel) allowed(i, j int) bool {
	return j >= 0 && j < m.states && (j >= m.minI || j >= i) && (j <= m.maxI || j <= i)
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

// solve runs the programme for the loads loadW (W per slot, everything
// but the battery): v and act for every slot and state, then the
// trajectory from the start.
func (p *planner) solve(loadW []float64) {
	m := &p.bat
	n, S := len(p.in.Slots), m.states
	for i := range S {
		p.v[n*S+i] = -p.endValueEURPerWh * (m.energyWh(i) - m.eStartWh)
	}
	cost := p.stageBuf
	for t := n - 1; t >= 0; t-- {
		for _, k := range m.order {
			c, ok := p.stage(t, loadW[t], k)
			if !ok {
				c = math.Inf(1)
			}
			cost[k+m.kd] = c
		}
		next := p.v[(t+1)*S : (t+2)*S]
		for i := range S {
			best, bk := math.Inf(1), 0
			for _, k := range m.order {
				j := i + k
				if !m.allowed(i, j) {
					continue
				}
				if c := cost[k+m.kd] + next[j]; c < best-tieEUR {
					best, bk = c, k
				}
			}
			p.v[t*S+i], p.act[t*S+i] = best, int16(bk)
		}
	}
	p.traj[0] = m.start
	for t := range n {
		p.traj[t+1] = p.traj[t] + int(p.act[t*S+p.traj[t]])
	}
}

// marginal is slot t's cost from the plan's state there to the end when
// the house draws loadW in slot t: the battery's move in t is chosen
// again, the rest of the horizon is valued by v. Flexible loads are placed
// by its differences.
func (p *planner) marginal(t int, loadW float64) float64 {
	m := &p.bat
	S := m.states
	i := p.traj[t]
	next := p.v[(t+1)*S : (t+2)*S]
	best := math.Inf(1)
	for _, k := range m.order {
		j := i + k
		if !m.allowed(i, j) {
			continue
		}
		c, ok := p.stage(t, loadW, k)
		if !ok {
			continue
		}
		if c += next[j]; c < best-tieEUR {
			best = c
		}
	}
	return best
}
