package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrUnknownPlant: the plant id is not one of Config.Plants. It is
	// plant.ErrUnknownPlant, so one check serves the live cache and the
	// store.
	ErrUnknownPlant = plant.ErrUnknownPlant
	// ErrUnknownDevice: the store has never recorded the device. It is
	// plant.ErrUnknownDevice.
	ErrUnknownDevice = plant.ErrUnknownDevice
	// ErrUnsupportedSet: the set type does not apply to the plant or
	// device (a PV set of a meter, a device set of a plant, ...).
	ErrUnsupportedSet = errors.New("store: measurement set not supported")
	// ErrBadQuery: a query or argument is invalid; the message names the
	// parameter.
	ErrBadQuery = errors.New("store: bad query")
	// ErrSchemaTooNew: the database was written by a newer plantd; Open
	// refuses it without modifying it.
	ErrSchemaTooNew = errors.New("store: database schema is newer than this plantd")
	// ErrLocked: another process (or another Store) has the database
	// open; the message names the holder's pid. Also: another process
	// (not a plantd) holds an SQLite lock that keeps plantd from writing
	// (Open does not wait long for it).
	ErrLocked = errors.New("store: database in use")
	// ErrReadOnly: the database or its directory cannot be written.
	ErrReadOnly = errors.New("store: storage is read-only")
	// ErrDiskFull: the disk (or the file size limit) is full.
	ErrDiskFull = errors.New("store: disk full")
	// ErrIO: the storage reported an I/O error.
	ErrIO = errors.New("store: storage I/O error")
	// ErrCorrupt: the database file is damaged.
	ErrCorrupt = errors.New("store: database corrupt")
	// ErrClosed: the store is closed, or its Run has returned.
	ErrClosed = errors.New("store: closed")
	// ErrFileGone: the database file was deleted or replaced under the
	// running store (the path no longer names the file it opened); the
	// message says what plantd does about it and what to do.
	ErrFileGone = errors.New("store: database file deleted or replaced")
	// ErrConfig: Open was given an invalid Config.
	ErrConfig = errors.New("store: invalid config")
)

// Config configures a Store. Zero values take the defaults.
type Config struct {
	// Path is the SQLite database file; its directory must exist.
	Path string
	// RawRetention is how long raw samples are kept (default 168h);
	// rollups are kept forever.
	RawRetention time.Duration
	// BatchRows and BatchInterval bound a write transaction: it commits
	// after that many measurements and log entries, or BatchInterval
	// after the first (defaults 1000 and DefaultBatchInterval), or at
	// most a second after a log entry. A device's raw samples are
	// written as a chunk per minute, at the first commit after the
	// minute is complete: a crash of plantd may lose a device's open
	// minute and BatchInterval (see the package doc, Durability).
	BatchRows     int
	BatchInterval time.Duration
	// QueueLen is the capacity of the queue between Record/Log and the
	// writer (default 10000: 80 s of a 20-device plant polled every
	// 100 ms).
	QueueLen int
	// Plants are the plants whose measurements are stored, with their
	// time zones (nil Location: UTC).
	Plants []PlantInfo
	// LogLimit bounds the log table (default 100000 entries); the oldest
	// go first.
	LogLimit int
	// Now is the clock of the data (default time.Now): the time of a
	// measurement, log entry, schedule or outbox message given without
	// one, the default Date of queries, and the reference of raw
	// retention. The demo may pass its simulated clock; the writer's
	// cadences (batches, idle rollups, retention passes) always run on
	// the wall clock.
	Now func() time.Time
	// FutureTolerance is how far beyond Now a measurement may be stamped
	// (default 5 s, the default poll interval; the daemon passes its
	// longest poll interval). A later one is refused at Record and again
	// when its batch is written (the clock may have been set back
	// meanwhile), and rows beyond it that are already stored (written
	// while the clock was ahead) are ignored by Recent and by the rollup
	// horizon, so they never hide the present.
	FutureTolerance time.Duration
	// CheckTimeout bounds the integrity check (PRAGMA quick_check) at
	// Open and daily at 03:00 local time (default DefaultCheckTimeout).
	CheckTimeout time.Duration

	// rollupBatch overrides rollupBatchSamples (tests roll up one device
	// per batch with 1).
	rollupBatch int
}

// PlantInfo is a plant the store keeps data for.
type PlantInfo struct {
	ID       string
	Location *time.Location
}

