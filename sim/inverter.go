package sim

import (
	"math"
	"strconv"
	"time"

	"plantd/sunspec"
)

// inverter is the physics and control state of a PV inverter, classic or
// DER. Guarded by Plant.mu.
type inverter struct {
	der    bool
	ratedW float64 // WRtg / WMaxRtg
	peakW  float64 // PV array peak power

	// Controls, decoded from the image by the writes that touch them
	// (controls.go).
	wmax      float64 // 121 WMax / 702 WMax
	limEna    bool    // the limit is enabled
	limEnaReg bool    // the enable register as last written
	limPct    float64 // the limit setpoint in effect, % of wmax
	lim       ramp    // the limit in % of wmax, moving to limTarget
	limRvrt   rvrtTimer
	connected bool // 123 Conn
	connRvrt  rvrtTimer
	pfEna     bool
	pf        float64 // signed: negative absorbs reactive power
	pfRamp    ramp    // reactive/active power ratio, moving to pfTarget
	pfRvrt    rvrtTimer
	pfAbsEna  bool    // 704 PFWAbs: stored; a PV inverter never absorbs W
	pfAbs     float64 // signed like pf
	pfAbsRvrt rvrtTimer
	wsetEna   bool    // 704 WSetEna
	wsetPct   float64 // 704 WSet or WSetPct in % of wmax
	wsetRvrt  rvrtTimer
	curves    []curveCtl

	// Physics at the instant of Plant.t.
	availW, acW, varW float64
	sleeping          bool
	throttled         bool
	energyWh          float64

	classic *classicHandles
	dh      *derHandles
}

type classicHandles struct {
	a, w, hz, va, vAr, pf, wh, dca, dcv, dcw, tmpCab, tmpSnk, st  handle
	aph, ppv, phv                                                 [3]handle
	pvConn, ecpConn, actWh, actVAh, wAval, varAval, stActCtl, tms handle
}

type derHandles struct {
	st, invSt, connSt, w, va, vAr, pf, a, llv, lnv, hz, totWhInj, tmpCab, tmpSnk handle
	wl, val, varl, pfl, al, vll, vl, whl                                         [3]handle
	rvrtRem, wsetRem, pfInjRem, pfAbsRem                                         handle
}

// epoch2000 is SunSpec's epoch (122 Tms counts seconds since it).
var epoch2000 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// newInverter builds the image and state of a classic or DER inverter.
func newInverter(d *Device) (*inverter, error) {
	v := &inverter{
		der:    d.cfg.DER,
		ratedW: d.cfg.RatedW,
		peakW:  d.cfg.RatedW * dcACRatio,
		wmax:   d.cfg.RatedW,
		limPct: 100,
		// A few years of yield, different per device; never 0.
		energyWh: d.cfg.RatedW*5.5*1000 + float64(idHash(d.cfg.ID)%100000) + 1,
	}
	var err error
	if v.der {
		err = d.build(defaultBase, derSpecs(d.cfg), func(b *builder) { v.dh = resolveDER(b) })
	} else {
		err = d.build(defaultBase, classicSpecs(d.cfg), func(b *builder) { v.classic = resolveClassic(b) })
	}
	if err != nil {
		return nil, err
	}
	v.initControls(d)
	v.limEnaReg = v.limEna
	return v, nil
}

// idHash is a small deterministic hash of a device id.
func idHash(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}

