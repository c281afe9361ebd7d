package sim

import (
	"math"
	"time"

	"plantd/devices"
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
		der:    d.cfg.Kind == KindDERInverter,
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

func classicSpecs(c DeviceConfig) []modelSpec {
	r := c.RatedW
	ratedA := r / 3 / 230 * 1.1
	return []modelSpec{
		{id: 1},
		{id: 103, fill: func(b *builder, in *devices.Instance) {
			for _, s := range []struct {
				n  string
				sf int
			}{{"A_SF", -2}, {"V_SF", -1}, {"W_SF", 0}, {"Hz_SF", -2}, {"VA_SF", 0}, {"VAr_SF", 0}, {"PF_SF", -1},
				{"WH_SF", 0}, {"DCA_SF", -2}, {"DCV_SF", -1}, {"DCW_SF", 0}, {"Tmp_SF", -1}} {
				b.sf(in, s.n, s.sf)
			}
			b.raw(in, "St", 2)
			b.raw(in, "Evt1", 0)
			b.raw(in, "Evt2", 0)
		}},
		{id: 120, fill: func(b *builder, in *devices.Instance) {
			b.raw(in, "DERTyp", 4) // PV
			for _, n := range []string{"WRtg_SF", "VARtg_SF", "VArRtg_SF"} {
				b.sf(in, n, 0)
			}
			b.sf(in, "ARtg_SF", -1)
			b.sf(in, "PFRtg_SF", -2)
			b.set(in, "WRtg", r)
			b.set(in, "VARtg", r)
			b.set(in, "VArRtgQ1", 0.6*r)
			b.set(in, "VArRtgQ2", 0.6*r)
			b.set(in, "VArRtgQ3", -0.6*r)
			b.set(in, "VArRtgQ4", -0.6*r)
			b.set(in, "ARtg", ratedA)
			b.set(in, "PFRtgQ1", 0.8)
			b.set(in, "PFRtgQ2", -0.8)
			b.set(in, "PFRtgQ3", -0.8)
			b.set(in, "PFRtgQ4", 0.8)
		}},
		{id: 121, fill: func(b *builder, in *devices.Instance) {
			for _, n := range []string{"WMax_SF", "VRef_SF", "VRefOfs_SF", "VMinMax_SF", "VAMax_SF", "VArMax_SF", "WGra_SF", "MaxRmpRte_SF"} {
				b.sf(in, n, 0)
			}
			b.sf(in, "PFMin_SF", -2)
			b.sf(in, "ECPNomHz_SF", -2)
			b.set(in, "WMax", r)
			b.set(in, "VRef", 230)
			b.set(in, "VRefOfs", 0)
			b.set(in, "VMax", 253)
			b.set(in, "VMin", 196)
			b.set(in, "VAMax", r)
			b.set(in, "VArMaxQ1", 0.6*r)
			b.set(in, "VArMaxQ2", 0.6*r)
			b.set(in, "VArMaxQ3", -0.6*r)
			b.set(in, "VArMaxQ4", -0.6*r)
			b.set(in, "WGra", 10)
			b.set(in, "PFMinQ1", 0.8)
			b.set(in, "PFMinQ2", -0.8)
			b.set(in, "PFMinQ3", -0.8)
			b.set(in, "PFMinQ4", 0.8)
			b.raw(in, "VArAct", 1)   // switch
			b.raw(in, "ClcTotVA", 1) // vector
			b.set(in, "MaxRmpRte", 100)
			b.set(in, "ECPNomHz", 50)
		}},
		{id: 122, fill: func(b *builder, in *devices.Instance) {
			b.sf(in, "VArAval_SF", 0)
			b.sf(in, "WAval_SF", 0)
			b.sf(in, "Ris_SF", 3)
			b.raw(in, "PVConn", 1)
			b.raw(in, "StorConn", 0)
			b.raw(in, "ECPConn", 1)
			b.raw(in, "StSetLimMsk", 0)
			b.raw(in, "StActCtl", 0)
			b.str(in, "TmSrc", "RTC")
			b.raw(in, "RtSt", 0)
			b.set(in, "Ris", 2000e3)
		}},
		{id: 123, fill: func(b *builder, in *devices.Instance) {
			b.sf(in, "WMaxLimPct_SF", -1)
			b.sf(in, "OutPFSet_SF", -3)
			b.sf(in, "VArPct_SF", 0)
			for _, n := range []string{"Conn_WinTms", "Conn_RvrtTms", "WMaxLimPct_WinTms", "WMaxLimPct_RvrtTms",
				"WMaxLimPct_RmpTms", "WMaxLim_Ena", "OutPFSet_WinTms", "OutPFSet_RvrtTms", "OutPFSet_RmpTms",
				"OutPFSet_Ena", "VArWMaxPct", "VArMaxPct", "VArAvalPct", "VArPct_WinTms", "VArPct_RvrtTms",
				"VArPct_RmpTms", "VArPct_Ena"} {
				b.set(in, n, 0)
			}
			b.raw(in, "Conn", 1)
			b.set(in, "WMaxLimPct", 100)
			b.set(in, "OutPFSet", 1)
			b.raw(in, "VArPct_Mod", 2) // % of VArMax
		}},
		// Volt-var: reactive power in % of VArMax (DeptRef 2).
		legacyVoltCurves(126, "VAr", 2, "RmpTms",
			namedCurve{"VV-EN50549", [][2]float64{{92, 30}, {98, 0}, {102, 0}, {108, -30}}},
			namedCurve{"VV-WIDE", [][2]float64{{94, 44}, {97, 0}, {103, 0}, {106, -44}}}),
		{id: 127, fill: func(b *builder, in *devices.Instance) {
			b.sf(in, "WGra_SF", 0)
			b.sf(in, "HzStrStop_SF", -2)
			b.sf(in, "RmpIncDec_SF", 0)
			b.set(in, "WGra", 40)
			b.set(in, "HzStr", 0.2)
			b.set(in, "HzStop", 0.05)
			b.raw(in, "HysEna", 1)
			b.raw(in, "ModEna", 0)
			b.set(in, "HzStopWGra", 10)
		}},
		rideThrough(129, "Tms", "V", 0, [][2]float64{{0.15, 15}, {0.5, 45}, {1.5, 70}, {3, 85}}, "LVRT"),
		rideThrough(130, "Tms", "V", 0, [][2]float64{{0.1, 120}, {0.2, 115}, {1, 112}, {5, 110}}, "HVRT"),
		// Volt-watt: active power in % of WMax (DeptRef 1).
		legacyVoltCurves(132, "W", 1, "RmpPt1Tms",
			namedCurve{"VW-STD", [][2]float64{{100, 100}, {106, 100}, {108, 50}, {110, 0}}},
			namedCurve{"VW-SOFT", [][2]float64{{100, 100}, {105, 100}, {108, 40}, {110, 0}}}),
		// One curve only: with two, 134 would be 128 registers, more than
		// one read can fetch together with its scale factors.
		{id: 134, counts: map[string]int{"curve": 1}, fill: func(b *builder, in *devices.Instance) {
			legacyCurveHeader(b, in, 1)
			b.sf(in, "Hz_SF", -2)
			b.sf(in, "W_SF", 0)
			b.sf(in, "RmpIncDec_SF", 0)
			curves := b.groups(&in.Root, "curve", 1)
			if curves == nil {
				return
			}
			gi := &curves[0]
			b.setIn(in, gi, "ActPt", 4)
			legacyPoints(b, in, gi, "Hz", "W", [][2]float64{{50.2, 100}, {50.5, 90}, {51, 50}, {51.5, 0}})
			curveName(b, in, gi, "FW-STD")
			b.setIn(in, gi, "RmpPT1Tms", 5)
			b.setIn(in, gi, "RmpDecTmm", 100)
			b.setIn(in, gi, "RmpIncTmm", 100)
			b.setIn(in, gi, "RmpRsUp", 10)
			b.setIn(in, gi, "SnptW", 1)
			b.setIn(in, gi, "WRef", 100)
			b.setIn(in, gi, "WRefStrHz", 50.2)
			b.setIn(in, gi, "WRefStopHz", 50.05)
			b.setIn(in, gi, "ReadOnly", 0)
		}},
		rideThrough(135, "Tms", "Hz", -2, [][2]float64{{0.1, 47.5}, {1, 48}, {5, 48.5}, {10, 49}}, "LFRT"),
		rideThrough(136, "Tms", "Hz", -2, [][2]float64{{0.1, 52}, {1, 51.5}, {5, 51}, {10, 50.5}}, "HFRT"),
	}
}

// namedCurve is a curve of (x, y) points with its CrvNam.
type namedCurve struct {
	name string
	pts  [][2]float64
}

// legacyVoltCurves is a legacy curve model over voltage (126 volt-var,
// 132 volt-watt) with the given curves of (V, y) points: y is the curve's
// dependent point ("VAr", "W"), deptRef its DeptRef, rampTms the name of
// its ramp time point; ramps of 10 s and 100 %/min.
func legacyVoltCurves(id uint16, y string, deptRef float64, rampTms string, curves ...namedCurve) modelSpec {
	return modelSpec{id: id, counts: map[string]int{"curve": len(curves)}, fill: func(b *builder, in *devices.Instance) {
		legacyCurveHeader(b, in, len(curves))
		b.sf(in, "V_SF", 0)
		b.sf(in, "DeptRef_SF", 0)
		b.sf(in, "RmpIncDec_SF", 0)
		gis := b.groups(&in.Root, "curve", len(curves))
		if gis == nil {
			return
		}
		for i, c := range curves {
			gi := &gis[i]
			b.setIn(in, gi, "ActPt", float64(len(c.pts)))
			b.setIn(in, gi, "DeptRef", deptRef)
			legacyPoints(b, in, gi, "V", y, c.pts)
			curveName(b, in, gi, c.name)
			b.setIn(in, gi, rampTms, 10)
			b.setIn(in, gi, "RmpDecTmm", 100)
			b.setIn(in, gi, "RmpIncTmm", 100)
			b.setIn(in, gi, "ReadOnly", 0)
		}
	}}
}

// legacyCurveHeader sets the fixed points of a legacy curve model (126 to
// 136): no mode enabled, curve 1 active, ncrv curves of 4 points.
func legacyCurveHeader(b *builder, in *devices.Instance, ncrv int) {
	b.set(in, "ActCrv", 1)
	b.raw(in, "ModEna", 0)
	b.set(in, "WinTms", 0)
	b.set(in, "RvrtTms", 0)
	b.set(in, "RmpTms", 0)
	b.set(in, "NCrv", float64(ncrv))
	b.set(in, "NPt", 4)
}

// legacyPoints sets the numbered points x1, y1, x2, y2... of a legacy curve.
func legacyPoints(b *builder, in *devices.Instance, gi *devices.GroupInstance, x, y string, pts [][2]float64) {
	for j, pt := range pts {
		n := itoa(j + 1)
		b.setIn(in, gi, x+n, pt[0])
		b.setIn(in, gi, y+n, pt[1])
	}
}

// curveName sets a curve group's CrvNam string.
func curveName(b *builder, in *devices.Instance, gi *devices.GroupInstance, name string) {
	if b.err != nil {
		return
	}
	i := gi.Group.PointIndex("CrvNam")
	if i < 0 {
		return
	}
	p := &gi.Group.Points[i]
	b.fail(devices.EncodeString(p, name, in.Regs[gi.Offset+int(p.Offset):]))
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return string(rune('0'+i/10)) + string(rune('0'+i%10))
}

// rideThrough is a legacy ride-through model (129, 130, 135, 136) with one
// must-disconnect curve of (time, y) points; ySF is the scale of y.
func rideThrough(id uint16, x, y string, ySF int, pts [][2]float64, name string) modelSpec {
	return modelSpec{id: id, counts: map[string]int{"curve": 1}, fill: func(b *builder, in *devices.Instance) {
		legacyCurveHeader(b, in, 1)
		b.sf(in, "Tms_SF", -2)
		b.sf(in, y+"_SF", ySF)
		curves := b.groups(&in.Root, "curve", 1)
		if curves == nil {
			return
		}
		gi := &curves[0]
		b.setIn(in, gi, "ActPt", float64(len(pts)))
		legacyPoints(b, in, gi, x, y, pts)
		curveName(b, in, gi, name)
		b.setIn(in, gi, "ReadOnly", 0)
	}}
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

func derSpecs(c DeviceConfig) []modelSpec {
	r := c.RatedW
	ratedA := r / 3 / 230 * 1.1
	return []modelSpec{
		{id: 1},
		{id: 701, fill: func(b *builder, in *devices.Instance) {
			for _, s := range []struct {
				n  string
				sf int
			}{{"A_SF", -2}, {"V_SF", -1}, {"Hz_SF", -3}, {"W_SF", 0}, {"PF_SF", -3}, {"VA_SF", 0}, {"Var_SF", 0},
				{"TotWh_SF", 0}, {"TotVarh_SF", 0}, {"Tmp_SF", -1}} {
				b.sf(in, s.n, s.sf)
			}
			b.raw(in, "ACType", 2) // three phase
			b.raw(in, "St", 0)
			b.raw(in, "InvSt", 1)
			b.raw(in, "ConnSt", 0)
			b.raw(in, "Alrm", 0)
			b.raw(in, "DERMode", 1) // grid following
			b.set(in, "TotWhAbs", 1520)
			for _, n := range []string{"TotWhAbsL1", "TotWhAbsL2", "TotWhAbsL3"} {
				b.set(in, n, 506)
			}
		}},
		{id: 702, fill: func(b *builder, in *devices.Instance) {
			b.sf(in, "W_SF", 0)
			b.sf(in, "PF_SF", -3)
			b.sf(in, "VA_SF", 0)
			b.sf(in, "Var_SF", 0)
			b.sf(in, "V_SF", -1)
			b.sf(in, "A_SF", -1)
			for _, p := range []struct {
				n string
				v float64
			}{
				{"WMaxRtg", r}, {"WOvrExtRtg", r}, {"WOvrExtRtgPF", 0.9}, {"WUndExtRtg", r}, {"WUndExtRtgPF", 0.9},
				{"VAMaxRtg", r}, {"VarMaxInjRtg", 0.55 * r}, {"VarMaxAbsRtg", 0.55 * r}, {"VNomRtg", 230},
				{"VMaxRtg", 264.5}, {"VMinRtg", 184}, {"AMaxRtg", ratedA}, {"PFOvrExtRtg", 0.8}, {"PFUndExtRtg", 0.8},
				{"WMax", r}, {"WMaxOvrExt", r}, {"WOvrExtPF", 0.9}, {"WMaxUndExt", r}, {"WUndExtPF", 0.9},
				{"VAMax", r}, {"VarMaxInj", 0.55 * r}, {"VarMaxAbs", 0.55 * r}, {"VNom", 230}, {"VMax", 253},
				{"VMin", 207}, {"AMax", ratedA}, {"PFOvrExt", 0.8}, {"PFUndExt", 0.8},
			} {
				b.set(in, p.n, p.v)
			}
			b.raw(in, "NorOpCatRtg", 1) // CAT_B
			b.raw(in, "AbnOpCatRtg", 1) // CAT_2
			// MAX_W, FIXED_W, FIXED_PF, VOLT_VAR, FREQ_WATT, LV_TRIP, HV_TRIP, VOLT_WATT
			b.raw(in, "CtrlModes", 1<<0|1<<1|1<<3|1<<4|1<<5|1<<7|1<<8|1<<10)
			b.raw(in, "IntIslandCatRtg", 1)
			b.raw(in, "IntIslandCat", 1)
		}},
		{id: 704, fill: func(b *builder, in *devices.Instance) {
			b.sf(in, "PF_SF", -3)
			b.sf(in, "WMaxLimPct_SF", -1)
			b.sf(in, "WSet_SF", 0)
			b.sf(in, "WSetPct_SF", -1)
			b.sf(in, "VarSet_SF", 0)
			b.sf(in, "VarSetPct_SF", -1)
			for _, n := range []string{"PFWInjEna", "PFWInjEnaRvrt", "PFWInjRvrtTms", "PFWInjRvrtRem", "PFWAbsEna",
				"PFWAbsEnaRvrt", "PFWAbsRvrtTms", "PFWAbsRvrtRem", "WMaxLimPctEna", "WMaxLimPctEnaRvrt",
				"WMaxLimPctRvrtTms", "WMaxLimPctRvrtRem", "WSetEna", "WSetMod", "WSet", "WSetRvrt", "WSetPct",
				"WSetPctRvrt", "WSetEnaRvrt", "WSetRvrtTms", "WSetRvrtRem", "VarSetEna", "VarSet", "VarSetRvrt",
				"VarSetPct", "VarSetPctRvrt", "VarSetEnaRvrt", "VarSetRvrtTms", "VarSetRvrtRem"} {
				b.set(in, n, 0)
			}
			b.set(in, "WMaxLimPct", 100)
			b.set(in, "WMaxLimPctRvrt", 100)
			b.raw(in, "VarSetMod", 1) // % of VarMax
			b.raw(in, "VarSetPri", 1) // reactive
			b.set(in, "WRmp", 10)
			b.raw(in, "WRmpRef", 1) // W_MAX
			b.set(in, "VarRmp", 10)
			b.raw(in, "AntiIslEna", 1)
			for _, g := range []string{"PFWInj", "PFWInjRvrt", "PFWAbs", "PFWAbsRvrt"} {
				gs := b.groups(&in.Root, g, 1)
				if gs == nil {
					return
				}
				b.setIn(in, &gs[0], "PF", 1)
				b.setIn(in, &gs[0], "Ext", 0)
			}
		}},
		{id: 705, counts: map[string]int{"NCrv": 2, "NPt": 4}, fill: func(b *builder, in *devices.Instance) {
			derCurveHeader(b, in)
			b.set(in, "RvrtCrv", 0)
			curves := b.groups(&in.Root, "Crv", 2)
			if curves == nil {
				return
			}
			for i, pts := range [][][2]float64{
				{{92, 30}, {98, 0}, {102, 0}, {108, -30}},
				{{94, 44}, {97, 0}, {103, 0}, {106, -44}},
			} {
				gi := &curves[i]
				b.setIn(in, gi, "ActPt", 4)
				b.setIn(in, gi, "DeptRef", 1) // % of VarMax
				b.setIn(in, gi, "Pri", 1)     // reactive
				b.setIn(in, gi, "VRef", 100)
				b.setIn(in, gi, "VRefAuto", 100)
				b.setIn(in, gi, "VRefAutoEna", 0)
				b.setIn(in, gi, "VRefAutoTms", 300)
				b.setIn(in, gi, "RspTms", 5)
				b.setIn(in, gi, "ReadOnly", 0)
				derPoints(b, in, gi, "Pt", "V", "Var", pts)
			}
		}},
		{id: 706, counts: map[string]int{"NCrv": 1, "NPt": 4}, fill: func(b *builder, in *devices.Instance) {
			derCurveHeader(b, in)
			b.set(in, "RvrtCrv", 0)
			curves := b.groups(&in.Root, "Crv", 1)
			if curves == nil {
				return
			}
			gi := &curves[0]
			b.setIn(in, gi, "ActPt", 4)
			b.setIn(in, gi, "DeptRef", 0) // % of WMax
			b.setIn(in, gi, "RspTms", 10)
			b.setIn(in, gi, "ReadOnly", 0)
			derPoints(b, in, gi, "Pt", "V", "W", [][2]float64{{100, 100}, {106, 100}, {108, 50}, {110, 0}})
		}},
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
		{id: 711, counts: map[string]int{"NCtl": 1}, fill: func(b *builder, in *devices.Instance) {
			b.raw(in, "Ena", 0)
			b.set(in, "AdptCtlReq", 0)
			b.raw(in, "AdptCtlRslt", 1) // completed
			b.set(in, "RvrtTms", 0)
			b.set(in, "RvrtRem", 0)
			b.set(in, "RvrtCtl", 0)
			b.sf(in, "Db_SF", -3)
			b.sf(in, "K_SF", -3)
			b.sf(in, "RspTms_SF", 0)
			ctl := b.groups(&in.Root, "Ctl", 1)
			if ctl == nil {
				return
			}
			gi := &ctl[0]
			b.setIn(in, gi, "DbOf", 0.2)
			b.setIn(in, gi, "DbUf", 0.2)
			b.setIn(in, gi, "KOf", 0.05)
			b.setIn(in, gi, "KUf", 0.05)
			b.setIn(in, gi, "RspTms", 5)
			b.setIn(in, gi, "PMin", 0)
			b.setIn(in, gi, "ReadOnly", 0)
		}},
	}
}

// derCurveHeader sets the fixed points of 705/706: disabled, adoption
// completed, no reversion, scale factors 0.
func derCurveHeader(b *builder, in *devices.Instance) {
	b.raw(in, "Ena", 0)
	b.set(in, "AdptCrvReq", 0)
	b.raw(in, "AdptCrvRslt", 1) // completed
	b.set(in, "RvrtTms", 0)
	b.set(in, "RvrtRem", 0)
	b.sf(in, "V_SF", 0)
	b.sf(in, "DeptRef_SF", 0)
	b.sf(in, "RspTms_SF", 0)
}

// derPoints sets the point groups of a DER curve.
func derPoints(b *builder, in *devices.Instance, gi *devices.GroupInstance, group, x, y string, pts [][2]float64) {
	ps := b.groups(gi, group, len(pts))
	for j := range ps {
		b.setIn(in, &ps[j], x, pts[j][0])
		b.setIn(in, &ps[j], y, pts[j][1])
	}
}

// tripModel is a DER trip model (707 to 710) with one curve set: must
// trip, may trip and momentary cessation curves of (y, seconds) points.
func tripModel(id uint16, y string, ySF int, curves [3][][2]float64) modelSpec {
	return modelSpec{id: id, counts: map[string]int{"NCrvSet": 1, "NPt": 4}, fill: func(b *builder, in *devices.Instance) {
		b.raw(in, "Ena", 1)
		b.set(in, "AdptCrvReq", 0)
		b.raw(in, "AdptCrvRslt", 1)
		b.sf(in, y+"_SF", ySF)
		b.sf(in, "Tms_SF", -2)
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
			pts := b.groups(&gs[0], "Pt", len(curves[i]))
			for j := range pts {
				b.setIn(in, &pts[j], y, curves[i][j][0])
				b.setIn(in, &pts[j], "Tms", curves[i][j][1])
			}
		}
	}}
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
func floatOr(in *devices.Instance, name string, def float64) float64 {
	if v, err := in.Float(name); err == nil {
		return v
	}
	return def
}

// rawOr returns the raw bits of a top-level point, or def when it is not
// implemented.
func rawOr(in *devices.Instance, name string, def uint64) uint64 {
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
