package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
	"sync/atomic"
)

// Durable sequence floors. The outbox commits with synchronous=NORMAL:
// SQLite leaves a commit to the kernel, which writes it to the disk
// within about 40 s, so a power cut loses the newest commits, outbox_seq's
// counters among them. A message published before the cut would then
// have its seq handed out again by the next start, to another message,
// and a backend that dedupes on (gateway, stream, seq) would drop that
// one as a repeat. So, per stream, a floor: the meta row
// outbox.floor.<stream> says that no seq above it has been published.
// The publisher raises it (ReserveSeqs) before it publishes a seq above
// it, a block ahead, in a commit synced to the disk; a start that may
// have lost commits numbers every stream above its floor (resumeSeqs). A
// power cut thus shows as a gap of the stream's seqs, never as a seq
// used twice.
//
// Which starts may have lost commits: those of another kernel boot than
// the one that wrote the floors last. A process that died (kill -9, a
// crash) left its commits in the kernel's page cache, which the next
// process of the same boot reads whole, so it continues without a gap;
// the meta row outbox.floor-boot holds a hash of the kernel's boot id
// (/proc/sys/kernel/random/boot_id), written with each reservation. A
// machine that cannot say its boot id always numbers above the floors. A
// clean stop lowers the floors to the last seq each stream numbered
// (ReleaseSeqs), so that a reboot after it leaves no gap either.

const (
	floorPrefix = "outbox.floor."
	floorBoot   = "outbox.floor-boot"
)

// bootIDPath is where Linux gives the kernel's boot id, a random UUID
// made at each boot.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// kernelBoot returns a hash of the kernel's boot id (false: unknown). A
// variable for the tests, which fake another boot.
var kernelBoot = func() (int64, bool) {
	b, err := os.ReadFile(bootIDPath)
	id := strings.TrimSpace(string(b))
	if err != nil || id == "" {
		return 0, false
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return int64(h.Sum64() >> 1), true
}

// syncedCommits counts the commits syncedTx made (each one fsync of the
// WAL), for the tests' count of reservations.
var syncedCommits atomic.Uint64

// resumeSeqs raises each outbox stream's next seq above its floor when
// this start is of another kernel boot than the floors' last
// reservation (see above), in tx (the writer's, at open).
func resumeSeqs(ctx context.Context, tx *sql.Tx) error {
	if boot, ok := kernelBoot(); ok {
		var was int64
		err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, floorBoot).Scan(&was)
		if err == nil && was == boot {
			return nil
		}
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read the outbox floors' boot: %w", err)
		}
	}
	// The range of keys with the prefix: '/' follows '.'.
	if _, err := tx.ExecContext(ctx, `INSERT INTO outbox_seq (stream, next)
		SELECT substr(key, ?), value + 1 FROM meta WHERE key > ? AND key < ?
		ON CONFLICT (stream) DO UPDATE SET next = max(next, excluded.next)`,
		len(floorPrefix)+1, floorPrefix, strings.TrimSuffix(floorPrefix, ".")+"/"); err != nil {
		return fmt.Errorf("number the outbox above its floors: %w", err)
	}
	return nil
}

// ReserveSeqs records, durably, that seqs of stream up to upTo may be
// published: the stream's floor becomes upTo unless it is higher already,
// and the floor is returned. The commit is synced to the disk before
// ReserveSeqs returns (one fsync of the WAL), so no later start, whatever
// it lost, numbers the stream at or below the floor. A publisher calls it
// before it publishes a seq above the floor it has, a block ahead.
func (s *Store) ReserveSeqs(ctx context.Context, stream string, upTo uint64) (uint64, error) {
	if stream == "" {
		return 0, fmt.Errorf("%w: outbox stream is empty", ErrBadQuery)
	}
	db := s.wdb.Load()
	if db == nil || s.closed.Load() || !s.writable.Load() {
		// Not writable (read-only, or corrupt: then the floors may not
		// have been applied at open): nothing may be reserved.
		if err := s.Health(); err != nil {
			return 0, fmt.Errorf("store: reserve seqs: %w", err)
		}
		return 0, fmt.Errorf("store: reserve seqs: %w", ErrClosed)
	}
	var floor uint64
	err := syncedTx(ctx, db, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, floorPrefix+stream).Scan(&floor)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		floor = max(floor, upTo)
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, floorPrefix+stream, int64(floor)); err != nil {
			return err
		}
		if boot, ok := kernelBoot(); ok {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, floorBoot, boot); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: reserve seqs of %s up to %d: %w", stream, upTo, classify(err))
	}
	return floor, nil
}

// SeqFloor returns a stream's floor (0: none).
func (s *Store) SeqFloor(ctx context.Context, stream string) (uint64, error) {
	db := s.rdb.Load()
	if db == nil {
		return 0, ErrClosed
	}
	var v uint64
	err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, floorPrefix+stream).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: seq floor: %w", classify(err))
	}
	return v, nil
}

// ReleaseSeqs lowers every stream's floor to the last seq the outbox
// numbered in it, at a clean stop of the publisher (which must not
// publish after without reserving again): every seq published was
// numbered, so the floor still covers them, and a start after a reboot
// then continues without a gap. Not synced: a power cut that loses this
// commit leaves the higher floors, which are as safe.
func (s *Store) ReleaseSeqs(ctx context.Context) error {
	return s.exec(ctx, "release seqs", `UPDATE meta SET value = min(value,
		coalesce((SELECT next - 1 FROM outbox_seq WHERE stream = substr(meta.key, ?)), value))
		WHERE key > ? AND key < ?`,
		len(floorPrefix)+1, floorPrefix, strings.TrimSuffix(floorPrefix, ".")+"/")
}

// SyncMark is SetMark with its commit synced to the disk before it
// returns (one fsync of the WAL): for a mark that reserves seqs (the live
// streams', package mqtt), which a power cut must not take back.
func (s *Store) SyncMark(ctx context.Context, key string, value int64) error {
	if key == "" {
		return fmt.Errorf("%w: outbox mark key is empty", ErrBadQuery)
	}
	db := s.wdb.Load()
	if db == nil || s.closed.Load() || !s.writable.Load() {
		// Not writable (read-only, or corrupt: then the floors may not
		// have been applied at open): nothing may be reserved.
		if err := s.Health(); err != nil {
			return fmt.Errorf("store: sync mark: %w", err)
		}
		return fmt.Errorf("store: sync mark: %w", ErrClosed)
	}
	err := syncedTx(ctx, db, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, markKey(key), value)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: sync mark %s: %w", key, classify(err))
	}
	return nil
}
