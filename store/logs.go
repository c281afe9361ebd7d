package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"plantd/plant"
)

// Log queues a log entry like Record queues a measurement: it never
// blocks, and returns false (counted in Stats.Dropped) when the entry is
// refused (queue full, storage read-only, unknown level, no plant).
func (s *Store) Log(e plant.LogEntry) bool {
	if e.Level == "" {
		e.Level = plant.LevelInfo
	}
	if e.Level != plant.LevelInfo && e.Level != plant.LevelWarning && e.Level != plant.LevelError || e.PlantID == "" {
		s.dropped.Add(1)
		return false
	}
	if s.closed.Load() || !s.writable.Load() {
		s.drop("storage not writable")
		return false
	}
	if e.Time.IsZero() {
		e.Time = s.cfg.Now()
	}
	select {
	case s.queue <- &item{l: &e}:
		return true
	default:
		s.drop("queue full")
		return false
	}
}

// Log page sizes of a [plant.LogQuery]: Limit 0 is DefaultLogPage.
const (
	DefaultLogPage = 100
	MaxLogPage     = 1000
)

// Logs returns a page of log entries, newest first, and the cursor of the
// next page ("" when this is the last). Errors: ErrUnknownPlant, ErrBadQuery
// (a bad cursor or limit).
func (s *Store) Logs(ctx context.Context, q plant.LogQuery) ([]plant.LogEntry, string, error) {
	db := s.rdb.Load()
	if db == nil {
		return nil, "", ErrClosed
	}
	if q.PlantID != "" {
		if _, ok := s.plants[q.PlantID]; !ok {
			return nil, "", fmt.Errorf("logs of plant %q: %w", q.PlantID, ErrUnknownPlant)
		}
	}
	limit := q.Limit
	switch {
	case limit < 0 || limit > MaxLogPage:
		return nil, "", fmt.Errorf("%w: limit %d outside 1..%d", ErrBadQuery, limit, MaxLogPage)
	case limit == 0:
		limit = DefaultLogPage
	}
	var where []string
	var args []any
	if q.PlantID != "" {
		where, args = append(where, "plant = ?"), append(args, q.PlantID)
	}
	if q.DeviceID != "" {
		where, args = append(where, "device = ?"), append(args, q.DeviceID)
	}
	if !q.From.IsZero() {
		where, args = append(where, "t >= ?"), append(args, q.From.UnixMilli())
	}
	if !q.To.IsZero() {
		where, args = append(where, "t < ?"), append(args, q.To.UnixMilli())
	}
	if q.Cursor != "" {
		t, id, err := parseCursor(q.Cursor)
		if err != nil {
			return nil, "", err
		}
		where, args = append(where, "(t, id) < (?, ?)"), append(args, t, id)
	}
	query := `SELECT id, t, level, code, message, plant, device FROM log`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += ` ORDER BY t DESC, id DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, "", fmt.Errorf("store: logs: %w", classify(err))
	}
	defer rows.Close()
	var out []plant.LogEntry
	var lastT, lastID int64
	next := ""
	for rows.Next() {
		var id, t int64
		var e plant.LogEntry
		if err := rows.Scan(&id, &t, &e.Level, &e.Code, &e.Message, &e.PlantID, &e.DeviceID); err != nil {
			return nil, "", fmt.Errorf("store: logs: %w", err)
		}
		if len(out) == limit {
			next = strconv.FormatInt(lastT, 10) + "." + strconv.FormatInt(lastID, 10)
			break
		}
		e.Time = time.UnixMilli(t).UTC()
		out = append(out, e)
		lastT, lastID = t, id
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("store: logs: %w", err)
	}
	return out, next, nil
}

// parseCursor reads a cursor "<unix ms>.<id>".
func parseCursor(c string) (int64, int64, error) {
	ts, ids, ok := strings.Cut(c, ".")
	t, err1 := strconv.ParseInt(ts, 10, 64)
	id, err2 := strconv.ParseInt(ids, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%w: cursor %q is not one this store returned", ErrBadQuery, c)
	}
	return t, id, nil
}

// Schedules returns a plant's schedules, oldest first. Each is kept as
// its JSON (plant.Schedule's one encoding: the body column, as stored by
// every plantd since schedules were first kept); a row whose body does not
// decode is logged and left out, never fatal for the others.
func (s *Store) Schedules(ctx context.Context, plantID string) ([]plant.Schedule, error) {
	db := s.rdb.Load()
	if db == nil {
		return nil, ErrClosed
	}
	if _, ok := s.plants[plantID]; !ok {
		return nil, fmt.Errorf("schedules of plant %q: %w", plantID, ErrUnknownPlant)
	}
	rows, err := db.QueryContext(ctx, `SELECT id, created, body FROM schedule WHERE plant = ? ORDER BY created, id`, plantID)
	if err != nil {
		return nil, fmt.Errorf("store: schedules: %w", classify(err))
	}
	type row struct {
		id      string
		created int64
		body    []byte
	}
	list, err := scanAll(rows, func(rows *sql.Rows) (row, error) {
		var r row
		err := rows.Scan(&r.id, &r.created, &r.body)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: schedules: %w", classify(err))
	}
	out := make([]plant.Schedule, 0, len(list))
	for _, r := range list {
		var sc plant.Schedule
		if err := json.Unmarshal(r.body, &sc); err != nil {
			s.log.Error("stored schedule unreadable, left out", "plant", plantID, "schedule", r.id, "err", err)
			continue
		}
		// The row's columns name it as it was put; the body says the same.
		if sc.ScheduleID == "" {
			sc.ScheduleID = r.id
		}
		if sc.PlantID == "" {
			sc.PlantID = plantID
		}
		if sc.CreatedAt.IsZero() {
			sc.CreatedAt = time.UnixMilli(r.created).UTC()
		}
		out = append(out, sc)
	}
	return out, nil
}

// PutSchedule creates or replaces a schedule (by ScheduleID), stored as
// its JSON. CreatedAt zero means now. The caller must not change sc while
// PutSchedule runs (grid control hands over a Clone).
func (s *Store) PutSchedule(ctx context.Context, sc plant.Schedule) error {
	if sc.ScheduleID == "" {
		return fmt.Errorf("%w: schedule id is empty", ErrBadQuery)
	}
	if _, ok := s.plants[sc.PlantID]; !ok {
		return fmt.Errorf("schedule %s of plant %q: %w", sc.ScheduleID, sc.PlantID, ErrUnknownPlant)
	}
	if sc.CreatedAt.IsZero() {
		sc.CreatedAt = s.cfg.Now().UTC()
	}
	body, err := json.Marshal(&sc)
	if err != nil {
		return fmt.Errorf("store: put schedule %s: encode: %w", sc.ScheduleID, err)
	}
	return s.exec(ctx, "put schedule "+sc.ScheduleID,
		`INSERT OR REPLACE INTO schedule (id, plant, created, body) VALUES (?, ?, ?, ?)`,
		sc.ScheduleID, sc.PlantID, sc.CreatedAt.UnixMilli(), body)
}

// DeleteSchedule deletes a schedule; deleting one that does not exist is
// not an error.
func (s *Store) DeleteSchedule(ctx context.Context, id string) error {
	return s.exec(ctx, "delete schedule "+id, `DELETE FROM schedule WHERE id = ?`, id)
}

// exec runs one synchronous write on the writer connection.
func (s *Store) exec(ctx context.Context, what, query string, args ...any) error {
	db := s.wdb.Load()
	if db == nil || s.closed.Load() {
		if err := s.Health(); err != nil {
			return fmt.Errorf("store: %s: %w", what, err)
		}
		return fmt.Errorf("store: %s: %w", what, ErrClosed)
	}
	if _, err := db.ExecContext(ctx, query, args...); err != nil {
		return fmt.Errorf("store: %s: %w", what, classify(err))
	}
	return nil
}

// OutboxMessage is one message of the MQTT outbox.
type OutboxMessage struct {
	Stream  string
	Seq     uint64
	Created time.Time
	Payload []byte
}

// Enqueue appends a message to a stream of the outbox and returns its
// sequence number (1, 2, ... per stream, never reused).
func (s *Store) Enqueue(ctx context.Context, stream string, payload []byte) (uint64, error) {
	if stream == "" {
		return 0, fmt.Errorf("%w: outbox stream is empty", ErrBadQuery)
	}
	if payload == nil {
		payload = []byte{}
	}
	db := s.wdb.Load()
	if db == nil || s.closed.Load() {
		return 0, fmt.Errorf("store: enqueue: %w", ErrClosed)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: enqueue: %w", classify(err))
	}
	defer tx.Rollback()
	var seq uint64
	err = tx.QueryRowContext(ctx, `SELECT next FROM outbox_seq WHERE stream = ?`, stream).Scan(&seq)
	if err == sql.ErrNoRows {
		seq, err = 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: enqueue: %w", classify(err))
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO outbox (stream, seq, created, payload) VALUES (?, ?, ?, ?)`,
		stream, seq, s.cfg.Now().UnixMilli(), payload); err != nil {
		return 0, fmt.Errorf("store: enqueue: %w", classify(err))
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO outbox_seq (stream, next) VALUES (?, ?)`, stream, seq+1); err != nil {
		return 0, fmt.Errorf("store: enqueue: %w", classify(err))
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: enqueue: %w", classify(err))
	}
	return seq, nil
}

// Peek returns up to limit messages of a stream, oldest first (seqs
// start at 1).
func (s *Store) Peek(ctx context.Context, stream string, limit int) ([]OutboxMessage, error) {
	return s.PeekAfter(ctx, stream, 0, limit)
}

// Ack deletes a stream's messages up to and including seq.
func (s *Store) Ack(ctx context.Context, stream string, seq uint64) error {
	return s.exec(ctx, "ack outbox", `DELETE FROM outbox WHERE stream = ? AND seq <= ?`, stream, seq)
}
