package store

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
)

// This file holds the two byte formats of the value blobs (see doc.go,
// "Schema"): raw rows (exact decimal values) and rollup rows (aggregates
// quantised to a resolution per unit).

// errCorrupt is returned when a blob does not decode; the row is skipped
// and the error counted, never a panic.
var errCorrupt = errors.New("store: corrupt value blob")

var pow10 = [...]float64{1, 10, 100, 1e3, 1e4, 1e5, 1e6}

// decFloat is the tag of a value stored as its 8 IEEE 754 bytes.
const decFloat = 7

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// appendDec appends v in the raw value format: the smallest k in 0..6 for
// which v·10^k is an integer m (to within float noise) gives
// uvarint(zigzag(m)<<3 | k); anything else is tag 7 and the float's 8 bytes.
// SunSpec values are integers times a power of ten, so a voltage of 230.4
// takes 3 bytes and a power of 5000 W 3 bytes.
func appendDec(b []byte, v float64) []byte {
	for k, p := range pow10 {
		x := v * p
		if math.Abs(x) >= 1<<53 {
			break
		}
		r := math.Round(x)
		if math.Abs(r/p-v) <= math.Abs(v)*1e-15 {
			return binary.AppendUvarint(b, zigzag(int64(r))<<3|uint64(k))
		}
	}
	b = binary.AppendUvarint(b, decFloat)
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}

// readDec reads a value written by appendDec and returns it with the bytes
// it took.
func readDec(b []byte) (float64, int, error) {
	u, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, 0, errCorrupt
	}
	k := u & 7
	if k == decFloat {
		if len(b) < n+8 {
			return 0, 0, errCorrupt
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b[n:])), n + 8, nil
	}
	return float64(unzigzag(u>>3)) / pow10[k], n, nil
}

// appendQ appends v quantised to the resolution q: uvarint(zigzag(round(v/q))).
func appendQ(b []byte, v, q float64) []byte {
	x := math.Round(v / q)
	x = math.Max(math.Min(x, 1<<62), -(1 << 62))
	return binary.AppendUvarint(b, zigzag(int64(x)))
}

// readQ reads a value written by appendQ.
func readQ(b []byte, q float64) (float64, int, error) {
	u, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, 0, errCorrupt
	}
	return float64(unzigzag(u)) * q, n, nil
}

// energyQ is the resolution of energies in rollups: 1 mWh, so that a year
// of 5-minute rows sums without visible drift.
const energyQ = 0.001

// agg is the aggregate of one series over one interval: the samples'
// count, sum (for the mean), min and max, and the energy attributed to the
// interval.
type agg struct {
	n        int64
	sum      float64
	min, max float64
	e        float64
	hasE     bool
}

func (a *agg) add(v float64) {
	if a.n == 0 || v < a.min {
		a.min = v
	}
	if a.n == 0 || v > a.max {
		a.max = v
	}
	a.n++
	a.sum += v
}

func (a *agg) addE(e float64) {
	a.e += e
	a.hasE = true
}

// merge adds b to a.
func (a *agg) merge(b agg) {
	if b.n > 0 {
		if a.n == 0 || b.min < a.min {
			a.min = b.min
		}
		if a.n == 0 || b.max > a.max {
			a.max = b.max
		}
		a.n += b.n
		a.sum += b.sum
	}
	if b.hasE {
		a.e += b.e
		a.hasE = true
	}
}

func (a *agg) mean() float64 { return a.sum / float64(a.n) }

// Flags of a rollup entry.
const (
	flagMean   = 1 << iota // n > 0: mean follows (n is the row's unless flagOwnN)
	flagOwnN               // the entry's n differs from the row's: n follows
	flagMinMax             // min and max follow
	flagEnergy             // the energy follows
)

// aggEntry is one series of a rollup row.
type aggEntry struct {
	sid int64
	a   agg
}

// seriesCodec tells the encoder a series' resolution and whether its min
// and max are kept.
type seriesCodec interface {
	codecOf(sid int64) (q float64, minmax bool, ok bool)
}

// encodeAggs encodes a rollup row: uvarint(rowN), then per series (sorted
// by sid): uvarint(sid delta), flags, [n], [mean], [min, max], [energy].
// Means, mins and maxes are quantised to the series' resolution, energies
// to 1 mWh.
func encodeAggs(b []byte, rowN int64, es []aggEntry, sc seriesCodec) []byte {
	b = binary.AppendUvarint(b, uint64(rowN))
	prev := int64(0)
	for _, e := range es {
		q, minmax, ok := sc.codecOf(e.sid)
		if !ok || (e.a.n == 0 && !e.a.hasE) {
			continue
		}
		var fl byte
		if e.a.n > 0 {
			fl |= flagMean
			if e.a.n != rowN {
				fl |= flagOwnN
			}
			if minmax {
				fl |= flagMinMax
			}
		}
		if e.a.hasE {
			fl |= flagEnergy
		}
		b = binary.AppendUvarint(b, uint64(e.sid-prev))
		prev = e.sid
		b = append(b, fl)
		if fl&flagOwnN != 0 {
			b = binary.AppendUvarint(b, uint64(e.a.n))
		}
		if fl&flagMean != 0 {
			b = appendQ(b, e.a.mean(), q)
		}
		if fl&flagMinMax != 0 {
			b = appendQ(b, e.a.min, q)
			b = appendQ(b, e.a.max, q)
		}
		if fl&flagEnergy != 0 {
			b = appendQ(b, e.a.e, energyQ)
		}
	}
	return b
}

// decodeAggs decodes a rollup row, calling fn per series. A mean without
// min and max decodes with min = max = mean.
func decodeAggs(b []byte, sc seriesCodec, fn func(sid int64, a agg)) (rowN int64, err error) {
	u, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, errCorrupt
	}
	rowN = int64(u)
	b = b[n:]
	sid := int64(0)
	for len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 || len(b) < n+1 {
			return rowN, errCorrupt
		}
		sid += int64(d)
		fl := b[n]
		b = b[n+1:]
		q, _, known := sc.codecOf(sid)
		if !known {
			q = 1 // decode to skip; the value is dropped below
		}
		var a agg
		if fl&flagMean != 0 {
			a.n = rowN
		}
		if fl&flagOwnN != 0 {
			u, n := binary.Uvarint(b)
			if n <= 0 {
				return rowN, errCorrupt
			}
			a.n = int64(u)
			b = b[n:]
		}
		if fl&flagMean != 0 {
			m, n, err := readQ(b, q)
			if err != nil {
				return rowN, err
			}
			b = b[n:]
			a.sum, a.min, a.max = m*float64(a.n), m, m
		}
		if fl&flagMinMax != 0 {
			lo, n, err := readQ(b, q)
			if err != nil {
				return rowN, err
			}
			b = b[n:]
			hi, n, err := readQ(b, q)
			if err != nil {
				return rowN, err
			}
			b = b[n:]
			a.min, a.max = lo, hi
		}
		if fl&flagEnergy != 0 {
			e, n, err := readQ(b, energyQ)
			if err != nil {
				return rowN, err
			}
			b = b[n:]
			a.e, a.hasE = e, true
		}
		if known {
			fn(sid, a)
		}
	}
	return rowN, nil
}

// The raw chunk format (doc.go, "Schema"): the samples of one device in
// one minute, t0 its start (the row's key, not in the blob):
//
//	uvarint(n)
//	per sample: uvarint(zigzag(delta of delta)) of its time (the first
//	  against t0 with a previous delta of 0),
//	  uvarint(0) for the previous sample's series, else uvarint(c+1) and
//	  c uvarints of series id deltas (ascending, the first from 0),
//	  a bitmap of ceil(c/8) bytes (bit i of byte i/8 for the i-th series):
//	  set when the series' value differs from its previous one in the
//	  chunk (or has none), then the values of the set bits.
//
// Most values of a poll repeat the last one (95 % of them with the
// simulator at 1 s): they cost a bit each. A value is either a delta,
// uvarint(zigzag(m − m')<<1), when the series' previous value in the
// chunk had the same decimal form (m' its mantissa), or
// uvarint(zigzag(m)<<5 | form<<1 | 1), form 0–6 for v = m / 10^form,
// 8–13 for v = m · 10^-(form−7) (the two ways a scale factor is applied
// give different floats), 7 (decFloat, m = 0) for any other float, whose
// 8 IEEE 754 bytes follow. The form is the first that gives back the
// value's exact bits, so every value round-trips bit-exact.

