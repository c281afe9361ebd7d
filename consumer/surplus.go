package consumer

import (
	"math"
	"time"

	"plantd/plant"
)

// The surplus decision: which Auto consumers run on the plant's surplus.
// It is a pure function over a slice the manager keeps and refills each
// cycle, so a decision allocates nothing.

// Battery is a plant's battery priority, as evcc names it (config
// plants[].battery): below PrioritySoC (%) the battery charges first and
// its charging is not surplus; at or above it, the power it charges with
// is surplus the consumers may take (the battery then charges less). Its
// discharge is never surplus, except that above BufferSoC (%, 0 = never)
// consumers already running may keep drawing from it down to BufferSoC
// (none switches on from it). The zero value is evcc's default: no
// priority, no buffer.
type Battery struct {
	PrioritySoC float64
	BufferSoC   float64
}

// exportOf is the export (W) the decision starts from: what leaves the
// plant at the grid meter, plus the battery's charging at or above its
// priority SoC, minus its discharge (not above BufferSoC). Without a
// battery value it is the meter's export; with charging but no SoC the
// charging is not counted (the battery may be below its priority).
func exportOf(s plant.Surplus, b Battery) float64 {
	w := -s.GridW
	if !s.BatteryOK {
		return w
	}
	if s.BatteryChargeW > 0 && s.BatterySoCOK && s.BatterySoCPct >= b.PrioritySoC {
		w += s.BatteryChargeW
	}
	if s.BatteryDischargeW > 0 && !(b.BufferSoC > 0 && s.BatterySoCOK && s.BatterySoCPct > b.BufferSoC) {
		w -= s.BatteryDischargeW
	}
	return w
}

// slot is one consumer in a decision.
type slot struct {
	// Inputs.
	auto  bool    // takes part: mode Auto, no must-run window, online
	on    bool    // commanded on now
	drawW float64 // its power now while on (measured, else rated)
	// starting: switched on less than startSettle ago; a cap (dim) counts
	// its rating then, not drawW (a compressor starts late).
	starting bool
	ratedW   float64
	onW      float64 // surplus that switches it on
	offW     float64 // surplus below which it switches off
	mayOn    bool    // its guard allows a switch on now (when off)
	mayOff   bool    // its guard allows a switch off now (when on)
	whyNot   string  // the guard's reason when it does not allow
	// ctl: a §14a controllable consumer; sg: an SG-Ready heat pump, which
	// draws in normal operation too (its own controller runs it).
	ctl, sg bool
	// sgState is an SG-Ready pump's state the plan asks (reason Plan).
	sgState int
	// A charger (amps): its current per phase now (curA, 0 when off) and
	// bounds, the power an ampere draws on its phases, whether a car is
	// plugged in (true for every other consumer), MinPV mode, and its
	// enable and disable delays with their timers at now.
	amps                      bool
	curA, minA, maxA, wPerA   float64
	plugged, minPV            bool
	enableDelay, disableDelay time.Duration
	delays                    *delays
	now                       time.Time
	// Outputs.
	want   bool
	wantA  float64 // a charger's current when want
	reason string
}

// delays are a charger's PV-mode timers: since when the surplus carried
// its minimum current (enough), and since when it did not (short); zero
// while the other holds.
type delays struct {
	enough, short time.Time
}

// decide gives the surplus to the Auto consumers in slot order (priority
// order). exportW is the grid export now (W, negative when importing),
// curtailedW the PV a limit holds back (an upper bound), gridOK whether a
// grid meter answered; probe allows one consumer to switch on that only
// curtailed PV would carry (the manager allows one per probe period:
// whether the inverters really have that power shows once it runs).
//
// The surplus a consumer sees is the export as if every Auto consumer
// were off, less what the consumers before it take. It switches on when
// that reaches its onW, and off when it falls below its offW (its own draw
// is in it, so a running consumer does not switch itself off). It
// reports whether a switch on used the probe.
func decide(slots []slot, exportW, curtailedW float64, gridOK, probe bool) (probed bool) {
	for i := range slots {
		s := &slots[i]
		if s.auto && s.on {
			exportW += s.drawW
		}
	}
	budget := exportW + curtailedW
	for i := range slots {
		s := &slots[i]
		if !s.auto {
			continue
		}
		thr := s.onW
		if s.on {
			thr = s.offW
		}
		if s.amps {
			probed = decideCharger(s, budget, exportW, gridOK, probe && !probed) || probed
			if s.want {
				need := s.wantA * s.wPerA
				if s.on {
					need = s.drawW + math.Max(0, s.wantA-s.curA)*s.wPerA // a full car draws less than its current
				}
				budget -= need
				exportW -= need
			}
			continue
		}
		want, reason, usesProbe := budget >= thr, plant.ReasonSurplus, false
		switch {
		case !gridOK:
			want, reason = false, plant.ReasonNoMeter
		case !want:
			reason = plant.ReasonNoSurplus
		case !s.on && exportW < thr:
			// Only curtailed PV would carry it: one at a time.
			if !probe || probed {
				want, reason = false, plant.ReasonProbing
			} else {
				usesProbe = true
			}
		}
		switch {
		case want && !s.on && !s.mayOn, !want && s.on && !s.mayOff:
			want, reason = s.on, s.whyNot
		}
		s.want, s.reason = want, reason
		probed = probed || want && usesProbe
		if want {
			need := s.ratedW
			if s.on {
				need = s.drawW
			}
			budget -= need
			exportW -= need
		}
	}
	return probed
}