// Defaults.
const (
	DefaultRawRetention  = 168 * time.Hour
	DefaultBatchRows     = 1000
	DefaultBatchInterval = 10 * time.Second
	// DefaultFutureTolerance: see Config.FutureTolerance.
	DefaultFutureTolerance = 5 * time.Second
	DefaultQueueLen        = 10000
	DefaultLogLimit        = 100000
)

func (c Config) withDefaults() (Config, error) {
	if c.Path == "" {
		return c, fmt.Errorf("%w: path is empty", ErrConfig)
	}
	if c.RawRetention < 0 || c.BatchRows < 0 || c.BatchInterval < 0 || c.QueueLen < 0 || c.LogLimit < 0 {
		return c, fmt.Errorf("%w: negative retention, batch, queue or log limit", ErrConfig)
	}
	if c.RawRetention == 0 {
		c.RawRetention = DefaultRawRetention
	}
	if c.BatchRows == 0 {
		c.BatchRows = DefaultBatchRows
	}
	if c.BatchInterval == 0 {
		c.BatchInterval = DefaultBatchInterval
	}
	if c.QueueLen == 0 {
		c.QueueLen = DefaultQueueLen
	}
	if c.LogLimit == 0 {
		c.LogLimit = DefaultLogLimit
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.FutureTolerance < 0 {
		return c, fmt.Errorf("%w: negative future tolerance", ErrConfig)
	}
	if c.CheckTimeout <= 0 {
		c.CheckTimeout = DefaultCheckTimeout
	}
	if c.FutureTolerance == 0 {
		c.FutureTolerance = DefaultFutureTolerance
	}
	seen := map[string]bool{}
	for i, p := range c.Plants {
		if p.ID == "" {
			return c, fmt.Errorf("%w: plants[%d].id is empty", ErrConfig, i)
		}
		if seen[p.ID] {
			return c, fmt.Errorf("%w: plant %q listed twice", ErrConfig, p.ID)
		}
		seen[p.ID] = true
	}
	return c, nil
}

// Measurement is one poll of one device as the domain sees it.
type Measurement struct {
	PlantID, DeviceID string
	Kind              kind.Kind
	// Measures is the device's plant.DeviceInfo.Measures: for a meter
	// that measures one consumer alone, that consumer's id. Such a meter
	// is no grid meter (plant.DeviceInfo.GridMeter) and counts in no
	// balance of its plant; "" for the grid meter and every other device.
	Measures string
	// Time is when the values were read; zero means now.
	Time     time.Time
	Readings []plant.Reading
}

// Stats are the store's counters since Open.
type Stats struct {
	// Queued is what waits in the queue (measurements, log entries).
	Queued int
	// Written counts committed measurements, Samples their channel
	// values, Logs committed log entries, Batches committed transactions.
	Written, Samples, Logs, Batches uint64
	// Dropped counts measurements and log entries refused because the
	// queue was full, the storage is read-only, their plant is unknown or
	// they are older than the raw retention.
	Dropped uint64
	// Failed counts measurements and log entries lost in a batch that
	// could not be committed (disk full, I/O error).
	Failed uint64
	// LastError is the last storage error ("" none) and LastErrorTime when
	// it happened; the error stays here after the storage recovers.
	LastError     string
	LastErrorTime time.Time
	// RolledUpTo is the time up to which rollups are complete (zero before
	// the first).
	RolledUpTo time.Time
}

// Store is plantd's SQLite storage: raw measurements and their rollups,
// logs, schedules and the MQTT outbox. Create it with Open, run its writer
// with Run, stop it with Close. Queries are safe for concurrent use, also
// before Run and after it returned.
type Store struct {
	cfg    Config
	log    *slog.Logger
	plants map[string]*time.Location
	cat    *catalog
	// lock holds the database's lock file (nil on read-only storage).
	lock *os.File
	// corrupt is set once quick_check found the file damaged: nothing is
	// written to it any more.
	corrupt atomic.Bool

	// fileMu guards file and fileMode: the identity of the database file
	// the store opened (zero: unknown, not checked) and its permissions.
	fileMu   sync.Mutex
	file     fileID
	fileMode fs.FileMode

	// wdb is the single writing connection (nil on read-only storage),
	// rdb the read-only connections of queries; both are swapped when
	// read-only storage becomes writable again.
	wdb          atomic.Pointer[sql.DB]
	rdb          atomic.Pointer[sql.DB]
	rdbImmutable bool // guarded by closeMu

	queue    chan *item
	running  atomic.Bool
	stopped  chan struct{} // closed when Run returns
	closed   atomic.Bool
	closeMu  sync.Mutex
	w        *writer
	writable atomic.Bool

	written, samples, logs, batches, dropped, failed atomic.Uint64
	rolledUpTo                                       atomic.Int64
	// openNewest is each device's newest sample in its open chunk minute
	// as of the writer's last commit: Recent's end, which the stored
	// samples, a minute behind, would put a minute early.
	openNewest   atomic.Pointer[map[int64]int64]
	beat         atomic.Int64 // Progress, Unix ns
	lastDropLog  atomic.Int64
	warnedPlants sync.Map

	// retryRO is how often Run retries writing on read-only storage
	// (retryReadOnly; tests shorten it).
	retryRO time.Duration

	healthMu  sync.Mutex
	healthErr [numSlots]error // by healthSlot; nil: healthy
	lastErr   error
	lastErrAt time.Time
}

// healthSlot separates the failures Health reports, so that a success of
// one kind does not hide a failure of the other.
type healthSlot int

const (
	slotWrite     healthSlot = iota // opening for writing, committing batches
	slotRollup                      // rolling up
	slotIntegrity                   // quick_check found the file damaged
	slotFile                        // the path no longer names the open file
	numSlots
)

// item is one entry of the writer's queue: a measurement, a log entry
// (l set) or a flush request (done set). The log entry is a pointer: an
// inline plant.LogEntry doubled the item for the few log entries the
// queue carries. The queue holds pointers to items: its buffer is
// allocated whole (10,000 entries by default) and, holding pointers, is
// scanned whole by every collection, queued or not: items inline made
// it 1.23 MB, 38 % of a small plant's live heap, marked some 30 times a
// second while a client polls the live API hard; as pointers it is
// 80 KB, for one allocation per entry queued.
type item struct {
	m    Measurement
	l    *plant.LogEntry
	done chan error // a Flush request
}

// Open opens (creating if needed) the database at cfg.Path, applies the
// migrations and loads the catalog. A database from a newer plantd is
// refused with ErrSchemaTooNew and left untouched. On read-only storage
// Open still returns a Store, in a degraded state: queries answer from the
// existing data, Record and Log refuse, Health says why, and Run retries
// writing every 30 s. Open fails when the database cannot be read at all
// (missing directory, not a database, read-only and never migrated, disk
// full while creating it). logger is the store's logger as the caller
// names it (cmd/plantd adds component=store); nil discards.
func Open(ctx context.Context, cfg Config, logger *slog.Logger) (_ *Store, err error) {
	defer func() {
		if errors.Is(err, ErrCorrupt) {
			err = fmt.Errorf("%w; nothing in it can be served. To recover: %s", err, recoverCorrupt(cfg.Path))
		}
	}()
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		cfg:     c,
		log:     logger,
		plants:  make(map[string]*time.Location, len(c.Plants)),
		cat:     newCatalog(),
		queue:   make(chan *item, c.QueueLen),
		stopped: make(chan struct{}),
		retryRO: retryReadOnly,
	}
	for _, p := range c.Plants {
		loc := p.Location
		if loc == nil {
			loc = time.UTC
		}
		s.plants[p.ID] = loc
	}
	lock, err := lockDB(c.Path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", c.Path, err)
	}
	s.lock = lock
	ok := false
	defer func() {
		if !ok {
			s.unlock()
		}
	}()
	roErr := writable(c.Path)
	if roErr == nil {
		// First, and briefly: a lock held by another process would make
		// every later step wait out the busy timeout before failing.
		if err := probeLock(ctx, c.Path); err != nil {
			return nil, fmt.Errorf("store: open %s: %w", c.Path, err)
		}
	}
	if _, err := checkVersion(ctx, c.Path); err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	if roErr == nil {
		wdb, err := openWriter(ctx, c.Path)
		if err == nil {
			if err = migrate(ctx, wdb); err != nil {
				wdb.Close()
			}
		}
		if err != nil {
			err = classify(err)
			if errors.Is(err, ErrSchemaTooNew) || !errors.Is(err, ErrReadOnly) {
				return nil, fmt.Errorf("store: open %s: %w", c.Path, err)
			}
			roErr = err
		} else {
			s.wdb.Store(wdb)
		}
	}
	rdb, err := openReader(ctx, c.Path, false)
	if err != nil && roErr != nil {
		rdb, err = openReader(ctx, c.Path, true)
		s.rdbImmutable = true
	}
	if err != nil {
		s.closeDBs()
		if roErr != nil {
			return nil, fmt.Errorf("store: open %s: %w (%w)", c.Path, classify(err), roErr)
		}
		return nil, fmt.Errorf("store: open %s: %w", c.Path, classify(err))
	}
	s.rdb.Store(rdb)
	s.noteFile()
	if v, err := userVersion(ctx, rdb); err != nil || v != SchemaVersion {
		s.closeDBs()
		if err != nil {
			return nil, fmt.Errorf("store: open %s: %w", c.Path, classify(err))
		}
		return nil, fmt.Errorf("store: open %s: schema version %d needs migrating to %d but %w", c.Path, v, SchemaVersion, roErr)
	}
	// Damage found while loading the catalogue or the writer's state is
	// served like damage quick_check finds: what can be read (the
	// catalogue as far as it was read), writing stopped, ErrCorrupt in
	// Health.
	s.w = newWriter(s)
	loadErr := s.cat.load(ctx, rdb)
	if loadErr == nil {
		loadErr = s.w.load(ctx)
	}
	if loadErr = classify(loadErr); loadErr != nil && !errors.Is(loadErr, ErrCorrupt) {
		s.closeDBs()
		return nil, fmt.Errorf("store: open %s: %w", c.Path, loadErr)
	}
	if roErr != nil {
		s.log.Warn("storage is read-only: serving stored data, not recording", "path", c.Path, "err", roErr)
		s.setHealth(roErr)
	}
	s.writable.Store(s.wdb.Load() != nil)
	if loadErr != nil {
		s.markCorrupt(loadErr)
	} else if err := s.quickCheck(ctx, c.CheckTimeout); errors.Is(err, ErrCorrupt) {
		s.markCorrupt(err)
	} else if err != nil {
		s.closeDBs()
		return nil, fmt.Errorf("store: open %s: %w", c.Path, err)
	}
	ok = true
	return s, nil
}

