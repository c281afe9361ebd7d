package sunspec

import (
	"errors"
	"math"
	"strconv"
	"testing"
)

// Register images below are written by hand from the SunSpec layouts (see
// the offset comments); the expected values are computed by hand too.

// m103 is a three-phase inverter (model 103) producing 12.34 kW.
var m103 = []uint16{
	103, 50, // ID, L
	1789, 597, 596, 596, 0xFFFE, // A, AphA..C (×10^-2 A), A_SF = -2
	4001, 3999, 4002, 2305, 2310, 2299, 0xFFFF, // PPVphAB..CA, PhVphA..C (×10^-1 V), V_SF = -1
	1234, 1, // W = 1234 × 10^1 W, W_SF = 1
	5001, 0xFFFE, // Hz = 50.01, Hz_SF = -2
	1240, 1, // VA = 12400, VA_SF = 1
	0xFFF6, 1, // VAr = -10 × 10 = -100, VAr_SF = 1
	0xFF9D, 0xFFFE, // PF = -99 × 10^-2 = -0.99, PF_SF = -2
	0x0001, 0x86A0, 0, // WH = 100000 Wh (acc32), WH_SF = 0
	0x8000, 0x8000, // DCA not implemented, DCA_SF not implemented
	6500, 0xFFFF, // DCV = 650.0, DCV_SF = -1
	1280, 1, // DCW = 12800, DCW_SF = 1
	452, 0x8000, 0x8000, 0x8000, 0xFFFF, // TmpCab = 45.2, others not implemented, Tmp_SF = -1
	4, 0xFFFF, // St = 4 (MPPT), StVnd not implemented
	0x0000, 0x0005, // Evt1 = bits 0 and 2 (GROUND_FAULT, DC_OVER_VOLT)
	0x0000, 0x0000, // Evt2
	0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, // EvtVnd1..4 not implemented
}

// m113 is the float variant; W = 1234.5 (0x449A5000), Hz NaN.
var m113 = func() []uint16 {
	r := make([]uint16, 62)
	r[0], r[1] = 113, 60
	for i := 2; i < 48; i += 2 {
		r[i], r[i+1] = 0x7FC0, 0 // NaN = not implemented
	}
	r[22], r[23] = 0x449A, 0x5000 // W
	r[32], r[33] = 0x4A42, 0x7C20 // WH = 3186440 Wh (float32 0x4A427C20)
	r[48], r[49] = 2, 0xFFFF
	for i := 50; i < 62; i++ {
		r[i] = 0xFFFF
	}
	return r
}()

// m122 carries acc64 lifetime energy and a string.
var m122 = func() []uint16 {
	r := make([]uint16, 46)
	r[0], r[1] = 122, 44
	r[2], r[3], r[4] = 1, 0xFFFF, 0xFFFF                    // PVConn bit 0 (CONNECTED)
	r[5], r[6], r[7], r[8] = 0x0000, 0x0001, 0x0000, 0x0000 // ActWh = 2^32 Wh
	for i := 9; i < 29; i++ {
		r[i] = 0 // other acc64 not implemented (0)
	}
	r[29], r[30] = 0x8000, 0x8000                               // VArAval, VArAval_SF
	r[31], r[32] = 995, 1                                       // WAval = 9950
	r[33], r[34], r[35], r[36] = 0xFFFF, 0xFFFF, 0x0000, 0x0001 // StSetLimMsk NI, StActCtl bit 0 (FixedW)
	r[37], r[38], r[39], r[40] = 'G'<<8|'P', 'S'<<8|0, 0, 0     // TmSrc "GPS"
	r[41], r[42] = 0x2F4D, 0x3A80                               // Tms = 793590400
	r[43], r[44], r[45] = 0xFFFF, 0xFFFF, 0x8000
	return r
}()

// m1 is the common model with strings padded by NUL and spaces.
var m1 = func() []uint16 {
	r := make([]uint16, 68)
	r[0], r[1] = 1, 66
	put := func(off int, s string) {
		for i := 0; i < len(s); i += 2 {
			w := uint16(s[i]) << 8
			if i+1 < len(s) {
				w |= uint16(s[i+1])
			}
			r[off+i/2] = w
		}
	}
	put(2, "plantd")         // Mn, 16 registers
	put(18, "SIM-INV-10K  ") // Md, trailing spaces trimmed
	put(42, "1.0.0")         // Vr at 2+16+16+8
	put(50, "SN0001")        // SN
	r[66], r[67] = 1, 0x8000 // DA, Pad
	return r
}()

func TestDecodeFixedModel103(t *testing.T) {
	vals, err := DecodeFixed(ModelByID(103), m103, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := ModelByID(103)
	tests := []struct {
		point string
		want  float64
		ok    bool
	}{
		{"A", 17.89, true},
		{"AphA", 5.97, true},
		{"PPVphAB", 400.1, true},
		{"PhVphC", 229.9, true},
		{"W", 12340, true},
		{"Hz", 50.01, true},
		{"VA", 12400, true},
		{"VAr", -100, true},
		{"PF", -0.99, true},
		{"WH", 100000, true},
		{"DCA", 0, false}, // value and sf not implemented
		{"DCV", 650, true},
		{"DCW", 12800, true},
		{"TmpCab", 45.2, true},
		{"TmpSnk", 0, false},
		{"St", 4, true},
		{"StVnd", 0, false},
		{"Evt1", 5, true},
		{"Evt2", 0, true},
		{"EvtVnd1", 0, false},
	}
	for _, tc := range tests {
		v := vals[m.PointIndex(tc.point)]
		if v.OK != tc.ok || (tc.ok && math.Abs(v.Float-tc.want) > 1e-9) {
			t.Errorf("%s = %+v, want %v (ok %v)", tc.point, v, tc.want, tc.ok)
		}
	}
}

func TestInstanceValues(t *testing.T) {
	tests := []struct {
		name  string
		regs  []uint16
		point string
		want  float64
		err   error
	}{
		{"float32", m113, "W", 1234.5, nil},
		{"float32 accumulator", m113, "WH", 3186440, nil},
		{"float32 NaN", m113, "Hz", 0, ErrNotImplemented},
		{"acc64", m122, "ActWh", 1 << 32, nil},
		{"acc64 zero is not implemented", m122, "ActVAh", 0, ErrNotImplemented},
		{"scaled uint16", m122, "WAval", 9950, nil},
		{"sf not implemented", m122, "VArAval", 0, ErrNotImplemented},
		{"bitfield16", m122, "PVConn", 1, nil},
		{"bitfield32", m122, "StActCtl", 1, nil},
		{"bitfield32 not implemented", m122, "StSetLimMsk", 0, ErrNotImplemented},
		{"uint32", m122, "Tms", 793590400, nil},
		{"unknown point", m122, "Nope", 0, ErrUnknownPoint},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := tc.regs[0]
			inst, err := NewInstance(ModelByID(id), 40000, tc.regs)
			if err != nil {
				t.Fatal(err)
			}
			got, err := inst.Float(tc.point)
			if !errors.Is(err, tc.err) {
				t.Fatalf("%s: err %v, want %v", tc.point, err, tc.err)
			}
			if err == nil && got != tc.want {
				t.Fatalf("%s = %v, want %v", tc.point, got, tc.want)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	inst, err := NewInstance(ModelByID(1), 40002, m1)
	if err != nil {
		t.Fatal(err)
	}
	for point, want := range map[string]string{"Mn": "plantd", "Md": "SIM-INV-10K", "Opt": "", "Vr": "1.0.0", "SN": "SN0001"} {
		if got := inst.String(point); got != want {
			t.Errorf("%s = %q, want %q", point, got, want)
		}
	}
	// A legacy common model of length 65 (no Pad) is accepted.
	legacy := append([]uint16(nil), m1[:67]...)
	legacy[1] = 65
	if _, err := NewInstance(ModelByID(1), 40002, legacy); err != nil {
		t.Fatalf("legacy model 1: %v", err)
	}
}

func TestRepeatingFill(t *testing.T) {
	// Model 160 with two modules: fixed part 10 registers, modules of 20.
	r := make([]uint16, 50)
	r[0], r[1] = 160, 48
	r[2], r[3], r[4], r[5] = 0xFFFE, 0xFFFF, 0, 0 // DCA_SF -2, DCV_SF -1, DCW_SF 0, DCWH_SF 0
	r[6], r[7], r[8], r[9] = 0, 0, 2, 0xFFFF      // Evt, N = 2, TmsPer
	for m := 0; m < 2; m++ {
		o := 10 + 20*m
		r[o] = uint16(m + 1)                                 // ID
		r[o+1] = 'S'<<8 | uint16('1'+m)                      // IDStr "S1" / "S2"
		r[o+9], r[o+10], r[o+11] = 850, 6120, 5202           // 8.50 A, 612.0 V, 5202 W
		r[o+12], r[o+13] = 0, uint16(1000*(m+1))             // DCWH
		r[o+14], r[o+15], r[o+16], r[o+17] = 0, 0, 0x8000, 4 // Tms, Tmp NI, DCSt
		r[o+18], r[o+19] = 0, 0
	}
	r[10+20+11] = 0xFFFF // second module's DCW not implemented (0xFFFF for uint16)
	inst, err := NewInstance(ModelByID(160), 40000, r)
	if err != nil {
		t.Fatal(err)
	}
	mods := inst.Root.Groups("module")
	if len(mods) != 2 {
		t.Fatalf("%d modules, want 2", len(mods))
	}
	for i, want := range []struct {
		id   string
		a, v float64
		wh   float64
	}{{"S1", 8.5, 612, 1000}, {"S2", 8.5, 612, 2000}} {
		gi := &mods[i]
		if s := inst.StringIn(gi, "IDStr"); s != want.id {
			t.Errorf("module %d IDStr %q, want %q", i, s, want.id)
		}
		a, _ := inst.FloatIn(gi, "DCA")
		v, _ := inst.FloatIn(gi, "DCV")
		wh, _ := inst.FloatIn(gi, "DCWH")
		if a != want.a || v != want.v || wh != want.wh {
			t.Errorf("module %d: %v A %v V %v Wh, want %+v", i, a, v, wh, want)
		}
	}
	if w, err := inst.FloatIn(&mods[0], "DCW"); err != nil || w != 5202 {
		t.Errorf("module 0 DCW %v %v", w, err)
	}
	if _, err := inst.FloatIn(&mods[1], "DCW"); !errors.Is(err, ErrNotImplemented) {
		t.Errorf("module 1 DCW: %v, want not implemented", err)
	}
}

func TestRepeatingNested(t *testing.T) {
	// Model 705, NPt = 2, NCrv = 2: 15 fixed + 2 × (10 + 2 × 2) = 43 registers.
	r := []uint16{
		705, 41,
		1, 0xFFFF, 0xFFFF, 2, 2, // Ena, AdptCrvReq, AdptCrvRslt, NPt, NCrv
		0, 60, 0, 42, 1, // RvrtTms 60, RvrtRem 42, RvrtCrv 1
		0xFFFF, 0, 0xFFFF, // V_SF -1, DeptRef_SF 0, RspTms_SF -1
		// curve 1
		2, 1, 1, 2300, 0xFFFF, 0, 0xFFFF, 0, 100, 0, // ActPt, DeptRef, Pri, VRef 230.0, VRefAuto NI, ena, tms NI, RspTms 10.0 s, ReadOnly
		2200, 30, 2400, 0xFFE2, // Pt: 220.0 V → 30 %, 240.0 V → -30 %
		// curve 2
		2, 1, 1, 2300, 0xFFFF, 0, 0xFFFF, 0, 50, 1,
		2250, 20, 2350, 0xFFEC,
	}
	inst, err := NewInstance(ModelByID(705), 40000, r)
	if err != nil {
		t.Fatal(err)
	}
	crvs := inst.Root.Groups("Crv")
	if len(crvs) != 2 {
		t.Fatalf("%d curves", len(crvs))
	}
	want := [][4]float64{{220, 30, 240, -30}, {225, 20, 235, -20}}
	for c := range crvs {
		pts := crvs[c].Groups("Pt")
		if len(pts) != 2 {
			t.Fatalf("curve %d: %d points", c, len(pts))
		}
		for p := range pts {
			v, err1 := inst.FloatIn(&pts[p], "V")
			q, err2 := inst.FloatIn(&pts[p], "Var")
			if err1 != nil || err2 != nil || v != want[c][2*p] || q != want[c][2*p+1] {
				t.Errorf("curve %d point %d: V %v (%v) Var %v (%v), want %v", c, p, v, err1, q, err2, want[c][2*p:2*p+2])
			}
		}
	}
	if tms, _ := inst.FloatIn(&crvs[1], "RspTms"); tms != 5 {
		t.Errorf("curve 2 RspTms = %v, want 5", tms)
	}
	if rem, _ := inst.Float("RvrtRem"); rem != 42 {
		t.Errorf("RvrtRem = %v", rem)
	}
}

func TestInstanceRejectsBadBlocks(t *testing.T) {
	tests := []struct {
		name string
		id   uint16
		regs []uint16
	}{
		{"wrong id", 103, append([]uint16{101}, m103[1:]...)},
		{"short read", 103, m103[:30]},
		{"length below fixed part", 103, append([]uint16{103, 10}, m103[2:12]...)},
		{"count past the end", 705, []uint16{705, 13, 1, 0, 0, 4, 9, 0, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tc := range tests {
		if _, err := NewInstance(ModelByID(tc.id), 0, tc.regs); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestEveryModelRoundTrips(t *testing.T) {
	// Every generated model lays out, takes a value in each writable numeric
	// point and decodes it back.
	for _, m := range Models() {
		counts := map[string]int{}
		var walk func(g *Group)
		walk = func(g *Group) {
			for i := range g.Groups {
				sg := &g.Groups[i]
				switch sg.Repeat {
				case RepeatFill:
					counts[sg.Name] = 2
				case RepeatByPoint:
					counts[sg.CountPoint] = 2
				}
				walk(sg)
			}
		}
		walk(&m.Group)
		inst, err := NewBlank(m, 40002, counts)
		if err != nil {
			t.Fatalf("model %d: %v", m.ID, err)
		}
		for i, p := range m.Group.Points {
			if p.Type == TypeSunssf {
				inst.SetRaw(p.Name, 0xFFFE) // sf -2
			}
			_ = i
		}
		for _, p := range m.Group.Points {
			if !p.Type.Numeric() || p.Type == TypeSunssf || p.Fixed >= 0 || p.Name == "L" || isCountPoint(m, p.Name) {
				continue
			}
			if v, _ := inst.Value(p.Name); v.OK {
				t.Errorf("model %d point %s: implemented in a blank image: %+v", m.ID, p.Name, v)
			}
			if err := inst.Set(p.Name, 12.34); err != nil {
				t.Errorf("model %d point %s: set: %v", m.ID, p.Name, err)
				continue
			}
			got, err := inst.Float(p.Name)
			want := 12.34
			if !p.Scaled() && !p.Type.Float() {
				want = 12
			}
			if p.HasSFConst {
				want = 12.3
			}
			if err != nil || math.Abs(got-want) > 1e-4 {
				t.Errorf("model %d point %s (%s): %v %v, want %v", m.ID, p.Name, p.Type, got, err, want)
			}
		}
	}
}

func isCountPoint(m *Model, name string) bool {
	var found bool
	var walk func(g *Group)
	walk = func(g *Group) {
		for i := range g.Groups {
			if g.Groups[i].CountPoint == name {
				found = true
			}
			walk(&g.Groups[i])
		}
	}
	walk(&m.Group)
	return found
}

func TestEncodeRefusesWrappedValues(t *testing.T) {
	m := ModelByID(123)
	dst := make([]uint16, 2)
	tests := []struct {
		point string
		sf    int
		v     float64
		err   bool
		want  uint16
	}{
		{"WMaxLimPct", 0, 70, false, 70},
		{"WMaxLimPct", -1, 70, false, 700},
		{"WMaxLimPct", -1, 33.34, false, 333},
		{"WMaxLimPct", 0, -1, true, 0},
		{"WMaxLimPct", 0, 70000, true, 0},
		{"WMaxLimPct", 0, math.NaN(), true, 0},
		{"OutPFSet", -3, -0.95, false, uint16(0x10000 - 950)},
		{"OutPFSet", -3, 40, true, 0},
	}
	for _, tc := range tests {
		err := EncodeValue(m.Point(tc.point), tc.sf, tc.v, dst)
		if (err != nil) != tc.err {
			t.Errorf("%s=%v sf %d: err %v", tc.point, tc.v, tc.sf, err)
			continue
		}
		if err == nil && dst[0] != tc.want {
			t.Errorf("%s=%v sf %d: %#x, want %#x", tc.point, tc.v, tc.sf, dst[0], tc.want)
		}
	}
}

func BenchmarkDecodeModel103(b *testing.B) {
	m := ModelByID(103)
	dst := make([]Value, len(m.Group.Points))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		dst, err = DecodeFixed(m, m103, dst)
		if err != nil {
			b.Fatal(err)
		}
	}
	if !dst[m.PointIndex("W")].OK {
		b.Fatal("W not decoded")
	}
}

// TestScaleIsDecimal checks that a scaled value is the float nearest its
// decimal form, so that the API shows 5.028, not 5.0280000000000005.
func TestScaleIsDecimal(t *testing.T) {
	for _, tc := range []struct {
		mantissa float64
		sf       int
		want     string
	}{{5028, -3, "5.028"}, {3984.6, -1, "398.46"}, {1234, -2, "12.34"}, {-99, -2, "-0.99"}, {1234, 1, "12340"}} {
		got, ok := scale(tc.mantissa, tc.sf)
		if s := strconv.FormatFloat(got, 'g', -1, 64); !ok || s != tc.want {
			t.Errorf("%v × 10^%d = %s, want %s", tc.mantissa, tc.sf, s, tc.want)
		}
	}
}
