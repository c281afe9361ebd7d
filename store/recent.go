package store

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"plantd/plant"
)

// This file computes the OneMinute intervals of a plant's balance for
// Recent (doc.go, "Queries"). A plant's Recent answer needs of each device
// only the few channels its role gives the balance (an inverter's
// pvGeneration and its counter, ...), not the 15 to 40 each device
// records: it decodes only those (chunkReader) and runs the bucket engine
// only for those fields. 20 devices polled every 5 s took about 40 ms a
// query when every channel of every sample was decoded, looked up in the
// catalog and aggregated into maps.

// recentMinutes returns, per OneMinute interval of [from, to), the
// intervals (devInterval) of the devices of devs that have a role in a
// plant's balance (balanceRole), in device id order. reference computes
// them from every channel of every device, as the rollups do (what the
// fast path must equal: TestRecentMinutesReference).
func (s *Store) recentMinutes(ctx context.Context, db querier, devs []*device, from, to int64, reference bool) (map[int64][]devInterval, error) {
	var roles []*device
	for _, d := range devs {
		if fields, _ := balanceRole(d); len(fields) > 0 {
			roles = append(roles, d)
		}
	}
	slices.SortFunc(roles, func(a, b *device) int { return int(a.id - b.id) })
	per := map[int64]map[int64]devInterval{} // device id → interval start → its interval
	full := roles
	if !reference {
		var err error
		if full, err = s.recentRoles(ctx, db, roles, from, to, per); err != nil {
			return nil, err
		}
	}
	if len(full) > 0 {
		// Every channel, through the rollups' reader and engine.
		want := map[int64]bool{}
		for _, d := range full {
			want[d.id] = true
		}
		cd, err := readWindow(ctx, db, s, nil, from, to, devRange{}, func(d *device) bool { return want[d.id] }, nil, nil, nil)
		if err != nil {
			return nil, err
		}
		for id, ds := range cd.devs {
			out := map[int64]devInterval{}
			for b, db := range aggregate(ds.prev, ds.samples, nil, from, to, recentWidth, nil, nil, nil) {
				out[b] = intervalOf(ds.dev, db)
			}
			per[id] = out
		}
	}
	minutes := map[int64][]devInterval{}
	for _, d := range roles {
		for _, b := range slices.Sorted(maps.Keys(per[d.id])) {
			minutes[b] = append(minutes[b], per[d.id][b])
		}
	}
	return minutes, nil
}

// recentDev is what recentRoles reads of a device: its samples in the
// window with the values of its role's channels (in one array: the values
// of sample i end at ends[i]), and the sample before.
type recentDev struct {
	dev     *device
	samples []rawSample
	arena   []chVal
	ends    []int32
	prev    *rawSample
}

