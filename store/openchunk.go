package store

import (
	"encoding/binary"
	"math"
	"time"
)

// openChunk is one device's chunk minute as the writer collects it: the
// samples in arrival order, the number already written, and whether the
// database may hold samples of the minute that it does not (then writing
// merges with the stored row).
//
// The samples' values are kept encoded (enc), each against the sample
// before it in the chunk, as the chunk codec does (codec.go): the
// series list only when it changed, a bitmap of the values that changed
// and those values as decimal deltas. A minute of 1,000 devices polled at
// 1 s is 60,000 samples of about 31 values: as (series, value) pairs of
// 16 bytes they held 30 MB at the minute's end, most of plantd's heap
// (scripts/scale 1000 50: live heap 18 -> 44 MB every minute, RSS 92 MB);
// encoded, repeated values cost a bit each and changed ones 1-3 bytes.
type openChunk struct {
	dev, t0 int64
	ts      []int64
	ends    []int32 // the values of samples 0..i number ends[i]
	// enc holds the samples' encodings; sample i's ends at offs[i].
	enc  []byte
	offs []int32
	// The encoder's state after the last sample: its series and, per
	// position, the series' state (value, decimal form and mantissa).
	sids      []int64
	st        []seriesState
	persisted int
	// rowN is the sample count of the minute's row as the last commit
	// left it (a duplicate time replaces a sample: it counts once);
	// nextRowN the count writeChunk wrote in the batch being committed.
	rowN, nextRowN int
	merge          bool
	// eager: the device had no samples the writer knew of when the minute
	// began (first start, a new device, one back after more than an
	// hour): its first minute is written at every commit, so that its
	// values show before the minute is complete.
	eager   bool
	lastAdd time.Time // wall clock
}

// add appends a sample (its values ascending and unique by series).
func (c *openChunk) add(t int64, sv []sidVal) {
	c.ts = append(c.ts, t)
	n := int32(len(sv))
	if k := len(c.ends); k > 0 {
		n += c.ends[k-1]
	}
	c.ends = append(c.ends, n)
	c.enc = c.encodeSample(c.enc, sv)
	c.offs = append(c.offs, int32(len(c.enc)))
}

// encodeSample appends sv's encoding against the chunk's last sample to
// b and makes sv the last sample:
//
//	uvarint(0) for the last sample's series, else uvarint(c+1) and c
//	uvarints of series id deltas (ascending, the first from 0);
//	a bitmap of ceil(c/8) bytes, bit i set when the i-th value's bits
//	differ from the last sample's value at i (always for a new series
//	list); then per set bit uvarint(zigzag(m-m')<<1) when the value has
//	the last value's decimal form (m' its mantissa), else
//	uvarint(zigzag(m)<<5 | form<<1 | 1), and for decFloat the 8 bytes of
//	the float.
func (c *openChunk) encodeSample(b []byte, sv []sidVal) []byte {
	same := len(c.ts) > 1 && len(c.sids) == len(sv)
	for i := 0; same && i < len(sv); i++ {
		same = c.sids[i] == sv[i].sid
	}
	if same {
		b = append(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(sv))+1)
		prev := int64(0)
		c.sids = c.sids[:0]
		for _, x := range sv {
			b = binary.AppendUvarint(b, zigzag(x.sid-prev))
			prev = x.sid
			c.sids = append(c.sids, x.sid)
		}
		c.st = append(c.st[:0], make([]seriesState, len(sv))...)
	}
	bm := len(b)
	for range (len(sv) + 7) / 8 {
		b = append(b, 0)
	}
	for i, x := range sv {
		st := &c.st[i]
		if st.ok && math.Float64bits(st.v) == math.Float64bits(x.v) {
			continue
		}
		b[bm+i/8] |= 1 << (i % 8)
		b = appendValue(b, st, x.v)
	}
	return b
}

