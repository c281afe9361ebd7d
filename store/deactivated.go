package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// deactivatedKey is the meta key holding, in Unix ms, when plantd first
// saw a device disabled in the config.
func deactivatedKey(deviceID string) string { return "device.deactivated/" + deviceID }

// DeactivatedAt returns when plantd first saw a device disabled in the
// config; ok is false when it never did, or the device was enabled since.
func (s *Store) DeactivatedAt(ctx context.Context, deviceID string) (t time.Time, ok bool, err error) {
	db := s.rdb.Load()
	if db == nil {
		return time.Time{}, false, ErrClosed
	}
	var ms int64
	err = db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, deactivatedKey(deviceID)).Scan(&ms)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("store: deactivation of %s: %w", deviceID, classify(err))
	}
	return time.UnixMilli(ms), true, nil
}

// SetDeactivatedAt records when a device was first seen disabled, or,
// with the zero time, forgets it (the device is enabled).
func (s *Store) SetDeactivatedAt(ctx context.Context, deviceID string, t time.Time) error {
	if t.IsZero() {
		return s.exec(ctx, "forget the deactivation of "+deviceID, `DELETE FROM meta WHERE key = ?`, deactivatedKey(deviceID))
	}
	return s.exec(ctx, "record the deactivation of "+deviceID,
		`INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, deactivatedKey(deviceID), t.UnixMilli())
}
