package sunspecserver

import (
	"errors"
	"fmt"
	"math"

	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sunspec"
)

// The aggregate's register map: one []uint16 from the SunS marker at Base
// to the end marker, its models sunspec.Instance values whose Regs alias
// it (as the simulator lays out its devices), built once by New from the
// plant's configured devices; refresh rewrites the measured points from
// the live state.

// Layout of the map.
const (
	// Base is the register address of the SunS marker.
	Base       = 40000
	sunsHi     = 0x5375 // "Su"
	sunsLo     = 0x6E53 // "nS"
	endModelID = 0xFFFF
)

// Model ids of the map.
const (
	modelCommon   = 1
	modelInverter = 103
	modelControls = 123
	modelStorage  = 124
	modelMeter    = 203
	modelDERCtl   = 704
	// modelHolder (64900, holder.go) is plantd's own, last in the map.
)

// writablePoints are the points a master may write, by model: the active
// power limit in the classic (123) and the DER (704) shape; every other
// register answers a write with exception 2.
var writablePoints = map[uint16][]string{
	modelControls: {"WMaxLimPct", "WMaxLimPct_RvrtTms", "WMaxLim_Ena"},
	modelDERCtl:   {"WMaxLimPctEna", "WMaxLimPct", "WMaxLimPctRvrtTms"},
}

// slot is one model of the map.
type slot struct {
	inst *sunspec.Instance
	off  int // index of its ID register in image.regs
}

// image is the register map.
type image struct {
	regs     []uint16
	models   []slot
	writable []bool // per register of regs
}

// layout lists the models of a plant with a grid meter (meter) and a
// battery (battery), in map order.
func layout(meter, battery bool) []uint16 {
	ids := []uint16{modelCommon, modelInverter}
	if meter {
		ids = append(ids, modelMeter)
	}
	if battery {
		ids = append(ids, modelStorage)
	}
	return append(ids, modelControls, modelDERCtl, modelHolder)
}

// buildImage lays out the models back to back from Base+2, every point
// not implemented, then stores the static points: model 1's identity and
// the scale factors that never change.
func buildImage(ids []uint16, id identity) (*image, error) {
	var insts []*sunspec.Instance
	total := 4 // SunS and the end marker
	for _, mid := range ids {
		m := modelDef(mid)
		if m == nil {
			return nil, fmt.Errorf("model %d: no definition", mid)
		}
		inst, err := sunspec.NewBlank(m, 0, nil)
		if err != nil {
			return nil, fmt.Errorf("model %d: %w", mid, err)
		}
		insts = append(insts, inst)
		total += len(inst.Regs)
	}
	img := &image{regs: make([]uint16, total), writable: make([]bool, total)}
	img.regs[0], img.regs[1] = sunsHi, sunsLo
	off := 2
	for _, inst := range insts {
		n := len(inst.Regs)
		copy(img.regs[off:], inst.Regs)
		fin, err := sunspec.NewInstance(inst.Model, Base+uint16(off), img.regs[off:off+n:off+n])
		if err != nil {
			return nil, fmt.Errorf("model %d: %w", inst.Model.ID, err)
		}
		img.models = append(img.models, slot{inst: fin, off: off})
		for _, name := range writablePoints[inst.Model.ID] {
			i := fin.Model.Group.PointIndex(name)
			if i < 0 {
				return nil, fmt.Errorf("model %d: no point %s", inst.Model.ID, name)
			}
			p := &fin.Model.Group.Points[i]
			for k := range int(p.Size) {
				img.writable[off+int(p.Offset)+k] = true
			}
		}
		off += n
	}
	img.regs[off], img.regs[off+1] = endModelID, 0
	return img, img.static(id)
}

// identity is what model 1 says.
type identity struct {
	model, options, version, serial string
	unit                            byte
}

