package store

import (
	"math"

	"plantd/plant"
	"plantd/plant/kind"
)

// balField is a field of a plant's stored energy balance. The rates
// (autarkyRate, selfConsumptionRate) and totalGeneration are not stored:
// they follow from the stored energies of whatever interval is asked for.
type balField int

const (
	balPV balField = iota
	balFeedIn
	balGridCons
	balCharging
	balDischarging
	balTotalCons
	balSelfCons
	balDirectCons
	balSelfSupply
	balSoC
	numBal
)

// balNames are the API field names of the balance fields.
var balNames = [numBal]string{
	balPV:          "pvGeneration",
	balFeedIn:      "gridFeedIn",
	balGridCons:    "gridConsumption",
	balCharging:    "batteryCharging",
	balDischarging: "batteryDischarging",
	balTotalCons:   "totalConsumption",
	balSelfCons:    "selfConsumption",
	balDirectCons:  "directConsumption",
	balSelfSupply:  "selfSupply",
	balSoC:         "batteryStateOfCharge",
}

// balFieldByName returns the field of a name, or -1.
func balFieldByName(name string) balField {
	for f, n := range balNames {
		if n == name {
			return balField(f)
		}
	}
	return -1
}

// balRow is a plant's balance over one interval: energies (hasE) and the
// mean state of charge (n = 1 per 5-minute interval, so that longer
// intervals average the 5-minute means).
type balRow [numBal]agg

// devInterval is what a plant's balance needs of one device's aggregates
// over one interval: its kind and its role's energies. A rollup keeps one
// per device and interval until the chunk's balances are written, so it
// holds these few numbers and not the device's aggregates (at 5,000
// devices those were 15 MB at each rollup).
type devInterval struct {
	kind kind.Kind
	// e are the role's energies (inverter: pvGeneration; meter:
	// gridConsumption, gridFeedIn; battery: batteryCharging,
	// batteryDischarging), eOK whether each was in the interval.
	e   [2]float64
	eOK [2]bool
	// soc is a battery's mean state of charge, when socOK.
	soc   float64
	socOK bool
}

// intervalOf keeps of a device's aggregates b what computeBalance reads.
func intervalOf(k kind.Kind, b *devBucket) devInterval {
	di := devInterval{kind: k}
	energies := func(c ...plant.Channel) {
		for i, ch := range c {
			di.e[i], di.eOK[i] = b.energy(ch)
		}
	}
	switch k {
	case kind.Inverter:
		energies(plant.PVGeneration)
	case kind.Meter:
		energies(plant.GridConsumption, plant.GridFeedIn)
	case kind.Battery:
		energies(plant.BatteryCharging, plant.BatteryDischarging)
		if a := b.aggs[chKey{plant.BatteryStateOfCharge, 0}]; a != nil && a.n > 0 {
			di.soc, di.socOK = a.mean(), true
		}
	}
	return di
}

// computeBalance derives a plant's balance of one interval from its
// devices' aggregates, with the rules of plant.computeBalance applied to
// energies: each basic field is present when a device of its role gave an
// energy (inverters: pvGeneration, meters: gridFeedIn and gridConsumption,
// batteries: batteryCharging and batteryDischarging); the derived fields
// need the grid and, for each role present in the interval (a device of
// that kind had samples or energy in it), that role's energy:
//
//	totalConsumption  = PV + gridConsumption + batteryDischarging − gridFeedIn − batteryCharging (≥ 0)
//	selfConsumption   = PV − gridFeedIn (0..PV)
//	directConsumption = PV − gridFeedIn − batteryCharging (0..PV)
//	selfSupply        = totalConsumption − gridConsumption (0..totalConsumption)
//
// It returns false when the interval has nothing to show.
func computeBalance(devs []devInterval) (balRow, bool) {
	var r balRow
	var (
		pv, cons, feed, cha, dis float64
		pvOK, gridOK, batOK      bool
		hasInv, hasBat           bool
		socSum                   float64
		socN                     int
	)
	for _, d := range devs {
		both := d.eOK[0] && d.eOK[1]
		switch d.kind {
		case kind.Inverter:
			hasInv = true
			if d.eOK[0] {
				pv += d.e[0]
				pvOK = true
			}
		case kind.Meter:
			if both {
				cons += d.e[0]
				feed += d.e[1]
				gridOK = true
			}
		case kind.Battery:
			hasBat = true
			if both {
				cha += d.e[0]
				dis += d.e[1]
				batOK = true
			}
			if d.socOK {
				socSum += d.soc
				socN++
			}
		}
	}
	some := false
	set := func(f balField, v float64) {
		r[f].addE(v)
		some = true
	}
	if pvOK {
		set(balPV, pv)
	}
	if gridOK {
		set(balGridCons, cons)
		set(balFeedIn, feed)
	}
	if batOK {
		set(balCharging, cha)
		set(balDischarging, dis)
	}
	if socN > 0 {
		r[balSoC].add(socSum / float64(socN))
		some = true
	}
	if gridOK && (pvOK || !hasInv) && (batOK || !hasBat) {
		total := math.Max(0, pv+cons+dis-feed-cha)
		set(balTotalCons, total)
		set(balSelfSupply, clamp(total-cons, 0, total))
		if pvOK {
			set(balSelfCons, clamp(pv-feed, 0, pv))
			set(balDirectCons, clamp(pv-feed-cha, 0, pv))
		}
	}
	return r, some
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }
