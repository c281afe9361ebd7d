package store

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"testing"
)

func TestDecRoundTrip(t *testing.T) {
	t.Parallel() // its own database files
	tests := []struct {
		v       float64
		maxSize int
	}{
		{0, 1},
		{5000, 3},
		{-5000, 3},
		{230.4, 3},
		{2304 * 0.1, 3}, // the float noise of a SunSpec scale factor
		{49.987, 3},
		{0.95, 2},
		{-0.001, 1},
		{123456789, 5},         // a lifetime counter in Wh
		{1234567.8901234, 9},   // not a short decimal: the float's bytes
		{math.Pi, 9},           //
		{1e300, 9},             //
		{-123.456789, 9},       // more than six decimals
		{4294967295, 6},        // acc32 maximum
		{9007199254740991, 10}, // 2^53 − 1
	}
	for _, tt := range tests {
		b := appendDec(nil, tt.v)
		if len(b) > tt.maxSize {
			t.Errorf("%v: %d bytes, want at most %d", tt.v, len(b), tt.maxSize)
		}
		got, n, err := readDec(b)
		if err != nil || n != len(b) {
			t.Fatalf("%v: read %v, %d of %d bytes, %v", tt.v, got, n, len(b), err)
		}
		if math.Abs(got-tt.v) > math.Abs(tt.v)*2e-15 {
			t.Errorf("%v: read back %v", tt.v, got)
		}
	}
	if _, _, err := readDec([]byte{0x87}); err == nil {
		t.Error("truncated varint: no error")
	}
	if _, _, err := readDec([]byte{decFloat, 1, 2}); err == nil {
		t.Error("truncated float: no error")
	}
}

// fixedCodec gives every series the same resolution.
type fixedCodec struct {
	q  float64
	mm bool
}

func (f fixedCodec) codecOf(sid int64) (float64, bool, bool) { return f.q, f.mm, sid < 1000 }

func TestAggsRoundTrip(t *testing.T) {
	t.Parallel() // its own database files
	var a, b, c agg
	for _, v := range []float64{10, 20, 60} {
		a.add(v)
	}
	a.addE(12.3456)
	b.add(230.01)
	b.add(229.99) // n = 2, differs from the row's 3
	c.addE(-0.0004)
	es := []aggEntry{{sid: 3, a: a}, {sid: 7, a: b}, {sid: 900, a: c}, {sid: 1001, a: a}}
	for _, mm := range []bool{true, false} {
		buf := encodeAggs(nil, 3, es, fixedCodec{q: 0.01, mm: mm})
		got := map[int64]agg{}
		n, err := decodeAggs(buf, fixedCodec{q: 0.01, mm: mm}, func(sid int64, x agg) { got[sid] = x })
		if err != nil || n != 3 {
			t.Fatalf("mm %v: decode: n %d, %v", mm, n, err)
		}
		if len(got) != 3 {
			t.Fatalf("mm %v: %d series, want 3 (unknown sid skipped)", mm, len(got))
		}
		ga := got[3]
		if ga.n != 3 || math.Abs(ga.mean()-30) > 1e-9 || !ga.hasE || math.Abs(ga.e-12.346) > 1e-9 {
			t.Errorf("mm %v: series 3 = %+v", mm, ga)
		}
		if mm && (ga.min != 10 || ga.max != 60) {
			t.Errorf("min/max %v %v", ga.min, ga.max)
		}
		if !mm && (ga.min != 30 || ga.max != 30) {
			t.Errorf("without min/max: %v %v, want the mean", ga.min, ga.max)
		}
		if gb := got[7]; gb.n != 2 || math.Abs(gb.mean()-230) > 1e-9 || gb.hasE {
			t.Errorf("series 7 = %+v", gb)
		}
		if gc := got[900]; gc.n != 0 || !gc.hasE || gc.e != 0 {
			t.Errorf("series 900 = %+v", gc)
		}
		for i := range buf {
			if _, err := decodeAggs(buf[:i], fixedCodec{q: 0.01, mm: mm}, func(int64, agg) {}); err == nil && i > 0 && i < len(buf)-1 {
				// A prefix may happen to decode when it ends on an entry
				// boundary; it must never panic.
				continue
			}
		}
	}
}

// sameBits reports whether two decoded chunks are bit-exact copies.
func sameSamples(a, b []chunkSample) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].t != b[i].t || len(a[i].sv) != len(b[i].sv) {
			return false
		}
		for j := range a[i].sv {
			x, y := a[i].sv[j], b[i].sv[j]
			if x.sid != y.sid || math.Float64bits(x.v) != math.Float64bits(y.v) {
				return false
			}
		}
	}
	return true
}

