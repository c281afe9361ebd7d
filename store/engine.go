package store

import (
	"encoding/binary"
	"math"

	"plantd/plant"
)

// This file is the bucket engine: it turns a device's raw samples into
// per-interval aggregates (sample statistics and energies). The 5-minute
// rollups and the OneMinute answers of Recent both come from it, so a
// rebuild after a crash computes exactly what the first pass computed.

// Limits of the energy rules (doc.go, "Energy").
const (
	// counterGapMs is the longest gap between two samples across which a
	// counter's difference is spread over the intervals in between.
	counterGapMs = 60 * 60 * 1000
	// powerGapMs is the longest gap across which power is integrated.
	powerGapMs = 15 * 60 * 1000
	// maxDeviceW bounds the mean power a counter difference may imply; a
	// larger jump (a replaced device, a wrapped or re-based accumulator)
	// starts a new baseline.
	maxDeviceW = 5e6
	// counterSlackWh allows for counters of coarse resolution (kWh).
	counterSlackWh = 1000
)

// chVal is one channel value of a raw sample.
type chVal struct {
	k chKey
	v float64
}

// rawSample is one decoded raw row: a poll of one device.
type rawSample struct {
	t    int64
	vals []chVal
}

// get returns the value of a channel in the sample.
func (s *rawSample) get(k chKey) (float64, bool) {
	for i := range s.vals {
		if s.vals[i].k == k {
			return s.vals[i].v, true
		}
	}
	return 0, false
}

// decodeRaw decodes a raw blob with the catalog's series. Series the
// catalog does not know, or whose channel this version does not know, are
// skipped.
func decodeRaw(b []byte, c *catalog, dst []chVal) ([]chVal, error) {
	sid := int64(0)
	c.mu.RLock()
	defer c.mu.RUnlock()
	for len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 {
			return dst, errCorrupt
		}
		sid += int64(d)
		b = b[n:]
		v, n, err := readDec(b)
		if err != nil {
			return dst, err
		}
		b = b[n:]
		if s := c.seriesIDs[sid]; s != nil && s.ch != 0 {
			dst = append(dst, chVal{chKey{s.ch, int32(s.idx)}, v})
		}
	}
	return dst, nil
}

// devBucket is one device's aggregates over one interval.
type devBucket struct {
	n    int64 // samples in the interval
	aggs map[chKey]*agg
}

func (b *devBucket) at(k chKey) *agg {
	a := b.aggs[k]
	if a == nil {
		a = &agg{}
		b.aggs[k] = a
	}
	return a
}

// energy returns a field's energy in the interval.
func (b *devBucket) energy(c plant.Channel) (float64, bool) {
	if a := b.aggs[chKey{c, 0}]; a != nil && a.hasE {
		return a.e, true
	}
	return 0, false
}

// energySpec says where a field's energy comes from: its lifetime counter
// when both samples of a pair have it and the difference is plausible,
// else its power integrated over the pair.
type energySpec struct {
	field, counter, power plant.Channel
}

var energySpecs = [...]energySpec{
	{plant.PVGeneration, plant.PVGenerationTotal, plant.PVGeneration},
	{plant.GridFeedIn, plant.GridFeedInTotal, plant.GridFeedIn},
	{plant.GridConsumption, plant.GridConsumptionTotal, plant.GridConsumption},
	{plant.BatteryCharging, 0, plant.BatteryCharging},
	{plant.BatteryDischarging, 0, plant.BatteryDischarging},
}

// dcSpec is the energy spec of DC input i: the dcEnergyInput counter, else
// dcPowerInput.
var dcSpec = energySpec{plant.DCEnergyInput, plant.DCEnergyInput, plant.DCPowerInput}

// counterEvent reports a counter difference that was not taken: the
// counter went back (reset, wrap, replaced device) or jumped implausibly.
type counterEvent struct {
	ch       plant.Channel
	idx      int32
	t        int64
	from, to float64
}

// floorDiv rounds t down to a multiple of w.
func floorDiv(t, w int64) int64 {
	q := t / w
	if t%w != 0 && t < 0 {
		q--
	}
	return q * w
}