// classicSpecs are the models of a classic inverter rated c.RatedW: the
// 12x status and controls, the legacy curves 126 to 136.
func classicSpecs(c DeviceConfig) []modelSpec {
	r := c.RatedW
	ratedA := r / 3 / 230 * 1.1
	// Volt-var: reactive power in % of VArMax (DeptRef 2); volt-watt:
	// active power in % of WMax (DeptRef 1); both ramp in 10 s and at
	// 100 %/min.
	voltVar := vals{"DeptRef": 2, "RmpTms": 10, "RmpDecTmm": 100, "RmpIncTmm": 100}
	voltWatt := vals{"DeptRef": 1, "RmpPt1Tms": 10, "RmpDecTmm": 100, "RmpIncTmm": 100}
	voltSFs := sfs{"V_SF": 0, "DeptRef_SF": 0, "RmpIncDec_SF": 0}
	return []modelSpec{
		{id: 1},
		{
			id: 103,
			sf: sfs{"A_SF": -2, "V_SF": -1, "W_SF": 0, "Hz_SF": -2, "VA_SF": 0, "VAr_SF": 0, "PF_SF": -1,
				"WH_SF": 0, "DCA_SF": -2, "DCV_SF": -1, "DCW_SF": 0, "Tmp_SF": -1},
			raw: raws{"St": 2, "Evt1": 0, "Evt2": 0},
		},
		{
			id:  120,
			sf:  sfs{"WRtg_SF": 0, "VARtg_SF": 0, "VArRtg_SF": 0, "ARtg_SF": -1, "PFRtg_SF": -2},
			raw: raws{"DERTyp": 4}, // PV
			val: vals{"WRtg": r, "VARtg": r, "ARtg": ratedA,
				"VArRtgQ1": 0.6 * r, "VArRtgQ2": 0.6 * r, "VArRtgQ3": -0.6 * r, "VArRtgQ4": -0.6 * r,
				"PFRtgQ1": 0.8, "PFRtgQ2": -0.8, "PFRtgQ3": -0.8, "PFRtgQ4": 0.8},
		},
		{
			id: 121,
			sf: sfs{"WMax_SF": 0, "VRef_SF": 0, "VRefOfs_SF": 0, "VMinMax_SF": 0, "VAMax_SF": 0, "VArMax_SF": 0,
				"WGra_SF": 0, "MaxRmpRte_SF": 0, "PFMin_SF": -2, "ECPNomHz_SF": -2},
			raw: raws{"VArAct": 1, "ClcTotVA": 1}, // switch, vector
			val: vals{"WMax": r, "VRef": 230, "VRefOfs": 0, "VMax": 253, "VMin": 196, "VAMax": r,
				"VArMaxQ1": 0.6 * r, "VArMaxQ2": 0.6 * r, "VArMaxQ3": -0.6 * r, "VArMaxQ4": -0.6 * r,
				"WGra": 10, "MaxRmpRte": 100, "ECPNomHz": 50,
				"PFMinQ1": 0.8, "PFMinQ2": -0.8, "PFMinQ3": -0.8, "PFMinQ4": 0.8},
		},
		{
			id:  122,
			sf:  sfs{"VArAval_SF": 0, "WAval_SF": 0, "Ris_SF": 3},
			raw: raws{"PVConn": 1, "StorConn": 0, "ECPConn": 1, "StSetLimMsk": 0, "StActCtl": 0, "RtSt": 0},
			str: strs{"TmSrc": "RTC"},
			val: vals{"Ris": 2000e3},
		},
		{
			id:  123,
			sf:  sfs{"WMaxLimPct_SF": -1, "OutPFSet_SF": -3, "VArPct_SF": 0},
			raw: raws{"Conn": 1, "VArPct_Mod": 2}, // VArPct in % of VArMax
			val: vals{"WMaxLimPct": 100, "OutPFSet": 1},
			zero: []string{"Conn_WinTms", "Conn_RvrtTms", "WMaxLimPct_WinTms", "WMaxLimPct_RvrtTms",
				"WMaxLimPct_RmpTms", "WMaxLim_Ena", "OutPFSet_WinTms", "OutPFSet_RvrtTms", "OutPFSet_RmpTms",
				"OutPFSet_Ena", "VArWMaxPct", "VArMaxPct", "VArAvalPct", "VArPct_WinTms", "VArPct_RvrtTms",
				"VArPct_RmpTms", "VArPct_Ena"},
		},
		legacyCurves(126, voltSFs, "V", "VAr",
			curve{"VV-EN50549", [][2]float64{{92, 30}, {98, 0}, {102, 0}, {108, -30}}, voltVar},
			curve{"VV-WIDE", [][2]float64{{94, 44}, {97, 0}, {103, 0}, {106, -44}}, voltVar}),
		{
			id:  127,
			sf:  sfs{"WGra_SF": 0, "HzStrStop_SF": -2, "RmpIncDec_SF": 0},
			raw: raws{"HysEna": 1, "ModEna": 0},
			val: vals{"WGra": 40, "HzStr": 0.2, "HzStop": 0.05, "HzStopWGra": 10},
		},
		rideThrough(129, "V", 0, "LVRT", [][2]float64{{0.15, 15}, {0.5, 45}, {1.5, 70}, {3, 85}}),
		rideThrough(130, "V", 0, "HVRT", [][2]float64{{0.1, 120}, {0.2, 115}, {1, 112}, {5, 110}}),
		legacyCurves(132, voltSFs, "V", "W",
			curve{"VW-STD", [][2]float64{{100, 100}, {106, 100}, {108, 50}, {110, 0}}, voltWatt},
			curve{"VW-SOFT", [][2]float64{{100, 100}, {105, 100}, {108, 40}, {110, 0}}, voltWatt}),
		// One curve only: with two, 134 would be 128 registers, more than
		// one read can fetch together with its scale factors.
		legacyCurves(134, sfs{"Hz_SF": -2, "W_SF": 0, "RmpIncDec_SF": 0}, "Hz", "W",
			curve{"FW-STD", [][2]float64{{50.2, 100}, {50.5, 90}, {51, 50}, {51.5, 0}}, vals{
				"RmpPT1Tms": 5, "RmpDecTmm": 100, "RmpIncTmm": 100, "RmpRsUp": 10, "SnptW": 1,
				"WRef": 100, "WRefStrHz": 50.2, "WRefStopHz": 50.05}}),
		rideThrough(135, "Hz", -2, "LFRT", [][2]float64{{0.1, 47.5}, {1, 48}, {5, 48.5}, {10, 49}}),
		rideThrough(136, "Hz", -2, "HFRT", [][2]float64{{0.1, 52}, {1, 51.5}, {5, 51}, {10, 50.5}}),
	}
}

// curve is one curve group of a curve model: its CrvNam (none when
// empty), its (x, y) points and the values of its other points.
type curve struct {
	name string
	pts  [][2]float64
	vals vals
}

// pointSetter stores the (x, y) points of a curve group as its model
// names them.
type pointSetter func(b *builder, in *sunspec.Instance, gi *sunspec.GroupInstance, pts [][2]float64)

// fillCurves fills the top-level groups named group of a curve model, one
// per curve: its values, ActPt, ReadOnly 0, CrvNam and points.
func fillCurves(group string, curves []curve, setPoints pointSetter) func(*builder, *sunspec.Instance) {
	return func(b *builder, in *sunspec.Instance) {
		gis := b.groups(&in.Root, group, len(curves))
		if gis == nil {
			return
		}
		for i, c := range curves {
			gi := &gis[i]
			b.setAll(in, gi, c.vals)
			b.setIn(in, gi, "ActPt", float64(len(c.pts)))
			b.setIn(in, gi, "ReadOnly", 0)
			if c.name != "" {
				curveName(b, in, gi, c.name)
			}
			setPoints(b, in, gi, c.pts)
		}
	}
}

// legacyCurves is a legacy curve model (126 to 136) with the scale factors
// sf and the given curves, whose points are named x1, y1, x2, y2...: no
// mode enabled, curve 1 active, 4 points a curve.
func legacyCurves(id uint16, sf sfs, x, y string, curves ...curve) modelSpec {
	return modelSpec{
		id:     id,
		counts: map[string]int{"curve": len(curves)},
		sf:     sf,
		raw:    raws{"ModEna": 0},
		val:    vals{"ActCrv": 1, "WinTms": 0, "RvrtTms": 0, "RmpTms": 0, "NCrv": float64(len(curves)), "NPt": 4},
		fill: fillCurves("curve", curves, func(b *builder, in *sunspec.Instance, gi *sunspec.GroupInstance, pts [][2]float64) {
			for j, pt := range pts {
				n := strconv.Itoa(j + 1)
				b.setIn(in, gi, x+n, pt[0])
				b.setIn(in, gi, y+n, pt[1])
			}
		}),
	}
}

// rideThrough is a legacy ride-through model (129, 130, 135, 136) with one
// must-disconnect curve of (time, y) points; ySF is the scale of y.
func rideThrough(id uint16, y string, ySF int, name string, pts [][2]float64) modelSpec {
	return legacyCurves(id, sfs{"Tms_SF": -2, y + "_SF": ySF}, "Tms", y, curve{name: name, pts: pts})
}

// curveName sets a curve group's CrvNam string.
func curveName(b *builder, in *sunspec.Instance, gi *sunspec.GroupInstance, name string) {
	if b.err != nil {
		return
	}
	i := gi.Group.PointIndex("CrvNam")
	if i < 0 {
		return
	}
	p := &gi.Group.Points[i]
	b.fail(sunspec.EncodeString(p, name, in.Regs[gi.Offset+int(p.Offset):]))
}

// resolveClassic resolves the handles a classic inverter renders.
func resolveClassic(b *builder) *classicHandles {
	h := &classicHandles{}
	b.bindAll(103, useMeasured, named{&h.a, "A"}, named{&h.w, "W"}, named{&h.hz, "Hz"}, named{&h.va, "VA"},
		named{&h.vAr, "VAr"}, named{&h.pf, "PF"}, named{&h.dca, "DCA"}, named{&h.dcv, "DCV"}, named{&h.dcw, "DCW"},
		named{&h.tmpCab, "TmpCab"}, named{&h.tmpSnk, "TmpSnk"})
	b.bindAll(103, useState, named{&h.wh, "WH"}, named{&h.st, "St"})
	b.bindPhases(103, useMeasured, phased{&h.aph, "Aph", phaseABC}, phased{&h.ppv, "PPVph", phaseAB},
		phased{&h.phv, "PhVph", phaseABC})
	b.bindAll(122, useMeasured, named{&h.wAval, "WAval"}, named{&h.varAval, "VArAval"})
	b.bindAll(122, useState, named{&h.pvConn, "PVConn"}, named{&h.ecpConn, "ECPConn"}, named{&h.actWh, "ActWh"},
		named{&h.actVAh, "ActVAh"}, named{&h.stActCtl, "StActCtl"}, named{&h.tms, "Tms"})
	return h
}

// derSpecs are the models of a DER (IEEE 1547) inverter rated c.RatedW:
// measurements, ratings and settings, controls, the curves 705 to 711.
func derSpecs(c DeviceConfig) []modelSpec {
	r := c.RatedW
	ratedA := r / 3 / 230 * 1.1
	// Volt-var in % of VarMax (DeptRef 1), reactive power priority.
	voltVar := vals{"DeptRef": 1, "Pri": 1, "VRef": 100, "VRefAuto": 100, "VRefAutoEna": 0, "VRefAutoTms": 300,
		"RspTms": 5}
	return []modelSpec{
		{id: 1},
		{
			id: 701,
			sf: sfs{"A_SF": -2, "V_SF": -1, "Hz_SF": -3, "W_SF": 0, "PF_SF": -3, "VA_SF": 0, "Var_SF": 0,
				"TotWh_SF": 0, "TotVarh_SF": 0, "Tmp_SF": -1},
			// Three phase, grid following.
			raw: raws{"ACType": 2, "St": 0, "InvSt": 1, "ConnSt": 0, "Alrm": 0, "DERMode": 1},
			val: vals{"TotWhAbs": 1520, "TotWhAbsL1": 506, "TotWhAbsL2": 506, "TotWhAbsL3": 506},
		},
		{
			id: 702,
			sf: sfs{"W_SF": 0, "PF_SF": -3, "VA_SF": 0, "Var_SF": 0, "V_SF": -1, "A_SF": -1},
			val: vals{
				"WMaxRtg": r, "WOvrExtRtg": r, "WOvrExtRtgPF": 0.9, "WUndExtRtg": r, "WUndExtRtgPF": 0.9,
				"VAMaxRtg": r, "VarMaxInjRtg": 0.55 * r, "VarMaxAbsRtg": 0.55 * r, "VNomRtg": 230,
				"VMaxRtg": 264.5, "VMinRtg": 184, "AMaxRtg": ratedA, "PFOvrExtRtg": 0.8, "PFUndExtRtg": 0.8,
				"WMax": r, "WMaxOvrExt": r, "WOvrExtPF": 0.9, "WMaxUndExt": r, "WUndExtPF": 0.9,
				"VAMax": r, "VarMaxInj": 0.55 * r, "VarMaxAbs": 0.55 * r, "VNom": 230, "VMax": 253,
				"VMin": 207, "AMax": ratedA, "PFOvrExt": 0.8, "PFUndExt": 0.8,
			},
			raw: raws{
				"NorOpCatRtg": 1, // CAT_B
				"AbnOpCatRtg": 1, // CAT_2
				// MAX_W, FIXED_W, FIXED_PF, VOLT_VAR, FREQ_WATT, LV_TRIP, HV_TRIP, VOLT_WATT
				"CtrlModes":       1<<0 | 1<<1 | 1<<3 | 1<<4 | 1<<5 | 1<<7 | 1<<8 | 1<<10,
				"IntIslandCatRtg": 1, "IntIslandCat": 1,
			},
		},
		{
			id: 704,
			sf: sfs{"PF_SF": -3, "WMaxLimPct_SF": -1, "WSet_SF": 0, "WSetPct_SF": -1, "VarSet_SF": 0,
				"VarSetPct_SF": -1},
			zero: []string{"PFWInjEna", "PFWInjEnaRvrt", "PFWInjRvrtTms", "PFWInjRvrtRem", "PFWAbsEna",
				"PFWAbsEnaRvrt", "PFWAbsRvrtTms", "PFWAbsRvrtRem", "WMaxLimPctEna", "WMaxLimPctEnaRvrt",
				"WMaxLimPctRvrtTms", "WMaxLimPctRvrtRem", "WSetEna", "WSetMod", "WSet", "WSetRvrt", "WSetPct",
				"WSetPctRvrt", "WSetEnaRvrt", "WSetRvrtTms", "WSetRvrtRem", "VarSetEna", "VarSet", "VarSetRvrt",
				"VarSetPct", "VarSetPctRvrt", "VarSetEnaRvrt", "VarSetRvrtTms", "VarSetRvrtRem"},
			val: vals{"WMaxLimPct": 100, "WMaxLimPctRvrt": 100, "WRmp": 10, "VarRmp": 10},
			// VarSet in % of VarMax, reactive priority, WRmp in % of W_MAX.
			raw: raws{"VarSetMod": 1, "VarSetPri": 1, "WRmpRef": 1, "AntiIslEna": 1},
			groups: map[string]vals{
				"PFWInj": unityPF, "PFWInjRvrt": unityPF, "PFWAbs": unityPF, "PFWAbsRvrt": unityPF,
			},
		},
		derCurves(705, "Var",
			curve{pts: [][2]float64{{92, 30}, {98, 0}, {102, 0}, {108, -30}}, vals: voltVar},
			curve{pts: [][2]float64{{94, 44}, {97, 0}, {103, 0}, {106, -44}}, vals: voltVar}),
		// Volt-watt in % of WMax (DeptRef 0).
		derCurves(706, "W",
			curve{pts: [][2]float64{{100, 100}, {106, 100}, {108, 50}, {110, 0}}, vals: vals{"DeptRef": 0, "RspTms": 10}}),
		tripModel(707, "V", 0, [3][][2]float64{
			{{0, 0.16}, {45, 0.16}, {45, 2}, {88, 2}},
			{{0, 0.32}, {50, 0.32}, {50, 10}, {88, 21}},
			{{0, 0}, {30, 0}, {50, 0.08}, {50, 0.08}},
		}),
		tripModel(708, "V", 0, [3][][2]float64{
			{{120, 0.16}, {115, 0.16}, {115, 1}, {110, 13}},
			{{120, 0.2}, {115, 0.5}, {112, 1.5}, {110, 20}},
			{{125, 0}, {120, 0}, {120, 0.16}, {118, 0.16}},
		}),
		tripModel(709, "Hz", -2, [3][][2]float64{
			{{47, 0.16}, {47.5, 0.16}, {47.5, 180}, {49.5, 180}},
			{{47, 0.2}, {47.5, 1}, {48.5, 300}, {49.5, 300}},
			{{46.5, 0}, {47, 0}, {47, 0.1}, {47, 0.1}},
		}),
		tripModel(710, "Hz", -2, [3][][2]float64{
			{{52, 0.16}, {51.5, 0.16}, {51.5, 180}, {50.5, 180}},
			{{52, 0.2}, {51.5, 1}, {51, 300}, {50.5, 300}},
			{{52.5, 0}, {52, 0}, {52, 0.1}, {52, 0.1}},
		}),
		{
			id:     711,
			counts: map[string]int{"NCtl": 1},
			sf:     sfs{"Db_SF": -3, "K_SF": -3, "RspTms_SF": 0},
			raw:    raws{"Ena": 0, "AdptCtlRslt": 1}, // adoption completed
			val:    vals{"AdptCtlReq": 0, "RvrtTms": 0, "RvrtRem": 0, "RvrtCtl": 0},
			groups: map[string]vals{
				"Ctl": {"DbOf": 0.2, "DbUf": 0.2, "KOf": 0.05, "KUf": 0.05, "RspTms": 5, "PMin": 0, "ReadOnly": 0},
			},
		},
	}
}

// unityPF is a 704 power factor group at unity, not excited.
var unityPF = vals{"PF": 1, "Ext": 0}

// derCurves is a DER curve model (705 volt-var, 706 volt-watt) with the
// given curves of (V, y) points: disabled, adoption completed, no
// reversion, scale factors 0.
func derCurves(id uint16, y string, curves ...curve) modelSpec {
	return modelSpec{
		id:     id,
		counts: map[string]int{"NCrv": len(curves), "NPt": 4},
		sf:     sfs{"V_SF": 0, "DeptRef_SF": 0, "RspTms_SF": 0},
		raw:    raws{"Ena": 0, "AdptCrvRslt": 1},
		val:    vals{"AdptCrvReq": 0, "RvrtTms": 0, "RvrtRem": 0, "RvrtCrv": 0},
		fill: fillCurves("Crv", curves, func(b *builder, in *sunspec.Instance, gi *sunspec.GroupInstance, pts [][2]float64) {
			derPoints(b, in, gi, "V", y, pts)
		}),
	}
}

// derPoints sets the Pt groups of a DER curve to (x, y) points.
func derPoints(b *builder, in *sunspec.Instance, gi *sunspec.GroupInstance, x, y string, pts [][2]float64) {
	ps := b.groups(gi, "Pt", len(pts))
	for j := range ps {
		b.setIn(in, &ps[j], x, pts[j][0])
		b.setIn(in, &ps[j], y, pts[j][1])
	}
}

// tripModel is a DER trip model (707 to 710) with one curve set: must
// trip, may trip and momentary cessation curves of (y, seconds) points.
func tripModel(id uint16, y string, ySF int, curves [3][][2]float64) modelSpec {
	return modelSpec{
		id:     id,
		counts: map[string]int{"NCrvSet": 1, "NPt": 4},
		sf:     sfs{y + "_SF": ySF, "Tms_SF": -2},
		raw:    raws{"Ena": 1, "AdptCrvRslt": 1},
		val:    vals{"AdptCrvReq": 0},
		fill: func(b *builder, in *sunspec.Instance) {
			sets := b.groups(&in.Root, "Crv", 1)
			if sets == nil {
				return
			}
			b.setIn(in, &sets[0], "ReadOnly", 0)
			for i, g := range []string{"MustTrip", "MayTrip", "MomCess"} {
				gs := b.groups(&sets[0], g, 1)
				if gs == nil {
					return
				}
				b.setIn(in, &gs[0], "ActPt", float64(len(curves[i])))
				derPoints(b, in, &gs[0], y, "Tms", curves[i])
			}
		},
	}
}

// resolveDER resolves the handles a DER inverter renders.
func resolveDER(b *builder) *derHandles {
	h := &derHandles{}
	b.bindAll(701, useMeasured, named{&h.w, "W"}, named{&h.va, "VA"}, named{&h.vAr, "Var"}, named{&h.pf, "PF"},
		named{&h.a, "A"}, named{&h.llv, "LLV"}, named{&h.lnv, "LNV"}, named{&h.hz, "Hz"}, named{&h.tmpCab, "TmpCab"},
		named{&h.tmpSnk, "TmpSnk"})
	b.bindAll(701, useState, named{&h.st, "St"}, named{&h.invSt, "InvSt"}, named{&h.connSt, "ConnSt"},
		named{&h.totWhInj, "TotWhInj"})
	b.bindPhases(701, useMeasured, phased{&h.wl, "WL", phase123}, phased{&h.val, "VAL", phase123},
		phased{&h.varl, "VarL", phase123}, phased{&h.pfl, "PFL", phase123}, phased{&h.al, "AL", phase123},
		phased{&h.vll, "VL", phase12}, phased{&h.vl, "VL", phase123})
	b.bindPhases(701, useState, phased{&h.whl, "TotWhInjL", phase123})
	b.bindAll(704, useState, named{&h.rvrtRem, "WMaxLimPctRvrtRem"}, named{&h.wsetRem, "WSetRvrtRem"},
		named{&h.pfInjRem, "PFWInjRvrtRem"}, named{&h.pfAbsRem, "PFWAbsRvrtRem"})
	return h
}

// floatOr decodes a top-level point, or returns def when it is not
// implemented.
func floatOr(in *sunspec.Instance, name string, def float64) float64 {
	if v, err := in.Float(name); err == nil {
		return v
	}
	return def
}

// rawOr returns the raw bits of a top-level point, or def when it is not
// implemented.
func rawOr(in *sunspec.Instance, name string, def uint64) uint64 {
	if v, err := in.Value(name); err == nil && v.OK {
		return v.Raw
	}
	return def
}

// compute sets the inverter's output at t for the weather w.
func (v *inverter) compute(t time.Time, w *weather) {
	hw := math.Min(v.ratedW, v.wmax)
	avail := math.Min(pvAvailable(v.peakW, *w), hw)
	limit := math.Min(hw, math.Max(0, v.effectiveLimitPct(t))/100*v.wmax)
	v.availW = avail
	v.sleeping = avail < sleepThreshold
	out := math.Min(avail, limit)
	if v.sleeping || !v.connected {
		out = 0
	}
	v.acW = math.Max(0, out)
	v.throttled = !v.sleeping && v.connected && limit < avail-1
	v.varW = v.acW * v.pfRamp.at(t)
}

// lineV is the line-to-line voltage between two phases 120° apart.
func lineV(a, b float64) float64 { return math.Sqrt(a*a + b*b + a*b) }

// render writes the inverter's state at t into the image.
func (v *inverter) render(d *Device, t time.Time, w *weather) {
	p, q := v.acW, v.varW
	s := math.Hypot(p, q)
	var ph [3]float64 // phase currents
	for i := range ph {
		ph[i] = s / 3 / w.phaseV[i]
	}
	tmpCab := w.ambientC + 4 + 12*p/v.ratedW
	tmpSnk := w.ambientC + 3 + 25*p/v.ratedW
	pf := math.NaN()
	if p > 0 {
		pf = math.Copysign(p/s, q)
	}
	if v.der {
		h := v.dh
		st, inv, conn := uint64(1), uint64(3), uint64(1) // on, running, connected
		switch {
		case v.sleeping:
			st, inv, conn = 0, 1, 0 // off, sleeping, disconnected
		case v.throttled:
			inv = 4
		}
		d.putRaw(h.st, st)
		d.putRaw(h.invSt, inv)
		d.putRaw(h.connSt, conn)
		d.put(h.w, p)
		d.put(h.va, s)
		d.put(h.vAr, q)
		d.put(h.pf, pf)
		d.put(h.a, ph[0]+ph[1]+ph[2])
		d.put(h.llv, (lineV(w.phaseV[0], w.phaseV[1])+lineV(w.phaseV[1], w.phaseV[2])+lineV(w.phaseV[2], w.phaseV[0]))/3)
		d.put(h.lnv, (w.phaseV[0]+w.phaseV[1]+w.phaseV[2])/3)
		d.put(h.hz, w.hz)
		d.put(h.totWhInj, d.counterWh(v.energyWh))
		d.put(h.tmpCab, tmpCab)
		d.put(h.tmpSnk, tmpSnk)
		for i := range 3 {
			d.put(h.wl[i], p/3)
			d.put(h.val[i], s/3)
			d.put(h.varl[i], q/3)
			d.put(h.pfl[i], pf)
			d.put(h.al[i], ph[i])
			d.put(h.vll[i], lineV(w.phaseV[i], w.phaseV[(i+1)%3]))
			d.put(h.vl[i], w.phaseV[i])
			d.put(h.whl[i], math.Floor(d.counterWh(v.energyWh)/3))
		}
		v.renderControls(d, t)
		return
	}
	h := v.classic
	st := uint64(4) // MPPT
	switch {
	case v.sleeping:
		st = 2
	case !v.connected:
		st = 8 // standby
	case v.throttled:
		st = 5
	}
	d.putRaw(h.st, st)
	for i := range 3 {
		d.put(h.aph[i], ph[i])
		d.put(h.phv[i], w.phaseV[i])
		d.put(h.ppv[i], lineV(w.phaseV[i], w.phaseV[(i+1)%3]))
	}
	d.put(h.a, ph[0]+ph[1]+ph[2])
	d.put(h.w, p)
	d.put(h.hz, w.hz)
	d.put(h.va, s)
	d.put(h.vAr, q)
	d.put(h.pf, pf*100)
	d.put(h.wh, d.counterWh(v.energyWh))
	d.put(h.tmpCab, tmpCab)
	d.put(h.tmpSnk, tmpSnk)
	if v.sleeping {
		d.ni(h.dca)
		d.ni(h.dcv)
		d.ni(h.dcw)
	} else {
		vmp := dcVoltageMPP * (1 - 0.0035*(w.moduleC-25))
		dcw := p / invEfficiency
		if !v.connected || v.throttled {
			vmp *= 1.08 // off the maximum power point, towards open circuit
		}
		d.put(h.dcv, vmp)
		d.put(h.dcw, dcw)
		d.put(h.dca, dcw/vmp)
	}
	pvConn := uint64(1) // connected
	if !v.sleeping {
		pvConn |= 1 << 1 // available
		if p > 0 {
			pvConn |= 1 << 2 // operating
		}
	}
	d.putRaw(h.pvConn, pvConn)
	ecp := uint64(0)
	if v.connected && !v.sleeping {
		ecp = 1
	}
	d.putRaw(h.ecpConn, ecp)
	d.put(h.actWh, d.counterWh(v.energyWh))
	d.put(h.actVAh, math.Floor(v.energyWh))
	d.put(h.wAval, v.availW)
	if v.sleeping {
		d.put(h.varAval, 0)
	} else {
		d.put(h.varAval, 0.6*v.ratedW)
	}
	var act uint64
	if v.limEna {
		act |= 1 << 0 // FixedW
	}
	if v.pfEna {
		act |= 1 << 2 // FixedPF
	}
	d.putRaw(h.stActCtl, act)
	d.put(h.tms, math.Floor(t.Sub(epoch2000).Seconds()))
	v.renderControls(d, t)
}
