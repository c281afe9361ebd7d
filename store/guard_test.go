package store

import (
	"bytes"
	"errors"
	"testing"
)

// TestConsumerGuard keeps two consumers' guard states, replaces one,
// reads them back after a reopen, and counts what one switch writes: one
// row, one WAL frame (a page and its header).
func TestConsumerGuard(t *testing.T) {
	t.Parallel() // its own database file
	s := openTest(t, Config{})
	ctx := t.Context()
	if _, ok, err := s.ConsumerGuard(ctx, "hp"); ok || err != nil {
		t.Fatalf("nothing kept yet: %v, %v", ok, err)
	}
	hp, heater := bytes.Repeat([]byte{1}, 96), []byte{2, 3}
	for _, k := range []struct {
		id    string
		state []byte
	}{{"hp", []byte{9}}, {"heater", heater}, {"hp", hp}} {
		if err := s.SetConsumerGuard(ctx, k.id, k.state); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetConsumerGuard(ctx, "hp", nil); !errors.Is(err, ErrBadQuery) {
		t.Errorf("empty state: %v, want ErrBadQuery", err)
	}

	// A switch: one row replaced, one WAL frame (the table's one page)
	// and its commit. The WAL is emptied first; a passive checkpoint
	// then says how many frames it holds.
	w := s.wdb.Load()
	if _, err := w.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	const switches = 20
	for i := range switches {
		hp[0] = byte(i)
		if err := s.SetConsumerGuard(ctx, "hp", hp); err != nil {
			t.Fatal(err)
		}
	}
	var busy, frames, done, page int64
	if err := w.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &done); err != nil {
		t.Fatal(err)
	}
	if err := w.QueryRow(`PRAGMA page_size`).Scan(&page); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d switches of a %d-byte state: %d WAL frames of %d bytes (%.1f a switch)",
		switches, len(hp), frames, page+24, float64(frames)/switches)
	if frames > switches {
		t.Errorf("%d switches wrote %d WAL frames, want at most one each", switches, frames)
	}

	path := s.cfg.Path
	s.Close()
	s2 := openTest(t, Config{Path: path})
	for id, want := range map[string][]byte{"hp": hp, "heater": heater} {
		got, ok, err := s2.ConsumerGuard(ctx, id)
		if err != nil || !ok || !bytes.Equal(got, want) {
			t.Errorf("%s after reopening: %v, %v, %v; want %v", id, got, ok, err, want)
		}
	}
}
