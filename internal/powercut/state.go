package powercut

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3" // the database plantd writes
)

// State is what a plantd database holds, in the terms the power-cut
// promise is made in: the newest raw sample, the rollups, the outbox per
// stream, schedules and log entries.
type State struct {
	// Missing: no database file (a cut before plantd's first sync).
	Missing bool
	// Integrity is PRAGMA integrity_check's answer ("ok"), for an
	// image only.
	Integrity string
	// DBBytes and WALBytes are the sizes of the database file and its
	// WAL in an image before SQLite opened it (a database file of one
	// page: no checkpoint had reached the disk, all is in the WAL).
	DBBytes, WALBytes int64
	// Tables is how many of plantd's tables the schema holds (0: an
	// empty file, the schema not yet on the disk).
	Tables int
	// Raw is the number of raw samples (sum of the chunks' n);
	// NewestRaw the newest one's time (zero: none).
	Raw       int64
	NewestRaw time.Time
	// R5m is the number of 5-minute rollup rows, Watermark the rollup
	// watermark (meta).
	R5m       int64
	Watermark time.Time
	Schedules int64
	Logs      int64
	Outbox    map[string]Stream
	// LiveMark is the live streams' seq reservation (the outbox mark
	// live.seq; 0: none): plantd's next run numbers its live streams
	// above it.
	LiveMark int64
}

// Stream is one outbox stream: its messages' count and sequence numbers
// and the next number the outbox will hand out (outbox_seq).
type Stream struct {
	Count, MinSeq, MaxSeq, Next int64
	// Floor is the stream's durable seq floor (meta outbox.floor.<stream>;
	// 0: none): no seq above it was published.
	Floor int64
}

// NextAfterReboot is the seq plantd numbers the stream's next message
// with when it starts on this database after a power cut (a new kernel
// boot): the next one of outbox_seq (1 without), or above the floor.
func (s Stream) NextAfterReboot() int64 {
	return max(s.Next, s.Floor+1, 1)
}

// Contiguous says whether the stream's messages are an unbroken run of
// sequence numbers below Next: a message is never lost from the middle
// (with the broker down nothing is acknowledged, so nothing is deleted
// but the oldest by the outbox's caps).
func (s Stream) Contiguous() bool {
	return s.Count == 0 || (s.MaxSeq-s.MinSeq+1 == s.Count && s.Next > s.MaxSeq)
}

// Open opens plantd's database at path for reading: live (plantd
// running on it: read-only, never checkpointing) or an image's (read
// and write, so that SQLite recovers the WAL as plantd's next start
// would).
func Open(path string, live bool) (*sql.DB, error) {
	dsn := "file:" + path + "?_busy_timeout=5000"
	if live {
		dsn += "&mode=ro"
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("powercut: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// ReadImage reads the state of the database at path in a cut's image,
// with a full integrity check; a missing file is State{Missing: true}.
func ReadImage(ctx context.Context, path string) (State, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return State{Missing: true}, nil
	}
	var dbBytes, walBytes int64
	if fi, err := os.Stat(path); err == nil {
		dbBytes = fi.Size()
	}
	if fi, err := os.Stat(path + "-wal"); err == nil {
		walBytes = fi.Size()
	}
	db, err := Open(path, false)
	if err != nil {
		return State{}, err
	}
	defer db.Close()
	var problems []string
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return State{}, fmt.Errorf("powercut: integrity_check: %w", err)
	}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return State{}, fmt.Errorf("powercut: integrity_check: %w", err)
		}
		problems = append(problems, p)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return State{}, fmt.Errorf("powercut: integrity_check: %w", err)
	}
	st, err := Read(ctx, db)
	st.Integrity = strings.Join(problems, "; ")
	st.DBBytes, st.WALBytes = dbBytes, walBytes
	return st, err
}

// Read reads db's state in one read transaction.
func Read(ctx context.Context, db *sql.DB) (State, error) {
	st := State{Outbox: map[string]Stream{}}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return st, fmt.Errorf("powercut: read: %w", err)
	}
	defer tx.Rollback()
	has := map[string]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		return st, fmt.Errorf("powercut: read the schema: %w", err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return st, fmt.Errorf("powercut: read the schema: %w", err)
		}
		has[n] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return st, fmt.Errorf("powercut: read the schema: %w", err)
	}
	for _, t := range []string{"raw_chunk", "r5m", "meta", "schedule", "log", "outbox", "outbox_seq"} {
		if has[t] {
			st.Tables++
		}
	}
	ms := func(v sql.NullInt64) time.Time {
		if !v.Valid {
			return time.Time{}
		}
		return time.UnixMilli(v.Int64)
	}
	type q struct {
		table, sql string
		dest       []any
	}
	var newest, wm sql.NullInt64
	var raw sql.NullInt64
	for _, c := range []q{
		{"raw_chunk", `SELECT sum(n), max(tn) FROM raw_chunk`, []any{&raw, &newest}},
		{"r5m", `SELECT count(*) FROM r5m`, []any{&st.R5m}},
		{"meta", `SELECT max(value) FROM meta WHERE key = 'watermark'`, []any{&wm}},
		{"schedule", `SELECT count(*) FROM schedule`, []any{&st.Schedules}},
		{"log", `SELECT count(*) FROM log`, []any{&st.Logs}},
	} {
		if !has[c.table] {
			continue
		}
		if err := tx.QueryRowContext(ctx, c.sql).Scan(c.dest...); err != nil {
			return st, fmt.Errorf("powercut: read %s: %w", c.table, err)
		}
	}
	st.Raw, st.NewestRaw, st.Watermark = raw.Int64, ms(newest), ms(wm)
	if has["outbox"] {
		rows, err := tx.QueryContext(ctx, `SELECT stream, count(*), min(seq), max(seq) FROM outbox GROUP BY stream`)
		if err != nil {
			return st, fmt.Errorf("powercut: read the outbox: %w", err)
		}
		for rows.Next() {
			var name string
			var s Stream
			if err := rows.Scan(&name, &s.Count, &s.MinSeq, &s.MaxSeq); err != nil {
				rows.Close()
				return st, fmt.Errorf("powercut: read the outbox: %w", err)
			}
			st.Outbox[name] = s
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return st, fmt.Errorf("powercut: read the outbox: %w", err)
		}
	}
	if has["meta"] {
		rows, err := tx.QueryContext(ctx, `SELECT key, value FROM meta WHERE key > 'outbox.floor.' AND key < 'outbox.floor/' OR key = 'outbox.mark.live.seq'`)
		if err != nil {
			return st, fmt.Errorf("powercut: read the outbox floors: %w", err)
		}
		for rows.Next() {
			var key string
			var v int64
			if err := rows.Scan(&key, &v); err != nil {
				rows.Close()
				return st, fmt.Errorf("powercut: read the outbox floors: %w", err)
			}
			if name, ok := strings.CutPrefix(key, "outbox.floor."); ok {
				s := st.Outbox[name]
				s.Floor = v
				st.Outbox[name] = s
			} else {
				st.LiveMark = v
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return st, fmt.Errorf("powercut: read the outbox floors: %w", err)
		}
	}
	if has["outbox_seq"] {
		rows, err := tx.QueryContext(ctx, `SELECT stream, next FROM outbox_seq`)
		if err != nil {
			return st, fmt.Errorf("powercut: read outbox_seq: %w", err)
		}
		for rows.Next() {
			var name string
			var next int64
			if err := rows.Scan(&name, &next); err != nil {
				rows.Close()
				return st, fmt.Errorf("powercut: read outbox_seq: %w", err)
			}
			s := st.Outbox[name]
			s.Next = next
			st.Outbox[name] = s
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return st, fmt.Errorf("powercut: read outbox_seq: %w", err)
		}
	}
	return st, nil
}

// Behind names what other holds that st does not (empty: st holds all
// of it): newer raw samples, more rollup rows, a later watermark, more
// schedules or log entries, a stream's later messages. Every one of
// these only grows while plantd runs (in a run shorter than the raw
// retention, with the broker down).
func (st State) Behind(other State) []string {
	var d []string
	if other.NewestRaw.After(st.NewestRaw) {
		d = append(d, "raw")
	}
	if other.R5m > st.R5m {
		d = append(d, "r5m")
	}
	if other.Watermark.After(st.Watermark) {
		d = append(d, "watermark")
	}
	if other.Schedules > st.Schedules {
		d = append(d, "schedule")
	}
	if other.Logs > st.Logs {
		d = append(d, "log")
	}
	for name, o := range other.Outbox {
		if o.MaxSeq > st.Outbox[name].MaxSeq || o.Next > st.Outbox[name].Next {
			d = append(d, "outbox "+name)
		}
	}
	sort.Strings(d)
	return d
}

// OutboxSummary is the outbox in a line: per stream the messages, their
// sequence numbers, the next one and the floor ("log 12 (1-12) next 13
// floor 65548"), "-" when empty, a stream whose numbers are not
// contiguous marked GAP; live streams without messages (their counters
// only) are left out, the live mark is shown when set.
func (st State) OutboxSummary() string {
	names := make([]string, 0, len(st.Outbox))
	for n, s := range st.Outbox {
		if s.Count == 0 && strings.HasPrefix(n, "live/") {
			continue
		}
		names = append(names, n)
	}
	if len(names) == 0 && st.LiveMark == 0 {
		return "-"
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		s := st.Outbox[n]
		p := fmt.Sprintf("%s %d", n, s.Count)
		if s.Count > 0 {
			p += fmt.Sprintf(" (%d-%d)", s.MinSeq, s.MaxSeq)
		}
		p += fmt.Sprintf(" next %d", s.Next)
		if s.Floor > 0 {
			p += fmt.Sprintf(" floor %d", s.Floor)
		}
		if !s.Contiguous() {
			p += " GAP"
		}
		parts = append(parts, p)
	}
	if st.LiveMark > 0 {
		parts = append(parts, fmt.Sprintf("live mark %d", st.LiveMark))
	}
	return strings.Join(parts, ", ")
}