// negPow10 are 10^-k as math.Pow10 gives them (a scale factor applied by
// multiplication).
var negPow10 = [...]float64{1, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6}

// decForm returns v's exact decimal form: a mantissa m and a form
// (see above); decFloat when none gives v's exact bits.
func decForm(v float64) (int64, uint8) {
	for k := range uint8(len(pow10)) {
		if m, ok := inForm(v, k); ok {
			return m, k
		}
		if k > 0 {
			if m, ok := inForm(v, k+decFloat); ok {
				return m, k + decFloat
			}
		}
	}
	return 0, decFloat
}

// inForm returns v's mantissa in form f (not decFloat) if that form
// gives back v's exact bits.
func inForm(v float64, f uint8) (int64, bool) {
	k := f
	if f > decFloat {
		k = f - decFloat
	}
	m := math.Round(v * pow10[k])
	if math.IsNaN(m) || math.Abs(m) >= 1<<53 || math.Float64bits(decValue(int64(m), f)) != math.Float64bits(v) {
		return 0, false
	}
	return int64(m), true
}

// decValue is the value of mantissa m in form f (not decFloat).
func decValue(m int64, f uint8) float64 {
	if f < decFloat {
		return float64(m) / pow10[f]
	}
	return float64(m) * negPow10[f-decFloat]
}

// chunkSample is one sample of a chunk: its time and its (series, value)
// pairs, ascending and unique by series.
type chunkSample struct {
	t  int64
	sv []sidVal
}

// seriesState is a series' previous value in a chunk while it is coded.
type seriesState struct {
	v    float64
	m    int64
	form uint8
	ok   bool
}

// appendValue appends the encoding of v, a value of a series whose state
// is st that differs from st.v, and makes v the state: the delta of its
// mantissa when v has the form of the series' value before (a value that
// has more than one keeps that form), else its own form and mantissa, or
// the float's 8 bytes. This is the value step of the chunk format
// (appendChunk) and of the writer's open minute (openChunk); readValue
// is its inverse.
func appendValue(b []byte, st *seriesState, v float64) []byte {
	m, f := int64(0), uint8(decFloat)
	if st.ok && st.form != decFloat {
		if pm, ok := inForm(v, st.form); ok {
			m, f = pm, st.form
		}
	}
	if f == decFloat {
		m, f = decForm(v)
	}
	switch {
	case f != decFloat && st.ok && st.form == f:
		b = binary.AppendUvarint(b, zigzag(m-st.m)<<1)
	case f == decFloat:
		b = binary.AppendUvarint(b, decFloat<<1|1)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	default:
		b = binary.AppendUvarint(b, zigzag(m)<<5|uint64(f)<<1|1)
	}
	*st = seriesState{v: v, m: m, form: f, ok: true}
	return b
}

// readValue decodes the value appendValue encoded at the start of b into
// the series' state st and returns the bytes it took. With value false
// st.v is left stale for a decimal (a reader that does not give the
// series saves the conversion). errCorrupt when b does not hold one.
func readValue(b []byte, st *seriesState, value bool) (int, error) {
	u, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, errCorrupt
	}
	switch {
	case u&1 == 0:
		if !st.ok || st.form == decFloat {
			return 0, errCorrupt
		}
		st.m += unzigzag(u >> 1)
	case u>>1 == decFloat:
		if len(b) < k+8 {
			return 0, errCorrupt
		}
		*st = seriesState{v: math.Float64frombits(binary.LittleEndian.Uint64(b[k:])), form: decFloat, ok: true}
		return k + 8, nil
	default:
		f := uint8(u>>1) & 15
		if f > 2*decFloat-1 || f == decFloat {
			return 0, errCorrupt
		}
		*st = seriesState{m: unzigzag(u >> 5), form: f, ok: true}
	}
	if value {
		st.v = decValue(st.m, st.form)
	}
	return k, nil
}

// appendChunk appends the chunk of samples (ascending and unique by t, all
// in [t0, t0+minuteMs)) to b.
func appendChunk(b []byte, t0 int64, samples []chunkSample) []byte {
	var e chunkEncoder
	return e.appendChunk(b, t0, samples)
}