// model returns the instance of model id, nil when the map has none.
func (img *image) model(id uint16) *sunspec.Instance {
	for _, s := range img.models {
		if s.inst.Model.ID == id {
			return s.inst
		}
	}
	return nil
}

// static stores the points that never change.
func (img *image) static(id identity) error {
	var errs []error
	c := img.model(modelCommon)
	errs = append(errs, c.SetString("Mn", "plantd"), c.SetString("Md", clip(id.model, 32)),
		c.SetString("Opt", clip(id.options, 16)), c.SetString("Vr", clip(id.version, 16)),
		c.SetString("SN", clip(id.serial, 32)), c.Set("DA", float64(id.unit)))
	inv := img.model(modelInverter)
	errs = append(errs, inv.SetRaw("Evt1", 0), inv.SetRaw("Evt2", 0))
	if m := img.model(modelMeter); m != nil {
		errs = append(errs, m.SetRaw("Evt", 0))
	}
	ctl := img.model(modelControls)
	errs = append(errs, setSF(ctl, "WMaxLimPct_SF", 0), ctl.SetRaw("WMaxLimPct_RvrtTms", 0),
		ctl.Set("WMaxLimPct", 100), ctl.SetRaw("WMaxLim_Ena", 0), ctl.SetRaw("Conn", 1))
	der := img.model(modelDERCtl)
	errs = append(errs, setSF(der, "WMaxLimPct_SF", 0), der.Set("WMaxLimPct", 100), der.SetRaw("WMaxLimPctEna", 0),
		der.SetRaw("WMaxLimPctRvrtTms", 0), der.SetRaw("WMaxLimPctRvrtRem", 0), der.Set("WMaxLimPctRvrt", 100),
		der.SetRaw("WMaxLimPctEnaRvrt", 0))
	return errors.Join(errs...)
}

// clip cuts s to n bytes: model 1's strings have fixed sizes.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// setSF stores a scale factor.
func setSF(inst *sunspec.Instance, name string, sf int) error {
	return inst.SetRaw(name, uint64(uint16(int16(sf))))
}

// opt is a value that may be missing.
type opt struct {
	v  float64
	ok bool
}

func some(v float64) opt { return opt{v, true} }

// scaled stores the values of points that share the scale factor sfName,
// with the smallest scale factor from minSF up at which all of them fit
// their type (a plant of any size: 10 W steps past 32 kW); a missing
// value is stored not implemented.
func scaled(inst *sunspec.Instance, sfName string, minSF int, vals map[string]opt) error {
	for sf := minSF; sf <= 10; sf++ {
		if err := setSF(inst, sfName, sf); err != nil {
			return err
		}
		fits := true
		for name, v := range vals {
			var err error
			if v.ok {
				err = inst.Set(name, v.v)
			} else {
				err = inst.SetNotImplemented(name)
			}
			if errors.Is(err, sunspec.ErrOutOfRange) {
				fits = false
				break
			}
			if err != nil {
				return err
			}
		}
		if fits {
			return nil
		}
	}
	return fmt.Errorf("model %d: %s: values too large for any scale factor", inst.Model.ID, sfName)
}

// plain stores a value of a point without a scale factor (an accumulator,
// an enum), not implemented when missing.
func plain(inst *sunspec.Instance, name string, v opt) error {
	if !v.ok {
		return inst.SetNotImplemented(name)
	}
	return inst.Set(name, v.v)
}

// totals are the plant's figures the measured models show.
type totals struct {
	pvW                            opt // the live balance's PV
	va, vvar, whLifetime           opt
	aPh                            [3]opt
	vPh                            [3]opt
	hz                             opt
	producing                      bool
	gridW, gridImpWh, gridExpWh    opt
	meterAPh, meterVPh             [3]opt
	meterHz                        opt
	socPct, chargeW, dischargeW    opt
	batteryRatedW, batteryVoltageV opt
}

// sum is a sum over devices that is missing as soon as one device lacks
// its value.
type sum struct {
	v       float64
	n       int
	missing bool
}

