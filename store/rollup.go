package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

const (
	bucketMs = 5 * 60 * 1000
	hourMs   = 60 * 60 * 1000
	// graceMs: a 5-minute interval is rolled up once a sample this much
	// younger than its end arrived, so that the polls of slow devices
	// still land in it. A sample that arrives later still counts: it
	// moves the watermark back (writeBatch).
	graceMs = 30 * 1000
	// chunkMs bounds the data one rollup transaction covers.
	chunkMs = hourMs
)

// horizon is the end of what can be rolled up now: intervals that ended
// graceMs before the newest sample, or with complete every interval with a
// sample (the last one partial).
func (w *writer) horizon(complete bool) int64 {
	if w.maxSeen == 0 {
		return 0
	}
	// A sample of the clock's future (stored while the clock was ahead)
	// does not drag the rollups ahead of the present.
	newest := min(w.maxSeen, w.s.futureLimit())
	if complete {
		return floorDiv(newest, bucketMs) + bucketMs
	}
	return floorDiv(newest-graceMs, bucketMs)
}

// rollupStep rolls up one chunk if one is due and reports whether more is
// due. Errors are reported through Health.
func (w *writer) rollupStep(ctx context.Context, complete bool) bool {
	if w.db() == nil || !w.hasWM || w.s.corrupt.Load() {
		return false
	}
	h := w.horizon(complete)
	if w.wm >= h {
		return false
	}
	if err := w.rollupChunk(ctx, h); err != nil {
		w.s.setSlot(slotRollup, classify(fmt.Errorf("rollup: %w", err)))
		return false
	}
	w.s.setSlot(slotRollup, nil)
	return w.wm < h
}

// rollupUntil rolls up until caught up (true), until deadline (unless
// zero), or, with a deadline, until something is queued.
func (w *writer) rollupUntil(ctx context.Context, complete bool, deadline time.Time) bool {
	for {
		more := w.rollupStep(ctx, complete)
		if !more {
			return w.hasWM && w.wm >= w.horizon(complete)
		}
		if !deadline.IsZero() && (time.Now().After(deadline) || len(w.s.queue) > 0) {
			return false
		}
	}
}

// setWatermark writes the watermark inside tx.
func setWatermark(ctx context.Context, tx execer, t int64) error {
	_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES ('watermark', ?)`, t)
	return err
}

// rollupChunk rolls up [wm, min(horizon, wm + chunkMs)) in one transaction:
// the 5-minute rows of every device with data and of every plant's
// balance, the hourly rows of the local hours they touch, the daily rows of
// the local days those touch, and the watermark. A crash anywhere leaves
// the watermark where it was, so the chunk is simply done again.
func (w *writer) rollupChunk(ctx context.Context, horizon int64) error {
	if err := w.prepare(ctx); err != nil {
		return err
	}
	db := w.db()
	from := w.wm
	var next int64
	// from is a multiple of 5 minutes: the chunks from its minute on hold
	// samples from it on, the first of them at its row's minute or later.
	lo, _ := chunkSpan(from, from+1)
	err := db.QueryRowContext(ctx, `SELECT t0 FROM raw_chunk WHERE id >= ? ORDER BY id LIMIT 1`, lo).Scan(&next)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return w.advanceEmpty(ctx, from, horizon)
	case err != nil:
		return fmt.Errorf("find next sample: %w", err)
	}
	// Nothing before next: intervals more than counterGapMs before it
	// receive nothing (no pair may span more than that).
	if skip := floorDiv(next-counterGapMs, bucketMs); skip > from {
		if skip >= horizon {
			return w.advanceEmpty(ctx, from, horizon)
		}
		if w.carryAt == from {
			w.carryAt = skip
		}
		from = skip
	}
	to := min(horizon, from+chunkMs)

	var carry map[int64]*rawSample
	if w.carryAt == from && w.carry != nil {
		carry = w.carry
	}
	batches, err := w.deviceBatches(ctx, db, from, to)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin rollup: %w", err)
	}
	newCarry, err := w.writeBatches(ctx, tx, batches, from, to, carry)
	if err == nil {
		err = setWatermark(ctx, tx, to)
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		tx.Rollback()
		w.rollbackAdds()
		w.carryAt = -1
		return err
	}
	w.adds.commit()
	w.wm = to
	w.carry, w.carryAt = newCarry, to
	w.s.rolledUpTo.Store(to)
	return nil
}

// rollupBatchSamples bounds the samples a rollup holds decoded at once
// (32 bytes each and 16 a value: 17-33 values a poll make 0.3-0.6 kB): the
// devices are rolled up in batches of about this many samples, each batch
// read in one scan of the chunk's rows in which SQLite passes over the
// other batches' rows. 1,000 devices at 1 s held 300,000 samples (about
// 60 MB) in one piece before; with 16,384 a 100-device plant's heap still
// rose to 40 MB at each rollup; with 8192 the values of a batch were 4.4
// MB of the live heap at the rollups of 1,000 devices at 1 s
// (scripts/scale 1000 50), the most of anything the rollup held.
const rollupBatchSamples = 4096

// devRange is a range of device row ids, both ends included; the zero
// range is every device.
type devRange struct{ lo, hi int64 }

func (r devRange) has(id int64) bool { return r == (devRange{}) || r.lo <= id && id <= r.hi }

// deviceBatches splits the devices into ranges of ids with about
// rollupBatchSamples samples in [from, to), by the chunk's mean samples
// per device.
func (w *writer) deviceBatches(ctx context.Context, db *sql.DB, from, to int64) ([]devRange, error) {
	var devs []int64
	for _, d := range w.s.cat.devices() {
		if d.kind != kindPlant {
			devs = append(devs, d.id)
		}
	}
	if len(devs) == 0 {
		return []devRange{{}}, nil
	}
	slices.Sort(devs)
	var rows int64
	lo, hi := chunkSpan(from, to)
	if err := db.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM raw_chunk WHERE id >= ? AND id < ?`, lo, hi).Scan(&rows); err != nil {
		return nil, fmt.Errorf("count samples: %w", err)
	}
	budget := int64(rollupBatchSamples)
	if w.s.cfg.rollupBatch > 0 {
		budget = int64(w.s.cfg.rollupBatch)
	}
	per := len(devs)
	if rows > 0 {
		mean := max(1, rows/int64(len(devs)))
		per = int(max(1, min(int64(len(devs)), budget/mean)))
	}
	var out []devRange
	for b := range slices.Chunk(devs, per) {
		out = append(out, devRange{b[0], b[len(b)-1]})
	}
	// The first and last ranges open to the ends, so that a device the
	// catalog does not list yet is still read (and skipped) by one.
	out[0].lo, out[len(out)-1].hi = math.MinInt64, math.MaxInt64
	return out, nil
}