// unlock releases the database's lock.
func (s *Store) unlock() {
	if s.lock != nil {
		// Closing the descriptor releases the flock, unless a child
		// forked by this process at that moment holds a copy of it until
		// its exec: os/exec forks under syscall.ForkLock, so close
		// outside a fork.
		syscall.ForkLock.RLock()
		s.lock.Close()
		syscall.ForkLock.RUnlock()
		s.lock = nil
	}
}

// closeDBs closes the read-only connections first, then checkpoints the
// WAL into the database file and truncates it, then closes the writer:
// after a clean stop the database file alone holds everything. (Closed
// the other way round, the last connection to close is a read-only one,
// which cannot checkpoint, and the data stays in -wal.)
func (s *Store) closeDBs() error {
	var errs []error
	if db := s.rdb.Swap(nil); db != nil {
		errs = append(errs, db.Close())
	}
	if db := s.wdb.Swap(nil); db != nil {
		if s.corrupt.Load() {
			// Keep the damaged file as it is.
		} else if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			s.log.Warn("checkpoint at close failed: the data is in the -wal file beside the database, keep it", "err", err)
		}
		errs = append(errs, db.Close())
	}
	return errors.Join(errs...)
}

// Close closes the database. Call it after Run returned; what is still
// queued then is lost (Run flushes the queue when its context ends).
func (s *Store) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	if s.w != nil {
		s.w.closeStmts()
	}
	s.writeBack()
	err := s.closeDBs()
	s.unlock()
	if err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// Record queues one measurement for writing. It never blocks: it returns
