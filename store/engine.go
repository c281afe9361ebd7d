package store

import (
	"math"
	"slices"

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
	// frozenSlackWh: a counter that stood still while integrated power
	// gave more than this beyond its step is stuck (a 1 kWh counter moves
	// at least every 1 kWh).
	frozenSlackWh = 2 * counterSlackWh
	// maxRunMs bounds how far back a counter's step is spread: the run
	// before it is looked for this far.
	maxRunMs = 24 * 60 * 60 * 1000
)

// chVal is one channel value of a raw sample.
type chVal struct {
	k chKey
	v float64
}

// rawSample is one decoded raw sample: a poll of one device.
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

// devBucket is one device's aggregates over one interval.
type devBucket struct {
	n    int64 // samples in the interval
	aggs map[chKey]*agg
	// arena gives the aggs (nil: each allocated).
	arena *aggArena
}

func (b *devBucket) at(k chKey) *agg {
	a := b.aggs[k]
	if a == nil {
		a = b.arena.new()
		b.aggs[k] = a
	}
	return a
}

// aggArena hands out aggs from blocks that never move, all taken back at
// once by reset. The rollup aggregates device after device, and an agg
// allocated per channel and interval of every device was a sixth of what
// a rollup of 1,000 devices allocated (BenchmarkRollup).
type aggArena struct {
	blocks [][]agg
	cur    int // the block being filled
}

// aggBlock is the size of an aggArena block in aggs (12 KB).
const aggBlock = 256

// new returns a zero agg; the nil arena allocates it.
func (a *aggArena) new() *agg {
	if a == nil {
		return &agg{}
	}
	for a.cur < len(a.blocks) && len(a.blocks[a.cur]) == cap(a.blocks[a.cur]) {
		a.cur++
	}
	if a.cur == len(a.blocks) {
		a.blocks = append(a.blocks, make([]agg, 0, aggBlock))
	}
	b := append(a.blocks[a.cur], agg{})
	a.blocks[a.cur] = b
	return &b[len(b)-1]
}

// reset takes back every agg new gave.
func (a *aggArena) reset() {
	for i := range a.blocks {
		a.blocks[i] = a.blocks[i][:0]
	}
	a.cur = 0
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

// energySpecs are the energy fields of the plant's channels
// (plant.Channel.EnergyField), each with its counter.
var energySpecs = func() []energySpec {
	var out []energySpec
	for _, c := range plant.Channels() {
		if c.EnergyField() {
			out = append(out, energySpec{c, c.EnergyCounter(), c})
		}
	}
	return out
}()

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
	// frozenWh, when not 0, says the counter stood still while this much
	// energy was integrated from power: stuck.
	frozenWh float64
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
	lead            map[chKey]runLead
	// pw and cv are the samples' power and counter values of the field
	// series works on.
	pw, cv []seriesVal
	// run is series' open counter run, its array reused field after
	// field and device after device.
	run []runPair
	// sc, when not nil, gives the buckets (aggregate's scratch).
	sc *aggScratch
}

// runLead is the part before a window of the counter run open at the
// window's first sample: the energy integrated from power and the time of
// its pairs.
type runLead struct {
	powerWh float64
	spanMs  int64
}

func (bk *bucketer) bucket(start int64) *devBucket {
	b := bk.out[start]
	if b == nil {
		b = bk.sc.newBucket()
		bk.out[start] = b
	}
	return b
}

