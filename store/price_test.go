package store

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestPrices stores two sources' prices, replaces one row, reads a range
// back after a reopen (the prices survive a restart), and prunes rows
// older than PriceRetention.
func TestPrices(t *testing.T) {
	t.Parallel() // its own database file
	s := openTest(t, Config{})
	ctx := t.Context()
	day := time.Date(2024, 10, 5, 22, 0, 0, 0, time.UTC)
	fetched := day.Add(-9 * time.Hour)
	var in []Price
	for i := range 24 {
		start := day.Add(time.Duration(i) * time.Hour)
		in = append(in, Price{Source: "entsoe:10Y1001A1001A82H", Start: start, End: start.Add(time.Hour), EURPerMWh: float64(i) - 3.5, FetchedAt: fetched})
	}
	in = append(in, Price{Source: "awattar:de", Start: day, End: day.Add(time.Hour), EURPerMWh: 83.13, FetchedAt: fetched})
	if err := s.PutPrices(ctx, in); err != nil {
		t.Fatal(err)
	}
	// A second fetch replaces the row of its start.
	in[3].EURPerMWh, in[3].FetchedAt = -0.01, fetched.Add(time.Hour)
	if err := s.PutPrices(ctx, in[3:4]); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPrices(ctx, []Price{{Source: "x", Start: day, End: day}}); !errors.Is(err, ErrBadQuery) {
		t.Errorf("empty interval: %v, want ErrBadQuery", err)
	}

	path := s.cfg.Path
	s.Close()
	s2 := openTest(t, Config{Path: path})
	// [01:30, 04:00) overlaps the hours starting 01:00, 02:00 and 03:00.
	got, err := s2.Prices(ctx, "entsoe:10Y1001A1001A82H", day.Add(90*time.Minute), day.Add(4*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if want := in[1:4]; !slices.Equal(got, want) {
		t.Errorf("after reopening:\n got %+v\nwant %+v", got, want)
	}
	if got, err := s2.Prices(ctx, "awattar:de", day, day.Add(48*time.Hour)); err != nil || len(got) != 1 || got[0].EURPerMWh != 83.13 {
		t.Errorf("the other source: %+v, %v", got, err)
	}

	// A price 40 days later prunes the source's rows ended 35 days before it.
	later := day.Add(40 * 24 * time.Hour)
	if err := s2.PutPrices(ctx, []Price{{Source: "awattar:de", Start: later, End: later.Add(time.Hour), EURPerMWh: 1, FetchedAt: later}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s2.Prices(ctx, "awattar:de", day, later.Add(time.Hour)); len(got) != 1 || !got[0].Start.Equal(later) {
		t.Errorf("after pruning: %+v, want only the new row", got)
	}
	if got, _ := s2.Prices(ctx, "entsoe:10Y1001A1001A82H", day, later); len(got) != 24 {
		t.Errorf("another source's rows: %d, want 24 (pruned per source)", len(got))
	}
}
