package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// migrations are the schema, one numbered step each (step i sets
// user_version to i). Each runs in one transaction with the user_version
// update, so a crash leaves the database at the previous version. Never
// edit a released step: add one.
var migrations = []string{
	1: `
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value INTEGER NOT NULL
) WITHOUT ROWID;

-- device: the devices of the API, and per plant one balance source
-- (kind 'plant', name = plant id) that owns the plant's energy balance.
CREATE TABLE device (
	id    INTEGER PRIMARY KEY,
	name  TEXT NOT NULL,
	plant TEXT NOT NULL,
	kind  TEXT NOT NULL
);
CREATE UNIQUE INDEX device_name ON device (name, kind = 'plant');

-- series: device × channel × input (or balance source × field).
CREATE TABLE series (
	id      INTEGER PRIMARY KEY,
	device  INTEGER NOT NULL REFERENCES device (id),
	channel TEXT NOT NULL,
	idx     INTEGER NOT NULL DEFAULT 0,
	UNIQUE (device, channel, idx)
);

-- raw: one row per poll of a device, its values packed as
-- (series, value) pairs; time first so that a commit appends at one place.
CREATE TABLE raw (
	t      INTEGER NOT NULL,
	device INTEGER NOT NULL REFERENCES device (id),
	v      BLOB NOT NULL,
	PRIMARY KEY (t, device)
) WITHOUT ROWID;

-- rollups: per source (device or balance source) and interval start
-- (Unix ms, UTC), per-series aggregates packed.
CREATE TABLE r5m (
	src INTEGER NOT NULL REFERENCES device (id),
	t   INTEGER NOT NULL,
	v   BLOB NOT NULL,
	PRIMARY KEY (src, t)
) WITHOUT ROWID;
CREATE TABLE r1h (
	src INTEGER NOT NULL REFERENCES device (id),
	t   INTEGER NOT NULL,
	v   BLOB NOT NULL,
	PRIMARY KEY (src, t)
) WITHOUT ROWID;
CREATE TABLE r1d (
	src INTEGER NOT NULL REFERENCES device (id),
	t   INTEGER NOT NULL,
	v   BLOB NOT NULL,
	PRIMARY KEY (src, t)
) WITHOUT ROWID;

CREATE TABLE log (
	id      INTEGER PRIMARY KEY,
	t       INTEGER NOT NULL,
	level   TEXT NOT NULL,
	code    TEXT NOT NULL,
	message TEXT NOT NULL,
	plant   TEXT NOT NULL,
	device  TEXT NOT NULL
);
CREATE INDEX log_time ON log (t, id);
CREATE INDEX log_plant ON log (plant, t, id);
CREATE INDEX log_device ON log (device, t, id);

-- schedules: grid-control schedules (behaviour in the grid-control issue).
CREATE TABLE schedule (
	id      TEXT PRIMARY KEY,
	plant   TEXT NOT NULL,
	created INTEGER NOT NULL,
	body    BLOB NOT NULL
);
CREATE INDEX schedule_plant ON schedule (plant, created);

-- outbox: MQTT messages before their PUBACK (behaviour in the MQTT issue).
CREATE TABLE outbox (
	stream  TEXT NOT NULL,
	seq     INTEGER NOT NULL,
	created INTEGER NOT NULL,
	payload BLOB NOT NULL,
	PRIMARY KEY (stream, seq)
) WITHOUT ROWID;
CREATE TABLE outbox_seq (
	stream TEXT PRIMARY KEY,
	next   INTEGER NOT NULL
) WITHOUT ROWID;
`,
	2: `
-- control_default: a device's control model as plantd first read it,
-- before it wrote anything there (the grid-control fallback restores it).
CREATE TABLE control_default (
	device TEXT NOT NULL,
	model  INTEGER NOT NULL,
	addr   INTEGER NOT NULL,
	read   INTEGER NOT NULL,
	regs   BLOB NOT NULL,
	PRIMARY KEY (device, model)
) WITHOUT ROWID;

-- control_owner: the controls of a device plantd wrote and has not
-- restored yet, so that a restart restores what a crash left behind and
-- nothing else.
CREATE TABLE control_owner (
	device  TEXT NOT NULL,
	control TEXT NOT NULL,
	PRIMARY KEY (device, control)
) WITHOUT ROWID;
`,
	3: `
-- device_quirk: what grid control learned of a device's behaviour from
-- its own answers (e.g. 'limit-needs-enable-toggle'), kept across
-- restarts.
CREATE TABLE device_quirk (
	device TEXT NOT NULL,
	quirk  TEXT NOT NULL,
	since  INTEGER NOT NULL,
	PRIMARY KEY (device, quirk)
) WITHOUT ROWID;
`,
	4: `
-- raw_chunk: a device's raw samples of one minute (t0, Unix ms, a
-- multiple of 60000) in one row, compressed (codec.go: the chunk format);
-- n samples, the last at tn. The key is the minute and the device,
-- id = t0/60000 << 24 + device (chunkID): the minute's chunks of all
-- devices are appended at one place. A rowid table, not WITHOUT ROWID:
-- there a row over about 1000 bytes (a minute of 16 values at 1 s is
-- 1.1 kB) spills into an overflow page of its own. The rows of raw move
-- here (migrateRawChunks), then raw is dropped.
CREATE TABLE raw_chunk (
	id     INTEGER PRIMARY KEY,
	t0     INTEGER NOT NULL,
	device INTEGER NOT NULL REFERENCES device (id),
	n      INTEGER NOT NULL,
	tn     INTEGER NOT NULL,
	v      BLOB NOT NULL
);
`,
	5: `
-- consumer_guard: a consumer's guard state (the consumer package's
-- encoding: its last switch, its switchings of the last hour, must-run
-- accounting, energy today), replaced at every switch, so that a restart
-- keeps a compressor's minimum on and off times.
CREATE TABLE consumer_guard (
	device TEXT PRIMARY KEY,
	state  BLOB NOT NULL
) WITHOUT ROWID;
`,
	6: `
-- price: day-ahead market prices as a provider published them (package
-- tariffs), per source (provider and zone, e.g. 'entsoe:10Y1001A1001A82H'
-- or 'awattar:de') and interval start t (Unix ms) to tend, in EUR/MWh,
-- with the time they were fetched; replaced when fetched again, so that
-- a restart has the horizon without asking the provider.
CREATE TABLE price (
	source  TEXT NOT NULL,
	t       INTEGER NOT NULL,
	tend    INTEGER NOT NULL,
	eur_mwh REAL NOT NULL,
	fetched INTEGER NOT NULL,
	PRIMARY KEY (source, t)
) WITHOUT ROWID;
`,
	7: `
-- device.measures: for a meter that measures one consumer alone, that
-- consumer's id (plant.DeviceInfo.Measures): no grid meter, it counts in
-- no plant balance. '' for a grid meter and every other device, and for
-- the rows of earlier versions, which counted every meter as a grid
-- meter (right for a plant without sub-meters).
ALTER TABLE device ADD COLUMN measures TEXT NOT NULL DEFAULT '';
`,
}

// migrationCode are the steps that need more than SQL: run in the step's
// transaction after its SQL.
var migrationCode = map[int]func(context.Context, *sql.Tx) error{
	4: migrateRawChunks,
}

// SchemaVersion is the user_version this plantd writes: the last step of
// migrations (TestMigrations checks that they agree).
const SchemaVersion = 7

// connector opens connections of one DSN through a private driver value,
// so that nothing is registered globally and every connection gets the
// per-connection pragmas.
type connector struct {
	drv *sqlite3.SQLiteDriver
	dsn string
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.drv }

// Per-connection settings of the writer: the WAL file is truncated back to
// 16 MiB after a checkpoint (an SD card should not keep a large WAL), and
// SQLite checkpoints every 1000 pages (its default, stated). 4000 pages
// wrote no less (scripts/wear 20 40, commits every 10 s, counting the
// pages the next checkpoint still owes: 538.6 against 541.7 MiB/day with
// MQTT off, 961.0 against 963.6 with MQTT on): a checkpoint writes each
// page once however long it waits, and the WAL frames, which dominate,
// do not depend on it.
const writerPragmas = `PRAGMA journal_size_limit = 16777216; PRAGMA wal_autocheckpoint = 1000;`

func dsn(path string, params url.Values) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + params.Encode()
}