// false when the measurement is refused (queue full, storage read-only,
// unknown plant, store closed), counted in Stats.Dropped. A measurement
// without readings is accepted and ignored. Record copies m.Readings.
func (s *Store) Record(m Measurement) bool {
	return s.record(m, true)
}

// RecordOwned is Record without the copy: the store keeps m.Readings,
// which the caller must not change afterwards (a slice made for this
// measurement, as plant.Live.Device returns; one copy less per poll).
func (s *Store) RecordOwned(m Measurement) bool {
	return s.record(m, false)
}

func (s *Store) record(m Measurement, clone bool) bool {
	if s.closed.Load() || !s.writable.Load() {
		s.drop("storage not writable")
		return false
	}
	if _, ok := s.plants[m.PlantID]; !ok {
		s.dropped.Add(1)
		if _, warned := s.warnedPlants.LoadOrStore(m.PlantID, true); !warned {
			s.log.Warn("measurement of an unknown plant dropped", "plant", m.PlantID, "device", m.DeviceID)
		}
		return false
	}
	if len(m.Readings) == 0 {
		return true
	}
	if m.Time.IsZero() {
		m.Time = s.cfg.Now()
	}
	if m.Time.UnixMilli() > s.futureLimit() {
		s.drop("stamped in the future")
		return false
	}
	if clone {
		m.Readings = slices.Clone(m.Readings)
	}
	select {
	case s.queue <- &item{m: m}:
		return true
	default:
		s.drop("queue full")
		return false
	}
}

