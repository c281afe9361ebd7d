package consumer

import (
	"time"

	"plantd/plant"
)

// guard protects a consumer's machine from its controller: after a switch
// the output stays at least MinOn (on) or MinOff (off), and at most
// MaxPerHour switchings happen in any hour. Times are on the plant's
// clock. The zero guard allows everything; a consumer starts with the
// history kept in the store (restore), or none on its first start.
type guard struct {
	minOn, minOff time.Duration
	maxPerHour    int
	// last is the time of the last switch (zero: none yet); ring holds
	// the times of the last maxPerHour switches, oldest at next.
	last time.Time
	ring []time.Time
	next int
}

func newGuard(minOn, minOff time.Duration, maxPerHour int) guard {
	g := guard{minOn: minOn, minOff: minOff, maxPerHour: maxPerHour}
	if maxPerHour > 0 {
		g.ring = make([]time.Time, maxPerHour)
	}
	return g
}

// allows reports whether the output, now on (or off), may switch at now;
// when not, it says which rule holds it.
func (g *guard) allows(on bool, now time.Time) (bool, string) {
	if !g.last.IsZero() {
		if on && now.Sub(g.last) < g.minOn {
			return false, plant.ReasonMinOnTime
		}
		if !on && now.Sub(g.last) < g.minOff {
			return false, plant.ReasonMinOffTime
		}
	}
	if g.maxPerHour > 0 {
		// The oldest of the last maxPerHour switches: one more is allowed
		// when it lies an hour back.
		if oldest := g.ring[g.next]; !oldest.IsZero() && now.Sub(oldest) < time.Hour {
			return false, plant.ReasonMaxSwitches
		}
	}
	return true, ""
}

// switched records a switch at now.
func (g *guard) switched(now time.Time) {
	g.last = now
	if g.maxPerHour > 0 {
		g.ring[g.next] = now
		g.next = (g.next + 1) % len(g.ring)
	}
}

// lastHour counts the switchings of the last hour before now.
func (g *guard) lastHour(now time.Time) int {
	n := 0
	for _, t := range g.ring {
		if !t.IsZero() && now.Sub(t) < time.Hour {
			n++
		}
	}
	return n
}

// history returns the switchings of the last hour before now, oldest
// first (those the ring holds: at most maxPerHour).
func (g *guard) history(now time.Time) []time.Time {
	var out []time.Time
	for i := range g.ring {
		t := g.ring[(g.next+i)%len(g.ring)]
		if !t.IsZero() && now.Sub(t) < time.Hour {
			out = append(out, t)
		}
	}
	return out
}

// restore takes a kept history: the last switch and the switchings of the
// last hour, oldest first (the newest maxPerHour of them). A time after
// now (the plant's clock went back, as a demo's does) counts as now: the
// guard holds for its full time rather than for one that never ends.
func (g *guard) restore(last time.Time, switches []time.Time, now time.Time) {
	clamp := func(t time.Time) time.Time {
		if t.After(now) {
			return now
		}
		return t
	}
	if g.maxPerHour > 0 {
		for _, t := range switches[max(0, len(switches)-g.maxPerHour):] {
			g.ring[g.next] = clamp(t)
			g.next = (g.next + 1) % len(g.ring)
		}
	}
	if !last.IsZero() {
		g.last = clamp(last)
	}
}
