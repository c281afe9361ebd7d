package sim

import (
	"math"
	"slices"
	"time"

	"plantd/sunspec"
)

// battery is the physics and control state of a battery system. Guarded by
// Plant.mu.
type battery struct {
	capWh, maxW    float64
	soc            float64 // %
	socMin, socMax float64 // hardware bounds, %
	soh            float64 // %
	cycles0        float64

	// Controls, decoded from the image after each write.
	wChaMax         float64 // 124 WChaMax
	storCtl         uint64  // 124 StorCtl_Mod: bit 0 charge limit, bit 1 discharge limit
	inWRte, outWRte float64 // 124, % of the max rates; negative: a forced discharge, charge
	chaGrid         bool    // 124 ChaGriSet GRID: the grid may charge the battery
	rvrt            rvrtTimer
	minRsv          float64 // 124 MinRsvPct
	rsvMin, rsvMax  float64 // 802 SoCRsvMin, SocRsvMax
	connected       bool    // 802 SetOp / SetInvState
	w               float64 // positive: discharging
	chargedWh       float64
	dischargedWh    float64
	h               batHandles
	ahRtg           float64
}

type batHandles struct {
	soc, dod, soh, nCyc, chaSt, hb, state, v, cellVMax, cellVMin, cellVAvg, a, w handle
	chaState, storAval, inBatV, chaSt124                                         handle
	whAvail, soc713, soh713                                                      handle
}

// Battery model constants.
const (
	batteryNominalV = 51.2
	batteryCells    = 16
	batteryEff      = 0.96 // one way
	// batteryTaper limits the power near a SoC bound to reach it in about
	// 5 minutes: W per % of headroom per Wh of capacity.
	batteryTaper = 12.0 / 100
)

func newBattery(d *Device) (*battery, error) {
	c := d.cfg
	b := &battery{
		capWh: c.CapacityWh, maxW: c.RatedW, soc: c.SoCPct, socMin: 5, socMax: 100, soh: 98,
		cycles0: 120 + float64(idHash(c.ID)%200), connected: true,
		wChaMax: c.RatedW, inWRte: 100, outWRte: 100, minRsv: 5, rsvMin: 5, rsvMax: 100,
		ahRtg: math.Round(c.CapacityWh / batteryNominalV),
	}
	// 802 A is int16: at the lowest voltage the rated current must fit.
	aSF := -2
	if c.RatedW/44 > 320 {
		aSF = -1
	}
	aMax := math.Round(c.RatedW / 44)
	specs := []modelSpec{
		{id: 1},
		{
			id: 124,
			sf: sfs{"WChaMax_SF": 0, "WChaDisChaGra_SF": 0, "VAChaMax_SF": 0, "MinRsvPct_SF": 0, "InOutWRte_SF": 0,
				"ChaState_SF": -1, "StorAval_SF": -1, "InBatV_SF": -1},
			raw: raws{"StorCtl_Mod": 0, "ChaGriSet": 0}, // charge from PV only
			val: vals{"WChaMax": c.RatedW, "VAChaMax": c.RatedW, "WChaGra": 100, "WDisChaGra": 100,
				"MinRsvPct": b.minRsv, "OutWRte": 100, "InWRte": 100,
				"InOutWRte_WinTms": 0, "InOutWRte_RvrtTms": 0, "InOutWRte_RmpTms": 0},
		},
		{
			id:  713,
			sf:  sfs{"WH_SF": 0, "Pct_SF": -1},
			raw: raws{"Sta": 0}, // OK
			val: vals{"WHRtg": c.CapacityWh},
		},
		{
			id: 802,
			sf: sfs{"AHRtg_SF": 0, "WHRtg_SF": 0, "WChaDisChaMax_SF": 0, "AMax_SF": 0, "W_SF": 0,
				"SoC_SF": -1, "DoD_SF": -1, "SoH_SF": -1, "V_SF": -1, "CellV_SF": -3, "A_SF": aSF},
			// Remote control, lithium ion, connected and started.
			raw: raws{"LocRemCtl": 0, "Typ": 4, "Evt1": 0, "Evt2": 0, "EvtVnd1": 0, "EvtVnd2": 0,
				"SetOp": 1, "SetInvState": 3},
			val: vals{"AHRtg": b.ahRtg, "WHRtg": c.CapacityWh, "WChaRteMax": c.RatedW, "WDisChaRteMax": c.RatedW,
				"SoCMax": b.socMax, "SoCMin": b.socMin, "SocRsvMax": b.rsvMax, "SoCRsvMin": b.rsvMin,
				"CtrlHb": 0, "AlmRst": 0, "VMax": 57.6, "VMin": 44.8, "AChaMax": aMax, "ADisChaMax": aMax,
				"CellVMaxStr": 1, "CellVMaxMod": 1, "CellVMinStr": 1, "CellVMinMod": 2},
		},
	}
	if c.DER {
		// DER storage only (713, 802): no 124, so no power setpoint.
		specs = slices.DeleteFunc(specs, func(m modelSpec) bool { return m.id == 124 })
	}
	err := d.build(defaultBase, specs, func(bb *builder) {
		h := &b.h
		bb.bindAll(802, useMeasured, named{&h.soc, "SoC"}, named{&h.dod, "DoD"}, named{&h.soh, "SoH"}, named{&h.v, "V"},
			named{&h.cellVMax, "CellVMax"}, named{&h.cellVMin, "CellVMin"}, named{&h.cellVAvg, "CellVAvg"},
			named{&h.a, "A"}, named{&h.w, "W"})
		bb.bindAll(802, useState, named{&h.nCyc, "NCyc"}, named{&h.chaSt, "ChaSt"}, named{&h.hb, "Hb"},
			named{&h.state, "State"})
		if !c.DER {
			bb.bindAll(124, useMeasured, named{&h.chaState, "ChaState"}, named{&h.storAval, "StorAval"},
				named{&h.inBatV, "InBatV"})
			bb.bindAll(124, useState, named{&h.chaSt124, "ChaSt"})
		}
		bb.bindAll(713, useMeasured, named{&h.whAvail, "WHAvail"}, named{&h.soc713, "SoC"}, named{&h.soh713, "SoH"})
	})
	if err != nil {
		return nil, err
	}
	b.decodeControls(d)
	return b, nil
}

// bounds are the SoC limits in force: hardware and reserve settings.
func (b *battery) bounds() (floor, ceil float64) {
	floor = math.Max(b.socMin, math.Max(b.minRsv, b.rsvMin))
	ceil = math.Min(b.socMax, b.rsvMax)
	return floor, math.Max(floor, ceil)
}

// dispatch sets the battery's power for a surplus (net > 0, W available
// to charge) or a deficit (net < 0, W to cover) and returns it (positive =
// discharging). On its own the battery takes the surplus and covers the
// deficit (self-consumption). 124's StorCtl_Mod bounds that: bit 0 caps
// charging at InWRte % of the charge rating, bit 1 discharging at OutWRte
// % of the rating; a negative OutWRte is a charge the battery must take,
// a negative InWRte a discharge it must give (the convention of Fronius
// GEN24 and the clients that drive it: evcc, OpenEMS), so InWRte -p,
// OutWRte p is a discharge of p %, InWRte p, OutWRte -p a charge of p %
// and both 0 a hold. Beyond the PV surplus the battery charges from the
// grid only with ChaGriSet GRID. Near a SoC bound (hardware, 124
// MinRsvPct, 802 reserves) the power tapers, whatever it was asked.
func (b *battery) dispatch(net float64) float64 {
	b.w = 0
	if !b.connected {
		return 0
	}
	floor, ceil := b.bounds()
	taper := b.capWh * batteryTaper
	chaMax, disMax := math.Min(b.maxW, b.wChaMax), b.maxW
	lo, hi := -chaMax, disMax // the power window (positive discharging)
	if b.storCtl&1 != 0 {
		lo = -chaMax * math.Max(-100, math.Min(100, b.inWRte)) / 100
	}
	if b.storCtl&2 != 0 {
		hi = disMax * math.Max(-100, math.Min(100, b.outWRte)) / 100
	}
	lo = math.Min(lo, hi)
	w := math.Max(lo, math.Min(hi, -net))
	if w < 0 && !b.chaGrid {
		w = math.Max(w, -math.Max(0, net)) // PV's surplus only
	}
	switch {
	case w < 0:
		w = -math.Min(-w, math.Max(0, (ceil-b.soc)*taper))
	case w > 0:
		w = math.Min(w, math.Max(0, (b.soc-floor)*taper))
	}
	if math.Abs(w) >= 1 {
		b.w = w
	}
	return b.w
}

// integrate advances the state of charge by hours at the current power.
func (b *battery) integrate(hours float64) {
	if b.w < 0 {
		e := -b.w * hours
		b.chargedWh += e
		b.soc += e * batteryEff / b.capWh * 100
	} else if b.w > 0 {
		e := b.w * hours
		b.dischargedWh += e
		b.soc -= e / batteryEff / b.capWh * 100
	}
	b.soc = math.Max(0, math.Min(100, b.soc))
}

func (b *battery) decodeControls(d *Device) {
	st, bat := d.inst(124), d.inst(802)
	if st == nil { // DER storage only: no 124 control
		b.wChaMax, b.storCtl, b.inWRte, b.outWRte, b.chaGrid, b.minRsv = b.maxW, 0, 100, 100, false, b.socMin
	} else {
		b.decode124(st)
	}
	b.rsvMin = floatOr(bat, "SoCRsvMin", b.socMin)
	b.rsvMax = floatOr(bat, "SocRsvMax", b.socMax)
	b.connected = rawOr(bat, "SetOp", 1) != 2 && rawOr(bat, "SetInvState", 3) != 1
}

// decode124 reads 124's storage control.
func (b *battery) decode124(st *sunspec.Instance) {
	b.wChaMax = floatOr(st, "WChaMax", b.maxW)
	b.storCtl = rawOr(st, "StorCtl_Mod", 0)
	b.inWRte = floatOr(st, "InWRte", 100)
	b.outWRte = floatOr(st, "OutWRte", 100)
	b.chaGrid = rawOr(st, "ChaGriSet", 0) == 1
	b.minRsv = floatOr(st, "MinRsvPct", b.socMin)
}

// afterWrite applies a write at now: the controls, and 124's reversion
// timer (InOutWRte_RvrtTms), started by a write of the storage control
// while StorCtl_Mod is on and stopped when it is off.
func (b *battery) afterWrite(d *Device, touched []pointRef, now time.Time) {
	b.decodeControls(d)
	if touches(touched, 124, "StorCtl_Mod", "InWRte", "OutWRte", "InOutWRte_RvrtTms") {
		b.rvrt.follow(b.storCtl != 0, now, floatOr(d.inst(124), "InOutWRte_RvrtTms", 0), d.cfg.IgnoreRevert)
	}
}

// revert applies 124's reversion when its timer expired at t without a
// rewrite: StorCtl_Mod off and both rates 100 %, the battery back to its
// own self-consumption.
func (b *battery) revert(d *Device, t time.Time) {
	if !b.rvrt.due(t) {
		return
	}
	b.rvrt.stop()
	st := d.inst(124)
	_ = st.SetRaw("StorCtl_Mod", 0)
	_ = st.Set("InWRte", 100)
	_ = st.Set("OutWRte", 100)
	b.decodeControls(d)
	d.log.Info("storage control reverted", "model", 124)
}

// render writes the battery's state at t into the image.
func (b *battery) render(d *Device, t time.Time) {
	h := &b.h
	floor, ceil := b.bounds()
	chaSt := uint64(6) // holding
	switch {
	case !b.connected:
		chaSt = 1 // off
	case b.w < 0:
		chaSt = 4 // charging
	case b.w > 0:
		chaSt = 3 // discharging
	case b.soc >= ceil-0.1:
		chaSt = 5 // full
	case b.soc <= floor+0.1:
		chaSt = 2 // empty
	}
	state := uint64(3) // connected
	if !b.connected {
		state = 1
	}
	v := 48 + 6*b.soc/100 - 0.8*b.w/b.maxW
	cell := v / batteryCells
	d.put(h.soc, b.soc)
	d.put(h.dod, 100-b.soc)
	d.put(h.soh, b.soh)
	d.put(h.nCyc, math.Floor(b.cycles0+b.dischargedWh/b.capWh))
	d.putRaw(h.chaSt, chaSt)
	d.putRaw(h.hb, uint64(uint16(t.Unix())))
	d.putRaw(h.state, state)
	d.put(h.v, v)
	d.put(h.cellVAvg, cell)
	d.put(h.cellVMax, cell+0.012)
	d.put(h.cellVMin, cell-0.009)
	d.put(h.a, b.w/v)
	d.put(h.w, b.w)
	if h.chaSt124.p != nil { // 124 (not on a DER-only battery)
		d.putRaw(h.chaSt124, chaSt)
		d.put(h.chaState, b.soc)
		d.put(h.storAval, math.Max(0, b.soc-b.minRsv)/100*b.ahRtg)
		d.put(h.inBatV, v)
	}
	d.put(h.whAvail, b.capWh*b.soc/100*b.soh/100)
	d.put(h.soc713, b.soc)
	d.put(h.soh713, b.soh)
}
