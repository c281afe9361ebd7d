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
	// kind is the device's balanceKind: "" for a consumer's sub-meter.
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

// The energy fields of each role in a plant's balance, in the order of
// devInterval.e.
var (
	inverterFields = []plant.Channel{plant.PVGeneration}
	meterFields    = []plant.Channel{plant.GridConsumption, plant.GridFeedIn}
	batteryFields  = []plant.Channel{plant.BatteryCharging, plant.BatteryDischarging}
)

// balanceKind is the kind in which d counts in its plant's balance: its
// kind, but none ("") for a meter that is not the grid meter (a
// consumer's sub-meter, [device.gridMeter]): what it measures is already
// inside the consumption the grid meter gives, as in the live balance.
func (d *device) balanceKind() kind.Kind {
	if d.kind == kind.Meter && !d.gridMeter() {
		return ""
	}
	return d.kind
}

// balanceRole returns what a plant's balance takes from device d: the
// energies of fields (none: d has no role in it) and, when soc, the mean
// state of charge (plant.BatteryStateOfCharge).
func balanceRole(d *device) (fields []plant.Channel, soc bool) {
	switch d.balanceKind() {
	case kind.Inverter:
		return inverterFields, false
	case kind.Meter:
		return meterFields, false
	case kind.Battery:
		return batteryFields, true
	}
	return nil, false
}

// intervalOf keeps of device d's aggregates b what computeBalance reads.
func intervalOf(d *device, b *devBucket) devInterval {
	di := devInterval{kind: d.balanceKind()}
	fields, soc := balanceRole(d)
	for i, ch := range fields {
		di.e[i], di.eOK[i] = b.energy(ch)
	}
	if soc {
		if a := b.aggs[chKey{plant.BatteryStateOfCharge, 0}]; a != nil && a.n > 0 {
			di.soc, di.socOK = a.mean(), true
		}
	}
	return di
}

// computeBalance derives a plant's balance of one interval from its
// devices' aggregates, with the rules of the live balance
// ([plant.Flows.Derive]) applied to energies: each basic field is present
// when a device of its role gave an energy (inverters: pvGeneration, grid
// meters: gridFeedIn and gridConsumption, batteries: batteryCharging and
// batteryDischarging; a consumer's sub-meter has no role, intervalOf gives
// it no kind); the derived fields need the grid and, for each role present
// in the interval (a device of that kind had samples or energy in it),
// that role's energy.
//
// It returns false when the interval has nothing to show.
func computeBalance(devs []devInterval) (balRow, bool) {
	var r balRow
	var (
		f      plant.Flows
		socSum float64
		socN   int
	)
	for _, d := range devs {
		both := d.eOK[0] && d.eOK[1]
		switch d.kind {
		case kind.Inverter:
			f.HasInverter = true
			if d.eOK[0] {
				f.PV += d.e[0]
				f.PVOK = true
			}
		case kind.Meter:
			if both {
				f.GridConsumption += d.e[0]
				f.GridFeedIn += d.e[1]
				f.GridOK = true
			}
		case kind.Battery:
			f.HasBattery = true
			if both {
				f.Charging += d.e[0]
				f.Discharging += d.e[1]
				f.BatteryOK = true
			}
			if d.socOK {
				socSum += d.soc
				socN++
			}
		}
	}
	some := false
	set := func(fld balField, v float64) {
		r[fld].addE(v)
		some = true
	}
	if f.PVOK {
		set(balPV, f.PV)
	}
	if f.GridOK {
		set(balGridCons, f.GridConsumption)
		set(balFeedIn, f.GridFeedIn)
	}
	if f.BatteryOK {
		set(balCharging, f.Charging)
		set(balDischarging, f.Discharging)
	}
	if socN > 0 {
		r[balSoC].add(socSum / float64(socN))
		some = true
	}
	if d, ok := f.Derive(); ok {
		set(balTotalCons, d.TotalConsumption)
		set(balSelfSupply, d.SelfSupply)
		if d.PVOK {
			set(balSelfCons, d.SelfConsumption)
			set(balDirectCons, d.DirectConsumption)
		}
	}
	return r, some
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }
