package store

import (
	"math"
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
