package store

import (
	"context"
	"fmt"
	"time"
)

// Price is one interval of a day-ahead market price as a provider
// published it: Source names the provider and the zone (package
// tariffs's words, e.g. "entsoe:10Y1001A1001A82H"), [Start, End) the
// interval, EURPerMWh the price, FetchedAt when plantd fetched it.
type Price struct {
	Source     string
	Start, End time.Time
	EURPerMWh  float64
	FetchedAt  time.Time
}

// PriceRetention is how long prices are kept after their interval ended:
// PutPrices deletes a source's older rows.
const PriceRetention = 35 * 24 * time.Hour

// PutPrices stores prices in one transaction, replacing the rows of the
// same source and start, and deletes the rows of their sources that ended
// more than PriceRetention before the newest price's start.
func (s *Store) PutPrices(ctx context.Context, prices []Price) error {
	if len(prices) == 0 {
		return nil
	}
	newest := map[string]time.Time{}
	for _, p := range prices {
		if p.Source == "" || !p.End.After(p.Start) {
			return fmt.Errorf("%w: price needs a source and an interval (%q %v..%v)", ErrBadQuery, p.Source, p.Start, p.End)
		}
		if p.Start.After(newest[p.Source]) {
			newest[p.Source] = p.Start
		}
	}
	db := s.wdb.Load()
	if db == nil || s.closed.Load() {
		return fmt.Errorf("store: put prices: %w", ErrClosed)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: put prices: %w", classify(err))
	}
	defer tx.Rollback()
	for _, p := range prices {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO price (source, t, tend, eur_mwh, fetched) VALUES (?, ?, ?, ?, ?)`,
			p.Source, p.Start.UnixMilli(), p.End.UnixMilli(), p.EURPerMWh, p.FetchedAt.UnixMilli()); err != nil {
			return fmt.Errorf("store: put prices of %s: %w", p.Source, classify(err))
		}
	}
	for src, t := range newest {
		if _, err := tx.ExecContext(ctx, `DELETE FROM price WHERE source = ? AND tend < ?`, src, t.Add(-PriceRetention).UnixMilli()); err != nil {
			return fmt.Errorf("store: prune prices of %s: %w", src, classify(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: put prices: %w", classify(err))
	}
	return nil
}

// Prices returns a source's prices whose interval overlaps [from, to),
// in time order.
func (s *Store) Prices(ctx context.Context, source string, from, to time.Time) ([]Price, error) {
	db := s.rdb.Load()
	if db == nil {
		return nil, ErrClosed
	}
	rows, err := db.QueryContext(ctx, `SELECT t, tend, eur_mwh, fetched FROM price WHERE source = ? AND t < ? AND tend > ? ORDER BY t`,
		source, to.UnixMilli(), from.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("store: prices of %s: %w", source, classify(err))
	}
	defer rows.Close()
	var out []Price
	for rows.Next() {
		var t, tend, fetched int64
		p := Price{Source: source}
		if err := rows.Scan(&t, &tend, &p.EURPerMWh, &fetched); err != nil {
			return nil, fmt.Errorf("store: prices of %s: %w", source, err)
		}
		p.Start, p.End, p.FetchedAt = time.UnixMilli(t).UTC(), time.UnixMilli(tend).UTC(), time.UnixMilli(fetched).UTC()
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: prices of %s: %w", source, err)
	}
	return out, nil
}