// decodeAll decodes a chunk into copies of its samples.
func decodeAll(b []byte, t0 int64) ([]chunkSample, error) {
	var out []chunkSample
	err := decodeChunk(b, t0, func(t int64, sv []sidVal) bool {
		out = append(out, chunkSample{t, slices.Clone(sv)})
		return true
	})
	return out, err
}

func TestChunkRoundTrip(t *testing.T) {
	t.Parallel()
	const t0 = 1_700_000_040_000
	sv := func(kv ...float64) []sidVal {
		var out []sidVal
		for i := 0; i < len(kv); i += 2 {
			out = append(out, sidVal{int64(kv[i]), kv[i+1]})
		}
		return out
	}
	// 60 polls of 16 values at 1 s, every value changing, and with two
	// changing, the others repeating (what a device mostly gives).
	var poll, steady []chunkSample
	for i := range 60 {
		var vals, st []float64
		for s := range 16 {
			vals = append(vals, float64(s+1), float64(int(230+s)*10+i%3)*0.1)
			v := float64(int(230+s)*10) * 0.1
			if s < 2 {
				v = float64(int(230+s)*10+i%3) * 0.1
			}
			st = append(st, float64(s+1), v)
		}
		poll = append(poll, chunkSample{t0 + int64(i)*1000 + int64(i%2), sv(vals...)})
		steady = append(steady, chunkSample{t0 + int64(i)*1000 + int64(i%2), sv(st...)})
	}
	tests := []struct {
		name    string
		samples []chunkSample
		maxSize int
	}{
		{"empty", nil, 1},
		{"one value", []chunkSample{{t0, sv(1, 0)}}, 6},
		{"a minute of 16 values at 1 s, all changing", poll, 60*(16+4) + 100},
		{"a minute of 16 values at 1 s, two changing", steady, 60*(2+2+2) + 100},
		{"scale factor by multiplication and division", []chunkSample{
			{t0 + 5, sv(1, 2304*0.1, 2, 2304.0/10, 3, 49.987, 4, 1234*math.Pow10(-3))},
			{t0 + 1005, sv(1, 2305*0.1, 2, 2305.0/10, 3, 49.991, 4, 1235*math.Pow10(-3))},
		}, 30},
		{"not decimal: the float's bytes", []chunkSample{
			{t0, sv(1, math.Pi, 2, -0.0, 3, math.Inf(1), 4, math.NaN(), 5, math.MaxFloat64, 6, math.SmallestNonzeroFloat64)},
			{t0 + 1, sv(1, math.E, 2, 0, 3, math.Inf(-1), 4, 1e300, 5, -123.456789, 6, 9007199254740993)},
		}, 2*6*9 + 20},
		{"series set changes", []chunkSample{
			{t0, sv(1, 1, 2, 2, 3, 3)},
			{t0 + 1000, sv(1, 1, 3, 3)},
			{t0 + 2000, sv(1, 1, 3, 4, 7, 5000)},
			{t0 + 3000, sv(2, 2)},
			{t0 + 4000, nil},
			{t0 + 5000, sv(1, 1, 2, 2, 3, 3, 7, -5000)},
		}, 50},
		{"a series twice in a sample (only a damaged old row gives that)", []chunkSample{
			{t0, sv(1, 1, 1, 2, 3, 3)},
			{t0 + 1000, sv(1, 2, 1, 2, 3, 3)},
			{t0 + 2000, sv(1, 5)},
		}, 40},
		{"irregular times", []chunkSample{
			{t0 + 59_999, sv(1, 1)},
		}, 8},
		{"large mantissas", []chunkSample{
			{t0, sv(1, 9007199254740991, 2, -9007199254740991, 3, 4294967295)},
			{t0 + 7, sv(1, -9007199254740991, 2, 9007199254740991, 3, 0)},
		}, 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := appendChunk(nil, t0, tt.samples)
			if ref := appendChunkMap(nil, t0, tt.samples); !bytes.Equal(b, ref) {
				t.Errorf("encoded\n%x\nthe map-based encoder gave\n%x", b, ref)
			}
			if len(b) > tt.maxSize {
				t.Errorf("%d bytes, want at most %d", len(b), tt.maxSize)
			}
			got, err := decodeAll(b, t0)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !sameSamples(got, tt.samples) && !(len(got) == 0 && len(tt.samples) == 0) {
				t.Errorf("round trip:\n got %v\nwant %v", got, tt.samples)
			}
			for cut := range len(b) {
				if _, err := decodeAll(b[:cut], t0); err == nil && cut < len(b) {
					t.Errorf("truncated to %d of %d bytes: no error", cut, len(b))
				}
			}
		})
	}
}

