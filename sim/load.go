package sim

import (
	"math"
	"time"
)

// load is a switchable consumer of the simulated house (a heat pump on an
// SG-Ready relay pair, an immersion heater behind a relay board, a smart
// plug's appliance). Its power adds to the plant's consumption, so the
// grid meter, the batteries and the live balance see it switch.
type load struct {
	id string
	// power is the load's draw in W at t, from the state of whatever
	// switches it; called with the plant's mu held.
	power func(t time.Time) float64
	// next, when set, returns the load's first switching instant after t
	// (zero: none), e.g. a plug's toggle_after timer; the plant ends an
	// integration step there, so the energy counts the switch exactly.
	// Called with the plant's mu held.
	next func(t time.Time) time.Time
	// w is the draw at the last flowsLocked; energyWh the lifetime energy,
	// integrated with the other counters.
	w        float64
	energyWh float64
}

// addLoadLocked registers a load; it counts from the next flowsLocked on.
func (p *Plant) addLoadLocked(l *load) { p.loads = append(p.loads, l) }

// nextLoadEvent returns the first switching instant of any load after t,
// zero if none.
func (p *Plant) nextLoadEvent(t time.Time) time.Time {
	var ev time.Time
	for _, l := range p.loads {
		if l.next == nil {
			continue
		}
		if x := l.next(t); !x.IsZero() && x.After(t) && (ev.IsZero() || x.Before(ev)) {
			ev = x
		}
	}
	return ev
}

// loadsW computes every load's draw at t and returns their sum.
func (p *Plant) loadsW(t time.Time) float64 {
	var sum float64
	for _, l := range p.loads {
		l.w = math.Max(0, l.power(t))
		sum += l.w
	}
	return sum
}

// integrateLoads adds h hours at the loads' current draw to their energy.
func (p *Plant) integrateLoads(h float64) {
	for _, l := range p.loads {
		l.energyWh += l.w * h
	}
}