// dim limits a dimmed plant's controllable consumers (§14a EnWG) to
// limitW after decide: their draw counted together, each that would be on
// at its drawW, and an SG-Ready pump that would not at its ratedW, since
// in normal operation its own controller may start it at any moment (what
// it draws now, maybe nothing, guarantees nothing). From the last in slot
// (priority) order, each counted consumer is switched off (a pump:
// locked) until the sum fits; then, in priority order, each switched off
// that fits in what is left gets its decision back (a 3 kW pump runs
// under a 4.2 kW minimum when a 6 kW heater had to go). It reports the
// sum that stays.
func dim(slots []slot, limitW float64) float64 {
	draw := func(s *slot) (float64, bool) {
		switch {
		case !s.ctl:
			return 0, false
		case s.want && s.amps:
			return s.wantA * s.wPerA, true
		case s.want && (!s.on || s.starting):
			return s.ratedW, true // switched on by this decision, or a moment ago: it will draw its rating
		case s.want:
			return s.drawW, true
		case s.sg && s.sgState == plant.SGLocked && s.reason == plant.ReasonPlan:
			return 0, false // locked by the plan: it draws nothing
		case s.sg:
			return s.ratedW, true
		}
		return 0, false
	}
	var sum float64
	for i := range slots {
		w, _ := draw(&slots[i])
		sum += w
	}
	type was struct {
		want   bool
		wantA  float64
		reason string
	}
	before := make([]was, len(slots))
	for i := len(slots) - 1; i >= 0 && sum > limitW; i-- {
		s := &slots[i]
		if w, counted := draw(s); counted {
			before[i] = was{s.want, s.wantA, s.reason}
			sum -= w
			if s.amps && s.want {
				if room := math.Floor((limitW - sum) / s.wPerA); room >= s.minA {
					s.wantA, s.reason = room, plant.ReasonDimmed // a charger slows down before it stops
					sum += room * s.wPerA
					continue
				}
			}
			s.want, s.reason = false, plant.ReasonDimmed
		}
	}
	// Taking them off from the last may have freed more than needed (a
	// large load went after a small one): give back, in priority order,
	// what fits again, so that the minimum is used and not 0 W.
	for i := range slots {
		s := &slots[i]
		if s.reason != plant.ReasonDimmed || !s.ctl || s.want {
			continue
		}
		s.want, s.wantA, s.reason = before[i].want, before[i].wantA, before[i].reason
		if w, _ := draw(s); sum+w <= limitW {
			sum += w
			continue
		}
		if s.amps && s.want { // a charger comes back slower: what room is left
			if room := min(math.Floor((limitW-sum)/s.wPerA), s.wantA); room >= s.minA {
				s.wantA, s.reason = room, plant.ReasonDimmed
				sum += room * s.wPerA
				continue
			}
		}
		s.want, s.reason = false, plant.ReasonDimmed
	}
	return sum
}

// decideCharger decides one charger in PV or MinPV mode (evcc's): the
// current the surplus it sees (budget, W) carries, in whole amperes
// between its bounds. In PV mode it starts once that carried the minimum
// for its enable delay and stops once it did not for its disable delay,
// at the minimum meanwhile; in MinPV it never goes below the minimum.
// Without a car plugged in, or without a grid meter in PV mode, it is
// off; a start that only curtailed PV would carry uses the probe as any
// consumer's (reported). It fills s.want, s.wantA and s.reason.
func decideCharger(s *slot, budget, exportW float64, gridOK, probe bool) (probed bool) {
	a := math.Min(math.Floor(budget/s.wPerA), s.maxA)
	d := s.delays
	enough := gridOK && a >= s.minA
	switch {
	case !enough:
		d.enough = time.Time{}
		if d.short.IsZero() {
			d.short = s.now
		}
	default:
		d.short = time.Time{}
		if d.enough.IsZero() {
			d.enough = s.now
		}
	}
	s.want, s.wantA, s.reason = false, 0, plant.ReasonNoSurplus
	switch {
	case !s.plugged:
		s.reason = plant.ReasonNoVehicle
	case enough && s.on:
		s.want, s.wantA, s.reason = true, a, plant.ReasonSurplus
	case enough && s.minPV:
		s.want, s.wantA, s.reason = true, a, plant.ReasonSurplus
	case enough && s.now.Sub(d.enough) < s.enableDelay:
		s.reason = plant.ReasonEnableDelay
	case enough && exportW < s.minA*s.wPerA && !probe:
		s.reason = plant.ReasonProbing // only curtailed PV would carry it: one at a time
	case enough:
		s.want, s.wantA, s.reason = true, a, plant.ReasonSurplus
		probed = exportW < s.minA*s.wPerA
	case s.minPV:
		s.want, s.wantA, s.reason = true, s.minA, plant.ReasonMinPV
	case !gridOK:
		s.reason = plant.ReasonNoMeter
	case s.on && s.now.Sub(d.short) < s.disableDelay:
		s.want, s.wantA, s.reason = true, s.minA, plant.ReasonDisableDelay
	}
	switch {
	case s.want && !s.on && !s.mayOn, !s.want && s.on && !s.mayOff:
		s.want, s.wantA, s.reason = s.on, s.curA, s.whyNot
	}
	return probed && s.want
}