// FuzzChunk builds samples from the fuzzer's bytes (times, series sets,
// decimal and arbitrary float values), and checks that a chunk of them
// decodes bit-exact, and that the bytes themselves as a chunk decode or
// fail without a panic.
func FuzzChunk(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17})
	f.Add(appendChunk(nil, 0, []chunkSample{{5, []sidVal{{1, 230.4}, {3, math.Pi}}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		const t0 = 1_700_000_040_000
		decodeAll(data, t0) // must not panic
		r := data
		next := func() byte {
			if len(r) == 0 {
				return 0
			}
			c := r[0]
			r = r[1:]
			return c
		}
		var samples []chunkSample
		tt := int64(t0)
		for len(r) > 0 && tt < t0+60_000 {
			smp := chunkSample{t: tt}
			nser := int(next() % 8)
			sid := int64(0)
			for range nser {
				sid += int64(next()%4) + 1
				var v float64
				switch mode := next() % 4; mode {
				case 0: // a mantissa and a scale, divided
					m := int64(int16(uint16(next())<<8 | uint16(next())))
					v = float64(m) / pow10[next()%7]
				case 1: // multiplied
					m := int64(int16(uint16(next())<<8 | uint16(next())))
					v = float64(m) * math.Pow10(-int(next()%7))
				default: // any bits
					var u uint64
					for range 8 {
						u = u<<8 | uint64(next())
					}
					v = math.Float64frombits(u)
				}
				smp.sv = append(smp.sv, sidVal{sid, v})
			}
			samples = append(samples, smp)
			tt += int64(next()) * 100
			tt++
		}
		b := appendChunk(nil, t0, samples)
		if ref := appendChunkMap(nil, t0, samples); !bytes.Equal(b, ref) {
			t.Fatalf("encoded\n%x\nthe map-based encoder gave\n%x", b, ref)
		}
		got, err := decodeAll(b, t0)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !sameSamples(got, samples) && !(len(got) == 0 && len(samples) == 0) {
			t.Fatalf("round trip:\n got %v\nwant %v", got, samples)
		}
	})
}

// appendChunkMap is the chunk encoder as first written, with each series'
// previous value in a map: chunkEncoder must give the same bytes (the
// format is defined by what the decoder reads, but a chunk that encodes
// differently for the same samples would change the flash figure too).
func appendChunkMap(b []byte, t0 int64, samples []chunkSample) []byte {
	b = binary.AppendUvarint(b, uint64(len(samples)))
	prevT, prevD := t0, int64(0)
	var set []int64
	state := map[int64]seriesState{}
	for i, smp := range samples {
		d := smp.t - prevT
		b = binary.AppendUvarint(b, zigzag(d-prevD))
		prevT, prevD = smp.t, d
		same := i > 0 && len(set) == len(smp.sv)
		for j := 0; same && j < len(set); j++ {
			same = set[j] == smp.sv[j].sid
		}
		if same {
			b = append(b, 0)
		} else {
			set = set[:0]
			b = binary.AppendUvarint(b, uint64(len(smp.sv))+1)
			prev := int64(0)
			for _, x := range smp.sv {
				b = binary.AppendUvarint(b, uint64(x.sid-prev))
				prev = x.sid
				set = append(set, x.sid)
			}
		}
		bm := len(b)
		for range (len(smp.sv) + 7) / 8 {
			b = append(b, 0)
		}
		for i, x := range smp.sv {
			st := state[x.sid]
			if st.ok && math.Float64bits(st.v) == math.Float64bits(x.v) {
				continue
			}
			b[bm+i/8] |= 1 << (i % 8)
			m, f := int64(0), uint8(decFloat)
			if st.ok && st.form != decFloat {
				if pm, ok := inForm(x.v, st.form); ok {
					m, f = pm, st.form
				}
			}
			if f == decFloat {
				m, f = decForm(x.v)
			}
			switch {
			case f != decFloat && st.ok && st.form == f:
				b = binary.AppendUvarint(b, zigzag(m-st.m)<<1)
			case f == decFloat:
				b = binary.AppendUvarint(b, decFloat<<1|1)
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x.v))
			default:
				b = binary.AppendUvarint(b, zigzag(m)<<5|uint64(f)<<1|1)
			}
			state[x.sid] = seriesState{v: x.v, m: m, form: f, ok: true}
		}
	}
	return b
}
