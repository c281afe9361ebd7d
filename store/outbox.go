package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// OutboxAppend is one message to append to the outbox.
type OutboxAppend struct {
	Stream  string
	Payload []byte
	// Created is when the message was made; zero means now (Config.Now).
	// The outbox's age caps compare it with the time given to TrimOutbox.
	Created time.Time
}

// OutboxMark is a named integer written in the same transaction as the
// messages of EnqueueBatch: a publisher records there how far it has
// enqueued a source (the rollups up to a time, say), so that a crash
// leaves either both or neither.
type OutboxMark struct {
	Key   string
	Value int64
}

// markKey is the meta key of an outbox mark.
func markKey(k string) string { return "outbox.mark." + k }

// EnqueueBatch appends messages in one transaction and returns their
// sequence numbers (per stream 1, 2, ..., never reused), in the order
// given. mark, when not nil, is written in the same transaction. It
// numbers from outbox_seq.next, which a start that may have lost commits
// raised above the stream's durable floor (seqfloor.go), so a seq a
// publisher reserved before a power cut is not handed out again.
func (s *Store) EnqueueBatch(ctx context.Context, msgs []OutboxAppend, mark *OutboxMark) ([]uint64, error) {
	for _, m := range msgs {
		if m.Stream == "" {
			return nil, fmt.Errorf("%w: outbox stream is empty", ErrBadQuery)
		}
	}
	if mark != nil && mark.Key == "" {
		return nil, fmt.Errorf("%w: outbox mark key is empty", ErrBadQuery)
	}
	db := s.wdb.Load()
	if db == nil || s.closed.Load() {
		if err := s.Health(); err != nil {
			return nil, fmt.Errorf("store: enqueue: %w", err)
		}
		return nil, fmt.Errorf("store: enqueue: %w", ErrClosed)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: enqueue: %w", classify(err))
	}
	defer tx.Rollback()
	next := map[string]uint64{}
	seqs := make([]uint64, len(msgs))
	now := s.cfg.Now().UnixMilli()
	ins, err := tx.PrepareContext(ctx, `INSERT INTO outbox (stream, seq, created, payload) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("store: enqueue: %w", classify(err))
	}
	defer ins.Close()
	sel, err := tx.PrepareContext(ctx, `SELECT next FROM outbox_seq WHERE stream = ?`)
	if err != nil {
		return nil, fmt.Errorf("store: enqueue: %w", classify(err))
	}
	defer sel.Close()
	for i, m := range msgs {
		seq, ok := next[m.Stream]
		if !ok {
			err := sel.QueryRowContext(ctx, m.Stream).Scan(&seq)
			if errors.Is(err, sql.ErrNoRows) {
				seq, err = 1, nil
			}
			if err != nil {
				return nil, fmt.Errorf("store: enqueue: %w", classify(err))
			}
		}
		created := now
		if !m.Created.IsZero() {
			created = m.Created.UnixMilli()
		}
		p := m.Payload
		if p == nil {
			p = []byte{}
		}
		if _, err := ins.ExecContext(ctx, m.Stream, seq, created, p); err != nil {
			return nil, fmt.Errorf("store: enqueue: %w", classify(err))
		}
		seqs[i] = seq
		next[m.Stream] = seq + 1
	}
	for stream, n := range next {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO outbox_seq (stream, next) VALUES (?, ?)`, stream, n); err != nil {
			return nil, fmt.Errorf("store: enqueue: %w", classify(err))
		}
	}
	if mark != nil {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, markKey(mark.Key), mark.Value); err != nil {
			return nil, fmt.Errorf("store: enqueue: %w", classify(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: enqueue: %w", classify(err))
	}
	return seqs, nil
}

// AckBatch deletes, in one transaction, the messages of each stream up to
// and including its seq (what the broker acknowledged).
func (s *Store) AckBatch(ctx context.Context, upTo map[string]uint64) error {
	if len(upTo) == 0 {
		return nil
	}
	db := s.wdb.Load()
	if db == nil || s.closed.Load() {
		if err := s.Health(); err != nil {
			return fmt.Errorf("store: ack outbox: %w", err)
		}
		return fmt.Errorf("store: ack outbox: %w", ErrClosed)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: ack outbox: %w", classify(err))
	}
	defer tx.Rollback()
	del, err := tx.PrepareContext(ctx, `DELETE FROM outbox WHERE stream = ? AND seq <= ?`)
	if err != nil {
		return fmt.Errorf("store: ack outbox: %w", classify(err))
	}
	defer del.Close()
	for stream, seq := range upTo {
		if _, err := del.ExecContext(ctx, stream, seq); err != nil {
			return fmt.Errorf("store: ack outbox %s: %w", stream, classify(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: ack outbox: %w", classify(err))
	}
	return nil
}

// Mark returns an outbox mark written by EnqueueBatch (false: never
// written).
func (s *Store) Mark(ctx context.Context, key string) (int64, bool, error) {
	db := s.rdb.Load()
	if db == nil {
		return 0, false, ErrClosed
	}
	var v int64
	err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, markKey(key)).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("store: mark: %w", classify(err))
	}
	return v, true, nil
}

// SetMark writes an outbox mark on its own.
func (s *Store) SetMark(ctx context.Context, key string, value int64) error {
	if key == "" {
		return fmt.Errorf("%w: outbox mark key is empty", ErrBadQuery)
	}
	return s.exec(ctx, "set mark", `INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, markKey(key), value)
}

// PeekAfter returns up to limit messages of a stream with a sequence
// number above after, oldest first.
func (s *Store) PeekAfter(ctx context.Context, stream string, after uint64, limit int) ([]OutboxMessage, error) {
	db := s.rdb.Load()
	if db == nil {
		return nil, ErrClosed
	}
	if limit <= 0 {
		return nil, fmt.Errorf("%w: peek limit %d", ErrBadQuery, limit)
	}
	rows, err := db.QueryContext(ctx, peekQuery, stream, after, limit)
	if err != nil {
		return nil, fmt.Errorf("store: peek: %w", classify(err))
	}
	return scanPeek(stream, rows)
}

const peekQuery = `SELECT seq, created, payload FROM outbox WHERE stream = ? AND seq > ? ORDER BY seq LIMIT ?`

// scanPeek reads and closes the rows of peekQuery.
func scanPeek(stream string, rows *sql.Rows) ([]OutboxMessage, error) {
	out, err := scanAll(rows, func(rows *sql.Rows) (OutboxMessage, error) {
		m := OutboxMessage{Stream: stream}
		var created int64
		err := rows.Scan(&m.Seq, &created, &m.Payload)
		m.Created = time.UnixMilli(created).UTC()
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: peek: %w", classify(err))
	}
	return out, nil
}

// scanAll reads and closes rows, each with scan.
func scanAll[T any](rows *sql.Rows, scan func(*sql.Rows) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// PeekStreams is PeekAfter for several streams (stream → the seq to read
// after) with one statement in one read transaction; streams without
// messages are absent from the result.
func (s *Store) PeekStreams(ctx context.Context, after map[string]uint64, limit int) (map[string][]OutboxMessage, error) {
	db := s.rdb.Load()
	if db == nil {
		return nil, ErrClosed
	}
	if limit <= 0 {
		return nil, fmt.Errorf("%w: peek limit %d", ErrBadQuery, limit)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: peek: %w", classify(err))
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, peekQuery)
	if err != nil {
		return nil, fmt.Errorf("store: peek: %w", classify(err))
	}
	defer stmt.Close()
	out := make(map[string][]OutboxMessage, len(after))
	for stream, a := range after {
		rows, err := stmt.QueryContext(ctx, stream, a, limit)
		if err != nil {
			return nil, fmt.Errorf("store: peek %s: %w", stream, classify(err))
		}
		ms, err := scanPeek(stream, rows)
		if err != nil {
			return nil, err
		}
		if len(ms) > 0 {
			out[stream] = ms
		}
	}
	return out, nil
}

// OutboxStream describes the unsent part of one outbox stream.
type OutboxStream struct {
	Stream string
	// Depth is the number of messages, Bytes their payload size.
	Depth int
	Bytes int64
	// First and Last are the lowest and highest sequence numbers queued.
	First, Last uint64
	// Oldest is the creation time of the oldest message.
	Oldest time.Time
}

// OutboxStreams lists the streams that have messages queued, by name.
func (s *Store) OutboxStreams(ctx context.Context) ([]OutboxStream, error) {
	db := s.rdb.Load()
	if db == nil {
		return nil, ErrClosed
	}
	rows, err := db.QueryContext(ctx, `SELECT stream, count(*), sum(length(payload)), min(seq), max(seq), min(created)
		FROM outbox GROUP BY stream ORDER BY stream`)
	if err != nil {
		return nil, fmt.Errorf("store: outbox streams: %w", classify(err))
	}
	out, err := scanAll(rows, func(rows *sql.Rows) (OutboxStream, error) {
		var st OutboxStream
		var oldest int64
		err := rows.Scan(&st.Stream, &st.Depth, &st.Bytes, &st.First, &st.Last, &oldest)
		st.Oldest = time.UnixMilli(oldest).UTC()
		return st, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: outbox streams: %w", err)
	}
	return out, nil
}

// TrimOutbox drops the oldest messages of a stream beyond maxRows (0: no
// limit) and those created before olderThan (zero: no limit), and returns
// how many it dropped. Their sequence numbers are not reused: a consumer
// sees the drop as a gap.
func (s *Store) TrimOutbox(ctx context.Context, stream string, maxRows int, olderThan time.Time) (int64, error) {
	db := s.wdb.Load()
	if db == nil || s.closed.Load() {
		return 0, fmt.Errorf("store: trim outbox: %w", ErrClosed)
	}
	var n int64
	if !olderThan.IsZero() {
		r, err := db.ExecContext(ctx, `DELETE FROM outbox WHERE stream = ? AND created < ?`, stream, olderThan.UnixMilli())
		if err != nil {
			return 0, fmt.Errorf("store: trim outbox: %w", classify(err))
		}
		k, _ := r.RowsAffected()
		n += k
	}
	if maxRows > 0 {
		r, err := db.ExecContext(ctx, `DELETE FROM outbox WHERE stream = ? AND seq <= (
			SELECT seq FROM outbox WHERE stream = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)`, stream, stream, maxRows)
		if err != nil {
			return n, fmt.Errorf("store: trim outbox: %w", classify(err))
		}
		k, _ := r.RowsAffected()
		n += k
	}
	return n, nil
}
