package mqtt

import (
	"context"
	"fmt"
	"sync"
	"time"

	"plantd/store"
)

// Live streams are kept in memory, not in the outbox: live values are
// never replayed, so storing them bought nothing but an insert per tick
// and a delete per PUBACK batch on the SD card. Per live stream the
// uplink keeps the newest message not yet published (a newer one
// replaces it) and the count of messages published and not yet
// acknowledged; a PUBACK only frees its place.
//
// Seqs of live streams are numbered when published, so they are
// contiguous while connected. They must never be reused across restarts
// (a backend dedupes on gatewayId, stream, seq), so the uplink reserves
// them in blocks: the outbox mark liveSeqMark holds the highest seq
// reserved, written (synced to the disk, Outbox.SyncMark) before any seq
// above the previous one is published. A new run starts its live streams
// above the mark: one synced write per start and one per liveBlock
// messages of the busiest live stream.
const (
	liveSeqMark = "live.seq"
	liveBlock   = 1 << 16
)

// liveQueue is the live streams' state (the producer puts, the session
// takes and releases, Status reads).
type liveQueue struct {
	mu      sync.Mutex
	streams map[string]*liveSlot
	// ready: base and limit are read (or reserved); the seqs of this run
	// are in (base, limit], limit stored as the mark.
	ready       bool
	base, limit uint64
	// maxPuts is the most messages put into one stream in this run: an
	// upper bound of any stream's seq minus base.
	maxPuts uint64
}

// liveSlot is one live stream.
type liveSlot struct {
	seq  uint64 // the last seq published in this run (base: none)
	puts uint64 // messages put in this run
	// The newest message not yet published (has: there is one).
	has     bool
	payload []byte
	created time.Time
	// inflight counts the published messages awaiting their PUBACK.
	inflight int
}

func newLiveQueue() *liveQueue { return &liveQueue{streams: map[string]*liveSlot{}} }

func (q *liveQueue) slotLocked(stream string) *liveSlot {
	s := q.streams[stream]
	if s == nil {
		s = &liveSlot{seq: q.base}
		q.streams[stream] = s
	}
	return s
}

// liveMessage is a live message put into its stream's slot.
type liveMessage struct {
	stream  string
	payload []byte
	created time.Time
}

// putLive puts a tick's live messages into their slots (replacing any
// not published yet) after making sure their seqs are reserved, and wakes
// the sender. When the reservation cannot be written (the storage is
// failing) the tick is skipped: no seq is published that a later run
// could number again; putLive reports whether the messages were put.
func (u *Uplink) putLive(ctx context.Context, msgs []liveMessage) bool {
	if len(msgs) == 0 {
		return true
	}
	q := u.live
	if err := u.reserveLive(ctx, 1); err != nil {
		if ctx.Err() == nil {
			u.log.Warn("live values not published: their seqs could not be reserved", "messages", len(msgs), "err", err)
		}
		return false
	}
	streams := make([]string, 0, len(msgs))
	q.mu.Lock()
	for _, m := range msgs {
		s := q.slotLocked(m.stream)
		s.has, s.payload, s.created = true, m.payload, m.created
		s.puts++
		q.maxPuts = max(q.maxPuts, s.puts)
		streams = append(streams, m.stream)
	}
	q.mu.Unlock()
	u.notify(streams...)
	return true
}

// reserveLive makes sure that every live stream may take n more seqs:
// on the first call it reads the mark (or derives it, startLive), and
// it writes a higher mark when the block is used up. Producer goroutine
// only (it alone writes the mark).
func (u *Uplink) reserveLive(ctx context.Context, n uint64) error {
	q := u.live
	q.mu.Lock()
	ready, need, limit := q.ready, q.base+q.maxPuts+n, q.limit
	q.mu.Unlock()
	if !ready {
		base, err := u.startLive(ctx)
		if err != nil {
			return err
		}
		q.mu.Lock()
		q.ready, q.base, q.limit = true, base, base
		for _, s := range q.streams {
			s.seq = base
		}
		q.mu.Unlock()
		need, limit = base+n, base
	}
	if need <= limit {
		return nil
	}
	next := limit + liveBlock*((need-limit+liveBlock-1)/liveBlock)
	// Synced to the disk before any seq above the old limit is taken: a
	// power cut must not take the reservation back (floors.go).
	if err := u.deps.Outbox.SyncMark(ctx, liveSeqMark, int64(next)); err != nil {
		return fmt.Errorf("reserve live seqs up to %d: %w", next, err)
	}
	u.reservations.Add(1)
	q.mu.Lock()
	q.limit = next
	q.mu.Unlock()
	return nil
}

