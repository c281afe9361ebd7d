package plant

import (
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"sync"
)

// This file is the plausibility check of channel values (doc.go,
// "Plausibility"): every value Apply extracts is compared with bounds
// from the device's nameplate and from physics before it reaches the live
// state; a value outside is dropped for that poll, counted and logged on
// each change of the channel's verdict.

// Bounds of the plausibility check.
const (
	// ratingMargin is the factor by which a value may exceed its
	// nameplate rating (overload, measuring error, rounding of the
	// rating), ratingSlack the absolute allowance on top (W, VA, var, A)
	// so that tiny ratings do not reject noise.
	ratingMargin = 1.25
	ratingSlack  = 50
	// dcMargin is the factor for DC power: an oversized array may feed
	// more than the AC rating before the inverter clips.
	dcMargin = 1.5
	// maxPowerW bounds every power of a device without a rating, and every
	// rating (a nameplate can be as wrong as a reading).
	maxPowerW = 5e6
	// maxCurrentA bounds currents without a rating.
	maxCurrentA = 10000
	// maxACVoltageV and maxDCVoltageV are the limits of low voltage (IEC
	// 60038: 1000 V AC, 1500 V DC), where plantd's devices live.
	maxACVoltageV = 1000
	maxDCVoltageV = 1500
	// Grid frequency, Hz.
	minFrequencyHz = 40
	maxFrequencyHz = 70
	// maxLifetimeYears bounds a lifetime counter: rated power × this.
	maxLifetimeYears = 40
	hoursPerYear     = 8766
)

// bound is the plausible range of one channel's values, inclusive.
type bound struct{ lo, hi float64 }

func (b bound) ok(v float64) bool { return v >= b.lo && v <= b.hi }

func sym(x float64) bound { return bound{-x, x} }

// bounds is the plausible range of every channel for one device.
type bounds [numChannels]bound

// ratedOr returns the rating with margin and slack, else def.
func ratedOr(rating, margin, def float64) float64 {
	if rating <= 0 || math.IsNaN(rating) {
		return def
	}
	return min(rating*margin+ratingSlack, def)
}

// ratings are the nameplate values a device's bounds depend on.
type ratings struct{ w, va, vr, a float64 }

// boundsCache holds the bounds made so far by ratings (ratings → *bounds,
// never changed once made): devices of one type share them instead of
// keeping 736 bytes each (0.7 MB at 1,000 devices). A plant has a few
// device types; the cache is bounded by maxCachedBounds in case ratings
// keep changing (a device reporting a drifting rating).
var (
	boundsMu    sync.Mutex
	boundsCache = map[ratings]*bounds{}
)

const maxCachedBounds = 256

// boundsFor returns a device's bounds from its nameplate (nil: none
// known), shared with every device of the same ratings: read only.
func boundsFor(n *Nameplate) *bounds {
	var r ratings
	if n != nil {
		r = ratings{n.RatedPowerW, n.RatedApparentVA, n.RatedReactiveVAr, n.RatedCurrentA}
	}
	if r != r { // a NaN rating: never equal as a key
		return makeBounds(r)
	}
	boundsMu.Lock()
	defer boundsMu.Unlock()
	if b := boundsCache[r]; b != nil {
		return b
	}
	b := makeBounds(r)
	if len(boundsCache) >= maxCachedBounds {
		clear(boundsCache)
	}
	boundsCache[r] = b
	return b
}

// makeBounds computes the bounds of a device with ratings r (0: none).
func makeBounds(r ratings) *bounds {
	rw, rva, rvar, ra := r.w, r.va, r.vr, r.a
	if rva <= 0 {
		rva = rw // S ≥ P: without its own rating, the active one
	}
	if rvar <= 0 {
		rvar = rva // |Q| ≤ S
	}
	w := ratedOr(rw, ratingMargin, maxPowerW)
	va := ratedOr(rva, ratingMargin, maxPowerW)
	vr := ratedOr(rvar, ratingMargin, maxPowerW)
	a := ratedOr(ra, ratingMargin, maxCurrentA)
	dcw := ratedOr(rw, dcMargin, maxPowerW)
	counter := ratedOr(rw, ratingMargin, maxPowerW) * maxLifetimeYears * hoursPerYear

	var b bounds
	for c := Channel(1); c < numChannels; c++ {
		b[c] = bound{math.Inf(-1), math.Inf(1)}
	}
	for _, c := range []Channel{ActivePower, ActivePowerPhaseA, ActivePowerPhaseB, ActivePowerPhaseC} {
		b[c] = sym(w)
	}
	for _, c := range []Channel{PVGeneration, GridFeedIn, GridConsumption, BatteryCharging, BatteryDischarging, Consumption} {
		b[c] = bound{0, w}
	}
	for _, c := range []Channel{ReactivePower, ReactivePowerPhaseA, ReactivePowerPhaseB, ReactivePowerPhaseC} {
		b[c] = sym(vr)
	}
	for _, c := range []Channel{ApparentPower, ApparentPowerPhaseA, ApparentPowerPhaseB, ApparentPowerPhaseC} {
		b[c] = sym(va) // some devices sign S with P
	}
	for _, c := range []Channel{VoltagePhaseA, VoltagePhaseB, VoltagePhaseC, VoltagePhaseA2B, VoltagePhaseB2C, VoltagePhaseC2A} {
		b[c] = bound{0, maxACVoltageV}
	}
	for _, c := range []Channel{CurrentPhaseA, CurrentPhaseB, CurrentPhaseC} {
		b[c] = sym(a)
	}
	b[GridFrequency] = bound{minFrequencyHz, maxFrequencyHz}
	b[DisplacementPowerFactor] = bound{-1, 1}
	b[DCPowerInput] = sym(dcw)
	b[DCVoltageInput] = bound{0, maxDCVoltageV}
	b[DCCurrentInput] = sym(maxCurrentA)
	b[IsolationResistance] = bound{0, 1e12}
	for _, c := range []Channel{PVGenerationTotal, GridFeedInTotal, GridConsumptionTotal, DCEnergyInput, ConsumptionTotal} {
		b[c] = bound{0, counter}
	}
	b[BatteryStateOfCharge] = bound{0, 100}
	b[BatteryStateOfHealth] = bound{0, 100}
	b[BatteryVoltage] = bound{0, maxDCVoltageV}
	b[BatteryCurrent] = sym(maxCurrentA)
	b[BatteryTemperature] = bound{-60, 150}
	b[ExternalInsolation] = bound{-50, 2000} // pyranometers read a little below 0 at night
	b[AmbientTemperature] = bound{-90, 70}
	b[ModuleTemperature] = bound{-60, 150}
	b[WindSpeed] = bound{0, 120}
	return &b
}

