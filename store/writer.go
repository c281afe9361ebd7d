package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"plantd/plant"
)

// Cadences of the writer's maintenance.
const (
	// idleRollup: when nothing was recorded for this long (wall clock),
	// the last, partial 5-minute interval is rolled up too, so that a
	// plant whose devices went quiet shows its last values.
	idleRollup = 15 * time.Second
	// maintainBudget bounds the rollup catch-up done per maintenance tick
	// while nothing is queued.
	maintainBudget = 200 * time.Millisecond
	// retentionEvery is how often retention looks for old raw rows and
	// surplus log entries; it deletes retentionRows at a time.
	retentionEvery = time.Minute
	retentionRows  = 2000
	// logCommitWithin: a batch holding a log entry commits at most this
	// long after the entry was queued, however long Config.BatchInterval
	// is: the plant and device logs (grid control's among them) keep the
	// durability they had with one commit a second.
	logCommitWithin = time.Second
)

// writer is the state of the writer goroutine (Run). Only that goroutine
// touches it, except load at Open.
type writer struct {
	s    *Store
	adds txAdds

	insChunk, insLog *sql.Stmt
	// The rollup's statements: its 5-minute, hourly and daily rows, and
	// the reading of the 5-minute and hourly rows it merges (prepared
	// once, not per chunk and per source).
	up5, up1h, up1d *sql.Stmt
	sel5m, sel1h    *sql.Stmt

	// open holds each device's chunk minute being collected (chunk.go):
	// written when the device's next minute begins, when it was quiet
	// for idleRollup, and at Flush and Run's end.
	open      map[int64]*openChunk
	chunkBuf  []chunkSample
	chunkVals []sidVal // the values of chunkBuf's samples
	chunkDec  chunkDecoder
	enc       chunkEncoder

	lastT   map[int64]int64 // device id → time of its last committed sample
	maxSeen int64           // newest sample time committed
	wm      int64           // rollups are complete below wm (a multiple of 5 min)
	hasWM   bool

	// carry is the last sample of each device before carryAt, kept from the
	// previous rollup chunk; carryAt < 0 means none.
	carry   map[int64]*rawSample
	carryAt int64
	// stuck names the counters (device name, channel, input) logged as
	// stuck, so each is logged once.
	stuck map[string]bool

	batch    []item
	nMeas    int
	buf      []byte
	sv       []sidVal
	mergeBuf []aggEntry  // mergeInto's entries
	rollBufs *sampleBufs // the rollup's sample buffers (keepBufsBytes)
	aggBuf   aggScratch  // aggregate's arrays, from device to device
	// marks is the map of batchWork.marks, emptied for each batch: made
	// anew, it grew to an entry per device at every commit (1,000
	// devices at 1 s: 9 MB a minute, a quarter of the daemon's garbage).
	marks map[int64]chunkMark
	// layouts remembers, per device row id, the series of its last
	// measurement's readings by position (encode).
	layouts map[int64]*layout
	// Cadences run on the wall clock (time.Now), not Config.Now, which
	// may be a fast simulated clock.
	lastData      time.Time // when the last measurement was committed
	idleDone      bool      // the idle rollup ran since lastData
	nextRetention time.Time
	retentionMore bool
}

type sidVal struct {
	sid int64
	v   float64
}

// layout is the channels of a device's last measurement, by position
// among its valid readings, with their series: a device's polls repeat
// them, so encode finds a reading's series by comparing its channel with
// the one at its position instead of looking it up in the catalog (under
// its lock, by a hashed key) every time. Series added in a transaction
// that rolls back leave the catalog: rollbackAdds forgets every layout.
type layout struct {
	dev  *device // the catalog's value the series were found under
	keys []chKey
	sids []int64
}

func newWriter(s *Store) *writer {
	return &writer{s: s, adds: txAdds{c: s.cat}, lastT: map[int64]int64{}, open: map[int64]*openChunk{}, carryAt: -1, layouts: map[int64]*layout{}}
}

// rollbackAdds takes a failed transaction's additions out of the catalog
// and forgets the layouts, which may name them.
func (w *writer) rollbackAdds() {
	w.adds.rollback()
	clear(w.layouts)
}