// openWriter opens the single-connection pool the writer, migrations and
// the synchronous writes (schedules, outbox) share: WAL, synchronous
// NORMAL, foreign keys, a busy timeout, and BEGIN IMMEDIATE transactions so
// that a writer never deadlocks upgrading a read lock.
func openWriter(ctx context.Context, path string) (*sql.DB, error) {
	p := url.Values{}
	p.Set("_busy_timeout", "5000")
	p.Set("_foreign_keys", "1")
	p.Set("_journal_mode", "WAL")
	p.Set("_synchronous", "NORMAL")
	p.Set("_txlock", "immediate")
	drv := &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec(writerPragmas, nil)
		return err
	}}
	db := sql.OpenDB(connector{drv: drv, dsn: dsn(path, p)})
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// syncedTx runs fn in a transaction of the writer connection whose
// commit is on the disk when syncedTx returns: that commit is made with
// PRAGMA synchronous=FULL, with which SQLite in WAL mode fsyncs the WAL at
// the commit, and the connection goes back to NORMAL after. SQLite
// refuses to change the level inside a transaction, so it is set on the
// connection around it (db.Conn holds the pool's one connection
// meanwhile); fn's transaction reads the level back and refuses to
// commit unless it is FULL. A connection that cannot be set back is
// discarded (the pool opens a new one at NORMAL).
func syncedTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) (err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = NORMAL`); rerr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}()
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = FULL`); err != nil {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var level int
	if err := tx.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&level); err != nil {
		return err
	}
	if level < 2 {
		return fmt.Errorf("synchronous is %d inside the transaction, not FULL (2): its commit would not be synced", level)
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	syncedCommits.Add(1)
	return nil
}

// lockWait is how long Open waits for a lock another process holds on the
// database before giving up: a start must fail fast, not after the busy
// timeout of the running store.
const lockWait = 300 * time.Millisecond

// probeLock takes and releases the write lock of an existing database
// (BEGIN IMMEDIATE, ROLLBACK) on a connection of its own that waits at most
// lockWait. It fails with ErrLocked when another process holds a lock
// that would block plantd's writer (an open write transaction, an
// exclusive lock), and with ErrCorrupt when the file is not a database. A
// missing file has nothing to lock.
func probeLock(ctx context.Context, path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	p := url.Values{}
	p.Set("_busy_timeout", strconv.Itoa(int(lockWait/time.Millisecond)))
	p.Set("_txlock", "immediate")
	db := sql.OpenDB(connector{drv: &sqlite3.SQLiteDriver{}, dsn: dsn(path, p)})
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil)
	if err == nil {
		// A schema read makes SQLite look at the file's header.
		_, err = userVersion(ctx, tx)
		if rerr := tx.Rollback(); err == nil {
			err = rerr
		}
	}
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked) {
		return fmt.Errorf("%w: locked by another process (waited %v): %w", ErrLocked, lockWait, err)
	}
	return classify(err)
}

// readerIdle is how long an unused reader connection is kept open.
const readerIdle = time.Minute

// openReader opens the pool of read-only connections the queries use.
// immutable is for a database on read-only storage whose WAL index cannot
// be created: SQLite then reads the main file only.
func openReader(ctx context.Context, path string, immutable bool) (*sql.DB, error) {
	p := url.Values{}
	p.Set("mode", "ro")
	p.Set("_busy_timeout", "5000")
	if immutable {
		p.Set("immutable", "1")
	}
	db := sql.OpenDB(connector{drv: &sqlite3.SQLiteDriver{}, dsn: dsn(path, p)})
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	// A reader connection keeps a page cache of up to 2 MB; one unused for
	// a minute is closed, so that the cache of a burst of queries (or of
	// the integrity check) is given back instead of kept for good.
	db.SetConnMaxIdleTime(readerIdle)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// userVersion reads PRAGMA user_version.
func userVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return 0, err
	}
	return v, nil
}