// startLive returns the seq above which this run numbers its live
// streams: the mark of the previous run. A database without the mark
// (new, or written by a plantd that kept live messages in the outbox)
// has numbered live streams in the outbox's own counters: one empty
// message per live stream known (the live state's plants and devices,
// and the live streams left in the outbox) reads them; the highest seq
// minus one is the base (each stream's next seq is at most the highest,
// which was never published), and the messages are deleted again.
func (u *Uplink) startLive(ctx context.Context) (uint64, error) {
	v, ok, err := u.deps.Outbox.Mark(ctx, liveSeqMark)
	if err != nil {
		return 0, fmt.Errorf("read the live seq mark: %w", err)
	}
	if ok {
		return uint64(v), nil
	}
	known := map[string]bool{}
	for _, p := range u.deps.Live.Plants() {
		known[liveStream(p.ID)] = true
		devs, _ := u.deps.Live.Devices(p.ID)
		for _, d := range devs {
			known[deviceStream(d.Info.ID)] = true
		}
	}
	if list, err := u.deps.Outbox.OutboxStreams(ctx); err == nil {
		for _, s := range list {
			if classOf(s.Stream) == classLive {
				known[s.Stream] = true
			}
		}
	}
	if len(known) == 0 {
		return 0, nil
	}
	probes := make([]store.OutboxAppend, 0, len(known))
	for s := range known {
		probes = append(probes, store.OutboxAppend{Stream: s, Payload: []byte("[]")})
	}
	seqs, err := u.deps.Outbox.EnqueueBatch(ctx, probes, nil)
	if err != nil {
		return 0, fmt.Errorf("read the outbox's live seqs: %w", err)
	}
	upTo := make(map[string]uint64, len(seqs))
	var top uint64
	for i, seq := range seqs {
		upTo[probes[i].Stream] = seq
		top = max(top, seq)
	}
	// The probes are never published: deleted now, or, after a crash
	// before this, dropped by the next start's trim as live rows.
	if err := u.deps.Outbox.AckBatch(ctx, upTo); err != nil {
		u.log.Warn("deleting the outbox's live seq probes failed (the next start drops them)", "err", err)
	}
	return top - 1, nil
}

// take numbers and returns a stream's waiting message, counted in
// flight (false: none waits). A message made before since (before the
// connection started) is dropped instead: it was never numbered, so it
// leaves no gap, and the next tick sends current values.
func (q *liveQueue) take(stream string, since time.Time) (store.OutboxMessage, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.streams[stream]
	if s == nil || !s.has {
		return store.OutboxMessage{}, false
	}
	if s.created.Before(since) || s.seq >= q.limit {
		// Made before the connection, or (never, as putLive reserves
		// first) a seq the mark does not cover: not numbered.
		s.has, s.payload = false, nil
		return store.OutboxMessage{}, false
	}
	s.seq++
	s.inflight++
	m := store.OutboxMessage{Stream: stream, Seq: s.seq, Created: s.created, Payload: s.payload}
	s.has, s.payload = false, nil
	return m, true
}

// waiting lists the streams with a message waiting.
func (q *liveQueue) waiting(out []string) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	for name, s := range q.streams {
		if s.has {
			out = append(out, name)
		}
	}
	return out
}

// release frees n in-flight places of a stream (acknowledged, or given
// up with their connection).
func (q *liveQueue) release(stream string, n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if s := q.streams[stream]; s != nil {
		s.inflight = max(0, s.inflight-n)
	}
}

// depths returns per live stream the messages waiting or in flight and
// the creation time of the one waiting (zero: none).
func (q *liveQueue) depths() map[string]StreamStatus {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make(map[string]StreamStatus, len(q.streams))
	for name, s := range q.streams {
		st := StreamStatus{Stream: name, Depth: s.inflight}
		if s.has {
			st.Depth++
			st.Oldest = s.created
		}
		out[name] = st
	}
	return out
}
