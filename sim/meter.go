package sim

import "math"

// meter is the grid meter's state, or a sub-meter's (measures set).
// Guarded by Plant.mu.
type meter struct {
	w, varW      float64 // positive: import
	impWh, expWh float64
	measures     *load // DeviceConfig.Measures
	h            meterHandles
}

type meterHandles struct {
	a, phv, ppv, hz, w, va, vAr, pf, imp, exp handle
	aph, phvph, ppvph, wph, vaph, varph, pfph [3]handle
	impPh, expPh                              [3]handle
}

func newMeter(d *Device, maxW float64) (*meter, error) {
	m := &meter{
		impWh: 4.2e6 + float64(idHash(d.cfg.ID)%10000) + 1,
		expWh: 7.9e6 + float64(idHash(d.cfg.ID)%7000) + 1,
	}
	wSF := 0 // the smallest scale keeping maxW inside int16
	for lim := 32000.0; maxW > lim; lim *= 10 {
		wSF++
	}
	specs := []modelSpec{
		{id: 1},
		{
			id: 203,
			sf: sfs{"A_SF": -2, "V_SF": -1, "Hz_SF": -2, "W_SF": wSF, "VA_SF": wSF, "VAR_SF": wSF, "PF_SF": -1,
				"TotWh_SF": 0},
			raw: raws{"Evt": 0},
		},
	}
	err := d.build(defaultBase, specs, func(b *builder) {
		h := &m.h
		b.bindAll(203, useMeasured, named{&h.a, "A"}, named{&h.phv, "PhV"}, named{&h.ppv, "PPV"}, named{&h.hz, "Hz"},
			named{&h.w, "W"}, named{&h.va, "VA"}, named{&h.vAr, "VAR"}, named{&h.pf, "PF"})
		b.bindAll(203, useState, named{&h.imp, "TotWhImp"}, named{&h.exp, "TotWhExp"})
		b.bindPhases(203, useMeasured, phased{&h.aph, "Aph", phaseABC}, phased{&h.phvph, "PhVph", phaseABC},
			phased{&h.ppvph, "PhVph", phaseAB}, phased{&h.wph, "Wph", phaseABC}, phased{&h.vaph, "VAph", phaseABC},
			phased{&h.varph, "VARph", phaseABC}, phased{&h.pfph, "PFph", phaseABC})
		b.bindPhases(203, useState, phased{&h.impPh, "TotWhImpPh", phaseABC}, phased{&h.expPh, "TotWhExpPh", phaseABC})
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// integrate adds the energy of hours at the current power.
func (m *meter) integrate(hours float64) {
	if m.w > 0 {
		m.impWh += m.w * hours
	} else {
		m.expWh -= m.w * hours
	}
}

// render writes the meter's state into the image.
func (m *meter) render(d *Device, w *weather) {
	h := &m.h
	s := math.Hypot(m.w, m.varW)
	pf := 100.0
	if s >= 1 {
		pf = m.w / s * 100
	}
	var sumA, sumV, sumLL float64
	for i := range 3 {
		v := w.phaseV[i]
		a := math.Copysign(s/3/v, m.w)
		ll := lineV(v, w.phaseV[(i+1)%3])
		sumA += a
		sumV += v
		sumLL += ll
		d.put(h.aph[i], a)
		d.put(h.phvph[i], v)
		d.put(h.ppvph[i], ll)
		d.put(h.wph[i], m.w/3)
		d.put(h.vaph[i], s/3)
		d.put(h.varph[i], m.varW/3)
		d.put(h.pfph[i], pf)
		d.put(h.impPh[i], math.Floor(m.impWh/3))
		d.put(h.expPh[i], math.Floor(m.expWh/3))
	}
	d.put(h.a, sumA)
	d.put(h.phv, sumV/3)
	d.put(h.ppv, sumLL/3)
	d.put(h.hz, w.hz)
	d.put(h.w, m.w)
	d.put(h.va, s)
	d.put(h.vAr, m.varW)
	d.put(h.pf, pf)
	d.put(h.imp, math.Floor(m.impWh))
	d.put(h.exp, math.Floor(m.expWh))
}

// sensor is the weather sensor; it has no state of its own.
type sensor struct {
	ghi, tmpBOM, tmpAmb, wndSpd handle
}

func newSensor(d *Device) (*sensor, error) {
	s := &sensor{}
	err := d.build(defaultBase, []modelSpec{{id: 1}, {id: 308}}, func(b *builder) {
		b.bindAll(308, useMeasured, named{&s.ghi, "GHI"}, named{&s.tmpBOM, "TmpBOM"}, named{&s.tmpAmb, "TmpAmb"},
			named{&s.wndSpd, "WndSpd"})
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (s *sensor) render(d *Device, w *weather) {
	d.put(s.ghi, w.ghi)
	d.put(s.tmpBOM, w.moduleC)
	d.put(s.tmpAmb, w.ambientC)
	d.put(s.wndSpd, w.windMS)
}