// futureLimit is the latest sample time (Unix ms) accepted now.
func (s *Store) futureLimit() int64 { return s.cfg.Now().Add(s.cfg.FutureTolerance).UnixMilli() }

// drop counts a refused entry and logs it at most once a minute.
func (s *Store) drop(why string) {
	n := s.dropped.Add(1)
	now := time.Now().UnixNano()
	last := s.lastDropLog.Load()
	if now-last >= int64(time.Minute) && s.lastDropLog.CompareAndSwap(last, now) {
		s.log.Warn("store dropping measurements", "reason", why, "dropped_total", n)
	}
}

// Flush waits until everything queued before it is committed and the
// rollups of complete intervals are written (the writer must be running,
// or start, before ctx ends). It returns the commit's error, ErrClosed
// when the store is closed or Run has returned, or ctx's error.
func (s *Store) Flush(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	done := make(chan error, 1)
	select {
	case s.queue <- &item{done: done}:
	case <-s.stopped:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-s.stopped:
		select {
		case err := <-done:
			return err
		default:
			return ErrClosed
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Health returns nil, or why the storage is failing: ErrReadOnly,
// ErrDiskFull, ErrIO, ErrCorrupt (test with errors.Is), with the details.
// It turns nil again once writing (and rolling up) succeeds again.
//
// ErrFileGone: the database file was deleted or replaced while the store
// writes to it (checked here and every second by Run); it stays until the
// path names the open file again (a restart).
func (s *Store) Health() error {
	s.checkFile()
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	for _, err := range s.healthErr {
		if err != nil {
			return err
		}
	}
	return nil
}

// setHealth records a write error (nil: writing works) and logs the
// transitions once.
func (s *Store) setHealth(err error) { s.setSlot(slotWrite, err) }

func (s *Store) setSlot(slot healthSlot, err error) {
	s.healthMu.Lock()
	prev := s.healthErr[slot]
	s.healthErr[slot] = err
	if err != nil {
		s.lastErr, s.lastErrAt = err, time.Now()
	}
	s.healthMu.Unlock()
	what := "storage"
	switch slot {
	case slotRollup:
		what = "rollups"
	case slotIntegrity:
		what = "integrity"
	case slotFile:
		what = "database file"
	}
	switch {
	case err != nil && prev == nil:
		s.log.Error(what+" failing", "err", err)
	case err == nil && prev != nil:
		s.log.Info(what + " recovered")
	}
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	st := Stats{
		Queued:  len(s.queue),
		Written: s.written.Load(),
		Samples: s.samples.Load(),
		Logs:    s.logs.Load(),
		Batches: s.batches.Load(),
		Dropped: s.dropped.Load(),
		Failed:  s.failed.Load(),
	}
	if t := s.rolledUpTo.Load(); t != 0 {
		st.RolledUpTo = time.UnixMilli(t).UTC()
	}
	s.healthMu.Lock()
	if s.lastErr != nil {
		st.LastError, st.LastErrorTime = s.lastErr.Error(), s.lastErrAt
	}
	s.healthMu.Unlock()
	return st
}

// retryReadOnly is how often Run tries to write again on read-only
// storage.
const retryReadOnly = 30 * time.Second

// Run is the writer: it commits queued measurements and log entries in
// batches, writes rollups as intervals complete and applies retention in
// small steps. When ctx ends it commits what is queued, rolls up
// everything recorded (the last, partial 5-minute interval too) and
// returns nil. Storage errors do not end it: they are reported by Health
// and Stats, and writing resumes when the storage recovers.
func (s *Store) Run(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("store: Run called twice")
	}
	defer close(s.stopped)
	s.tick()
	checks := make(chan struct{})
	go func() {
		defer close(checks)
		s.integrityLoop(ctx)
	}()
	defer func() { <-checks }()
	if s.wdb.Load() == nil {
		if !s.waitWritable(ctx) {
			return nil
		}
	}
	return s.w.run(ctx)
}

// Progress is when the writer last went round its loop (wall clock; zero
// before Run): at least every second while it runs, every 30 s while it
// waits for read-only storage to become writable. A time that stops
// advancing means the writer hangs (a commit that never returns); a
// watchdog asks this.
func (s *Store) Progress() time.Time {
	ns := s.beat.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func (s *Store) tick() { s.beat.Store(time.Now().UnixNano()) }

// waitWritable retries opening the database for writing until it works
// (true) or ctx ends (false). SQLite shares a file's WAL index among the
// connections of a process, and one opened read-only stays read-only for
// all of them, so the readers are closed first and reopened after.
func (s *Store) waitWritable(ctx context.Context) bool {
	t := time.NewTicker(s.retryRO)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		s.tick()
		if writable(s.cfg.Path) != nil {
			continue
		}
		ok, err := s.reopenWritable(ctx)
		if err != nil {
			s.setHealth(classify(err))
			continue
		}
		if !ok {
			return false
		}
		if err := s.w.load(ctx); err != nil {
			s.setHealth(classify(err))
			continue
		}
		s.setHealth(nil)
		s.writable.Store(true)
		s.log.Info("storage writable again: recording")
		return true
	}
}

// reopenWritable swaps the read-only connections for a writer and fresh
// readers; false means the store was closed meanwhile.
func (s *Store) reopenWritable(ctx context.Context) (bool, error) {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Load() {
		return false, nil
	}
	// The file must still be the one the store opened, whose catalogue
	// it keeps: another file there is refused, and a new one gets the
	// catalogue.
	cur, _, err := statID(s.cfg.Path)
	fresh := errors.Is(err, fs.ErrNotExist)
	switch {
	case fresh:
	case err != nil:
		return true, err
	case cur != s.fileIdentity():
		return true, fmt.Errorf("%w: %s is %w (replaced while the storage was read-only): plantd stays read-only; "+
			"restart plantd to use the file there, or put back the one it opened", ErrFileGone, s.cfg.Path, errNotOurs)
	}
	if old := s.rdb.Swap(nil); old != nil {
		old.Close()
	}
	db, err := openWriter(ctx, s.cfg.Path)
	if err == nil {
		if err = migrate(ctx, db); err == nil && fresh {
			err = s.cat.layDown(ctx, db)
		}
		if err != nil {
			db.Close()
		}
	}
	if err != nil {
		// Back to reading what is there.
		rdb, rerr := openReader(ctx, s.cfg.Path, false)
		if rerr != nil {
			rdb, rerr = openReader(ctx, s.cfg.Path, true)
		}
		if rerr == nil {
			s.rdb.Store(rdb)
		}
		return true, err
	}
	rdb, err := openReader(ctx, s.cfg.Path, false)
	if err != nil {
		db.Close()
		return true, err
	}
	s.wdb.Store(db)
	s.rdb.Store(rdb)
	s.rdbImmutable = false
	s.noteFile()
	if fresh {
		s.log.Error("the database file was gone when the storage became writable: plantd created a new one with the device "+
			"catalogue and records into it; what was stored before is not in it (put back a copy made with plantd backup "+
			"while plantd is stopped to have it again)", "path", s.cfg.Path)
	}
	return true, nil
}

// noteFile takes the identity of the database file the store has open.
func (s *Store) noteFile() {
	id, mode, err := statID(s.cfg.Path)
	if err != nil {
		s.log.Warn("cannot stat the database file: a deleted or replaced file will go unnoticed", "path", s.cfg.Path, "err", err)
		id = fileID{}
	}
	s.fileMu.Lock()
	s.file, s.fileMode = id, mode
	s.fileMu.Unlock()
}

// fileIdentity is the identity of the database file the store opened.
func (s *Store) fileIdentity() fileID {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	return s.file
}
