package sim

import "math"

// The Eastron meters' full input register maps. A template reads only
// the registers plantd needs, in few large blocks; a real SDM meter
// answers every input register of its vendor's map, and other readers
// (mbmd, Home Assistant integrations) read them one by one (mbmd: two
// registers at each address, function 4). The twins of the templates
// sdm630, sdm120 and sdm72 answer these too, each an IEEE 754 float in
// two registers, high word first, with a value consistent with the image.
//
// The facts are Eastron's; the lists are ours, by parameter number (the
// protocol address is 2 × (parameter − 1), the 3X register 30001 + that):
//   - SDM630 Modbus protocol V1.2.1 (the V2 meter), input parameters 1..22,
//     24, 25, 27, 29, 31, 32, 34, 36..44, 51..54, 101..104, 113, 118..123,
//     125, 126, 130..135, 168..191 (30001..30381), as listed by
//     plebann/eastron_SDM_HA_integration and used by mbmd's
//     meters/rs485/sdm.go (0x0156 total kWh, 0x015A.. per-phase energies,
//     0x00EA.. THD);
//   - SDM120-Modbus protocol, input parameters 1, 4, 7, 10, 13, 16, 19,
//     36..40, 43..48, 130, 133, 172, 173 (plebann's docs/registers-sdm120.md,
//     mbmd's meters/rs485/sdm120.go; phase angle 19 as in the SDM120/SDM230
//     family table);
//   - SDM72D-M manual V1.5: total system power (30053), import and export
//     kWh (30073, 30075), total kWh (30343, which mbmd's sdm72.go reads),
//     total import and export power (31281, 31283).

// eastronReg is one input register of a vendor map: its protocol address
// and its value from the twin's quantities.
type eastronReg struct {
	addr  uint16
	value func(q *eastronQty) float64
}

// eastronQty are the quantities an Eastron twin's registers are made of,
// in the register units (V, A, W, VA, var, kWh, kvarh, °, %, Hz).
type eastronQty struct {
	phases                    int
	v, a, w, va, vr, pf, ang  [3]float64 // per phase
	vll                       [3]float64 // L1-L2, L2-L3, L3-L1
	hz, impKWh, expKWh, sumKW float64
}

// phaseRegs are three registers of one quantity per phase.
func phaseRegs(addr uint16, f func(q *eastronQty, i int) float64) []eastronReg {
	var out []eastronReg
	for i := range 3 {
		out = append(out, eastronReg{addr + uint16(2*i), func(q *eastronQty) float64 { return f(q, i) }})
	}
	return out
}

func sum3(v [3]float64) float64 { return v[0] + v[1] + v[2] }

func (q *eastronQty) totalW() float64  { return sum3(q.w) }
func (q *eastronQty) totalVA() float64 { return sum3(q.va) }
func (q *eastronQty) totalPF() float64 {
	if s := q.totalVA(); s >= 1 {
		return q.totalW() / s
	}
	return 1
}
func (q *eastronQty) avgV() float64 { return sum3(q.v) / float64(q.phases) }
func (q *eastronQty) sumA() float64 { return sum3(q.a) }

// Reactive energies and per-phase energies, derived from the active ones
// in fixed shares (the twin keeps no separate counters for them).
func (q *eastronQty) impKvarh() float64 { return q.impKWh * 0.2 }
func (q *eastronQty) expKvarh() float64 { return q.expKWh * 0.05 }

