package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Integrity checks (doc.go, Failures).
const (
	// DefaultCheckTimeout bounds each quick_check; one that does not
	// finish in time is logged and given up, never taken as corruption.
	DefaultCheckTimeout = time.Minute
	// checkHour is the local hour (time.Local) of the daily check: a quiet
	// hour for a PV plant.
	checkHour = 3
)

// quickCheck runs PRAGMA quick_check on a read-only connection within
// timeout. It returns an error wrapping ErrCorrupt with SQLite's first
// findings when the file is damaged, nil when it is sound or the check did
// not finish in time (logged), and other errors as they are.
func (s *Store) quickCheck(ctx context.Context, timeout time.Duration) error {
	db := s.rdb.Load()
	if db == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	rows, err := db.QueryContext(ctx, `PRAGMA quick_check(10)`)
	if err == nil {
		var found []string
		for rows.Next() {
			var line string
			if err = rows.Scan(&line); err != nil {
				break
			}
			if line != "ok" {
				found = append(found, line)
			}
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		if err == nil && len(found) > 0 {
			return fmt.Errorf("%w: quick_check: %s", ErrCorrupt, strings.Join(found, "; "))
		}
	}
	switch {
	case err == nil:
		s.log.Info("database integrity checked", "took", time.Since(start).Round(time.Millisecond))
		return nil
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		s.log.Warn("database integrity check did not finish in time: given up", "timeout", timeout)
		return nil
	}
	if err = classify(err); errors.Is(err, ErrCorrupt) {
		return err
	}
	return fmt.Errorf("store: quick_check: %w", err)
}

// markCorrupt stops every write to a damaged database, keeps the file as
// it is and reports it through Health and the log.
func (s *Store) markCorrupt(err error) {
	if s.corrupt.Swap(true) {
		return
	}
	s.writable.Store(false)
	s.setSlot(slotIntegrity, err)
	s.log.Error("database corrupt: writing stopped, the file is kept as it is; to recover, "+recoverCorrupt(s.cfg.Path),
		"path", s.cfg.Path, "err", err)
}

// recoverCorrupt says how to recover from a damaged database at path.
func recoverCorrupt(path string) string {
	return "stop plantd and either put back a copy made with plantd backup (or a copy of the file taken after a clean stop), or move " +
		path + " (with its -wal and -shm files) aside, keeping it for analysis, and start plantd with a fresh file"
}

// integrityLoop runs the quick check daily at checkHour until ctx ends.
func (s *Store) integrityLoop(ctx context.Context) {
	for {
		now := time.Now()
		next := time.Date(now.Year(), now.Month(), now.Day(), checkHour, 0, 0, 0, time.Local)
		if !next.After(now) {
			next = next.AddDate(0, 0, 1)
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if s.corrupt.Load() {
			continue
		}
		if err := s.quickCheck(ctx, s.cfg.CheckTimeout); errors.Is(err, ErrCorrupt) {
			s.markCorrupt(err)
		} else if err != nil && ctx.Err() == nil {
			s.log.Warn("database integrity check failed", "err", err)
		}
	}
}
