package consumer

import "plantd/plant"

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
	auto   bool    // takes part: mode Auto, no must-run window, online
	on     bool    // commanded on now
	drawW  float64 // its power now while on (measured, else rated)
	ratedW float64
	onW    float64 // surplus that switches it on
	offW   float64 // surplus below which it switches off
	mayOn  bool    // its guard allows a switch on now (when off)
	mayOff bool    // its guard allows a switch off now (when on)
	whyNot string  // the guard's reason when it does not allow
	// ctl: a §14a controllable consumer; sg: an SG-Ready heat pump, which
	// draws in normal operation too (its own controller runs it).
	ctl, sg bool
	// Outputs.
	want   bool
	reason string
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
		case s.want:
			return s.drawW, true
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
		reason string
	}
	before := make([]was, len(slots))
	for i := len(slots) - 1; i >= 0 && sum > limitW; i-- {
		s := &slots[i]
		if w, counted := draw(s); counted {
			before[i] = was{s.want, s.reason}
			sum -= w
			s.want, s.reason = false, plant.ReasonDimmed
		}
	}
	// Taking them off from the last may have freed more than needed (a
	// large load went after a small one): give back, in priority order,
	// what fits again, so that the minimum is used and not 0 W.
	for i := range slots {
		s := &slots[i]
		if s.reason != plant.ReasonDimmed || !s.ctl {
			continue
		}
		s.want, s.reason = before[i].want, before[i].reason
		if w, _ := draw(s); sum+w <= limitW {
			sum += w
			continue
		}
		s.want, s.reason = false, plant.ReasonDimmed
	}
	return sum
}