// chunkEncoder holds the state of appendChunk between its calls, so that
// the writer encodes its chunks without allocating: each series' previous
// value in the chunk, kept by series id (sids ascending, st alike), and
// where the series of the current set are in it (pos). A map from id to
// state cost two lookups per value, a third of the encoding's time.
type chunkEncoder struct {
	set, sids []int64
	st        []seriesState
	pos       []int
}

// locate finds (adding as needed) the state of every series of the set.
func (e *chunkEncoder) locate() {
	for _, sid := range e.set {
		if i, ok := slices.BinarySearch(e.sids, sid); !ok {
			e.sids = slices.Insert(e.sids, i, sid)
			e.st = slices.Insert(e.st, i, seriesState{})
		}
	}
	e.pos = e.pos[:0]
	for _, sid := range e.set {
		i, _ := slices.BinarySearch(e.sids, sid)
		e.pos = append(e.pos, i)
	}
}

// appendChunk is appendChunk with e's buffers.
func (e *chunkEncoder) appendChunk(b []byte, t0 int64, samples []chunkSample) []byte {
	e.set, e.sids, e.st, e.pos = e.set[:0], e.sids[:0], e.st[:0], e.pos[:0]
	b = binary.AppendUvarint(b, uint64(len(samples)))
	prevT, prevD := t0, int64(0)
	for i, smp := range samples {
		d := smp.t - prevT
		b = binary.AppendUvarint(b, zigzag(d-prevD))
		prevT, prevD = smp.t, d
		same := i > 0 && len(e.set) == len(smp.sv)
		for j := 0; same && j < len(e.set); j++ {
			same = e.set[j] == smp.sv[j].sid
		}
		if same {
			b = append(b, 0)
		} else {
			e.set = e.set[:0]
			b = binary.AppendUvarint(b, uint64(len(smp.sv))+1)
			prev := int64(0)
			for _, x := range smp.sv {
				b = binary.AppendUvarint(b, uint64(x.sid-prev))
				prev = x.sid
				e.set = append(e.set, x.sid)
			}
			e.locate()
		}
		bm := len(b)
		for range (len(smp.sv) + 7) / 8 {
			b = append(b, 0)
		}
		for i, x := range smp.sv {
			st := &e.st[e.pos[i]]
			if st.ok && math.Float64bits(st.v) == math.Float64bits(x.v) {
				continue
			}
			b[bm+i/8] |= 1 << (i % 8)
			b = appendValue(b, st, x.v)
		}
	}
	return b
}

// decodeChunk decodes a chunk starting at t0, calling fn per sample in
// time order with its (series, value) pairs (valid during the call only);
// fn returning false stops. A malformed chunk gives errCorrupt, never a
// panic.
func decodeChunk(b []byte, t0 int64, fn func(t int64, sv []sidVal) bool) error {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return errCorrupt
	}
	b = b[k:]
	prevT, prevD := t0, int64(0)
	var set []int64
	var sv []sidVal
	state := map[int64]seriesState{}
	for range n {
		u, k := binary.Uvarint(b)
		if k <= 0 {
			return errCorrupt
		}
		b = b[k:]
		d := prevD + unzigzag(u)
		t := prevT + d
		prevT, prevD = t, d
		c, k := binary.Uvarint(b)
		if k <= 0 || c > uint64(len(b)) {
			return errCorrupt
		}
		b = b[k:]
		if c > 0 {
			set = set[:0]
			sid := int64(0)
			for range c - 1 {
				u, k := binary.Uvarint(b)
				if k <= 0 {
					return errCorrupt
				}
				b = b[k:]
				sid += int64(u)
				set = append(set, sid)
			}
		}
		nb := (len(set) + 7) / 8
		if len(b) < nb {
			return errCorrupt
		}
		bm := b[:nb]
		b = b[nb:]
		sv = sv[:0]
		for i, sid := range set {
			st := state[sid]
			if bm[i/8]&(1<<(i%8)) == 0 {
				if !st.ok {
					return errCorrupt
				}
				sv = append(sv, sidVal{sid, st.v})
				continue
			}
			k, err := readValue(b, &st, true)
			if err != nil {
				return err
			}
			b = b[k:]
			state[sid] = st
			sv = append(sv, sidVal{sid, st.v})
		}
		if !fn(t, sv) {
			return nil
		}
	}
	if len(b) != 0 {
		return errCorrupt
	}
	return nil
}