// Bound returns the plausible range of channel c for a device with the
// given nameplate (nil: none), inclusive.
func Bound(n *Nameplate, c Channel) (lo, hi float64) {
	if !c.Valid() {
		return 0, 0
	}
	b := boundsFor(n)[c]
	return b.lo, b.hi
}

// chanMask is a set of channels.
type chanMask uint64

// Channels fit in a chanMask.
var _ [64 - numChannels]struct{}

// check drops the values of v outside b and returns the channels that had
// one. It allocates only at a device's first dropped value.
func (v *values) check(b *bounds) chanMask {
	var bad chanMask
	for c := Channel(1); c < numChannels; c++ {
		if v.setBy[c] != 0 && !channelDefs[c].Indexed && !b[c].ok(v.scalar[c]) {
			v.setBy[c] = 0
			v.drop(c, v.scalar[c])
			bad |= 1 << c
		}
	}
	n := 0
	for _, r := range v.inputs {
		if !b[r.Channel].ok(r.Value) {
			bad |= 1 << r.Channel
			v.drop(r.Channel, r.Value)
			continue
		}
		v.inputs[n] = r
		n++
	}
	v.inputs = v.inputs[:n]
	// An indexed channel whose every input was dropped is absent.
	for m := bad; m != 0; m &= m - 1 {
		c := Channel(bits.TrailingZeros64(uint64(m)))
		if channelDefs[c].Indexed && !v.hasInput(c) {
			v.setBy[c] = 0
		}
	}
	return bad
}

// drop keeps a dropped value for the log.
func (v *values) drop(c Channel, x float64) {
	if v.dropped == nil {
		v.dropped = new([numChannels]float64)
	}
	v.dropped[c] = x
}

func (v *values) hasInput(c Channel) bool {
	for _, r := range v.inputs {
		if r.Channel == c {
			return true
		}
	}
	return false
}

// ImplausibleCount is how many values of one channel of one device the
// plausibility check dropped.
type ImplausibleCount struct {
	DeviceID string
	Channel  Channel
	Count    uint64
}

// Implausible returns the dropped-value counters of every device and
// channel that dropped any, in config and channel order.
func (l *Live) Implausible() []ImplausibleCount {
	var out []ImplausibleCount
	for _, d := range l.idx.Load().devs {
		d.mu.Lock()
		for c := Channel(1); c < numChannels; c++ {
			if d.implausible == nil {
				break
			}
			if n := d.implausible[c]; n > 0 {
				out = append(out, ImplausibleCount{DeviceID: d.info.ID, Channel: c, Count: n})
			}
		}
		d.mu.Unlock()
	}
	return out
}

// noteImplausible counts the channels a poll dropped and logs each channel
// whose verdict changed. d.mu is held.
func (l *Live) noteImplausible(d *deviceState, bad chanMask) {
	if bad != 0 && d.implausible == nil {
		d.implausible = new([numChannels]uint64)
	}
	for m := bad; m != 0; m &= m - 1 {
		d.implausible[bits.TrailingZeros64(uint64(m))]++
	}
	changed := bad ^ d.badChans
	if changed == 0 || l.log == nil {
		d.badChans = bad
		return
	}
	for m := changed; m != 0; m &= m - 1 {
		c := Channel(bits.TrailingZeros64(uint64(m)))
		b := d.bounds[c]
		if bad&(1<<c) != 0 {
			l.log.Warn(fmt.Sprintf("device %s: implausible %s dropped", d.info.ID, c.Name()),
				"device", d.info.ID, "channel", c.Name(), "value", d.vals.dropped[c], "min", b.lo, "max", b.hi)
		} else {
			l.log.Info(fmt.Sprintf("device %s: %s plausible again", d.info.ID, c.Name()), "device", d.info.ID, "channel", c.Name())
		}
	}
	d.badChans = bad
}

// SetLogger sets the logger of plausibility verdicts (nil: none). Call it
// before the first Apply.
func (l *Live) SetLogger(lg *slog.Logger) { l.log = lg }