var sdm630Regs = func() []eastronReg {
	var r []eastronReg
	add := func(rs ...eastronReg) { r = append(r, rs...) }
	one := func(addr uint16, f func(q *eastronQty) float64) { add(eastronReg{addr, f}) }
	add(phaseRegs(0x0000, func(q *eastronQty, i int) float64 { return q.v[i] })...)
	add(phaseRegs(0x0006, func(q *eastronQty, i int) float64 { return q.a[i] })...)
	add(phaseRegs(0x000C, func(q *eastronQty, i int) float64 { return q.w[i] })...)
	add(phaseRegs(0x0012, func(q *eastronQty, i int) float64 { return q.va[i] })...)
	add(phaseRegs(0x0018, func(q *eastronQty, i int) float64 { return q.vr[i] })...)
	add(phaseRegs(0x001E, func(q *eastronQty, i int) float64 { return q.pf[i] })...)
	add(phaseRegs(0x0024, func(q *eastronQty, i int) float64 { return q.ang[i] })...)
	one(0x002A, (*eastronQty).avgV)
	one(0x002E, func(q *eastronQty) float64 { return q.sumA() / 3 })
	one(0x0030, (*eastronQty).sumA)
	one(0x0034, (*eastronQty).totalW)
	one(0x0038, (*eastronQty).totalVA)
	one(0x003C, func(q *eastronQty) float64 { return sum3(q.vr) })
	one(0x003E, (*eastronQty).totalPF)
	one(0x0042, func(q *eastronQty) float64 { return math.Acos(math.Min(1, math.Abs(q.totalPF()))) * 180 / math.Pi })
	one(0x0046, func(q *eastronQty) float64 { return q.hz })
	one(0x0048, func(q *eastronQty) float64 { return q.impKWh })
	one(0x004A, func(q *eastronQty) float64 { return q.expKWh })
	one(0x004C, (*eastronQty).impKvarh)
	one(0x004E, (*eastronQty).expKvarh)
	one(0x0050, func(q *eastronQty) float64 { return (q.impKWh + q.expKWh) * 1.02 })       // kVAh
	one(0x0052, func(q *eastronQty) float64 { return (q.impKWh + q.expKWh) * 1000 / 230 }) // Ah
	one(0x0054, (*eastronQty).totalW)                                                      // power demand
	one(0x0056, func(q *eastronQty) float64 { return math.Max(q.totalW(), q.sumKW) })      // its maximum
	one(0x0064, (*eastronQty).totalVA)
	one(0x0066, func(q *eastronQty) float64 { return math.Max(q.totalVA(), q.sumKW) })
	one(0x0068, func(q *eastronQty) float64 { return 0.1 * q.sumA() / 3 }) // neutral current demand
	one(0x006A, func(q *eastronQty) float64 { return 0.1 * q.sumA() / 3 })
	add(phaseRegs(0x00C8, func(q *eastronQty, i int) float64 { return q.vll[i] })...)
	one(0x00CE, func(q *eastronQty) float64 { return sum3(q.vll) / 3 })
	one(0x00E0, func(q *eastronQty) float64 { return 0.1 * q.sumA() / 3 })
	add(phaseRegs(0x00EA, func(*eastronQty, int) float64 { return 1.8 })...) // voltage THD %
	add(phaseRegs(0x00F0, func(*eastronQty, int) float64 { return 4.5 })...) // current THD %
	one(0x00F8, func(*eastronQty) float64 { return 1.8 })
	one(0x00FA, func(*eastronQty) float64 { return 4.5 })
	add(phaseRegs(0x0102, func(q *eastronQty, i int) float64 { return q.a[i] })...) // current demand
	add(phaseRegs(0x0108, func(q *eastronQty, i int) float64 { return q.a[i] })...) // its maximum
	add(phaseRegs(0x014E, func(*eastronQty, int) float64 { return 1.9 })...)        // L-L voltage THD %
	one(0x0154, func(*eastronQty) float64 { return 1.9 })
	one(0x0156, func(q *eastronQty) float64 { return q.impKWh + q.expKWh })
	one(0x0158, func(q *eastronQty) float64 { return q.impKvarh() + q.expKvarh() })
	add(phaseRegs(0x015A, func(q *eastronQty, _ int) float64 { return q.impKWh / 3 })...)
	add(phaseRegs(0x0160, func(q *eastronQty, _ int) float64 { return q.expKWh / 3 })...)
	add(phaseRegs(0x0166, func(q *eastronQty, _ int) float64 { return (q.impKWh + q.expKWh) / 3 })...)
	add(phaseRegs(0x016C, func(q *eastronQty, _ int) float64 { return q.impKvarh() / 3 })...)
	add(phaseRegs(0x0172, func(q *eastronQty, _ int) float64 { return q.expKvarh() / 3 })...)
	add(phaseRegs(0x0178, func(q *eastronQty, _ int) float64 { return (q.impKvarh() + q.expKvarh()) / 3 })...)
	return r
}()

var sdm120Regs = func() []eastronReg {
	one := func(addr uint16, f func(q *eastronQty) float64) eastronReg { return eastronReg{addr, f} }
	return []eastronReg{
		one(0x0000, func(q *eastronQty) float64 { return q.v[0] }),
		one(0x0006, func(q *eastronQty) float64 { return q.a[0] }),
		one(0x000C, func(q *eastronQty) float64 { return q.w[0] }),
		one(0x0012, func(q *eastronQty) float64 { return q.va[0] }),
		one(0x0018, func(q *eastronQty) float64 { return q.vr[0] }),
		one(0x001E, func(q *eastronQty) float64 { return q.pf[0] }),
		one(0x0024, func(q *eastronQty) float64 { return q.ang[0] }),
		one(0x0046, func(q *eastronQty) float64 { return q.hz }),
		one(0x0048, func(q *eastronQty) float64 { return q.impKWh }),
		one(0x004A, func(q *eastronQty) float64 { return q.expKWh }),
		one(0x004C, (*eastronQty).impKvarh),
		one(0x004E, (*eastronQty).expKvarh),
		one(0x0054, (*eastronQty).totalW), // total system power demand
		one(0x0056, func(q *eastronQty) float64 { return math.Max(q.totalW(), q.sumKW) }),
		one(0x0058, func(q *eastronQty) float64 { return math.Max(0, q.totalW()) }), // import demand
		one(0x005A, func(q *eastronQty) float64 { return math.Max(0, math.Max(q.totalW(), q.sumKW)) }),
		one(0x005C, func(q *eastronQty) float64 { return math.Max(0, -q.totalW()) }), // export demand
		one(0x005E, func(q *eastronQty) float64 { return math.Max(0, -q.totalW()) }),
		one(0x0102, func(q *eastronQty) float64 { return q.a[0] }),
		one(0x0108, func(q *eastronQty) float64 { return q.a[0] }),
		one(0x0156, func(q *eastronQty) float64 { return q.impKWh + q.expKWh }),
		one(0x0158, func(q *eastronQty) float64 { return q.impKvarh() + q.expKvarh() }),
	}
}()