func (s *sum) add(v float64, ok bool) {
	if !ok {
		s.missing = true
		return
	}
	s.v += v
	s.n++
}

func (s sum) total() opt { return opt{s.v, s.n > 0 && !s.missing} }
func (s sum) mean() opt {
	if s.n == 0 || s.missing {
		return opt{}
	}
	return some(s.v / float64(s.n))
}

var phases = [3][3]plant.Channel{
	{plant.CurrentPhaseA, plant.CurrentPhaseB, plant.CurrentPhaseC},
	{plant.VoltagePhaseA, plant.VoltagePhaseB, plant.VoltagePhaseC},
}

// totalsOf computes the figures from the live devices and balance: sums
// (and for voltages and frequency means) over the active inverters, each
// only when every one of them reports it; the grid point from the grid
// meters (phases only when the plant has one); the storage from the
// balance and the batteries.
func totalsOf(devs []plant.DeviceLive, b plant.Balance) totals {
	var t totals
	if b.PVGenerationW != nil {
		t.pvW = some(*b.PVGenerationW)
	}
	var va, vvar, wh, hz sum
	var aPh, vPh [3]sum
	var mHz, mImp, mExp sum
	var mAPh, mVPh [3]sum
	var batW, batV sum
	meters := 0
	for i := range devs {
		d := &devs[i]
		if !d.Info.Active() || d.LastUpdate.IsZero() {
			continue
		}
		switch d.Info.Kind {
		case kind.Inverter:
			va.add(d.Value(plant.ApparentPower))
			vvar.add(d.Value(plant.ReactivePower))
			wh.add(d.Value(plant.PVGenerationTotal))
			hz.add(d.Value(plant.GridFrequency))
			for p := range 3 {
				aPh[p].add(d.Value(phases[0][p]))
				vPh[p].add(d.Value(phases[1][p]))
			}
			if w, ok := d.Value(plant.PVGeneration); ok && w > 0 {
				t.producing = true
			}
		case kind.Meter:
			if !d.Info.GridMeter() {
				continue
			}
			meters++
			mImp.add(d.Value(plant.GridConsumptionTotal))
			mExp.add(d.Value(plant.GridFeedInTotal))
			mHz.add(d.Value(plant.GridFrequency))
			for p := range 3 {
				mAPh[p].add(d.Value(phases[0][p]))
				mVPh[p].add(d.Value(phases[1][p]))
			}
		case kind.Battery:
			if dev, ok := d.Discovered.(*sunspec.Device); ok && dev.RatedPowerW > 0 {
				batW.add(dev.RatedPowerW, true)
			} else {
				batW.add(0, false)
			}
			batV.add(d.Value(plant.BatteryVoltage))
		}
	}
	t.va, t.vvar, t.whLifetime, t.hz = va.total(), vvar.total(), wh.total(), hz.mean()
	for p := range 3 {
		t.aPh[p], t.vPh[p] = aPh[p].total(), vPh[p].mean()
	}
	if b.GridConsumptionW != nil && b.GridFeedInW != nil {
		t.gridW = some(*b.GridConsumptionW - *b.GridFeedInW) // SunSpec meter sign: import > 0
	}
	t.gridImpWh, t.gridExpWh, t.meterHz = mImp.total(), mExp.total(), mHz.mean()
	if meters == 1 {
		for p := range 3 {
			t.meterAPh[p], t.meterVPh[p] = mAPh[p].total(), mVPh[p].mean()
		}
	}
	if b.BatteryStateOfChargePct != nil {
		t.socPct = some(*b.BatteryStateOfChargePct)
	}
	if b.BatteryChargingW != nil && b.BatteryDischargingW != nil {
		t.chargeW, t.dischargeW = some(*b.BatteryChargingW), some(*b.BatteryDischargingW)
	}
	t.batteryRatedW = batW.total()
	if batV.n == 1 {
		t.batteryVoltageV = batV.total()
	}
	return t
}

