package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ConsumerGuard returns the guard state the energy manager kept for a
// consumer (false: none kept). The store does not read it: its encoding
// is the consumer package's.
func (s *Store) ConsumerGuard(ctx context.Context, deviceID string) ([]byte, bool, error) {
	db := s.rdb.Load()
	if db == nil {
		return nil, false, ErrClosed
	}
	var state []byte
	err := db.QueryRowContext(ctx, `SELECT state FROM consumer_guard WHERE device = ?`, deviceID).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: guard of consumer %s: %w", deviceID, classify(err))
	}
	return state, true, nil
}

// SetConsumerGuard keeps a consumer's guard state, replacing the one kept
// before: one row, in a transaction of its own.
func (s *Store) SetConsumerGuard(ctx context.Context, deviceID string, state []byte) error {
	if deviceID == "" || len(state) == 0 {
		return fmt.Errorf("%w: consumer guard needs a device and a state", ErrBadQuery)
	}
	return s.exec(ctx, "keep guard of consumer "+deviceID,
		`INSERT OR REPLACE INTO consumer_guard (device, state) VALUES (?, ?)`, deviceID, state)
}
