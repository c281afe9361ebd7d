package store

import (
	"math"
	"slices"
	"testing"
)

// TestOpenChunkRoundTrip adds samples to an open chunk, truncates it as a
// failed batch does and adds more, and checks that samples gives back
// every value bit-exact, in time order with the last of equal times.
func TestOpenChunkRoundTrip(t *testing.T) {
	sv := func(kv ...float64) []sidVal {
		var out []sidVal
		for i := 0; i < len(kv); i += 2 {
			out = append(out, sidVal{int64(kv[i]), kv[i+1]})
		}
		return out
	}
	type add struct {
		t  int64
		sv []sidVal
	}
	tests := []struct {
		name     string
		adds     []add
		truncate int // after the adds, keep this many (-1: no truncate)
		more     []add
	}{
		{name: "repeated values", truncate: -1, adds: []add{
			{1000, sv(1, 230.1, 2, 50, 3, 0)}, {2000, sv(1, 230.1, 2, 50, 3, 0)}, {3000, sv(1, 230.1, 2, 50, 3, 0)}}},
		{name: "changing decimals and forms", truncate: -1, adds: []add{
			{1000, sv(1, 230.1, 2, -1.25, 5, 1e9)}, {2000, sv(1, 230.2, 2, -1.5, 5, 1e9+1)},
			{3000, sv(1, 229.97, 2, 17, 5, 3)}, {4000, sv(1, 0.1*3, 2, 17, 5, 2.5e-3)}}},
		{name: "floats without a decimal form", truncate: -1, adds: []add{
			{1000, sv(7, math.Pi, 9, math.MaxFloat64)}, {2000, sv(7, math.E, 9, -math.SmallestNonzeroFloat64)},
			{3000, sv(7, math.E, 9, 12)}, {4000, sv(7, 1.5, 9, math.Pi)}}},
		{name: "series change", truncate: -1, adds: []add{
			{1000, sv(1, 1, 2, 2)}, {2000, sv(1, 1, 2, 2, 3, 3)}, {3000, sv(2, 2.5)}, {4000, sv(2, 2.5)},
			{5000, sv()}, {6000, sv(1, 4, 400, 5)}}},
		{name: "many series", truncate: -1, adds: func() []add {
			var out []add
			for k := range 5 {
				var s []sidVal
				for i := range 37 {
					s = append(s, sidVal{int64(10 + 3*i), float64(i*k) / 10})
				}
				out = append(out, add{int64(1000 * (k + 1)), s})
			}
			return out
		}()},
		{name: "late and equal times", truncate: -1, adds: []add{
			{3000, sv(1, 3)}, {1000, sv(1, 1)}, {3000, sv(1, 33)}, {2000, sv(1, 2)}}},
		{name: "truncate all", truncate: 0, adds: []add{
			{1000, sv(1, 1, 2, 2)}, {2000, sv(1, 1.5, 2, 2)}},
			more: []add{{3000, sv(1, 1.5, 2, 2)}, {4000, sv(1, 1.5, 2, 3)}}},
		{name: "truncate within a series list", truncate: 2, adds: []add{
			{1000, sv(1, 1, 2, 2)}, {2000, sv(1, 1.5, 2, 2)}, {3000, sv(1, 8, 2, 9)}, {4000, sv(1, 7, 3, 9)}},
			more: []add{{3000, sv(1, 1.5, 2, 2)}, {4000, sv(1, 1.6, 2, math.Pi)}, {5000, sv(1, 1.6, 2, math.Pi)}}},
		{name: "truncate after a series change", truncate: 3, adds: []add{
			{1000, sv(1, 1)}, {2000, sv(1, 1, 2, 2.25)}, {3000, sv(1, 1, 2, 2.5)}, {4000, sv(4, 7)}},
			more: []add{{4000, sv(1, 1, 2, 2.5)}, {5000, sv(1, 1, 2, 2.75)}}},
	}
	// One decoder for every case, as the writer keeps one: a chunk's
	// decoding must not depend on the chunk decoded before.
	var dec chunkDecoder
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &openChunk{dev: 1}
			var want []add
			for _, a := range tt.adds {
				c.add(a.t, a.sv)
				want = append(want, a)
			}
			if tt.truncate >= 0 {
				c.truncate(tt.truncate)
				want = want[:tt.truncate]
				for _, a := range tt.more {
					c.add(a.t, a.sv)
					want = append(want, a)
				}
			}
			if len(c.ts) != len(want) {
				t.Fatalf("%d samples, want %d", len(c.ts), len(want))
			}
			for i, a := range want {
				if got := c.count(i); got != len(a.sv) {
					t.Errorf("count(%d) = %d, want %d", i, got, len(a.sv))
				}
			}
			// The expected samples: time order, the last of equal times.
			var ws []chunkSample
			for _, a := range want {
				ws = append(ws, chunkSample{a.t, a.sv})
			}
			ws = sortSamples(ws)
			// Decode twice into one arena: the second reuses it.
			var arena []sidVal
			var got []chunkSample
			for range 2 {
				got, arena = c.samples(got, arena, &dec)
			}
			if len(got) != len(ws) {
				t.Fatalf("%d samples decoded, want %d", len(got), len(ws))
			}
			for i := range ws {
				if got[i].t != ws[i].t || !slices.EqualFunc(got[i].sv, ws[i].sv, func(a, b sidVal) bool {
					return a.sid == b.sid && math.Float64bits(a.v) == math.Float64bits(b.v)
				}) {
					t.Errorf("sample %d = %d %v, want %d %v", i, got[i].t, got[i].sv, ws[i].t, ws[i].sv)
				}
			}
		})
	}
}

// TestOpenChunkCompact checks what the encoding is for: a minute of
// polls whose values mostly repeat takes a few bytes per sample, not 16
// per value.
func TestOpenChunkCompact(t *testing.T) {
	c := &openChunk{dev: 1}
	s := make([]sidVal, 31)
	for i := range s {
		s[i] = sidVal{int64(i + 1), float64(i) * 1.5}
	}
	for k := range 60 {
		s[0].v = 230 + float64(k%7)/10 // a voltage that moves
		s[1].v = float64(1000 + k)     // an energy counter
		c.add(int64(k)*1000, s)
	}
	// 60 samples: the first with its series (about 90 bytes), the rest
	// a byte of series, 4 of bitmap and two small deltas.
	if n := len(c.enc); n > 60*10+100 {
		t.Errorf("encoded %d bytes for 60 samples of 31 values (%d as pairs)", n, 60*31*16)
	}
}
