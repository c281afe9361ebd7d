package plan

import (
	"math"
	"time"
)

// The flexible loads: the car's charging and the heat pump's SG-Ready
// states, placed against planner.marginal (the cost to the horizon's end
// of a load in one slot, the battery's move there chosen again).

// The SG-Ready states as consumer's SGLocked..SGForced and
// plant.ConsumerReading.SGReady number them (plan imports neither
// consumer nor its driver table).
const (
	sgLocked      = 1
	sgNormal      = 2
	sgRecommended = 3
	sgForced      = 4
)

// carLevels is how many steps between the car's minimum and maximum
// power a slot climbs (an import limit may leave room for less than the
// maximum, PV surplus for less than the minimum's price).
const carLevels = 8

// placeCar charges the car's target in the cheapest increments before its
// deadline: each slot's power climbs from 0 to the minimum, then in
// carLevels steps (and the step that fills the import limit) to the
// maximum, and each round takes the increment with the least marginal
// cost a Wh over all slots (ties: the earlier slot), the last one cut to
// what the target still needs (no less than the minimum). Then, up to
// MaxWh, increments that earn money. It returns the part of the target
// the horizon cannot give.
func (p *planner) placeCar() float64 {
	c := p.in.Car
	if c == nil || !c.Connected {
		return 0
	}
	n := len(p.in.Slots)
	last := n
	if !c.Deadline.IsZero() {
		last = min(n, max(0, int(c.Deadline.Sub(p.in.Start)/p.dt)))
	}
	// next is each slot's next power level and its cost a Wh (+Inf: at
	// the maximum); here the slot's marginal cost at its power now.
	next := make([]float64, 3*last)
	lvl, perWh, here := next[:last], next[last:2*last], next[2*last:]
	levelAbove := func(t int, w float64) float64 {
		if w < c.MinW {
			return c.MinW
		}
		step := (c.MaxW - c.MinW) / carLevels
		up := c.MinW + (math.Floor((w-c.MinW)/step+1e-9)+1)*step
		if s := &p.in.Slots[t]; s.HasMaxImport {
			if fit := s.MaxImportW - p.loadW[t] + s.PVW; fit > w+1e-6 && fit < up {
				up = fit
			}
		}
		return math.Min(up, c.MaxW)
	}
	price := func(t int) {
		w := p.carW[t]
		if w >= c.MaxW-1e-9 {
			perWh[t] = math.Inf(1)
			return
		}
		lvl[t] = levelAbove(t, w)
		perWh[t] = (p.marginal(t, p.loadW[t]+lvl[t]) - here[t]) / ((lvl[t] - w) * p.dtH)
	}
	for t := range last {
		here[t] = p.marginal(t, p.loadW[t])
		price(t)
	}
	left := c.TargetWh
	room := math.Max(c.MaxWh, c.TargetWh) - c.TargetWh
	for left > 1e-6 || room > 1e-6 {
		bt := -1
		for t := range last {
			if perWh[t] < math.Inf(1) && (bt < 0 || perWh[t] < perWh[bt]-1e-12) {
				bt = t
			}
		}
		if bt < 0 || left <= 1e-6 && perWh[bt] >= 0 {
			break
		}
		w := lvl[bt]
		need := &left
		if left <= 1e-6 {
			need = &room
		}
		if e := (w - p.carW[bt]) * p.dtH; e > *need {
			w = math.Max(c.MinW, p.carW[bt]+*need/p.dtH)
		}
		*need -= (w - p.carW[bt]) * p.dtH
		if *need < 0 && need == &left { // the minimum overshoots the target
			room = math.Max(0, room+left)
			left = 0
		}
		p.carW[bt] = w
		here[bt] = p.marginal(bt, p.loadW[bt]+w)
		price(bt)
	}
	return math.Max(0, left)
}

// heatPumpSchedule is the heat pump's state per slot and the energy its
// state-2 slots share.
type heatPumpSchedule struct {
	h      *HeatPump
	dtH    float64
	states []int8
	remWh  float64 // what the slots in state 2 must give together
	n2     int     // slots in state 2
	// normalDrawW is every slot's draw when all are in state 2 (the
	// baseline's heat pump).
	normalDrawW float64
	// day is each slot's day (0 for the start's); aheadWh each day's
	// energy taken in states 3 and 4 above normalDrawW.
	day     []int
	aheadWh []float64
	// The lock rules in slots, and per-day scratch for their check.
	lockSlots, locksPerDay, lockedPerDaySlt int
	count, total                            []int
}

func newHeatPumpSchedule(in *Input, dt time.Duration) heatPumpSchedule {
	h := in.HeatPump
	if h == nil {
		return heatPumpSchedule{}
	}
	n := len(in.Slots)
	s := heatPumpSchedule{h: h, dtH: dt.Hours(), states: make([]int8, n), n2: n, remWh: h.RequiredWh}
	if s.remWh == 0 {
		s.remWh = h.NormalW * float64(n) * s.dtH
	}
	s.normalDrawW = s.remWh / (float64(n) * s.dtH)
	for t := range s.states {
		s.states[t] = sgNormal
	}
	s.day = make([]int, n)
	loc := in.Start.Location()
	y, m, d := in.Start.Date()
	for t := 1; t < n; t++ {
		s.day[t] = s.day[t-1]
		if ty, tm, td := in.Start.Add(time.Duration(t) * dt).In(loc).Date(); ty != y || tm != m || td != d {
			y, m, d = ty, tm, td
			s.day[t]++
		}
	}
	days := s.day[n-1] + 1
	s.aheadWh = make([]float64, days)
	if l := h.Lock; l != nil {
		s.lockSlots = int(l.MaxLock / dt)
		s.locksPerDay = l.MaxLocksPerDay
		s.lockedPerDaySlt = int(l.MaxLockedPerDay / dt)
		s.count = make([]int, days)
		s.total = make([]int, days)
	}
	return s
}

// state is slot t's SG-Ready state (0 without a heat pump).
func (s *heatPumpSchedule) state(t int) int {
	if s.h == nil {
		return 0
	}
	return int(s.states[t])
}

// powerW is the draw of a state other than normal.
func (s *heatPumpSchedule) powerW(state int8) float64 {
	switch state {
	case sgRecommended:
		return s.h.RecommendedW
	case sgForced:
		return s.h.ForcedW
	}
	return 0
}

// aheadW is what a state other than normal takes above normalDrawW.
func (s *heatPumpSchedule) aheadW(state int8) float64 {
	if state == sgRecommended || state == sgForced {
		return s.powerW(state) - s.normalDrawW
	}
	return 0
}

// normalW is what each slot in state 2 draws.
func (s *heatPumpSchedule) normalW() float64 {
	if s.n2 == 0 {
		return 0
	}
	return s.remWh / (float64(s.n2) * s.dtH)
}

// drawW is slot t's expected draw.
func (s *heatPumpSchedule) drawW(t int) float64 {
	if s.h == nil {
		return 0
	}
	if s.states[t] == sgNormal {
		return s.normalW()
	}
	return s.powerW(s.states[t])
}

// shortWh is the required energy the state-2 slots cannot give at NormalW.
func (s *heatPumpSchedule) shortWh() float64 {
	if s.h == nil {
		return 0
	}
	if s.n2 == 0 {
		return math.Max(0, s.remWh)
	}
	return math.Max(0, s.remWh-s.h.NormalW*float64(s.n2)*s.dtH)
}

// bufferOK says whether slot t may go to state to within the day's buffer.
func (s *heatPumpSchedule) bufferOK(t int, to int8) bool {
	if s.h.BufferWh == 0 {
		return true
	}
	d := s.day[t]
	return s.aheadWh[d]+(s.aheadW(to)-s.aheadW(s.states[t]))*s.dtH <= s.h.BufferWh+1e-6
}

// locksOK checks the lock rules on the states.
func (s *heatPumpSchedule) locksOK() bool {
	clear(s.count)
	clear(s.total)
	prevEnd, prevLen := -1, 0
	for t := 0; t < len(s.states); {
		if s.states[t] != sgLocked {
			t++
			continue
		}
		a := t
		for t < len(s.states) && s.states[t] == sgLocked {
			t++
		}
		l, d := t-a, s.day[a]
		if l > s.lockSlots || prevEnd >= 0 && a-prevEnd < prevLen {
			return false
		}
		s.count[d]++
		s.total[d] += l
		if s.count[d] > s.locksPerDay || s.total[d] > s.lockedPerDaySlt {
			return false
		}
		prevEnd, prevLen = t, l
	}
	return true
}

// hpMove is one change of the heat pump's schedule: slot t to state to,
// and, for a pair, slot u to state toU (u < 0: none).
type hpMove struct {
	t, u    int
	to, toU int8
	gainEUR float64
}

// boosts are the states that heat ahead, in the order moves try them.
var boosts = [2]int8{sgRecommended, sgForced}

// placeHeatPump improves the heat pump's states greedily: each round takes
// the move that lowers the cost most (heating ahead in a slot in state 3
// or 4, so the state-2 slots draw less; a lock, where its rules allow, so
// they draw more; or a lock with the heating ahead it needs), until no move
// gains. A move's own slots are costed exactly, the spread of the state-2
// slots' change by their marginal price.
func (p *planner) placeHeatPump() {
	s := &p.hp
	if s.h == nil {
		return
	}
	n := len(p.in.Slots)
	buf := make([]float64, 7*n)
	other := buf[0*n : 1*n]  // everything but the heat pump
	cur := buf[1*n : 2*n]    // marginal cost now
	lam := buf[2*n : 3*n]    // marginal price of a W in state-2 slots
	at := buf[3*n : 6*n]     // marginal cost in state 1 (3t), 3 (3t+1), 4 (3t+2)
	lockOK := buf[6*n : 7*n] // 1: a lock in t keeps the rules
	for t, sl := range p.in.Slots {
		other[t] = sl.BaseLoadW + p.carW[t]
		at[3*t] = p.marginal(t, other[t])
		at[3*t+1] = p.marginal(t, other[t]+s.h.RecommendedW)
		at[3*t+2] = p.marginal(t, other[t]+s.h.ForcedW)
	}
	atState := func(t int, st int8) float64 {
		if st == sgLocked {
			return at[3*t]
		}
		return at[3*t+int(st)-2]
	}
	const h = 100.0 // W, for the marginal price
	for range 4 * n {
		d2 := s.normalW()
		lamSum := 0.0
		for t := range n {
			lam[t], lockOK[t] = 0, 0
			if s.states[t] != sgNormal {
				cur[t] = atState(t, s.states[t])
				continue
			}
			cur[t] = p.marginal(t, other[t]+d2)
			lam[t] = (p.marginal(t, other[t]+d2+h) - cur[t]) / h
			lamSum += lam[t]
			if s.h.Lock != nil {
				s.states[t] = sgLocked
				if s.locksOK() {
					lockOK[t] = 1
				}
				s.states[t] = sgNormal
			}
		}
		// spread is the cost of the state-2 slots' change when the move
		// leaves rem Wh to n2 slots, lamOut the marginal prices of the
		// slots it takes out of state 2; ok false when not allowed.
		spread := func(rem float64, n2 int, lamOut float64) (float64, bool) {
			if rem < -1e-6 || n2 == 0 && rem > 1e-6 {
				return 0, false
			}
			nd2 := 0.0
			if n2 > 0 {
				nd2 = rem / (float64(n2) * s.dtH)
			}
			if nd2 > math.Max(s.h.NormalW, d2)+1e-9 {
				return 0, false
			}
			return (lamSum - lamOut) * (nd2 - d2), true
		}
		// boost is slot t to state to: its own cost's change, the
		// remainder it leaves, whether it leaves state 2; ok false when
		// not a boost or beyond the buffer.
		boost := func(t int, to int8) (own, rem float64, out int, ok bool) {
			st := s.states[t]
			if st >= to || st == sgLocked || !s.bufferOK(t, to) {
				return 0, 0, 0, false
			}
			own = atState(t, to) - cur[t]
			rem = s.remWh - s.powerW(to)*s.dtH
			if st == sgNormal {
				return own, rem, 1, true
			}
			return own, rem + s.powerW(st)*s.dtH, 0, true
		}
		best := hpMove{t: -1, u: -1}
		try := func(m hpMove) {
			if m.gainEUR < -1e-7 && (best.t < 0 || m.gainEUR < best.gainEUR-tieEUR) {
				best = m
			}
		}
		for t := range n {
			for _, to := range boosts {
				if own, rem, out, ok := boost(t, to); ok {
					if c, ok := spread(rem, s.n2-out, lam[t]*float64(out)); ok {
						try(hpMove{t: t, u: -1, to: to, gainEUR: own + c})
					}
				}
			}
			if lockOK[t] == 0 {
				continue
			}
			lockOwn := at[3*t] - cur[t]
			if c, ok := spread(s.remWh, s.n2-1, lam[t]); ok {
				try(hpMove{t: t, u: -1, to: sgLocked, gainEUR: lockOwn + c})
				continue
			}
			// The lock needs heating ahead elsewhere.
			for u := range n {
				for _, to := range boosts {
					if u == t {
						continue
					}
					if own, rem, out, ok := boost(u, to); ok {
						if c, ok := spread(rem, s.n2-1-out, lam[t]+lam[u]*float64(out)); ok {
							try(hpMove{t: t, u: u, to: sgLocked, toU: to, gainEUR: lockOwn + own + c})
						}
					}
				}
			}
		}
		if best.t < 0 {
			return
		}
		s.apply(best.t, best.to)
		if best.u >= 0 {
			s.apply(best.u, best.toU)
		}
	}
}

// apply puts slot t in state to and keeps rem, n2 and the day's buffer.
func (s *heatPumpSchedule) apply(t int, to int8) {
	from := s.states[t]
	if from == sgNormal {
		s.n2--
	} else {
		s.remWh += s.powerW(from) * s.dtH
	}
	s.aheadWh[s.day[t]] += (s.aheadW(to) - s.aheadW(from)) * s.dtH
	s.states[t] = to
	s.remWh -= s.powerW(to) * s.dtH
}