// recentRoles computes into per the intervals of the devices of roles
// from their role's channels, and returns the devices it left to the
// caller: those with a pair of samples spanning an interval without a
// sample. The engine gives such an interval a bucket when any of the
// device's channels spreads energy into it, and the role's channels alone
// cannot tell whether one does.
func (s *Store) recentRoles(ctx context.Context, db querier, roles []*device, from, to int64, per map[int64]map[int64]devInterval) ([]*device, error) {
	if len(roles) == 0 {
		return nil, nil
	}
	byID := make(map[int64]*recentDev, len(roles))
	keys := map[int64]chKey{}
	s.cat.mu.RLock()
	for _, d := range roles {
		byID[d.id] = &recentDev{dev: d}
		fields, soc := balanceRole(d)
		for _, se := range d.chans {
			if se.ch != 0 && roleChannel(se.ch, fields, soc) {
				keys[se.id] = chKey{se.ch, int32(se.idx)}
			}
		}
	}
	s.cat.mu.RUnlock()
	r := newChunkReader(keys)
	keep := func(dev int64) bool { return byID[dev] != nil }
	lo, hi := chunkSpan(from, to)
	var rd *recentDev // the device of the last sample: a chunk's samples come one after another
	err := s.scanChunkVals(ctx, db, `SELECT t0, device, v FROM raw_chunk WHERE id >= ? AND id < ? ORDER BY id`, []any{lo, hi},
		from, to, false, keep, r, func(dev, t int64, vals []chVal) bool {
			if rd == nil || rd.dev.id != dev {
				rd = byID[dev]
			}
			if rd.samples == nil {
				// Room for the window's chunks at the rate of the first.
				n := r.n * int((hi-lo)>>24+1)
				rd.samples, rd.ends = make([]rawSample, 0, n), make([]int32, 0, n)
				rd.arena = make([]chVal, 0, n*len(vals))
			}
			rd.arena = append(rd.arena, vals...)
			rd.samples = append(rd.samples, rawSample{t: t})
			rd.ends = append(rd.ends, int32(len(rd.arena)))
			return true
		})
	if err != nil {
		return nil, fmt.Errorf("read samples: %w", err)
	}
	// The sample before the window, as readEdges finds it: each device's
	// newest before from, within counterGapMs. (Recent ends at the newest
	// sample: it takes none after the window.)
	seen := map[int64]bool{}
	keepPrev := func(dev int64) bool { return byID[dev] != nil && !seen[dev] }
	idLo, idHi := chunkSpan(from-counterGapMs, from)
	err = s.scanChunkVals(ctx, db, `SELECT t0, device, v FROM raw_chunk WHERE id >= ? AND id < ? ORDER BY id DESC`, []any{idLo, idHi},
		from-counterGapMs, from, true, keepPrev, r, func(dev, t int64, vals []chVal) bool {
			if keepPrev(dev) {
				seen[dev] = true
				byID[dev].prev = &rawSample{t: t, vals: slices.Clone(vals)}
			}
			return len(seen) < len(byID)
		})
	if err != nil {
		return nil, fmt.Errorf("read edge samples: %w", err)
	}
	var rest []*device
	var seq []*rawSample
	for _, d := range roles {
		rd := byID[d.id]
		start := int32(0)
		for i, end := range rd.ends {
			rd.samples[i].vals = rd.arena[start:end:end]
			start = end
		}
		// The sequence of pairs as aggregate builds it.
		seq = seq[:0]
		if rd.prev != nil {
			seq = append(seq, rd.prev)
		}
		for i := range rd.samples {
			seq = append(seq, &rd.samples[i])
		}
		if len(rd.samples) == 0 {
			continue // no interval: aggregate gives none
		}
		if spansGap(seq, from, to, recentWidth) {
			rest = append(rest, d)
			continue
		}
		// What aggregate does, for the role's fields only: every other
		// channel's aggregates and energies are never read, and a field's
		// energy depends only on its own power and counter.
		// Of the sample statistics only the state of charge's are read
		// (a field's agg gives its energy, which the pairs make).
		bk := &bucketer{from: from, to: to, width: recentWidth, out: map[int64]*devBucket{}}
		var b *devBucket
		bStart := int64(0)
		for i := range rd.samples {
			smp := &rd.samples[i]
			if start := floorDiv(smp.t, recentWidth); b == nil || start != bStart {
				b, bStart = bk.bucket(start), start
			}
			b.n++
			for _, cv := range smp.vals {
				if cv.k.ch == plant.BatteryStateOfCharge {
					b.at(cv.k).add(cv.v)
				}
			}
		}
		if len(seq) >= 2 {
			fields, _ := balanceRole(d)
			for _, f := range fields {
				bk.series(seq, energySpec{f, f.EnergyCounter(), f}, 0)
			}
		}
		out := make(map[int64]devInterval, len(bk.out))
		for b, db := range bk.out {
			out[b] = intervalOf(d, db)
		}
		per[d.id] = out
	}
	return rest, nil
}

// roleChannel reports whether the balance reads channel c of a device
// whose role has fields (and the state of charge when soc): a field is
// its own power, and its counter.
func roleChannel(c plant.Channel, fields []plant.Channel, soc bool) bool {
	if soc && c == plant.BatteryStateOfCharge {
		return true
	}
	for _, f := range fields {
		if c == f || c == f.EnergyCounter() {
			return true
		}
	}
	return false
}

// spansGap reports whether a pair of consecutive samples of seq spans an
// interval of [from, to) (of width) in which no sample lies: the engine
// spreads a pair's energy over every interval the pair overlaps, so such
// an interval has a bucket only when some channel has energy in the pair.
func spansGap(seq []*rawSample, from, to, width int64) bool {
	for i := 1; i < len(seq); i++ {
		p, c := seq[i-1].t, seq[i].t
		lo, hi := max(p, from), min(c, to)
		if lo >= hi {
			continue
		}
		first, last := floorDiv(lo, width), floorDiv(hi-1, width)
		if last-first > width {
			return true // three intervals or more: one has neither sample
		}
		for b := first; b <= last; b += width {
			inP := p >= from && floorDiv(p, width) == b
			inC := c < to && floorDiv(c, width) == b
			if !inP && !inC {
				return true
			}
		}
	}
	return false
}