// aggregate computes the intervals of one device. prev is the last sample
// before from (nil: none within counterGapMs), samples are the samples in
// [from, to) in time order, next the first sample at or after to (nil:
// none). Sample statistics count the samples in [from, to); energies come
// from consecutive pairs of samples (energyOf) and are spread over each
// pair's span by time, the part inside [from, to) landing in the intervals
// it overlaps.
//
// lead describes, per counter, the part before prev of the run that is
// open at prev (nil, or a counter not in it: the run starts at prev).
//
// sc holds the working arrays and the buckets between calls (nil:
// allocated for this one): the rollup aggregates device after device,
// and these arrays were a fifth of what a rollup of 1,000 devices
// allocated, the buckets' maps and aggs a sixth. With sc, the map
// returned and its buckets are sc's, valid until its next aggregate.
func aggregate(prev *rawSample, samples []rawSample, next *rawSample, from, to, width int64, lead map[chKey]runLead, onCounter func(counterEvent), sc *aggScratch) map[int64]*devBucket {
	if sc == nil {
		sc = &aggScratch{}
	}
	sc.recycle()
	if sc.out == nil {
		sc.out = map[int64]*devBucket{}
	}
	bk := &bucketer{from: from, to: to, width: width, out: sc.out, onCounter: onCounter, lead: lead, sc: sc}
	bk.pw = slices.Grow(sc.pw[:0], len(samples)+2)
	bk.cv = slices.Grow(sc.cv[:0], len(samples)+2)
	bk.run = sc.run[:0]
	seq := slices.Grow(sc.seq[:0], len(samples)+2)
	defer func() {
		clear(seq) // no references to the samples kept
		clear(bk.run[:cap(bk.run)])
		sc.pw, sc.cv, sc.seq, sc.run = bk.pw[:0], bk.cv[:0], seq[:0], bk.run[:0]
	}()
	// A device's polls list the same channels in the same order: the
	// aggregates of the previous sample's values, by position, serve the
	// next sample of the same interval without a map lookup per value
	// (the lookups were half of aggregate's time).
	var cur *devBucket
	keys, slots := sc.keys[:0], sc.slots[:0]
	defer func() {
		clear(slots)
		sc.keys, sc.slots = keys[:0], slots[:0]
	}()
	for i := range samples {
		s := &samples[i]
		b := bk.bucket(floorDiv(s.t, width))
		b.n++
		if b != cur {
			cur, keys, slots = b, keys[:0], slots[:0]
		}
		for j, cv := range s.vals {
			if cv.k.ch.Counter() {
				continue
			}
			if j < len(keys) && keys[j] == cv.k {
				slots[j].add(cv.v)
				continue
			}
			a := b.at(cv.k)
			a.add(cv.v)
			for len(keys) <= j {
				keys, slots = append(keys, chKey{}), append(slots, nil)
			}
			keys[j], slots[j] = cv.k, a
		}
	}
	if prev != nil {
		seq = append(seq, prev)
	}
	for i := range samples {
		seq = append(seq, &samples[i])
	}
	if next != nil && (len(samples) > 0 || prev != nil) {
		seq = append(seq, next)
	}
	if len(seq) < 2 {
		return bk.out
	}
	// The channels some sample has: a field whose power and counter no
	// sample has gets nothing from series, which need not look.
	var has [256]bool
	for _, smp := range seq {
		for _, cv := range smp.vals {
			has[cv.k.ch] = true
		}
	}
	for _, sp := range energySpecs {
		if has[sp.power] || sp.counter != 0 && has[sp.counter] {
			bk.series(seq, sp, 0)
		}
	}
	// DC inputs: every input some sample has, by its counter where the
	// pair has it, else by its power.
	var inputs []int32
	for _, smp := range seq {
		for _, cv := range smp.vals {
			if (cv.k.ch == plant.DCEnergyInput || cv.k.ch == plant.DCPowerInput) && !slices.Contains(inputs, cv.k.idx) {
				inputs = append(inputs, cv.k.idx)
			}
		}
	}
	for _, idx := range inputs {
		bk.series(seq, dcSpec, idx)
	}
	return bk.out
}

// aggScratch is aggregate's working arrays, kept between calls, and the
// buckets of its last result: their maps, emptied, and their aggs serve
// the next call.
type aggScratch struct {
	pw, cv []seriesVal
	seq    []*rawSample
	// run: a counter that stands still over a window (a meter's
	// consumption counter of a plant that feeds in) makes a run of every
	// pair, which grew anew by doubling for every field of every device:
	// 59 MB, most of what a rollup of 1,000 devices at 1 s allocated
	// (scripts/scale 1000 50).
	run   []runPair
	keys  []chKey
	slots []*agg
	out   map[int64]*devBucket
	free  []*devBucket
	aggs  aggArena
}