// db returns the writing connection.
func (w *writer) db() *sql.DB { return w.s.wdb.Load() }

// load reads the writer's state: the rollup watermark, the newest sample
// and each device's last sample time.
func (w *writer) load(ctx context.Context) error {
	db := w.s.wdb.Load()
	if db == nil {
		db = w.s.rdb.Load()
	}
	var wm sql.NullInt64
	err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'watermark'`).Scan(&wm)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("load watermark: %w", err)
	}
	w.wm, w.hasWM = wm.Int64, wm.Valid
	// Loaded again after read-only storage became writable, perhaps on a
	// new file: nothing of the file read before is kept.
	clear(w.lastT)
	w.carry, w.carryAt = nil, -1
	// What the open chunks hold is still to be written, into whatever
	// the file holds of their minutes.
	for _, c := range w.open {
		c.merge = true
	}
	// Rows stamped in the future (written while the clock was ahead) do
	// not count as the newest.
	maxT, ok, err := newestSample(ctx, db, oldestMs, w.s.futureLimit(), nil)
	if err != nil {
		return fmt.Errorf("load newest sample: %w", err)
	}
	w.maxSeen = maxT
	if ok {
		lo, _ := chunkSpan(maxT-counterGapMs, maxT)
		rows, err := db.QueryContext(ctx, `SELECT device, max(tn) FROM raw_chunk WHERE id >= ? GROUP BY device`, lo)
		if err != nil {
			return fmt.Errorf("load last samples: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var dev, t int64
			if err := rows.Scan(&dev, &t); err != nil {
				return fmt.Errorf("load last samples: %w", err)
			}
			w.lastT[dev] = t
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("load last samples: %w", err)
		}
	}
	if w.hasWM {
		w.s.rolledUpTo.Store(w.wm)
	}
	return nil
}

func (w *writer) closeStmts() {
	for _, st := range []*sql.Stmt{w.insChunk, w.insLog, w.up5, w.up1h, w.up1d, w.sel5m, w.sel1h} {
		if st != nil {
			st.Close()
		}
	}
}

// prepare prepares the writer's statements, all or none.
func (w *writer) prepare(ctx context.Context) error {
	if w.insChunk != nil {
		return nil
	}
	db := w.db()
	if db == nil {
		return fmt.Errorf("prepare: %w", ErrReadOnly)
	}
	stmts := []struct {
		st **sql.Stmt
		q  string
	}{
		{&w.insLog, `INSERT INTO log (t, level, code, message, plant, device) VALUES (?, ?, ?, ?, ?, ?)`},
		{&w.up5, `INSERT OR REPLACE INTO r5m (src, t, v) VALUES (?, ?, ?)`},
		{&w.up1h, `INSERT OR REPLACE INTO r1h (src, t, v) VALUES (?, ?, ?)`},
		{&w.up1d, `INSERT OR REPLACE INTO r1d (src, t, v) VALUES (?, ?, ?)`},
		{&w.sel5m, `SELECT v FROM r5m WHERE src = ? AND t >= ? AND t < ?`},
		{&w.sel1h, `SELECT v FROM r1h WHERE src = ? AND t >= ? AND t < ?`},
		// Last: it says that all are prepared.
		{&w.insChunk, `INSERT OR REPLACE INTO raw_chunk (id, t0, device, n, tn, v) VALUES (?, ?, ?, ?, ?, ?)`},
	}
	for i, x := range stmts {
		st, err := db.PrepareContext(ctx, x.q)
		if err != nil {
			for _, y := range stmts[:i] {
				(*y.st).Close()
				*y.st = nil
			}
			return fmt.Errorf("prepare: %w", err)
		}
		*x.st = st
	}
	return nil
}

// run is the writer loop (see Store.Run).
func (w *writer) run(ctx context.Context) error {
	dbctx := context.WithoutCancel(ctx)
	if err := w.prepare(dbctx); err != nil {
		w.s.setHealth(classify(err))
	}
	cfg := &w.s.cfg
	timer := time.NewTimer(cfg.BatchInterval)
	timer.Stop()
	// timerC is nil while no commit is due; due is when the armed timer
	// fires.
	var timerC <-chan time.Time
	var due time.Time
	maint := time.NewTicker(min(cfg.BatchInterval, time.Second))
	defer maint.Stop()
	w.nextRetention = time.Now()
	for {
		w.s.tick()
		select {
		case <-ctx.Done():
			w.shutdown(dbctx)
			return nil
		case it := <-w.s.queue:
			w.batch = append(w.batch, *it)
			if it.done != nil {
				err := w.commit(dbctx, allChunks)
				timerC = nil
				w.rollupUntil(dbctx, false, time.Time{})
				w.answerFlushes(err)
				continue
			}
			wait := cfg.BatchInterval
			if it.l != nil {
				wait = min(wait, logCommitWithin)
			}
			if now := time.Now(); timerC == nil || now.Add(wait).Before(due) {
				due = now.Add(wait)
				timer.Reset(wait)
				timerC = timer.C
			}
			if len(w.batch) >= cfg.BatchRows {
				w.commit(dbctx, nil)
				timerC = nil
				w.rollupStep(dbctx, false)
			}
		case <-timerC:
			timerC = nil
			w.commit(dbctx, nil)
			w.rollupStep(dbctx, false)
		case <-maint.C:
			w.maintain(dbctx)
		}
	}
}

// answerFlushes answers the Flush requests of the last batch.
func (w *writer) answerFlushes(err error) {
	for _, it := range w.batch {
		if it.done != nil {
			it.done <- err
		}
	}
	w.batch = w.batch[:0]
}

// shutdown commits what is queued and rolls everything up.
func (w *writer) shutdown(ctx context.Context) {
	w.s.writable.Store(false)
	for {
		select {
		case it := <-w.s.queue:
			w.batch = append(w.batch, *it)
			if len(w.batch) >= w.s.cfg.BatchRows {
				w.commit(ctx, nil)
			}
			continue
		default:
		}
		break
	}
	err := w.commit(ctx, allChunks)
	w.rollupUntil(ctx, true, time.Time{})
	w.answerFlushes(err)
}

// maintain runs between batches: rollup catch-up while the queue is empty,
// the idle rollup, retention.
func (w *writer) maintain(ctx context.Context) {
	w.s.checkFile()
	if w.s.corrupt.Load() {
		return
	}
	now := time.Now()
	// A device quiet for idleRollup has its open minute written (with
	// the batch so far), before the idle rollup reads it.
	if idle := func(c *openChunk) bool { return now.Sub(c.lastAdd) >= idleRollup }; w.unwritten(idle) {
		w.commit(ctx, idle)
	}
	w.rollupUntil(ctx, false, now.Add(maintainBudget))
	if !w.idleDone && !w.lastData.IsZero() && now.Sub(w.lastData) >= idleRollup && len(w.s.queue) == 0 {
		w.idleDone = w.rollupUntil(ctx, true, time.Now().Add(maintainBudget))
	}
	if now.Before(w.nextRetention) && !w.retentionMore {
		return
	}
	if len(w.s.queue) > 0 {
		return
	}
	w.nextRetention = now.Add(retentionEvery)
	more, err := w.retention(ctx, w.s.cfg.Now())
	w.retentionMore = more
	if err != nil {
		w.s.log.Warn("retention", "err", err)
	}
}

// allChunks writes every open chunk (Flush, Run's end).
func allChunks(*openChunk) bool { return true }

// commit writes the batch (without Flush requests, which stay for
// answerFlushes) in one transaction, with the complete chunk minutes and
// the open ones flush accepts (nil: none). A failed batch is counted,
// reported through Health and returned; it is not retried.
func (w *writer) commit(ctx context.Context, flush func(*openChunk) bool) error {
	n := 0
	for _, it := range w.batch {
		if it.done == nil {
			n++
		}
	}
	if n == 0 && !w.unwritten(flush) {
		return nil
	}
	var err error
	if w.s.corrupt.Load() {
		// Nothing more is written to a damaged file.
		err = fmt.Errorf("%w: writing stopped", ErrCorrupt)
		w.s.dropped.Add(uint64(n))
	} else if err = classify(w.writeBatch(ctx, flush)); err != nil {
		w.s.failed.Add(uint64(n))
		w.s.setHealth(err)
	} else {
		w.s.setHealth(nil)
	}
	keep := w.batch[:0]
	for _, it := range w.batch {
		if it.done != nil {
			keep = append(keep, it)
		}
	}
	w.batch = keep
	return err
}

// unwritten reports whether an open chunk that flush accepts holds
// samples not written yet.
func (w *writer) unwritten(flush func(*openChunk) bool) bool {
	if flush == nil {
		return false
	}
	for _, c := range w.open {
		if c.persisted < len(c.ts) && flush(c) {
			return true
		}
	}
	return false
}

// tooOld reports whether a sample at t is older than the raw retention
// allows, counted back from the newest sample seen before it (maxT), but
// never from later than the wall clock, so that one sample stamped in the
// future cannot make the rest look old. Retention would delete such a
// sample before its interval could be rolled up again.
func (w *writer) tooOld(t, maxT, now int64) bool {
	ref := min(maxT, now)
	return t < ref-w.s.cfg.RawRetention.Milliseconds()+counterGapMs
}

// chunkMark is an open chunk as it was before a batch, to be put back
// when the batch fails.
type chunkMark struct {
	c            *openChunk // nil: the device had none
	n, persisted int
}

// writeBatch commits the batch's log entries and puts its measurements
// into the devices' open chunk minutes; it writes the chunks of minutes
// that are complete (the device's next minute began), the open ones
// flush accepts, and a sample of a minute already closed at once (merged
// into its row). The samples written count as arriving now: one that
// arrives late (before a sample already stored for its device) or that
// closes a gap reaching back before the rollup watermark moves the
// watermark back, in the same transaction, so that the intervals it
// touches are rolled up again.
func (w *writer) writeBatch(ctx context.Context, flush func(*openChunk) bool) (err error) {
	if err := w.prepare(ctx); err != nil {
		return err
	}
	tx, err := w.db().BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin batch: %w", err)
	}
	if w.marks == nil {
		w.marks = map[int64]chunkMark{}
	}
	clear(w.marks)
	b := &batchWork{marks: w.marks, maxT: w.maxSeen}
	defer func() {
		if err != nil {
			tx.Rollback()
			w.rollbackAdds()
			w.restore(b.marks)
		}
	}()
	if err := w.stage(ctx, tx, b); err != nil {
		return err
	}
	for _, c := range w.open {
		if c.persisted < len(c.ts) && (c.eager || flush != nil && flush(c)) {
			b.toWrite = append(b.toWrite, c)
		}
	}
	cw, err := w.writeChunks(ctx, tx, b.toWrite)
	if err != nil {
		return err
	}
	newWM, wmChanged := w.wm, false
	if cw.minAff != math.MaxInt64 && (!w.hasWM || cw.minAff < w.wm) { // fresh samples, a duplicate time too
		newWM, wmChanged = floorDiv(cw.minAff, bucketMs), true
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES ('watermark', ?)`, newWM); err != nil {
			return fmt.Errorf("move rollup watermark: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit batch: %w", err)
	}
	w.adds.commit()
	for _, c := range b.toWrite {
		c.persisted, c.rowN = len(c.ts), c.nextRowN
	}
	newest := make(map[int64]int64, len(w.open))
	for dev, c := range w.open {
		if len(c.ts) > 0 {
			newest[dev] = slices.Max(c.ts)
		}
	}
	w.s.openNewest.Store(&newest)
	for dev, t := range cw.pending {
		w.lastT[dev] = t
	}
	w.maxSeen = cw.maxT
	if wmChanged {
		if w.hasWM && newWM < w.carryAt {
			w.carryAt = -1
		}
		w.wm, w.hasWM = newWM, true
		w.s.rolledUpTo.Store(newWM)
	}
	if b.took {
		w.lastData, w.idleDone = b.wall, false
	}
	w.s.written.Add(cw.meas)
	w.s.samples.Add(cw.samples)
	w.s.logs.Add(b.logs)
	w.s.dropped.Add(b.dropped)
	w.s.batches.Add(1)
	return nil
}

// batchWork is what writeBatch gathers before its commit: the open chunks
// as they were (marks, put back if the batch fails), the chunks to write,
// the newest sample time and the counts.
type batchWork struct {
	marks         map[int64]chunkMark
	toWrite       []*openChunk
	maxT          int64
	logs, dropped uint64
	took          bool      // a measurement was taken into a chunk
	wall          time.Time // when the batch was staged
}

// mark keeps dev's open chunk as it was before the batch, once.
func (b *batchWork) mark(w *writer, dev int64) {
	if _, ok := b.marks[dev]; ok {
		return
	}
	m := chunkMark{c: w.open[dev]}
	if m.c != nil {
		m.n, m.persisted = len(m.c.ts), m.c.persisted
	}
	b.marks[dev] = m
}

// restore puts the open chunks back as marks recorded them (a failed
// batch).
func (w *writer) restore(marks map[int64]chunkMark) {
	for dev, m := range marks {
		if m.c == nil {
			delete(w.open, dev)
			continue
		}
		m.c.truncate(m.n)
		m.c.persisted = m.persisted
		w.open[dev] = m.c
	}
}

// stage inserts the batch's log entries and adds its measurements to the
// devices' chunks (see writeBatch); refused samples are counted.
func (w *writer) stage(ctx context.Context, tx *sql.Tx, b *batchWork) error {
	lg := tx.StmtContext(ctx, w.insLog)
	now := w.s.cfg.Now().UnixMilli()
	b.wall = time.Now()
	for i := range w.batch {
		it := &w.batch[i]
		switch {
		case it.done != nil:
			continue
		case it.l != nil:
			e := it.l
			if _, err := lg.ExecContext(ctx, e.Time.UnixMilli(), e.Level, e.Code, e.Message, e.PlantID, e.DeviceID); err != nil {
				return fmt.Errorf("insert log entry: %w", err)
			}
			b.logs++
			continue
		}
		m := &it.m
		t := m.Time.UnixMilli()
		if w.tooOld(t, b.maxT, now) {
			b.dropped++
			continue
		}
		if t > now+w.s.cfg.FutureTolerance.Milliseconds() {
			// The clock was set back since Record: a sample of the
			// clock's future is refused.
			w.s.drop("stamped in the future")
			continue
		}
		dev, err := w.adds.ensureDevice(ctx, tx, m.DeviceID, m.PlantID, m.Kind, m.Measures)
		if err != nil {
			return err
		}
		sv, err := w.encode(ctx, tx, dev, m.Readings)
		if err != nil {
			return err
		}
		if len(sv) == 0 {
			continue
		}
		b.took = true
		b.maxT = max(b.maxT, t)
		b.mark(w, dev.id)
		c := w.chunkFor(b, dev.id, minuteOf(t))
		c.add(t, sv)
		c.lastAdd = b.wall
	}
	return nil
}

// chunkFor gives the chunk a sample of dev's minute t0 goes into: the
// open one; a new open one when t0 is later (the old one is to be
// written); or, for a minute before the open one, one written in this
// batch and merged into its row.
func (w *writer) chunkFor(b *batchWork, dev, t0 int64) *openChunk {
	c := w.open[dev]
	switch {
	case c != nil && c.t0 == t0:
		return c
	case c == nil || c.t0 < t0:
		if c != nil {
			b.toWrite = append(b.toWrite, c)
		}
		// The stored row of this minute, if any, is merged: the
		// device has samples up to its last one, or none known.
		last, known := w.lastT[dev]
		nc := &openChunk{dev: dev, t0: t0, merge: !known || last >= t0, eager: !known}
		if c != nil {
			// The minute before is the best guess of this one's size:
			// its arrays are made once rather than grown by doubling
			// (they were 16 % of what ingest allocated).
			nc.ts = make([]int64, 0, len(c.ts))
			nc.ends = make([]int32, 0, len(c.ends))
			nc.enc = make([]byte, 0, len(c.enc))
			nc.offs = make([]int32, 0, len(c.offs))
		}
		w.open[dev] = nc
		return nc
	}
	for _, x := range b.toWrite {
		if x.dev == dev && x.t0 == t0 {
			return x
		}
	}
	late := &openChunk{dev: dev, t0: t0, merge: true}
	b.toWrite = append(b.toWrite, late)
	return late
}

// chunkWrites is what writeChunks wrote: per device its newest sample
// (pending until the commit), the earliest time whose rollups the
// samples touch, the newest sample time, and the counts.
type chunkWrites struct {
	pending       map[int64]int64
	minAff, maxT  int64
	meas, samples uint64
}

// writeChunks writes the chunks with samples not yet stored. Their
// samples count as arriving now, in time order: one before the device's
// last stored sample, or within a counter gap after it, reaches back in
// minAff so that the intervals it touches are rolled up again.
func (w *writer) writeChunks(ctx context.Context, tx *sql.Tx, toWrite []*openChunk) (chunkWrites, error) {
	ins := tx.StmtContext(ctx, w.insChunk)
	cw := chunkWrites{pending: map[int64]int64{}, minAff: math.MaxInt64, maxT: w.maxSeen}
	for _, c := range toWrite {
		if c.persisted == len(c.ts) {
			continue
		}
		gained, err := w.writeChunk(ctx, tx, ins, c)
		if err != nil {
			return cw, fmt.Errorf("write raw chunk of device %d: %w", c.dev, err)
		}
		cw.meas += uint64(gained)
		type timeCount struct {
			t int64
			n int
		}
		fresh := make([]timeCount, 0, len(c.ts)-c.persisted)
		for i := c.persisted; i < len(c.ts); i++ {
			fresh = append(fresh, timeCount{c.ts[i], c.count(i)})
		}
		slices.SortStableFunc(fresh, func(a, b timeCount) int { return cmp.Compare(a.t, b.t) })
		for _, f := range fresh {
			t := f.t
			last, ok := cw.pending[c.dev]
			if !ok {
				last = w.lastT[c.dev]
			}
			aff := t
			switch {
			case last == 0:
			case t < last:
				aff = t - counterGapMs
			case t-last <= counterGapMs:
				aff = last
			}
			cw.minAff = min(cw.minAff, aff)
			cw.pending[c.dev] = max(last, t)
			cw.maxT = max(cw.maxT, t)
			cw.samples += uint64(f.n)
		}
	}
	return cw, nil
}

// encode gives a measurement's (series, value) pairs in series order.
// NaN and infinite values and invalid channels are skipped; of a
// duplicate the last wins. The slice is valid until the next call.
func (w *writer) encode(ctx context.Context, tx execer, dev *device, rs []plant.Reading) ([]sidVal, error) {
	sv := w.sv[:0]
	lay := w.layouts[dev.id]
	if lay == nil || lay.dev != dev {
		lay = &layout{dev: dev}
		w.layouts[dev.id] = lay
	}
	j := 0
	sorted := true // ascending by series, no duplicate: nothing to sort
	for _, r := range rs {
		if math.IsNaN(r.Value) || math.IsInf(r.Value, 0) || r.Index < 0 || r.Index > math.MaxInt32 {
			continue
		}
		k := chKey{r.Channel, int32(r.Index)}
		if j < len(lay.keys) && lay.keys[j] == k { // a valid channel: layouts hold no others
			sid := lay.sids[j]
			sorted = sorted && (len(sv) == 0 || sv[len(sv)-1].sid < sid)
			sv = append(sv, sidVal{sid, r.Value})
			j++
			continue
		}
		if !r.Channel.Valid() {
			continue
		}
		s, err := w.adds.ensureChan(ctx, tx, dev, k)
		if err != nil {
			lay.keys, lay.sids = lay.keys[:0], lay.sids[:0]
			return nil, err
		}
		sorted = sorted && (len(sv) == 0 || sv[len(sv)-1].sid < s.id)
		sv = append(sv, sidVal{s.id, r.Value})
		if j < len(lay.keys) {
			lay.keys[j], lay.sids[j] = k, s.id
		} else {
			lay.keys, lay.sids = append(lay.keys, k), append(lay.sids, s.id)
		}
		j++
	}
	lay.keys, lay.sids = lay.keys[:j], lay.sids[:j]
	w.sv = sv
	if sorted {
		return sv, nil
	}
	return lastByKey(sv, func(x sidVal) int64 { return x.sid }), nil
}