// writeBatches rolls up [from, to) batch by batch in tx (reading through
// it too) and returns
// the carry for the next chunk. A coarse counter that moves in the chunk
// spreads its step over the run of polls since it last moved: when a
// batch has such a run reaching before from, the batches are read again
// from the start of the earliest (rows already written in tx are written
// again, replaced).
func (w *writer) writeBatches(ctx context.Context, tx *sql.Tx, batches []devRange, from, to int64, carry map[int64]*rawSample) (map[int64]*rawSample, error) {
	bufs := w.rollBufs
	if bufs == nil {
		bufs = &sampleBufs{}
	}
	devices := 0 // the most devices a pass read
	defer func() { w.rollBufs = bufs.keep(devices) }()
	// kept is the first pass's window [from, to) of the only batch when
	// the second pass reads again from further back: that pass reads
	// only [its from, kept's from) and adds kept's samples (a window's
	// samples were read twice in 3 of 4 rollups of BenchmarkIngest).
	// With several batches each is read again, so that no more than a
	// batch is held at once.
	var kept *chunkData
	keptFrom := from
	var edges *windowEdges
	// One chunk reader for every scan of the chunk: a reader looks up a
	// device's series set once (knownSet), and the edges and the batches
	// meet the same sets; a reader per scan made 3 of them per device.
	r := w.s.cat.reader()
	for pass := 0; pass < 2; pass++ {
		var err error
		if edges == nil {
			edges, err = readEdges(ctx, tx, w.s, r, from, to, carry == nil)
		} else {
			// The window ends where it did: only the samples before its
			// new start are new.
			edges, err = prevEdges(ctx, tx, w.s, r, from, edges.next)
		}
		if err != nil {
			return nil, err
		}
		cw, err := w.beginChunkWrite(ctx, tx)
		if err != nil {
			return nil, err
		}
		newCarry := map[int64]*rawSample{}
		back := from
		read := 0
		for _, batch := range batches {
			var data *chunkData
			if kept != nil {
				data, err = readWindow(ctx, tx, w.s, r, from, keptFrom, batch, nil, nil, edges, bufs)
				if err == nil {
					joinWindows(data, kept)
				}
			} else {
				data, err = readWindow(ctx, tx, w.s, r, from, to, batch, nil, carry, edges, bufs)
			}
			if err != nil {
				cw.close()
				return nil, err
			}
			read += len(data.devs)
			devices = max(devices, read)
			b, err := runsBefore(ctx, tx, w.s, data, from, carry != nil)
			if err != nil {
				cw.close()
				return nil, err
			}
			if back = min(back, b); back < from && pass == 0 {
				if len(batches) == 1 {
					kept = data
				} else {
					bufs.put(data)
				}
				continue // only the earliest run's start matters now
			}
			if err := w.writeDevices(ctx, tx, cw, data, from, to); err != nil {
				cw.close()
				return nil, err
			}
			maps.Copy(newCarry, data.carry)
			bufs.put(data)
			if kept != nil {
				bufs.put(kept)
			}
		}
		if back < from && pass == 0 {
			cw.close()
			from, carry = floorDiv(back, bucketMs), nil
			continue
		}
		err = w.finishChunk(ctx, tx, cw)
		cw.close()
		return newCarry, err
	}
	panic("unreachable")
}