// SunSpec enum values the measured models use.
const (
	stSleeping = 2 // 103 St SLEEPING
	stMPPT     = 4 // 103 St MPPT
	chaStOff   = 1 // 124 ChaSt OFF
	chaStDis   = 3 // DISCHARGING
	chaStCha   = 4 // CHARGING
	chaStHold  = 6 // HOLDING
)

// fill stores the measured points from t.
func (img *image) fill(t totals) error {
	var errs []error
	inv := img.model(modelInverter)
	pf := opt{}
	if t.pvW.ok && t.va.ok && t.va.v > 0 {
		pf = some(math.Max(-100, math.Min(100, 100*t.pvW.v/t.va.v)))
	}
	st := float64(stSleeping)
	if t.producing {
		st = stMPPT
	}
	errs = append(errs,
		scaled(inv, "W_SF", 0, map[string]opt{"W": t.pvW}),
		scaled(inv, "VA_SF", 0, map[string]opt{"VA": t.va}),
		scaled(inv, "VAr_SF", 0, map[string]opt{"VAr": t.vvar}),
		scaled(inv, "PF_SF", -2, map[string]opt{"PF": pf}),
		scaled(inv, "WH_SF", 0, map[string]opt{"WH": t.whLifetime}),
		scaled(inv, "Hz_SF", -2, map[string]opt{"Hz": t.hz}),
		scaled(inv, "A_SF", -2, map[string]opt{"A": phaseSum(t.aPh).total(), "AphA": t.aPh[0], "AphB": t.aPh[1], "AphC": t.aPh[2]}),
		scaled(inv, "V_SF", -1, map[string]opt{"PhVphA": t.vPh[0], "PhVphB": t.vPh[1], "PhVphC": t.vPh[2]}),
		inv.Set("St", st),
	)
	if m := img.model(modelMeter); m != nil {
		errs = append(errs,
			scaled(m, "W_SF", 0, map[string]opt{"W": t.gridW}),
			scaled(m, "TotWh_SF", 0, map[string]opt{"TotWhImp": t.gridImpWh, "TotWhExp": t.gridExpWh}),
			scaled(m, "Hz_SF", -2, map[string]opt{"Hz": t.meterHz}),
			scaled(m, "A_SF", -2, map[string]opt{"A": phaseSum(t.meterAPh).total(), "AphA": t.meterAPh[0], "AphB": t.meterAPh[1], "AphC": t.meterAPh[2]}),
			scaled(m, "V_SF", -1, map[string]opt{"PhV": phaseSum(t.meterVPh).mean(), "PhVphA": t.meterVPh[0], "PhVphB": t.meterVPh[1], "PhVphC": t.meterVPh[2]}),
		)
	}
	if s := img.model(modelStorage); s != nil {
		chaSt := opt{}
		switch {
		case !t.chargeW.ok:
		case t.chargeW.v > 0:
			chaSt = some(chaStCha)
		case t.dischargeW.v > 0:
			chaSt = some(chaStDis)
		case t.socPct.ok:
			chaSt = some(chaStHold)
		default:
			chaSt = some(chaStOff)
		}
		errs = append(errs,
			scaled(s, "WChaMax_SF", 0, map[string]opt{"WChaMax": t.batteryRatedW}),
			scaled(s, "ChaState_SF", -1, map[string]opt{"ChaState": t.socPct}),
			scaled(s, "InBatV_SF", -1, map[string]opt{"InBatV": t.batteryVoltageV}),
			plain(s, "ChaSt", chaSt),
		)
	}
	return errors.Join(errs...)
}

// phaseSum adds up three phases (missing when one is): total() is their
// sum, mean() their mean.
func phaseSum(ph [3]opt) sum {
	var s sum
	for _, p := range ph {
		s.add(p.v, p.ok)
	}
	return s
}