// recycle takes back the buckets of the last result.
func (sc *aggScratch) recycle() {
	for _, b := range sc.out {
		clear(b.aggs)
		b.n = 0
		sc.free = append(sc.free, b)
	}
	clear(sc.out)
	sc.aggs.reset()
}

// newBucket returns an empty bucket, one of the last result's when sc
// has them (the nil scratch allocates).
func (sc *aggScratch) newBucket() *devBucket {
	if sc == nil {
		return &devBucket{aggs: map[chKey]*agg{}}
	}
	if n := len(sc.free); n > 0 {
		b := sc.free[n-1]
		sc.free = sc.free[:n-1]
		return b
	}
	return &devBucket{aggs: map[chKey]*agg{}, arena: &sc.aggs}
}

// pairPower returns the energy of a pair integrated from power (trapezoid),
// or false when the pair has no power or spans more than powerGapMs.
func pairPower(p, c *rawSample, k chKey) (float64, bool) {
	wp, ok1 := p.get(k)
	wc, ok2 := c.get(k)
	return trapezoid(p.t, c.t, wp, wc, ok1 && ok2)
}

// trapezoid is pairPower of a pair at times tp, tc with powers wp, wc
// (ok: both known).
func trapezoid(tp, tc int64, wp, wc float64, ok bool) (float64, bool) {
	dt := tc - tp
	if dt <= 0 || dt > powerGapMs || !ok {
		return 0, false
	}
	return (wp + wc) / 2 * float64(dt) / 3.6e6, true
}

// seriesVal is a sample's value of a channel as series reads it: once per
// sample, not once per pair it is in.
type seriesVal struct {
	v  float64
	ok bool
}

// lookup fills out with each sample's value of k. A device's samples
// list their channels in the same order, so the position where the
// previous sample had k is tried first.
func lookup(out []seriesVal, seq []*rawSample, k chKey) []seriesVal {
	out = out[:0]
	hint := 0
	for _, smp := range seq {
		var sv seriesVal
		if hint < len(smp.vals) && smp.vals[hint].k == k {
			sv = seriesVal{smp.vals[hint].v, true}
		} else {
			for i := range smp.vals {
				if smp.vals[i].k == k {
					sv, hint = seriesVal{smp.vals[i].v, true}, i
					break
				}
			}
		}
		out = append(out, sv)
	}
	return out
}

// runPair is one pair of a counter run: its samples and its energy from
// integrated power (hasP false: no power known).
type runPair struct {
	p, c *rawSample
	e    float64
	hasP bool
	// counted: both samples have the counter (a pair without power then
	// still gives its intervals an energy, 0 until the run closes).
	counted bool
}

