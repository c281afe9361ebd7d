package store

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"plantd/plant"
)

// readerKeys gives every third series a channel (sid 3, 6, ...): what a
// chunkReader gives, and the filter applied to decodeChunk's output.
func readerKeys() map[int64]chKey {
	keys := map[int64]chKey{}
	for sid := int64(0); sid < 200; sid += 3 {
		keys[sid] = chKey{plant.Channel(sid/3 + 1), int32(sid % 2)}
	}
	return keys
}

// readerSample is one sample as a decoder gave it.
type readerSample struct {
	t    int64
	vals []chVal
}

// sameAsDecodeChunk checks that r decodes b as decodeChunk does: the same
// samples (of them the values of the series in keys, bit-exact), up to the
// same error.
func sameAsDecodeChunk(t *testing.T, r *chunkReader, keys map[int64]chKey, b []byte, t0 int64) {
	t.Helper()
	var want, got []readerSample
	errWant := decodeChunk(b, t0, func(tt int64, sv []sidVal) bool {
		s := readerSample{t: tt}
		for _, x := range sv {
			if k, ok := keys[x.sid]; ok {
				s.vals = append(s.vals, chVal{k, x.v})
			}
		}
		want = append(want, s)
		return true
	})
	errGot := r.decode(b, t0, func(tt int64, vals []chVal) bool {
		got = append(got, readerSample{t: tt, vals: slices.Clone(vals)})
		return true
	})
	if (errWant == nil) != (errGot == nil) {
		t.Fatalf("error %v, decodeChunk's %v (chunk % x)", errGot, errWant, b)
	}
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		same = got[i].t == want[i].t && len(got[i].vals) == len(want[i].vals)
		for j := 0; same && j < len(got[i].vals); j++ {
			g, w := got[i].vals[j], want[i].vals[j]
			same = g.k == w.k && math.Float64bits(g.v) == math.Float64bits(w.v)
		}
	}
	if !same {
		t.Fatalf("samples\n %v\ndecodeChunk's\n %v\n(chunk % x)", got, want, b)
	}
}

// randomChunk writes a chunk of up to 60 samples whose series sets change
// now and then (series leave and come back), with repeated, decimal and
// arbitrary values.
func randomChunk(rng *rand.Rand, t0 int64) []byte {
	var samples []chunkSample
	var set []int64
	tt := t0 + rng.Int64N(1000)
	for range rng.IntN(60) {
		if len(set) == 0 || rng.IntN(8) == 0 {
			set = set[:0]
			sid := int64(rng.IntN(3))
			for range rng.IntN(20) {
				set = append(set, sid)
				sid += 1 + int64(rng.IntN(3))
			}
		}
		smp := chunkSample{t: tt}
		for j, sid := range set {
			v := float64(j)
			switch rng.IntN(4) {
			case 0:
				v = float64(rng.IntN(100000)) / pow10[rng.IntN(4)]
			case 1:
				v = math.Float64frombits(rng.Uint64())
			case 2:
				v = rng.Float64() * 1e4
			}
			smp.sv = append(smp.sv, sidVal{sid, v})
		}
		samples = append(samples, smp)
		tt += 1 + rng.Int64N(3000)
		if tt >= t0+minuteMs {
			break
		}
	}
	return appendChunk(nil, t0, samples)
}

// TestChunkReader: chunkReader decodes random chunks, their truncations
// and corrupted copies as decodeChunk does, one reader serving chunk
// after chunk.
func TestChunkReader(t *testing.T) {
	t.Parallel()
	const t0 = 1_700_000_040_000
	keys := readerKeys()
	r := newChunkReader(keys)
	rng := rand.New(rand.NewPCG(43, 2))
	for range 400 {
		b := randomChunk(rng, t0)
		sameAsDecodeChunk(t, r, keys, b, t0)
		sameAsDecodeChunk(t, r, keys, b[:rng.IntN(len(b)+1)], t0)
		bad := slices.Clone(b)
		for range 1 + rng.IntN(3) {
			bad[rng.IntN(len(bad))] ^= byte(1 << rng.IntN(8))
		}
		sameAsDecodeChunk(t, r, keys, bad, t0)
	}
}

// FuzzChunkReader: any bytes decode with chunkReader as with decodeChunk.
func FuzzChunkReader(f *testing.F) {
	const t0 = 1_700_000_040_000
	rng := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		f.Add(randomChunk(rng, t0))
	}
	keys := readerKeys()
	r := newChunkReader(keys)
	f.Fuzz(func(t *testing.T, b []byte) { sameAsDecodeChunk(t, r, keys, b, t0) })
}