// checkVersion refuses a database written by a newer plantd, reading it
// through a read-only connection so that it is never modified (not even by
// a checkpoint on close). A missing file is version 0.
func checkVersion(ctx context.Context, path string) (int, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	db, err := openReader(ctx, path, false)
	if err != nil {
		db, err = openReader(ctx, path, true)
	}
	if err != nil {
		return 0, classify(fmt.Errorf("open %s: %w", path, err))
	}
	defer db.Close()
	v, err := userVersion(ctx, db)
	if err != nil {
		return 0, classify(fmt.Errorf("read schema version of %s: %w", path, err))
	}
	if v > SchemaVersion {
		return v, fmt.Errorf("%w: %s has schema version %d, this plantd knows up to %d; "+
			"upgrade plantd or point it at another database (the file was not modified)", ErrSchemaTooNew, path, v, SchemaVersion)
	}
	return v, nil
}

// migrate applies the missing migrations, one transaction each.
func migrate(ctx context.Context, db *sql.DB) error {
	for {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		v, err := userVersion(ctx, tx)
		if err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate: read schema version: %w", err)
		}
		if v > SchemaVersion {
			tx.Rollback()
			return fmt.Errorf("%w: schema version %d, this plantd knows up to %d", ErrSchemaTooNew, v, SchemaVersion)
		}
		if v == SchemaVersion {
			// Up to date: a start that may have lost commits numbers
			// the outbox above its durable floors (seqfloor.go).
			if err := resumeSeqs(ctx, tx); err != nil {
				tx.Rollback()
				if errors.Is(classify(err), ErrCorrupt) {
					// A damaged meta or outbox_seq: Open's quick
					// check finds it and stops writing, and
					// ReserveSeqs refuses then, so nothing is
					// published; plantd serves what it can read.
					return nil
				}
				return err
			}
			return tx.Commit()
		}
		next := v + 1
		if _, err := tx.ExecContext(ctx, migrations[next]); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate to schema version %d: %w", next, err)
		}
		if code := migrationCode[next]; code != nil {
			if err := code(ctx, tx); err != nil {
				tx.Rollback()
				return fmt.Errorf("migrate to schema version %d: %w", next, err)
			}
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, next)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate to schema version %d: %w", next, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migrate to schema version %d: %w", next, err)
		}
	}
}

// writable reports why path cannot be written (nil: it can): the file, or
// for a new file its directory, is read-only or not ours; the directory
// must also take the WAL and its index.
func writable(path string) error {
	dir := filepath.Dir(path)
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return fmt.Errorf("%w: directory %s: %v", ErrReadOnly, dir, err)
	}
	if err := syscall.Access(path, 2); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s: %v", ErrReadOnly, path, err)
	}
	return nil
}

// classify wraps an SQLite error with the sentinel a reader of /healthz
// understands (ErrReadOnly, ErrDiskFull, ErrIO, ErrCorrupt), keeping the
// original text.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code {
	case sqlite3.ErrReadonly:
		return fmt.Errorf("%w: %w", ErrReadOnly, err)
	case sqlite3.ErrFull:
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	case sqlite3.ErrIoErr:
		if se.SystemErrno == syscall.ENOSPC || se.SystemErrno == syscall.EFBIG || se.SystemErrno == syscall.EDQUOT {
			return fmt.Errorf("%w: %w (%v)", ErrDiskFull, err, se.SystemErrno)
		}
		if se.SystemErrno == syscall.EROFS {
			return fmt.Errorf("%w: %w", ErrReadOnly, err)
		}
		return fmt.Errorf("%w: %w", ErrIO, err)
	case sqlite3.ErrCantOpen:
		return fmt.Errorf("%w: %w", ErrIO, err)
	case sqlite3.ErrCorrupt, sqlite3.ErrNotADB:
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return err
}
