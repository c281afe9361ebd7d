package store

import (
	"context"
	"fmt"
)

// Measurements returns the number of raw measurements stored (one per
// poll of a device, within database.rawRetention): what the database
// holds, also from before this process started. It reads the whole raw
// chunk table, so callers ask once (plantd's status line at start), not per
// request.
func (s *Store) Measurements(ctx context.Context) (int64, error) {
	db := s.rdb.Load()
	if db == nil {
		return 0, ErrClosed
	}
	var n int64
	if err := db.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM raw_chunk`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count measurements: %w", classify(err))
	}
	return n, nil
}
