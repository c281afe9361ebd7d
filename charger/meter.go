package charger

import (
	"strconv"
	"strings"

	"github.com/lorenzodonini/ocpp-go/ocpp1.6/types"
)

// reading is what one MeterValues (or a StopTransaction's data) says of
// the connector; a Has flag is false for a value it did not give.
type reading struct {
	powerW    float64
	hasPower  bool
	energyWh  float64
	hasEnergy bool
	offeredA  float64
	hasOffer  bool
	soc       float64
	hasSoC    bool
}

// phaseSums collects the per-phase values of one meter value.
type phaseSums struct {
	powerW   map[string]float64 // Power.Active.Import per phase, W
	currentA map[string]float64 // Current.Import per phase
	voltageV map[string]float64 // Voltage per phase ("" = not phased)
	total    bool               // a Power.Active.Import without phase came
}

// readMeterValues reads the measurands plantd uses from meter values, in
// order (a later value of a measurand overrides an earlier one):
//
//   - Power.Active.Import (W, or kW): the value without a phase, else the
//     sum over the phases; without any, the sum over the phases of
//     Current.Import × Voltage (the phase's voltage, L1 or L1-N, else a
//     voltage without a phase).
//   - Energy.Active.Import.Register (Wh, or kWh), also the measurand of a
//     value without one (OCPP's default).
//   - Current.Offered (A): the value without a phase, else the largest
//     phase's.
//   - SoC (Percent).
//
// Values in SignedData format, of another location than Outlet (but SoC
// from the EV), with units plantd does not know or that do not parse are
// skipped.
func readMeterValues(mvs []types.MeterValue) reading {
	var r reading
	for _, mv := range mvs {
		ph := phaseSums{powerW: map[string]float64{}, currentA: map[string]float64{}, voltageV: map[string]float64{}}
		for _, sv := range mv.SampledValue {
			r.sample(sv, &ph)
		}
		r.phased(ph)
	}
	return r
}

// sample reads one sampled value; phased values go to ph.
func (r *reading) sample(sv types.SampledValue, ph *phaseSums) {
	if sv.Format == types.ValueFormatSignedData {
		return
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(sv.Value), 64)
	if err != nil {
		return
	}
	measurand := sv.Measurand
	if measurand == "" {
		measurand = types.MeasurandEnergyActiveImportRegister
	}
	if sv.Location != "" && sv.Location != types.LocationOutlet && measurand != types.MeasurandSoC {
		return
	}
	phase := strings.TrimSuffix(string(sv.Phase), "-N")
	switch measurand {
	case types.MeasurandPowerActiveImport:
		w, ok := scale(v, sv.Unit, types.UnitOfMeasureW, types.UnitOfMeasureKW)
		switch {
		case !ok:
		case phase == "":
			r.powerW, r.hasPower, ph.total = w, true, true
		case phase == "L1" || phase == "L2" || phase == "L3":
			ph.powerW[phase] = w
		}
	case types.MeasurandEnergyActiveImportRegister:
		if phase != "" {
			return
		}
		if wh, ok := scale(v, sv.Unit, types.UnitOfMeasureWh, types.UnitOfMeasureKWh); ok {
			r.energyWh, r.hasEnergy = wh, true
		}
	case types.MeasurandCurrentImport:
		if (sv.Unit == "" || sv.Unit == types.UnitOfMeasureA) && phase != "" && phase != "N" {
			ph.currentA[phase] = v
		}
	case types.MeasurandVoltage:
		if sv.Unit == "" || sv.Unit == types.UnitOfMeasureV {
			ph.voltageV[phase] = v
		}
	case types.MeasurandCurrentOffered:
		if sv.Unit != "" && sv.Unit != types.UnitOfMeasureA {
			return
		}
		switch {
		case phase == "":
			r.offeredA, r.hasOffer = v, true
		case !r.hasOffer || v > r.offeredA:
			r.offeredA, r.hasOffer = v, true
		}
	case types.MeasurandSoC:
		if sv.Unit == "" || sv.Unit == types.UnitOfMeasurePercent {
			r.soc, r.hasSoC = v, true
		}
	}
}

// phased derives the power of one meter value from its phases when it
// gave no total.
func (r *reading) phased(ph phaseSums) {
	var total float64
	switch {
	case ph.total:
		return
	case len(ph.powerW) > 0:
		for _, w := range ph.powerW {
			total += w
		}
	case len(ph.currentA) > 0:
		for phase, a := range ph.currentA {
			v, ok := ph.voltageV[phase]
			if !ok {
				v, ok = ph.voltageV[""]
			}
			if !ok {
				return // currents without voltages: no power
			}
			total += a * v
		}
	default:
		return
	}
	r.powerW, r.hasPower = total, true
}

// scale converts v in unit (base when "") to base: kilo is base × 1000.
func scale(v float64, unit, base, kilo types.UnitOfMeasure) (float64, bool) {
	switch unit {
	case "", base:
		return v, true
	case kilo:
		return v * 1000, true
	}
	return 0, false
}

// apply puts a reading into st.
func (r reading) apply(st *Status) {
	if r.hasPower {
		st.PowerW, st.HasPower = r.powerW, true
	}
	if r.hasEnergy {
		st.EnergyWh, st.HasEnergy = r.energyWh, true
	}
	if r.hasOffer {
		st.OfferedA, st.HasOffered = r.offeredA, true
	}
	if r.hasSoC {
		st.SoC, st.HasSoC = r.soc, true
	}
}
