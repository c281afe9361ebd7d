package plan

import (
	"math"
	"time"

	"plantd/plant"
)

// The flexible loads: the car's charging and the heat pump's SG-Ready
// states, placed against planner.marginal (the cost to the horizon's end
// of a load in one slot, the battery's move there chosen again).

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
	last := p.carSlots()
	// next is each slot's next power level and its cost a Wh (+Inf: at
	// the maximum); here the slot's marginal cost at its power now.
	next := make([]float64, 3*last)
	lvl, perWh, here := next[:last], next[last:2*last], next[2*last:]
	levelAbove := func(t int, w float64) float64 {
		if w < c.MinW || c.MaxW <= c.MinW {
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
	left := c.TargetWh                                 // of the target
	room := math.Max(c.MaxWh, c.TargetWh) - c.TargetWh // beyond it
	for {
		bt := -1 // the slot with the cheapest increment
		for t := range last {
			if perWh[t] < math.Inf(1) && (bt < 0 || perWh[t] < perWh[bt]-1e-12) {
				bt = t
			}
		}
		target := left > 1e-6
		if bt < 0 || !target && (room <= 1e-6 || perWh[bt] >= 0) {
			break
		}
		want := left
		if !target {
			want = room
		}
		w := lvl[bt]
		if (w-p.carW[bt])*p.dtH > want {
			w = math.Max(c.MinW, p.carW[bt]+want/p.dtH)
		}
		e := (w - p.carW[bt]) * p.dtH
		if target {
			left -= e
			if left < 0 { // the minimum overshoots the target
				room = math.Max(0, room+left)
				left = 0
			}
		} else {
			room -= e
		}
		p.carW[bt] = w
		here[bt] = p.marginal(bt, p.loadW[bt]+w)
		price(bt)
	}
	return math.Max(0, left)
}

// carSlots is the number of slots that end by the car's deadline.
func (p *planner) carSlots() int {
	n := len(p.in.Slots)
	if d := p.in.Car.Deadline; !d.IsZero() {
		return min(n, max(0, int(d.Sub(p.in.Start)/p.dt)))
	}
	return n
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
		s.states[t] = plant.SGNormal
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
	case plant.SGRecommend:
		return s.h.RecommendedW
	case plant.SGForced:
		return s.h.ForcedW
	}
	return 0
}

// aheadW is what a state other than normal takes above normalDrawW.
func (s *heatPumpSchedule) aheadW(state int8) float64 {
	if state == plant.SGRecommend || state == plant.SGForced {
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
	if s.states[t] == plant.SGNormal {
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
		if s.states[t] != plant.SGLocked {
			t++
			continue
		}
		a := t
		for t < len(s.states) && s.states[t] == plant.SGLocked {
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
var boosts = [2]int8{plant.SGRecommend, plant.SGForced}

// placeHeatPump improves the heat pump's states greedily: each round takes
// the move that lowers the cost most (heating ahead in a slot in state 3
// or 4, so the state-2 slots draw less; a lock, where its rules allow, so
// they draw more; or a lock with the heating ahead it needs), until no move
// gains. A move's own slots are costed exactly, the spread of the state-2
// slots' change by their marginal price.
func (p *planner) placeHeatPump() {
	if p.hp.h == nil {
		return
	}
	n := len(p.in.Slots)
	buf := make([]float64, 7*n)
	r := heatPumpRound{p: p, s: &p.hp,
		other: buf[0*n : 1*n], cur: buf[1*n : 2*n], lam: buf[2*n : 3*n], at: buf[3*n : 6*n], lockOK: buf[6*n : 7*n]}
	for t, sl := range p.in.Slots {
		r.other[t] = sl.BaseLoadW + p.carW[t]
		r.at[3*t] = p.marginal(t, r.other[t])
		r.at[3*t+1] = p.marginal(t, r.other[t]+r.s.h.RecommendedW)
		r.at[3*t+2] = p.marginal(t, r.other[t]+r.s.h.ForcedW)
	}
	for range 4 * n { // a bound: each slot moves at most from 2 to 3 to 4, or to 1
		r.price()
		m := r.bestMove()
		if m.t < 0 {
			return
		}
		r.s.apply(m.t, m.to)
		if m.u >= 0 {
			r.s.apply(m.u, m.toU)
		}
	}
}

// heatPumpRound is what a round of placeHeatPump knows of each slot.
type heatPumpRound struct {
	p      *planner
	s      *heatPumpSchedule
	other  []float64 // everything but the heat pump
	at     []float64 // marginal cost in state 1 (3t), 3 (3t+1), 4 (3t+2)
	cur    []float64 // marginal cost now
	lam    []float64 // marginal price of a W in the state-2 slots
	lockOK []float64 // 1: a lock in t keeps the rules
	d2     float64   // what a state-2 slot draws now
	lamSum float64   // the state-2 slots' marginal prices summed
	best   hpMove
}

// atState is slot t's marginal cost in a state other than 2.
func (r *heatPumpRound) atState(t int, st int8) float64 {
	if st == plant.SGLocked {
		return r.at[3*t]
	}
	return r.at[3*t+int(st)-2]
}

// price sets cur, lam and lockOK for the schedule as it is.
func (r *heatPumpRound) price() {
	const h = 100.0 // W, for the marginal price
	s, p := r.s, r.p
	r.d2, r.lamSum = s.normalW(), 0
	for t := range r.cur {
		r.lam[t], r.lockOK[t] = 0, 0
		if s.states[t] != plant.SGNormal {
			r.cur[t] = r.atState(t, s.states[t])
			continue
		}
		r.cur[t] = p.marginal(t, r.other[t]+r.d2)
		r.lam[t] = (p.marginal(t, r.other[t]+r.d2+h) - r.cur[t]) / h
		r.lamSum += r.lam[t]
		if s.h.Lock != nil {
			s.states[t] = plant.SGLocked
			if s.locksOK() {
				r.lockOK[t] = 1
			}
			s.states[t] = plant.SGNormal
		}
	}
}

// spread is the cost of the state-2 slots' change when a move leaves rem
// Wh to n2 slots, lamOut the marginal prices of the slots it takes out of
// state 2; ok false when not allowed (heating ahead beyond the demand,
// or more than NormalW left to a state-2 slot).
func (r *heatPumpRound) spread(rem float64, n2 int, lamOut float64) (float64, bool) {
	if rem < -1e-6 || n2 == 0 && rem > 1e-6 {
		return 0, false
	}
	nd2 := 0.0
	if n2 > 0 {
		nd2 = rem / (float64(n2) * r.s.dtH)
	}
	if nd2 > math.Max(r.s.h.NormalW, r.d2)+1e-9 {
		return 0, false
	}
	return (r.lamSum - lamOut) * (nd2 - r.d2), true
}

// boost is slot t to state to (3 or 4): its own cost's change, the
// remainder it leaves, whether it leaves state 2 (1) or not (0); ok false
// when it is no boost or goes beyond the buffer.
func (r *heatPumpRound) boost(t int, to int8) (own, rem float64, out int, ok bool) {
	s := r.s
	st := s.states[t]
	if st >= to || st == plant.SGLocked || !s.bufferOK(t, to) {
		return 0, 0, 0, false
	}
	own = r.atState(t, to) - r.cur[t]
	rem = s.remWh - s.powerW(to)*s.dtH
	if st == plant.SGNormal {
		return own, rem, 1, true
	}
	return own, rem + s.powerW(st)*s.dtH, 0, true
}

// try keeps m when it gains more than the best so far (ties: the first).
func (r *heatPumpRound) try(m hpMove) {
	if m.gainEUR < -1e-7 && (r.best.t < 0 || m.gainEUR < r.best.gainEUR-tieEUR) {
		r.best = m
	}
}

// bestMove is the round's best move; t < 0 when none gains.
func (r *heatPumpRound) bestMove() hpMove {
	r.best = hpMove{t: -1, u: -1}
	n := len(r.cur)
	for t := range n {
		for _, to := range boosts {
			if own, rem, out, ok := r.boost(t, to); ok {
				if c, ok := r.spread(rem, r.s.n2-out, r.lam[t]*float64(out)); ok {
					r.try(hpMove{t: t, u: -1, to: to, gainEUR: own + c})
				}
			}
		}
		if r.lockOK[t] == 0 {
			continue
		}
		lockOwn := r.at[3*t] - r.cur[t]
		if c, ok := r.spread(r.s.remWh, r.s.n2-1, r.lam[t]); ok {
			r.try(hpMove{t: t, u: -1, to: plant.SGLocked, gainEUR: lockOwn + c})
			continue
		}
		// The lock needs heating ahead elsewhere.
		for u := range n {
			for _, to := range boosts {
				if u == t {
					continue
				}
				if own, rem, out, ok := r.boost(u, to); ok {
					if c, ok := r.spread(rem, r.s.n2-1-out, r.lam[t]+r.lam[u]*float64(out)); ok {
						r.try(hpMove{t: t, u: u, to: plant.SGLocked, toU: to, gainEUR: lockOwn + own + c})
					}
				}
			}
		}
	}
	return r.best
}

// apply puts slot t in state to and keeps rem, n2 and the day's buffer.
func (s *heatPumpSchedule) apply(t int, to int8) {
	from := s.states[t]
	if from == plant.SGNormal {
		s.n2--
	} else {
		s.remWh += s.powerW(from) * s.dtH
	}
	s.aheadWh[s.day[t]] += (s.aheadW(to) - s.aheadW(from)) * s.dtH
	s.states[t] = to
	s.remWh -= s.powerW(to) * s.dtH
}