// advanceEmpty moves the watermark over a range without samples.
func (w *writer) advanceEmpty(ctx context.Context, from, to int64) error {
	tx, err := w.db().BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin rollup: %w", err)
	}
	if err := setWatermark(ctx, tx, to); err != nil {
		tx.Rollback()
		return fmt.Errorf("move watermark: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("move watermark: %w", err)
	}
	if w.carryAt == from {
		w.carryAt = to
	}
	w.wm = to
	w.s.rolledUpTo.Store(to)
	return nil
}

// chunkData is what a chunk's rollup reads: per device its samples in the
// chunk and the samples around it.
type chunkData struct {
	devs  map[int64]*devSamples
	carry map[int64]*rawSample // the last sample of each device before the chunk's end
	// vals holds the values of every device's samples.
	vals *valSlabs
}

type devSamples struct {
	dev        *device
	prev, next *rawSample
	samples    []rawSample
	// lead describes the counter runs open at prev (runsBefore).
	lead map[chKey]runLead
}

// slabVals is the size of a valSlabs slab in values (64 KB).
const slabVals = 4096

// valSlabs holds the values of a batch's samples in slabs of slabVals
// values that never move: a sample's values are a part of one slab. One
// array per device, grown by doubling and sized for whatever device had
// used it before, was a third of what a rollup of 1,000 devices
// allocated, and its spare room was held through the rollup.
type valSlabs struct {
	slabs [][]chVal
	cur   int // the slab being filled
}

// add copies vals into the slabs and returns the copy.
func (a *valSlabs) add(vals []chVal) []chVal {
	if len(vals) > slabVals {
		return slices.Clone(vals)
	}
	for a.cur < len(a.slabs) && cap(a.slabs[a.cur])-len(a.slabs[a.cur]) < len(vals) {
		a.cur++
	}
	if a.cur == len(a.slabs) {
		a.slabs = append(a.slabs, make([]chVal, 0, slabVals))
	}
	sl := a.slabs[a.cur]
	at := len(sl)
	sl = append(sl, vals...)
	a.slabs[a.cur] = sl
	return sl[at:len(sl):len(sl)]
}

// reset empties the slabs for reuse.
func (a *valSlabs) reset() {
	for i := range a.slabs {
		a.slabs[i] = a.slabs[i][:0]
	}
	a.cur = 0
}

// sampleBufs recycles the sample buffers of readWindow (a device's samples,
// a batch's slabs of values) between the batches of one rollup chunk, so that a chunk of many batches decodes into the buffers
// of its first one. At 5,000 devices at 5 s a chunk has 37 batches: the
// rollup allocated 150 MB in a few seconds, and the heap grew by 25 MB at
// each one. The nil *sampleBufs allocates afresh.
type sampleBufs struct {
	free  []*devSamples
	slabs []*valSlabs
}

// keepBufsBytes bounds the sample buffers the writer keeps from one
// rollup chunk to the next: a plant's chunks then decode into the arrays
// of the one before instead of growing new ones (BenchmarkIngest
// allocated 530 MB in readWindow's arrays, 40 % of all it allocated). A
// 20-device plant polled every second needs about 1 MB; a larger one
// gives its buffers back after each chunk, as before.
const keepBufsBytes = 2 << 20

// keepBufsDevices: a plant of more devices gives its buffers back after
// each chunk whatever their size. Its batches are what bounds them, not
// the plant, so they were kept too: at 1,000 devices at 1 s (scripts/scale
// 1000 50) 1.5-3 MB of a live heap of 18-25 MB between rollups 5
// minutes apart (the memory limit of cmd/plantd follows the live heap),
// to spare allocating them once in 5 minutes.
const keepBufsDevices = 100

// keep returns b when the rollup read at most keepBufsDevices devices and
// its arrays take at most keepBufsBytes (a sample 32 bytes, a value 16),
// else nil. What the buffers pointed to besides their arrays is let go.
func (b *sampleBufs) keep(devices int) *sampleBufs {
	if devices > keepBufsDevices {
		return nil
	}
	n := 0
	for _, ds := range b.free {
		n += cap(ds.samples) * 32
		ds.dev, ds.prev, ds.next, ds.lead = nil, nil, nil, nil
	}
	for _, a := range b.slabs {
		n += len(a.slabs) * slabVals * 16
	}
	if n > keepBufsBytes {
		return nil
	}
	return b
}

// get returns empty buffers for d's samples.
func (b *sampleBufs) get(d *device) *devSamples {
	if b == nil || len(b.free) == 0 {
		return &devSamples{dev: d}
	}
	ds := b.free[len(b.free)-1]
	b.free = b.free[:len(b.free)-1]
	*ds = devSamples{dev: d, samples: ds.samples[:0]}
	return ds
}

// valSlabs returns empty slabs for a batch's values.
func (b *sampleBufs) valSlabs() *valSlabs {
	if b == nil || len(b.slabs) == 0 {
		return &valSlabs{}
	}
	a := b.slabs[len(b.slabs)-1]
	b.slabs = b.slabs[:len(b.slabs)-1]
	a.reset()
	return a
}

// put takes back the buffers of cd once nothing reads its samples any
// more (the carry it made holds copies).
func (b *sampleBufs) put(cd *chunkData) {
	for _, ds := range cd.devs {
		clear(ds.samples) // no stale references through the reused array
		b.free = append(b.free, ds)
	}
	b.slabs = append(b.slabs, cd.vals)
	cd.vals = nil
}

// readWindow reads the samples in [from, to) of the devices want accepts
// (nil: all), each one's last sample before from (taken from carry when it
// is not nil) and its first sample at or after to, decoding with r (nil:
// a reader of its own).
func readWindow(ctx context.Context, db querier, s *Store, r *chunkReader, from, to int64, span devRange, want func(*device) bool, carry map[int64]*rawSample, edges *windowEdges, bufs *sampleBufs) (*chunkData, error) {
	if r == nil {
		r = s.cat.reader()
	}
	cd := &chunkData{devs: map[int64]*devSamples{}, carry: map[int64]*rawSample{}, vals: bufs.valSlabs()}
	// skip holds the devices in span that are not read. The span is
	// tested first: every batch of a rollup meets every device in the
	// window's edges, and a map of those out of the batch's span was a
	// fifth of what a rollup of 1,000 devices allocated.
	var skip map[int64]bool
	get := func(id int64) *devSamples {
		if ds := cd.devs[id]; ds != nil {
			return ds
		}
		if !span.has(id) || skip[id] {
			return nil
		}
		d := s.cat.byRowID(id)
		if d == nil || d.kind == kindPlant || (want != nil && !want(d)) {
			if skip == nil {
				skip = map[int64]bool{}
			}
			skip[id] = true
			return nil
		}
		ds := bufs.get(d)
		cd.devs[id] = ds
		return ds
	}
	// The device range is tested by SQLite: the rows of other batches
	// never cross into Go.
	lo, hi := chunkSpan(from, to)
	q, args := `SELECT t0, device, v FROM raw_chunk WHERE id >= ? AND id < ? ORDER BY id`, []any{lo, hi}
	if span != (devRange{}) {
		q, args = `SELECT t0, device, v FROM raw_chunk WHERE id >= ? AND id < ? AND device BETWEEN ? AND ? ORDER BY id`, append(args, span.lo, span.hi)
	}
	// A device's chunks come in time order, so are its samples.
	keep := func(dev int64) bool { return get(dev) != nil }
	var ds *devSamples // the device of the last sample: a chunk's samples come one after another
	err := s.scanChunkVals(ctx, db, q, args, from, to, false, keep, r, func(dev, t int64, vals []chVal) bool {
		if ds == nil || ds.dev.id != dev {
			if ds = get(dev); ds == nil {
				return true
			}
		}
		if len(ds.samples) == 0 {
			// Room for the window's chunks at the rate of the first,
			// not grown by doubling.
			ds.samples = slices.Grow(ds.samples, r.n*int((hi-lo)>>24+1))
		}
		ds.samples = append(ds.samples, rawSample{t: t, vals: cd.vals.add(vals)})
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("read samples: %w", err)
	}
	if edges == nil {
		if edges, err = readEdges(ctx, db, s, r, from, to, carry == nil); err != nil {
			return nil, err
		}
	}
	if carry != nil {
		for id, smp := range carry {
			if smp.t >= from-counterGapMs {
				if ds := get(id); ds != nil {
					ds.prev = smp
				}
			}
		}
	} else {
		for id, smp := range edges.prev {
			if ds := get(id); ds != nil {
				ds.prev = smp
			}
		}
	}
	for id, smp := range edges.next {
		if ds := get(id); ds != nil {
			ds.next = smp
		}
	}
	for id, ds := range cd.devs {
		switch {
		case len(ds.samples) > 0:
			// A copy, values included: a pointer into ds.samples, or its
			// values' part of the device's array, would keep the chunk's
			// samples alive until the next chunk (measured: the live heap
			// of 100 devices at 1 s went 5 -> 18 MB).
			last := ds.samples[len(ds.samples)-1]
			last.vals = slices.Clone(last.vals)
			cd.carry[id] = &last
		case ds.prev != nil:
			cd.carry[id] = ds.prev
		}
	}
	return cd, nil
}

// joinWindows makes a, read over [from, mid) with the edges of
// [from, to), what reading [from, to) would have given, from b, read over
// [mid, to) with the same next edges: a device's samples are a's then
// b's, its previous sample a's, and the carry the last sample of either
// (else the previous one). b keeps only the buffers a did not take: both
// go back to the pool once a's samples are written.
func joinWindows(a, b *chunkData) {
	for id, db := range b.devs {
		inB := len(db.samples) > 0
		if da := a.devs[id]; da != nil {
			da.samples = append(da.samples, db.samples...)
			da.next = db.next
		} else {
			// Nothing in [from, mid) and no sample before from within
			// counterGapMs: reading [from, to) finds no previous sample.
			db.prev = nil
			a.devs[id] = db
			delete(b.devs, id)
		}
		if inB {
			a.carry[id] = b.carry[id]
		}
	}
	for _, ds := range a.devs {
		ds.lead = nil // runsBefore finds the runs open at the new prev
	}
}

// querier reads: the database, or the transaction a rollup writes in
// (the writer's pool has one connection, which the transaction holds).
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// windowEdges are, per device row id, its samples around a window: its
// last sample in the counterGapMs before the window (when asked for) and
// its first sample in the counterGapMs after it. Read once per window for
// all devices, they serve every batch of its devices (which only read
// them).
type windowEdges struct {
	prev, next map[int64]*rawSample
}

// readEdges finds the edge samples of [from, to) of the store's devices
// (plant balance sources have none), decoding with r.
func readEdges(ctx context.Context, db querier, s *Store, r *chunkReader, from, to int64, withPrev bool) (*windowEdges, error) {
	want := map[int64]bool{}
	for _, d := range s.cat.devices() {
		if d.kind != kindPlant {
			want[d.id] = true
		}
	}
	e := &windowEdges{}
	var err error
	if withPrev {
		if e.prev, err = edgeSamples(ctx, db, s, r, `SELECT t0, device, v FROM raw_chunk WHERE id >= ? AND id < ? ORDER BY id DESC`, from-counterGapMs, from, true, want); err != nil {
			return nil, err
		}
	}
	if e.next, err = edgeSamples(ctx, db, s, r, `SELECT t0, device, v FROM raw_chunk WHERE id >= ? AND id < ? ORDER BY id`, to, to+counterGapMs, false, want); err != nil {
		return nil, err
	}
	return e, nil
}

// prevEdges gives the edges of a window starting at from whose next
// samples are known: readEdges without reading those again.
func prevEdges(ctx context.Context, db querier, s *Store, r *chunkReader, from int64, next map[int64]*rawSample) (*windowEdges, error) {
	want := map[int64]bool{}
	for _, d := range s.cat.devices() {
		if d.kind != kindPlant {
			want[d.id] = true
		}
	}
	prev, err := edgeSamples(ctx, db, s, r, `SELECT t0, device, v FROM raw_chunk WHERE id >= ? AND id < ? ORDER BY id DESC`, from-counterGapMs, from, true, want)
	if err != nil {
		return nil, err
	}
	return &windowEdges{prev: prev, next: next}, nil
}

// edgeSamples reads the chunks of [lo, hi) with q (t0, device, v, in the
// order in which the first sample of a device is the one wanted, desc
// for newest first) and keeps each wanted device's first sample. It
// stops once every wanted device is found: a plant whose devices all
// poll reads a few chunks, not the counterGapMs of them. r decodes.
func edgeSamples(ctx context.Context, db querier, s *Store, r *chunkReader, q string, lo, hi int64, desc bool, want map[int64]bool) (map[int64]*rawSample, error) {
	out := map[int64]*rawSample{}
	if len(want) == 0 {
		return out, nil
	}
	idLo, idHi := chunkSpan(lo, hi)
	keep := func(dev int64) bool {
		_, seen := out[dev]
		return want[dev] && !seen
	}
	err := s.scanChunkVals(ctx, db, q, []any{idLo, idHi}, lo, hi, desc, keep, r, func(dev, t int64, vals []chVal) bool {
		if _, seen := out[dev]; want[dev] && !seen {
			out[dev] = &rawSample{t: t, vals: slices.Clone(vals)}
		}
		return len(out) < len(want)
	})
	if err != nil {
		return nil, fmt.Errorf("read edge samples: %w", err)
	}
	return out, nil
}

// srcTouch is a source whose 5-minute rows a chunk wrote, with the local
// hours they fall in.
type srcTouch struct {
	src   *device
	hours map[int64]bool
}

// chunkWrite is a chunk's rollup in progress: the statement writing
// 5-minute rows, the local hours each source's rows fall in, and per
// plant the devices' intervals its balance is made of.
type chunkWrite struct {
	up5     *sql.Stmt
	touched map[int64]*srcTouch
	plants  map[string]map[int64][]devInterval // plant id → bucket start → the devices' intervals
	entries []aggEntry
}

func (w *writer) beginChunkWrite(ctx context.Context, tx *sql.Tx) (*chunkWrite, error) {
	up5 := tx.StmtContext(ctx, w.up5)
	return &chunkWrite{up5: up5, touched: map[int64]*srcTouch{}, plants: map[string]map[int64][]devInterval{}}, nil
}

func (cw *chunkWrite) close() { cw.up5.Close() }

// touch notes that src has a row in the local hour of t.
func (w *writer) touch(cw *chunkWrite, src *device, t int64) {
	st := cw.touched[src.id]
	if st == nil {
		st = &srcTouch{src: src, hours: map[int64]bool{}}
		cw.touched[src.id] = st
	}
	st.hours[hourStart(t, w.s.zone(src.plant))] = true
}

// writeDevices writes the 5-minute rows of the devices of cd over
// [from, to) and keeps their intervals for the plants' balances.
func (w *writer) writeDevices(ctx context.Context, tx *sql.Tx, cw *chunkWrite, cd *chunkData, from, to int64) error {
	for _, ds := range cd.devs {
		d := ds.dev
		out := aggregate(ds.prev, ds.samples, ds.next, from, to, bucketMs, ds.lead, func(ev counterEvent) {
			if ev.frozenWh > 0 {
				key := fmt.Sprintf("%s/%s/%d", d.name, ev.ch.Name(), ev.idx)
				if w.stuck == nil {
					w.stuck = map[string]bool{}
				}
				if !w.stuck[key] {
					w.stuck[key] = true
					w.s.log.Warn("energy counter stands still while power flows: energy integrated from power instead",
						"device", d.name, "channel", ev.ch.Name(), "input", ev.idx,
						"time", time.UnixMilli(ev.t).UTC(), "counter_wh", ev.to, "integrated_wh", ev.frozenWh)
				}
				return
			}
			w.s.log.Warn("energy counter went back or jumped: new baseline, power integrated meanwhile",
				"device", d.name, "channel", ev.ch.Name(), "input", ev.idx,
				"time", time.UnixMilli(ev.t).UTC(), "from_wh", ev.from, "to_wh", ev.to)
		}, &w.aggBuf)
		for b, db := range out {
			cw.entries = cw.entries[:0]
			for k, a := range db.aggs {
				s, err := w.adds.ensureChan(ctx, tx, d, k)
				if err != nil {
					return err
				}
				cw.entries = append(cw.entries, aggEntry{sid: s.id, a: *a})
			}
			if err := w.putRow(ctx, cw.up5, d, b, db.n, cw.entries); err != nil {
				return err
			}
			w.touch(cw, d, b)
			if _, ok := w.s.plants[d.plant]; ok {
				pb := cw.plants[d.plant]
				if pb == nil {
					pb = map[int64][]devInterval{}
					cw.plants[d.plant] = pb
				}
				pb[b] = append(pb[b], intervalOf(d, db))
			}
		}
	}
	return nil
}

// finishChunk writes the plants' balance rows from their devices'
// intervals, then the hourly and daily rows of every touched hour.
func (w *writer) finishChunk(ctx context.Context, tx *sql.Tx, cw *chunkWrite) error {
	for pid, buckets := range cw.plants {
		src, err := w.adds.ensurePlantSrc(ctx, tx, pid)
		if err != nil {
			return err
		}
		for b, devs := range buckets {
			row, ok := computeBalance(devs)
			if !ok {
				continue
			}
			cw.entries = cw.entries[:0]
			for f := range numBal {
				if row[f].n == 0 && !row[f].hasE {
					continue
				}
				s, err := w.adds.ensureBal(ctx, tx, src, f)
				if err != nil {
					return err
				}
				cw.entries = append(cw.entries, aggEntry{sid: s.id, a: row[f]})
			}
			if err := w.putRow(ctx, cw.up5, src, b, 1, cw.entries); err != nil {
				return err
			}
			w.touch(cw, src, b)
		}
	}
	return w.rollUpTouched(ctx, tx, cw.touched)
}

// putRow encodes and writes one rollup row.
func (w *writer) putRow(ctx context.Context, st *sql.Stmt, src *device, t, n int64, es []aggEntry) error {
	slices.SortFunc(es, func(a, b aggEntry) int { return cmp.Compare(a.sid, b.sid) })
	w.buf = encodeAggs(w.buf[:0], n, es, w.s.cat)
	if _, err := st.ExecContext(ctx, src.id, t, w.buf); err != nil {
		return fmt.Errorf("write rollup of %s: %w", src.name, err)
	}
	return nil
}

// rollUpTouched rewrites the hourly rows of the touched local hours from
// their 5-minute rows, then the daily rows of the touched local days from
// their hourly rows.
func (w *writer) rollUpTouched(ctx context.Context, tx *sql.Tx, touched map[int64]*srcTouch) error {
	up1h, up1d := tx.StmtContext(ctx, w.up1h), tx.StmtContext(ctx, w.up1d)
	sel5m, sel1h := tx.StmtContext(ctx, w.sel5m), tx.StmtContext(ctx, w.sel1h)
	for _, st := range touched {
		loc := w.s.zone(st.src.plant)
		days := map[int64]int64{}
		for h := range st.hours {
			if err := w.mergeInto(ctx, sel5m, up1h, "r5m", st.src, h, h+hourMs); err != nil {
				return err
			}
			ds, de := dayBounds(h, loc)
			days[ds] = de
		}
		for ds, de := range days {
			if err := w.mergeInto(ctx, sel1h, up1d, "r1h", st.src, ds, de); err != nil {
				return err
			}
		}
	}
	return nil
}

// mergeInto merges a source's rows of table in [lo, hi), read with sel,
// into one row at lo written with st.
func (w *writer) mergeInto(ctx context.Context, sel, st *sql.Stmt, table string, src *device, lo, hi int64) error {
	rows, err := sel.QueryContext(ctx, src.id, lo, hi)
	if err != nil {
		return fmt.Errorf("read %s of %s: %w", table, src.name, err)
	}
	// The merged series, ascending by id as each row lists its own: a
	// row's entry is most often the one after the previous entry's.
	es := w.mergeBuf[:0]
	cur := 0
	merge := func(sid int64, a agg) {
		if cur >= len(es) || es[cur].sid != sid {
			i, ok := slices.BinarySearchFunc(es, sid, func(e aggEntry, sid int64) int { return cmp.Compare(e.sid, sid) })
			if !ok {
				es = slices.Insert(es, i, aggEntry{sid: sid})
			}
			cur = i
		}
		es[cur].a.merge(a)
		cur++
	}
	var n int64
	some := false
	for rows.Next() {
		var v sql.RawBytes
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("read %s of %s: %w", table, src.name, err)
		}
		cur = 0
		rn, err := decodeAggs(v, w.s.cat, merge)
		if err != nil {
			continue
		}
		n += rn
		some = true
	}
	rows.Close()
	w.mergeBuf = es[:0]
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s of %s: %w", table, src.name, err)
	}
	if !some {
		return nil
	}
	return w.putRow(ctx, st, src, lo, n, es)
}

// zone returns a plant's time zone (UTC for a plant no longer
// configured).
func (s *Store) zone(plantID string) *time.Location {
	if loc := s.plants[plantID]; loc != nil {
		return loc
	}
	return time.UTC
}

// hourStart is the start of the local hour containing t: the offset in
// force at t decides, so the repeated hour of a 25-hour day gives two
// hours, and a zone with a 30-minute offset starts its hours at :30 UTC.
func hourStart(t int64, loc *time.Location) int64 {
	_, off := time.UnixMilli(t).In(loc).Zone()
	o := int64(off) * 1000
	return floorDiv(t+o, hourMs) - o
}

// localFloor rounds t down to a multiple of width in local time (widths
// of up to an hour).
func localFloor(t, width int64, loc *time.Location) int64 {
	_, off := time.UnixMilli(t).In(loc).Zone()
	o := int64(off) * 1000
	return floorDiv(t+o, width) - o
}

// dayBounds returns the local day containing t as [start, end) in Unix ms:
// 23, 24 or 25 hours.
func dayBounds(t int64, loc *time.Location) (int64, int64) {
	y, m, d := time.UnixMilli(t).In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, loc).UnixMilli(), time.Date(y, m, d+1, 0, 0, 0, 0, loc).UnixMilli()
}

// retention deletes up to retentionRows raw rows older than the raw
// retention (counted back from the oldest of now, the newest sample and
// the rollup watermark, so a clock that jumps ahead deletes nothing
// prematurely, and never what a late sample could still need rolled up
// again), and up to retentionRows log entries beyond LogLimit. It reports
// whether more is left.
func (w *writer) retention(ctx context.Context, now time.Time) (bool, error) {
	db := w.db()
	if db == nil {
		return false, nil
	}
	more := false
	if w.hasWM {
		ref := min(now.UnixMilli(), w.maxSeen, w.wm)
		cutoff := ref - w.s.cfg.RawRetention.Milliseconds() - counterGapMs
		// Whole chunks go: those whose minute ended by cutoff.
		cutoff = chunkID(minuteOf(cutoff), 0)
		var edge int64
		err := db.QueryRowContext(ctx, `SELECT id FROM raw_chunk WHERE id < ? ORDER BY id LIMIT 1 OFFSET ?`, cutoff, retentionRows-1).Scan(&edge)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			edge = cutoff
		case err != nil:
			return false, fmt.Errorf("find old samples: %w", err)
		default:
			edge++
			more = edge < cutoff
		}
		if _, err := db.ExecContext(ctx, `DELETE FROM raw_chunk WHERE id < ?`, min(edge, cutoff)); err != nil {
			return false, classify(fmt.Errorf("delete old samples: %w", err))
		}
	}
	res, err := db.ExecContext(ctx, `DELETE FROM log WHERE id IN (SELECT id FROM log WHERE id <=
		(SELECT id FROM log ORDER BY id DESC LIMIT 1 OFFSET ?) ORDER BY id LIMIT ?)`, w.s.cfg.LogLimit, retentionRows)
	if err != nil {
		return false, classify(fmt.Errorf("delete old log entries: %w", err))
	}
	if n, _ := res.RowsAffected(); n >= retentionRows {
		more = true
	}
	return more, nil
}

// runsBefore returns how far back before from the counter runs reach that
// a step inside the chunk (or at its next sample) closes: the start of the
// earliest pair with power of such a run, at most maxRunMs back; from when
// none does. The intervals from there on must be rolled up again, since
// the step's energy is spread over the whole run (engine.go, series). It
// records in each device's lead what it found of those runs before prev.
//
// continued says that the chunk continues the one this writer rolled up
// just before (it has its carry): that chunk read the first sample at or
// after from as its next sample, so a run whose step is at that sample
// was closed and rolled up by it, and needs no second rollup here (its
// lead is still recorded: this chunk's share of the step needs it). Without
// this, a counter that moves at every poll (1 Wh at kW) rolled up every
// chunk twice: BenchmarkIngest 25 -> 40 µs per measurement.
func runsBefore(ctx context.Context, db querier, s *Store, cd *chunkData, from int64, continued bool) (int64, error) {
	back := from
	// The counters of a device whose value at prev changes later in the
	// window: their run is closed by the chunk.
	type open struct {
		k, pk chKey
		v     float64
		done  bool
		// start is the run's first sample found so far; withP says
		// whether a pair of it had power (then the run's intervals
		// from its first pair with power on are rolled up again,
		// else from its start: its step is spread by time).
		start int64
		withP bool
		// closed: the step is at the chunk's first sample, which the
		// previous chunk rolled up as its next (see continued).
		closed bool
	}
	// devRuns is a device whose runs are looked for before its prev:
	// cur is the sample after the one looked at, left the runs whose
	// start is not found yet.
	type devRuns struct {
		ds   *devSamples
		runs []*open
		cur  *rawSample
		left int
	}
	found := map[int64]*devRuns{}
	hi := int64(math.MinInt64)
	for id, ds := range cd.devs {
		if ds.prev == nil {
			continue
		}
		var runs []*open
		for _, cv := range ds.prev.vals {
			pk, ok := powerOf(cv.k)
			if !ok {
				continue
			}
			moves := false
			for i := range ds.samples {
				if v, ok := ds.samples[i].get(cv.k); ok && v != cv.v {
					moves = true
					break
				}
			}
			if !moves && ds.next != nil {
				if v, ok := ds.next.get(cv.k); ok && v != cv.v {
					moves = true
				}
			}
			if moves {
				closed := false
				if continued && len(ds.samples) > 0 {
					v, ok := ds.samples[0].get(cv.k)
					closed = ok && v != cv.v
				}
				runs = append(runs, &open{k: cv.k, pk: pk, v: cv.v, start: ds.prev.t, closed: closed})
			}
		}
		if len(runs) == 0 {
			continue
		}
		ds.lead = map[chKey]runLead{}
		for _, r := range runs {
			ds.lead[r.k] = runLead{}
		}
		found[id] = &devRuns{ds: ds, runs: runs, cur: ds.prev, left: len(runs)}
		hi = max(hi, ds.prev.t)
	}
	if len(found) == 0 {
		return back, nil
	}
	// One scan back over the chunks of every such device (newest first,
	// each device's samples in descending time), not a query per device;
	// a device drops out once its runs' starts are found.
	lo := from - maxRunMs
	idLo, idHi := chunkSpan(lo, hi)
	pending := len(found)
	keep := func(dev int64) bool {
		d := found[dev]
		return d != nil && d.left > 0
	}
	err := s.scanChunkVals(ctx, db, `SELECT t0, device, v FROM raw_chunk WHERE id >= ? AND id < ? ORDER BY id DESC`,
		[]any{idLo, idHi}, lo, hi, true, keep, s.cat.reader(), func(dev, t int64, vals []chVal) bool {
			d := found[dev]
			if d == nil || d.left == 0 || t >= d.ds.prev.t {
				return true
			}
			o := &rawSample{t: t, vals: slices.Clone(vals)}
			if d.cur.t-o.t > counterGapMs {
				d.left = 0
				pending--
				return pending > 0
			}
			for _, r := range d.runs {
				if r.done {
					continue
				}
				ld := d.ds.lead[r.k]
				if ov, ok := o.get(r.k); !ok || ov != r.v {
					// The counter's previous move: the run starts here.
					r.done = true
					d.left--
					continue
				}
				if e, ok := pairPower(o, d.cur, r.pk); ok {
					ld.powerWh += e
					if e > 0 {
						if !r.closed {
							back = min(back, o.t)
						}
						r.withP = true
					}
				}
				r.start = o.t
				ld.spanMs += d.cur.t - o.t
				d.ds.lead[r.k] = ld
			}
			d.cur = o
			if d.left == 0 {
				pending--
			}
			return pending > 0
		})
	if err != nil {
		return 0, fmt.Errorf("read counter runs: %w", err)
	}
	for _, d := range found {
		for _, r := range d.runs {
			if !r.withP && !r.closed {
				back = min(back, r.start)
			}
		}
	}
	return back, nil
}

// powerOf returns the power channel whose energy counter k is.
func powerOf(k chKey) (chKey, bool) {
	if k.ch == dcSpec.counter {
		return chKey{dcSpec.power, k.idx}, true
	}
	for _, sp := range energySpecs {
		if sp.counter != 0 && sp.counter == k.ch {
			return chKey{sp.power, k.idx}, true
		}
	}
	return chKey{}, false
}