var sdm72Regs = []eastronReg{
	{0x0034, (*eastronQty).totalW},
	{0x0048, func(q *eastronQty) float64 { return q.impKWh }},
	{0x004A, func(q *eastronQty) float64 { return q.expKWh }},
	{0x0156, func(q *eastronQty) float64 { return q.impKWh + q.expKWh }},
	{0x0500, func(q *eastronQty) float64 { return math.Max(0, q.totalW()) }},
	{0x0502, func(q *eastronQty) float64 { return math.Max(0, -q.totalW()) }},
}

// eastronMaps are the vendor maps by template name.
var eastronMaps = map[string][]eastronReg{"sdm630": sdm630Regs, "sdm120": sdm120Regs, "sdm72": sdm72Regs}

// EastronRegisters returns the input register addresses of the vendor's
// map of an Eastron template's meter (each register two words), nil for
// another template.
func EastronRegisters(templateName string) []uint16 {
	var out []uint16
	for _, r := range eastronMaps[templateName] {
		out = append(out, r.addr)
	}
	return out
}

// eastronQuantities are the twin's quantities now, from the same values
// its template image holds (the image is rendered).
func (td *tplDevice) eastronQuantities(d *Device, p *Plant) *eastronQty {
	q := &eastronQty{phases: 3}
	if td.t.Point("voltageL2") == nil {
		q.phases = 1
	}
	env := &p.env
	w, vr := p.bal.GridW, 0.2*p.bal.LoadW
	for i := range q.phases {
		q.v[i] = env.phaseV[i]
		q.w[i] = w / float64(q.phases)
		q.vr[i] = vr / float64(q.phases)
		q.va[i] = math.Hypot(q.w[i], q.vr[i])
		q.a[i] = q.va[i] / q.v[i]
		q.pf[i] = 1
		if q.va[i] >= 1 {
			q.pf[i] = q.w[i] / q.va[i]
		}
		q.ang[i] = math.Acos(math.Min(1, math.Abs(q.pf[i]))) * 180 / math.Pi
	}
	q.vll = [3]float64{lineV(env.phaseV[0], env.phaseV[1]), lineV(env.phaseV[1], env.phaseV[2]), lineV(env.phaseV[2], env.phaseV[0])}
	q.hz = env.hz
	q.impKWh, q.expKWh = math.Floor(td.impWh)/1000, math.Floor(td.expWh)/1000
	q.sumKW = d.cfg.RatedW
	return q
}

// readEastron answers a read of function 4 from the vendor's map. In
// the template's blocks (image, the block's registers) the registers of
// the map that no template point holds are filled in (a real meter's
// phase angles and the like, not zeros). Outside them the read must start
// at a register of the map and end at the end of one, at most 80
// registers (40 values, the SDM630's limit); reserved registers between
// answer 0, as in the meters' blocks. ok is false when the template has
// no vendor map or the read is not one.
func (td *tplDevice) readEastron(d *Device, p *Plant, addr, quantity uint16, image []uint16) ([]uint16, bool) {
	regs := eastronMaps[td.t.Name]
	if regs == nil {
		return image, image != nil
	}
	end := uint32(addr) + uint32(quantity)
	out := image
	if out == nil {
		if quantity == 0 || quantity > 80 || quantity%2 != 0 {
			return nil, false
		}
		starts, ends := false, false
		for _, r := range regs {
			starts = starts || r.addr == addr
			ends = ends || uint32(r.addr)+2 == end
		}
		if !starts || !ends {
			return nil, false
		}
		out = make([]uint16, quantity)
	}
	q := td.eastronQuantities(d, p)
	for _, r := range regs {
		if r.addr < addr || uint32(r.addr)+2 > end || td.pointAt(r.addr) {
			continue
		}
		bits := math.Float32bits(float32(r.value(q)))
		out[r.addr-addr], out[r.addr-addr+1] = uint16(bits>>16), uint16(bits)
	}
	return out, true
}

// pointAt reports whether a template point of an input register block
// holds the register at addr.
func (td *tplDevice) pointAt(addr uint16) bool {
	for i := range td.t.Points {
		pt := &td.t.Points[i]
		if td.t.Blocks[td.t.BlockOf(i)].Function == 4 && addr >= pt.Address && int(addr) < int(pt.Address)+pt.Size() {
			return true
		}
	}
	return false
}