// truncate drops the samples from the n-th on (a batch that failed) and
// sets the encoder's state back to the n-th sample by decoding them.
func (c *openChunk) truncate(n int) {
	if n == len(c.ts) {
		return
	}
	c.ts, c.ends, c.offs = c.ts[:n], c.ends[:n], c.offs[:n]
	end := int32(0)
	if n > 0 {
		end = c.offs[n-1]
	}
	c.enc = c.enc[:end]
	c.sids, c.st = c.sids[:0], c.st[:0]
	d := chunkDecoder{c: c}
	for i := range n {
		d.next(i)
	}
	c.sids, c.st = d.sids, d.st
}

// count is the number of values of sample i.
func (c *openChunk) count(i int) int {
	if i == 0 {
		return int(c.ends[0])
	}
	return int(c.ends[i] - c.ends[i-1])
}

// samples returns the chunk's samples in time order, their values
// decoded into arena; of two at one time the later recorded wins (as a
// row replaced it before). The samples are valid while arena is not
// reused; the grown arena is returned for that.
//
// d is the decoder it uses, reset to c: its series list and state are
// reused from chunk to chunk (the writer keeps one; a decoder of its own
// per call allocated both for every chunk written, a third of the bytes
// plantd allocated at 1,000 devices).
func (c *openChunk) samples(dst []chunkSample, arena []sidVal, d *chunkDecoder) ([]chunkSample, []sidVal) {
	dst = dst[:0]
	arena = arena[:0]
	if k := len(c.ends); k > 0 && cap(arena) < int(c.ends[k-1]) {
		arena = make([]sidVal, 0, c.ends[k-1])
	}
	d.reset(c)
	for i := range c.ts {
		start := len(arena)
		arena = d.appendNext(arena, i)
		dst = append(dst, chunkSample{t: c.ts[i], sv: arena[start:len(arena):len(arena)]})
	}
	return sortSamples(dst), arena
}

// chunkDecoder decodes an open chunk's samples in order; its state is
// what the encoder's was after the sample decoded last.
type chunkDecoder struct {
	c    *openChunk
	pos  int
	sids []int64
	st   []seriesState
}

// reset makes d decode c's samples from the first, keeping its slices'
// room. The first sample of a chunk always lists its series, which sets
// the state anew (next).
func (d *chunkDecoder) reset(c *openChunk) {
	d.c, d.pos, d.sids, d.st = c, 0, d.sids[:0], d.st[:0]
}

// next decodes sample i (the one after the last decoded) into the state.
// The encoding is the chunk's own, made by encodeSample: it is not read
// from outside the process, so a malformed one is a bug (a panic).
func (d *chunkDecoder) next(i int) {
	b := d.c.enc[:d.c.offs[i]]
	u, k := binary.Uvarint(b[d.pos:])
	d.pos += k
	if u > 0 {
		n := int(u - 1)
		d.sids = d.sids[:0]
		prev := int64(0)
		for range n {
			u, k := binary.Uvarint(b[d.pos:])
			d.pos += k
			prev += unzigzag(u)
			d.sids = append(d.sids, prev)
		}
		d.st = append(d.st[:0], make([]seriesState, n)...)
	}
	nb := (len(d.sids) + 7) / 8
	bm := b[d.pos : d.pos+nb]
	d.pos += nb
	for j := range d.sids {
		if bm[j/8]&(1<<(j%8)) == 0 {
			continue
		}
		k, err := readValue(b[d.pos:], &d.st[j], true)
		if err != nil {
			panic("store: open chunk sample malformed: " + err.Error())
		}
		d.pos += k
	}
	if d.pos != len(b) {
		panic("store: open chunk sample decoded short")
	}
}

// appendNext decodes sample i and appends its (series, value) pairs.
func (d *chunkDecoder) appendNext(dst []sidVal, i int) []sidVal {
	d.next(i)
	for j, sid := range d.sids {
		dst = append(dst, sidVal{sid, d.st[j].v})
	}
	return dst
}