// series attributes one energy field's energy over a device's sample
// sequence (doc.go, Energy). A counter is the truth for totals: the pairs
// between two moves of the counter form a run, and the run's counter step
// is spread over its pairs in proportion to their integrated power (by
// time when there is none), so a counter in kWh steps gives a power-shaped
// curve and the counter's total. A run not yet closed by a step (the
// counter may move later), a run whose counter stood still while the
// integrated power exceeded the step by more than frozenSlackWh (a stuck
// counter), a pair without counter values and a counter that went back or
// jumped take integrated power.
func (bk *bucketer) series(seq []*rawSample, sp energySpec, idx int32) {
	field := chKey{sp.field, idx}
	pk := chKey{sp.power, idx}
	run := bk.run[:0]
	defer func() { bk.run = run[:0] }()
	var ck chKey
	if sp.counter != 0 {
		ck = chKey{sp.counter, idx}
	}
	lead := bk.lead[ck] // the zero runLead: the run starts at seq[0]
	bk.pw = lookup(bk.pw, seq, pk)
	if sp.counter != 0 {
		bk.cv = lookup(bk.cv, seq, ck)
	}
	flushPower := func() {
		for _, rp := range run {
			switch {
			case rp.hasP:
				bk.spread(field, rp.e, rp.p.t, rp.c.t)
			case rp.counted:
				bk.spread(field, 0, rp.p.t, rp.c.t)
			}
		}
		run = run[:0]
		lead = runLead{}
	}
	for i := 1; i < len(seq); i++ {
		p, c := seq[i-1], seq[i]
		if c.t <= p.t || c.t-p.t > counterGapMs {
			flushPower()
			continue
		}
		e, hasP := trapezoid(p.t, c.t, bk.pw[i-1].v, bk.pw[i].v, bk.pw[i-1].ok && bk.pw[i].ok)
		rp := runPair{p: p, c: c, e: e, hasP: hasP}
		if sp.counter == 0 {
			run = append(run, rp)
			flushPower()
			continue
		}
		cp, cc := bk.cv[i-1].v, bk.cv[i].v
		if !bk.cv[i-1].ok || !bk.cv[i].ok {
			flushPower()
			run = append(run, rp)
			flushPower()
			continue
		}
		d := cc - cp
		runFrom := p.t
		if len(run) > 0 {
			runFrom = run[0].p.t
		}
		hours := float64(c.t-runFrom+lead.spanMs) / 3.6e6
		if d < 0 || d > maxDeviceW*hours+counterSlackWh {
			if bk.onCounter != nil && c.t >= bk.from && c.t < bk.to {
				bk.onCounter(counterEvent{ch: sp.counter, idx: idx, t: c.t, from: cp, to: cc})
			}
			flushPower()
			run = append(run, rp)
			flushPower()
			continue
		}
		rp.counted = true
		run = append(run, rp)
		if d == 0 {
			continue
		}
		// The first run after a baseline also takes its step, though
		// where within the step the counter stood when the run began is
		// unknown: the counter is the truth for totals.
		bk.closeRun(run, lead, field, d, sp.counter, idx)
		run = run[:0]
		lead = runLead{}
	}
	// The open run: provisional, from power, until its counter moves.
	if sp.counter != 0 && len(run) > 0 && bk.onCounter != nil {
		if e := lead.powerWh + runPowerWh(run); e > frozenSlackWh {
			last := run[len(run)-1]
			if last.c.t >= bk.from && last.c.t < bk.to {
				v, _ := last.c.get(ck)
				bk.onCounter(counterEvent{ch: sp.counter, idx: idx, t: last.c.t, from: v, to: v, frozenWh: e})
			}
		}
	}
	flushPower()
}

// runPowerWh sums the integrated power of a run's pairs.
func runPowerWh(run []runPair) float64 {
	sum := 0.0
	for _, rp := range run {
		if rp.hasP {
			sum += rp.e
		}
	}
	return sum
}

// closeRun spreads counter step d over the pairs of a run.
func (bk *bucketer) closeRun(run []runPair, lead runLead, field chKey, d float64, counter plant.Channel, idx int32) {
	sumP := lead.powerWh + runPowerWh(run)
	if sumP > d+frozenSlackWh {
		// The counter stood still while power flowed: stuck, or stuck and
		// now moving again. Power tells the intervals' energy.
		last := run[len(run)-1]
		if bk.onCounter != nil && last.c.t >= bk.from && last.c.t < bk.to {
			v, _ := last.c.get(chKey{counter, idx})
			bk.onCounter(counterEvent{ch: counter, idx: idx, t: last.c.t, from: v - d, to: v, frozenWh: sumP})
		}
		for _, rp := range run {
			if rp.hasP {
				bk.spread(field, rp.e, rp.p.t, rp.c.t)
			}
		}
		return
	}
	if sumP > 0 {
		for _, rp := range run {
			share := 0.0
			if rp.hasP && rp.e > 0 {
				share = d * rp.e / sumP
			}
			bk.spread(field, share, rp.p.t, rp.c.t)
		}
		return
	}
	span := float64(run[len(run)-1].c.t - run[0].p.t + lead.spanMs)
	for _, rp := range run {
		bk.spread(field, d*float64(rp.c.t-rp.p.t)/span, rp.p.t, rp.c.t)
	}
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
