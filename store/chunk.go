package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// This file holds the raw chunks (doc.go, "Schema"): a device's samples
// of one minute in one row of raw_chunk, the minute the writer collects
// in memory until it is written, and the reading of samples out of
// chunks.

// minuteOf is the start of the chunk minute containing t.
func minuteOf(t int64) int64 { return floorDiv(t, minuteMs) }

// chunkID is the key of the chunk of device dev in the minute starting
// at t0: ordered by minute, then device (device row ids stay below
// 2^24).
func chunkID(t0, dev int64) int64 { return t0/minuteMs<<24 + dev }

// oldestMs is earlier than any sample time: chunkID of its minute does
// not overflow.
const oldestMs = -1 << 52

// chunkSpan gives the key range [lo, hi) of the chunks that may hold
// samples in [from, to).
func chunkSpan(from, to int64) (lo, hi int64) {
	return chunkID(minuteOf(from), 0), chunkID(minuteOf(to-1)+minuteMs, 0)
}

// newestSample returns the time of the newest stored sample at or before
// limit and at or after from, of the devices listed (none: all). A chunk
// of limit's minute with later samples (stored while the clock was
// ahead) is passed over.
func newestSample(ctx context.Context, db querier, from, limit int64, devs []int64) (int64, bool, error) {
	filter := ""
	var devArgs []any
	if len(devs) > 0 {
		filter = " AND device IN (?" + strings.Repeat(", ?", len(devs)-1) + ")"
		for _, d := range devs {
			devArgs = append(devArgs, d)
		}
	}
	lo, hi := chunkSpan(from, limit+1)
	var id int64
	err := db.QueryRowContext(ctx, `SELECT id FROM raw_chunk WHERE id >= ? AND id < ? AND tn <= ?`+filter+` ORDER BY id DESC LIMIT 1`,
		append([]any{lo, hi, limit}, devArgs...)...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("find newest sample: %w", err)
	}
	m := id >> 24 << 24 // the newest minute: its devices' last samples
	var tn sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT max(tn) FROM raw_chunk WHERE id >= ? AND id < ? AND tn <= ?`+filter,
		append([]any{m, m + 1<<24, limit}, devArgs...)...).Scan(&tn); err != nil {
		return 0, false, fmt.Errorf("find newest sample: %w", err)
	}
	return tn.Int64, tn.Valid, nil
}

// sortSamples sorts by time, keeping of equal times the last.
func sortSamples(s []chunkSample) []chunkSample {
	return lastByKey(s, func(x chunkSample) int64 { return x.t })
}

// lastByKey sorts s by key (in place) and keeps of equal keys the last
// in s's order.
func lastByKey[T any](s []T, key func(T) int64) []T {
	slices.SortStableFunc(s, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	out := s[:0]
	for i, x := range s {
		if i+1 < len(s) && key(s[i+1]) == key(x) {
			continue
		}
		out = append(out, x)
	}
	return out
}

// writeChunk writes c's samples as its minute's row with st (INSERT OR
// REPLACE), merging the stored row's samples when c.merge (c's win at
// equal times). It returns how many samples the row gained (its count,
// also in c.nextRowN, less the count it had).
func (w *writer) writeChunk(ctx context.Context, tx *sql.Tx, st *sql.Stmt, c *openChunk) (int, error) {
	smp, arena := c.samples(w.chunkBuf, w.chunkVals, &w.chunkDec)
	w.chunkVals = arena[:0]
	before := c.rowN
	if c.merge {
		var old []byte
		err := tx.QueryRowContext(ctx, `SELECT v FROM raw_chunk WHERE id = ?`, chunkID(c.t0, c.dev)).Scan(&old)
		switch {
		case err == sql.ErrNoRows:
			// Nothing stored of the minute: from now on the row holds
			// c's samples only (or, if this batch fails, stays absent),
			// so later writes need not read it back. Without this a
			// device's first minute (eager, written at every commit,
			// each second at 1,000 devices) was read back, decoded and
			// merged each time: 17 MB/s of garbage in the first minute
			// after a start with 1,000 devices. Writer.load sets merge
			// again for a new file.
			c.merge = false
		case err != nil:
			return 0, fmt.Errorf("read stored chunk: %w", err)
		default:
			var prev []chunkSample
			if err := decodeChunk(old, c.t0, func(t int64, sv []sidVal) bool {
				prev = append(prev, chunkSample{t, slices.Clone(sv)})
				return true
			}); err != nil {
				w.s.log.Warn("replacing undecodable raw chunk", "device", c.dev, "t0", time.UnixMilli(c.t0).UTC(), "err", err)
				prev = nil
			}
			before = len(prev)
			smp = sortSamples(append(prev, smp...))
		}
	}
	w.chunkBuf = smp[:0]
	c.nextRowN = len(smp)
	if len(smp) == 0 {
		return 0, nil
	}
	w.buf = w.enc.appendChunk(w.buf[:0], c.t0, smp)
	if _, err := st.ExecContext(ctx, chunkID(c.t0, c.dev), c.t0, c.dev, len(smp), smp[len(smp)-1].t, w.buf); err != nil {
		return 0, fmt.Errorf("write raw chunk: %w", err)
	}
	return max(0, len(smp)-before), nil
}

// scanChunkVals runs q, which selects (t0, device, v) of raw_chunk rows
// in the order wanted, and calls fn per sample of the rows with t in
// [lo, hi), with the channel values of the series r gives: in time order
// per row, or reversed with desc. Only the rows of the devices keep
// accepts (nil: all) are decoded. fn returning false stops. A chunk that
// does not decode is logged and skipped.
func (s *Store) scanChunkVals(ctx context.Context, db querier, q string, args []any, lo, hi int64, desc bool,
	keep func(dev int64) bool, r *chunkReader, fn func(dev, t int64, vals []chVal) bool) error {
	return scanRawChunks(ctx, s, db, q, args, lo, hi, desc, keep, r.decode, fn)
}

// scanRawChunks is scanChunkVals with the chunk decoder decode, whose
// samples' values are Ts (valid during fn only).
func scanRawChunks[T any](ctx context.Context, s *Store, db querier, q string, args []any, lo, hi int64, desc bool,
	keep func(dev int64) bool, decode func(b []byte, t0 int64, fn func(t int64, x []T) bool) error,
	fn func(dev, t int64, x []T) bool) error {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("read raw chunks: %w", err)
	}
	defer rows.Close()
	type sample struct {
		t int64
		x []T
	}
	var rev []sample
	var arena []T
	for rows.Next() {
		var t0, dev int64
		var v sql.RawBytes
		if err := rows.Scan(&t0, &dev, &v); err != nil {
			return fmt.Errorf("read raw chunks: %w", err)
		}
		if keep != nil && !keep(dev) {
			continue
		}
		more := true
		if !desc {
			err = decode(v, t0, func(t int64, x []T) bool {
				if t >= lo && t < hi {
					more = fn(dev, t, x)
				}
				return more
			})
		} else {
			rev, arena = rev[:0], arena[:0]
			err = decode(v, t0, func(t int64, x []T) bool {
				if t >= lo && t < hi {
					arena = append(arena, x...)
					rev = append(rev, sample{t: t, x: arena[len(arena)-len(x):]})
				}
				return true
			})
			for i := len(rev) - 1; i >= 0 && more && err == nil; i-- {
				more = fn(dev, rev[i].t, rev[i].x)
			}
		}
		if err != nil {
			s.log.Warn("skipping undecodable raw chunk", "device", dev, "t0", time.UnixMilli(t0).UTC(), "err", err)
		}
		if !more {
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read raw chunks: %w", err)
	}
	return nil
}

// chunkReader decodes raw chunks as decodeChunk does (the same samples,
// the same errors at the same points), for queries that want a few
// channels of many samples: it gives a sample's values as channel values
// (chVal) of the series its key function gives only, converting the
// others' mantissas not at all; it keeps the series' states in a slice
// looked up when a chunk's series set changes (once a chunk, as the
// writer writes them), not in a map per value; and its buffers serve
// chunk after chunk. decodeChunk took about a third of a plant's Recent
// answer, and the catalog look-up of every value as much again.
// The rollup reads every channel through one (catalog.reader): decodeChunk's
// map per chunk and the catalog's conversion were half of what a rollup of
// 1,000 devices allocated.
type chunkReader struct {
	// keyOf gives a series' channel, false for a series not to give.
	keyOf func(sid int64) (chKey, bool)
	// sids are the series seen in the chunk so far, ascending, and
	// states their states.
	sids   []int64
	states []seriesState
	// Per series of the current set: its index in states, whether it is
	// given, and its channel.
	slot []int32
	give []bool
	key  []chKey
	set  []int64
	vals []chVal
	// n is the sample count of the chunk being decoded.
	n int
	// known are the sets met so far, by their first series.
	known map[int64]*knownSet
}

// newChunkReader returns a reader giving the series of keys.
func newChunkReader(keys map[int64]chKey) *chunkReader {
	return &chunkReader{keyOf: func(sid int64) (chKey, bool) { k, ok := keys[sid]; return k, ok }}
}

// reader returns a chunk reader giving every series of a device channel
// the catalog knows (balance fields and unknown series are skipped), each
// looked up once per series set met.
func (c *catalog) reader() *chunkReader { return &chunkReader{keyOf: c.chanOf} }

// chanOf gives a series' channel key, false for a series unknown or of a
// balance field.
func (c *catalog) chanOf(sid int64) (chKey, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if s := c.seriesIDs[sid]; s != nil && s.ch != 0 {
		return chKey{s.ch, int32(s.idx)}, true
	}
	return chKey{}, false
}

// decode decodes a chunk starting at t0, calling fn per sample in time
// order with its values (valid during the call only); fn returning false
// stops. A malformed chunk gives errCorrupt where decodeChunk does.
func (r *chunkReader) decode(b []byte, t0 int64, fn func(t int64, vals []chVal) bool) error {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return errCorrupt
	}
	b = b[k:]
	r.n = int(n)
	prevT, prevD := t0, int64(0)
	r.sids, r.states = r.sids[:0], r.states[:0]
	r.set, r.slot, r.give, r.key = r.set[:0], r.slot[:0], r.give[:0], r.key[:0]
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
			r.set = r.set[:0]
			sid := int64(0)
			for range c - 1 {
				u, k := binary.Uvarint(b)
				if k <= 0 {
					return errCorrupt
				}
				b = b[k:]
				sid += int64(u)
				r.set = append(r.set, sid)
			}
			r.newSet()
		}
		nb := (len(r.set) + 7) / 8
		if len(b) < nb {
			return errCorrupt
		}
		bm := b[:nb]
		b = b[nb:]
		r.vals = r.vals[:0]
		for i := range r.set {
			st := &r.states[r.slot[i]]
			if bm[i/8]&(1<<(i%8)) == 0 {
				if !st.ok {
					return errCorrupt
				}
				if r.give[i] {
					r.vals = append(r.vals, chVal{r.key[i], st.v})
				}
				continue
			}
			k, err := readValue(b, st, r.give[i])
			if err != nil {
				return err
			}
			b = b[k:]
			if r.give[i] {
				r.vals = append(r.vals, chVal{r.key[i], st.v})
			}
		}
		if !fn(t, r.vals) {
			return nil
		}
	}
	if len(b) != 0 {
		return errCorrupt
	}
	return nil
}

// newSet looks up the states and channels of the series of a new set.
// A series keeps its state when it leaves the set and comes back, as in
// decodeChunk's map; a series that is not given never has its value
// computed, and nothing reads it.
func (r *chunkReader) newSet() {
	if len(r.sids) == 0 && ascending(r.set) {
		// The chunk's first set (as the writer writes them, its only
		// one): every series is new, in order; its channels are those of
		// the last chunk that began with the same set (the device's
		// previous minute), looked up once.
		n := len(r.set)
		r.sids = append(r.sids, r.set...)
		r.states = append(r.states, make([]seriesState, n)...)
		r.slot = r.slot[:0]
		for i := range n {
			r.slot = append(r.slot, int32(i))
		}
		if n == 0 {
			r.give, r.key = r.give[:0], r.key[:0]
			return
		}
		if r.known == nil {
			r.known = map[int64]*knownSet{}
		}
		ks := r.known[r.set[0]]
		if ks == nil || !slices.Equal(ks.set, r.set) {
			ks = &knownSet{set: slices.Clone(r.set)}
			for _, sid := range r.set {
				k, ok := r.keyOf(sid)
				ks.give = append(ks.give, ok)
				ks.key = append(ks.key, k)
			}
			r.known[r.set[0]] = ks
		}
		r.give, r.key = append(r.give[:0], ks.give...), append(r.key[:0], ks.key...)
		return
	}
	for _, sid := range r.set {
		i, found := slices.BinarySearch(r.sids, sid)
		if !found {
			r.sids = slices.Insert(r.sids, i, sid)
			r.states = slices.Insert(r.states, i, seriesState{})
		}
	}
	r.slot, r.give, r.key = r.slot[:0], r.give[:0], r.key[:0]
	for _, sid := range r.set {
		i, _ := slices.BinarySearch(r.sids, sid)
		k, ok := r.keyOf(sid)
		r.slot = append(r.slot, int32(i))
		r.give = append(r.give, ok)
		r.key = append(r.key, k)
	}
}

// knownSet is a series set a chunkReader met and the channels it gives of
// it.
type knownSet struct {
	set  []int64
	give []bool
	key  []chKey
}

// ascending reports whether the series of a set ascend strictly (a
// chunk's sets always do; a malformed one may repeat a series).
func ascending(set []int64) bool {
	for i := 1; i < len(set); i++ {
		if set[i] <= set[i-1] {
			return false
		}
	}
	return true
}

// decodeRowBlob decodes a blob of the old raw table (schema versions 1–3:
// one row per poll): uvarint(series id delta) and the value (appendDec).
func decodeRowBlob(b []byte, dst []sidVal) ([]sidVal, error) {
	sid := int64(0)
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
		dst = append(dst, sidVal{sid, v})
	}
	return dst, nil
}

// migrateRawChunks (schema version 4) moves the rows of the old raw table
// into raw_chunk, a row per device and minute, and drops raw. Rows that
// do not decode are dropped (they answered nothing before either).
func migrateRawChunks(ctx context.Context, tx *sql.Tx) error {
	ins, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO raw_chunk (id, t0, device, n, tn, v) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	open := map[int64]*openChunk{}
	var buf []byte
	var smp []chunkSample
	var arena []sidVal
	var dec chunkDecoder
	write := func(c *openChunk) error {
		smp, arena = c.samples(smp, arena, &dec)
		buf = appendChunk(buf[:0], c.t0, smp)
		_, err := ins.ExecContext(ctx, chunkID(c.t0, c.dev), c.t0, c.dev, len(smp), smp[len(smp)-1].t, buf)
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT t, device, v FROM raw ORDER BY t, device`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var sv []sidVal
	for rows.Next() {
		var t, dev int64
		var v []byte
		if err := rows.Scan(&t, &dev, &v); err != nil {
			return err
		}
		if sv, err = decodeRowBlob(v, sv[:0]); err != nil || len(sv) == 0 {
			continue
		}
		t0 := minuteOf(t)
		c := open[dev]
		if c != nil && c.t0 != t0 {
			if err := write(c); err != nil {
				return err
			}
			c = nil
		}
		if c == nil {
			c = &openChunk{dev: dev, t0: t0}
			open[dev] = c
		}
		c.add(t, sv)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, c := range open {
		if err := write(c); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, `DROP TABLE raw`)
	return err
}