// bucketer aggregates a device's samples into intervals of width within
// [from, to).
type bucketer struct {
	from, to, width int64
	out             map[int64]*devBucket
	onCounter       func(counterEvent)
}

func (bk *bucketer) bucket(start int64) *devBucket {
	b := bk.out[start]
	if b == nil {
		b = &devBucket{aggs: map[chKey]*agg{}}
		bk.out[start] = b
	}
	return b
}

// aggregate computes the intervals of one device. prev is the last sample
// before from (nil: none within counterGapMs), samples are the samples in
// [from, to) in time order, next the first sample at or after to (nil:
// none). Sample statistics count the samples in [from, to); energies come
// from consecutive pairs of samples and are spread over the pair's span by
// time, the part inside [from, to) landing in the intervals it overlaps.
func aggregate(prev *rawSample, samples []rawSample, next *rawSample, from, to, width int64, onCounter func(counterEvent)) map[int64]*devBucket {
	bk := &bucketer{from: from, to: to, width: width, out: map[int64]*devBucket{}, onCounter: onCounter}
	for i := range samples {
		s := &samples[i]
		b := bk.bucket(floorDiv(s.t, width))
		b.n++
		for _, cv := range s.vals {
			if cv.k.ch.Counter() {
				continue
			}
			b.at(cv.k).add(cv.v)
		}
	}
	p := prev
	for i := range samples {
		bk.pair(p, &samples[i])
		p = &samples[i]
	}
	if len(samples) > 0 || prev != nil {
		bk.pair(p, next)
	}
	return bk.out
}

// pair attributes the energies between two consecutive samples.
func (bk *bucketer) pair(p, c *rawSample) {
	if p == nil || c == nil || c.t <= p.t || c.t-p.t > counterGapMs {
		return
	}
	if c.t <= bk.from || p.t >= bk.to {
		return
	}
	for _, sp := range energySpecs {
		bk.pairEnergy(p, c, sp, 0)
	}
	// DC inputs: every input the later sample has, once (by its counter,
	// or by its power when it has no counter).
	for _, cv := range c.vals {
		switch cv.k.ch {
		case plant.DCEnergyInput:
		case plant.DCPowerInput:
			if _, ok := c.get(chKey{plant.DCEnergyInput, cv.k.idx}); ok {
				continue
			}
		default:
			continue
		}
		bk.pairEnergy(p, c, dcSpec, cv.k.idx)
	}
}

func (bk *bucketer) pairEnergy(p, c *rawSample, sp energySpec, idx int32) {
	dtMs := c.t - p.t
	hours := float64(dtMs) / 3.6e6
	if sp.counter != 0 {
		k := chKey{sp.counter, idx}
		cp, ok1 := p.get(k)
		cc, ok2 := c.get(k)
		if ok1 && ok2 {
			d := cc - cp
			if d >= 0 && d <= maxDeviceW*hours+counterSlackWh {
				bk.spread(chKey{sp.field, idx}, d, p.t, c.t)
				return
			}
			if bk.onCounter != nil && c.t >= bk.from && c.t < bk.to {
				bk.onCounter(counterEvent{ch: sp.counter, idx: idx, t: c.t, from: cp, to: cc})
			}
		}
	}
	if dtMs > powerGapMs {
		return
	}
	k := chKey{sp.power, idx}
	wp, ok1 := p.get(k)
	wc, ok2 := c.get(k)
	if !ok1 || !ok2 {
		return
	}
	bk.spread(chKey{sp.field, idx}, (wp+wc)/2*hours, p.t, c.t)
}

// spread adds energy e of the span (t0, t1] to the intervals it overlaps
// inside [from, to), in proportion to the overlap.
func (bk *bucketer) spread(k chKey, e float64, t0, t1 int64) {
	lo, hi := max(t0, bk.from), min(t1, bk.to)
	if lo >= hi {
		return
	}
	span := float64(t1 - t0)
	for b := floorDiv(lo, bk.width); b < hi; b += bk.width {
		ov := min(hi, b+bk.width) - max(lo, b)
		if ov <= 0 {
			continue
		}
		part := e * float64(ov) / span
		if math.IsNaN(part) || math.IsInf(part, 0) {
			continue
		}
		bk.bucket(b).at(k).addE(part)
	}
}
