package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// fakeBoot makes the store see the kernel boot given (ok false: unknown)
// until the test ends. Not for parallel tests: it swaps a package variable
// (the parallel ones start after the sequential ones have ended).
func fakeBoot(t *testing.T, boot int64, ok bool) {
	t.Helper()
	was := kernelBoot
	kernelBoot = func() (int64, bool) { return boot, ok }
	t.Cleanup(func() { kernelBoot = was })
}

func enqueueN(t *testing.T, s *Store, stream string, n int) []uint64 {
	t.Helper()
	msgs := make([]OutboxAppend, n)
	for i := range msgs {
		msgs[i] = OutboxAppend{Stream: stream, Payload: fmt.Appendf(nil, "m%d", i)}
	}
	seqs, err := s.EnqueueBatch(t.Context(), msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return seqs
}

// TestSeqFloorSynced: a reservation is one commit made with
// synchronous=FULL (read back inside its transaction; syncedTx refuses
// otherwise), the writer connection is at NORMAL again after it, a floor
// is never lowered by a reservation, and SQLite indeed ignores a change
// of the level inside a transaction (why syncedTx sets it around one).
func TestSeqFloorSynced(t *testing.T) {
	s := openTest(t, Config{})
	ctx := t.Context()
	level := func() int {
		var l int
		if err := s.wdb.Load().QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	if l := level(); l != 1 {
		t.Fatalf("writer at synchronous %d before, want NORMAL (1)", l)
	}
	before := syncedCommits.Load()
	for _, tt := range []struct {
		upTo, want uint64
	}{{100, 100}, {50, 100}, {65636, 65636}} {
		got, err := s.ReserveSeqs(ctx, "log/p1", tt.upTo)
		if err != nil || got != tt.want {
			t.Fatalf("ReserveSeqs(%d) = %d, %v; want %d", tt.upTo, got, err, tt.want)
		}
		if f, err := s.SeqFloor(ctx, "log/p1"); err != nil || f != tt.want {
			t.Fatalf("SeqFloor after ReserveSeqs(%d) = %d, %v; want %d", tt.upTo, f, err, tt.want)
		}
	}
	if err := s.SyncMark(ctx, "live.seq", 65536); err != nil {
		t.Fatal(err)
	}
	if n := syncedCommits.Load() - before; n != 4 {
		t.Errorf("%d synced commits for 3 reservations and a mark, want 4", n)
	}
	if l := level(); l != 1 {
		t.Errorf("writer at synchronous %d after a reservation, want NORMAL (1)", l)
	}
	if v, ok, err := s.Mark(ctx, "live.seq"); err != nil || !ok || v != 65536 {
		t.Errorf("live.seq = %d, %v, %v", v, ok, err)
	}

	// A store that stopped writing (corrupt, read-only) reserves nothing:
	// its floors may not have been applied at open.
	s.writable.Store(false)
	if _, err := s.ReserveSeqs(ctx, "log/p1", 200000); err == nil {
		t.Error("ReserveSeqs on a store that stopped writing: no error")
	}
	if err := s.SyncMark(ctx, "live.seq", 200000); err == nil {
		t.Error("SyncMark on a store that stopped writing: no error")
	}
	s.writable.Store(true)

	// Inside a transaction SQLite keeps the level it had.
	conn, err := s.wdb.Load().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, setErr := tx.ExecContext(ctx, `PRAGMA synchronous = FULL`)
	var l int
	if err := tx.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&l); err != nil {
		t.Fatal(err)
	}
	tx.Rollback()
	t.Logf("PRAGMA synchronous = FULL inside a transaction: error %v, level then %d", setErr, l)
	if setErr == nil && l != 1 {
		t.Errorf("synchronous changed to %d inside a transaction: syncedTx could set it there", l)
	}
}

// TestSeqFloorPowerCut takes disk images as a power cut leaves them: the
// WAL cut after the reservation's commit (the frames its fsync put on the
// disk; the outbox's later commits, NORMAL, lost) or whole. A start of
// another kernel boot (or of one it cannot tell) numbers above the floor,
// never at or below a seq that may have been published; one of the same
// boot (a killed process: the kernel kept every commit) goes on where the
// outbox was, without a gap; after a clean stop (ReleaseSeqs) a reboot
// leaves no gap either.
func TestSeqFloorPowerCut(t *testing.T) {
	const stream = "log/p1"
	for _, tt := range []struct {
		name          string
		cut, release  bool
		otherBoot, ok bool
		want          uint64
	}{
		{name: "cut after the reservation, rebooted", cut: true, otherBoot: true, ok: true, want: 11},
		{name: "cut after the reservation, boot unknown", cut: true, ok: false, want: 11},
		{name: "whole WAL, same boot (killed process)", ok: true, want: 24},
		{name: "whole WAL, rebooted", otherBoot: true, ok: true, want: 24},
		{name: "clean stop, rebooted", release: true, otherBoot: true, ok: true, want: 24},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fakeBoot(t, 1, true)
			path := filepath.Join(t.TempDir(), "plantd.db")
			s := openTest(t, Config{Path: path})
			ctx := t.Context()
			if got := enqueueN(t, s, stream, 3); got[0] != 1 || got[2] != 3 {
				t.Fatalf("seqs %v, want 1..3", got)
			}
			// The publisher reserves before it publishes seqs 1..3.
			if _, err := s.ReserveSeqs(ctx, stream, 10); err != nil {
				t.Fatal(err)
			}
			synced, err := os.Stat(path + "-wal")
			if err != nil {
				t.Fatal(err)
			}
			if got := enqueueN(t, s, stream, 20); got[0] != 4 || got[19] != 23 {
				t.Fatalf("seqs %v, want 4..23", got)
			}
			if tt.release {
				// Reserved a block ahead, then stopped cleanly.
				if _, err := s.ReserveSeqs(ctx, stream, 1000); err != nil {
					t.Fatal(err)
				}
				if err := s.ReleaseSeqs(ctx); err != nil {
					t.Fatal(err)
				}
				if f, _ := s.SeqFloor(ctx, stream); f != 23 {
					t.Fatalf("floor %d after ReleaseSeqs, want 23", f)
				}
			}
			im := takeImage(t, path)
			wal := im.wal
			if tt.cut {
				if im.minFrames > 0 || int64(len(wal)) < synced.Size() {
					t.Fatalf("WAL of %d bytes, %d frames checkpointed: cannot cut at %d", len(wal), im.minFrames, synced.Size())
				}
				wal = wal[:synced.Size()]
			}
			dir := t.TempDir()
			img := filepath.Join(dir, "plantd.db")
			if err := os.WriteFile(img, im.db, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(img+"-wal", wal, 0o644); err != nil {
				t.Fatal(err)
			}
			boot := int64(1)
			if tt.otherBoot {
				boot = 2
			}
			fakeBoot(t, boot, tt.ok)
			s2 := openTest(t, Config{Path: img})
			if tt.cut {
				// The image lost the outbox's counters past the
				// reservation: without the floor seq 4 came next.
				var next uint64
				if err := s2.rdb.Load().QueryRowContext(context.Background(),
					`SELECT count(*) FROM outbox WHERE stream = ?`, stream).Scan(&next); err != nil || next != 3 {
					t.Fatalf("image holds %d messages (%v), want the 3 before the reservation", next, err)
				}
			}
			if got := enqueueN(t, s2, stream, 1); got[0] != tt.want {
				t.Errorf("first seq after the start: %d, want %d", got[0], tt.want)
			}
			if f, err := s2.SeqFloor(ctx, stream); err != nil || f < 10 {
				t.Errorf("floor %d (%v) in the image, want >= 10", f, err)
			}
		})
	}
}

// TestSeqFloorKeys: floors of streams whose names sort around the
// prefix's range stay apart from other meta keys.
func TestSeqFloorKeys(t *testing.T) {
	fakeBoot(t, 1, true)
	path := filepath.Join(t.TempDir(), "plantd.db")
	s := openTest(t, Config{Path: path})
	ctx := t.Context()
	streams := []string{"ack", "log/p1", "rollup/p1", "rollup/p1/x"}
	for i, st := range streams {
		enqueueN(t, s, st, 1)
		if _, err := s.ReserveSeqs(ctx, st, uint64(100*(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetMark(ctx, "rollups", 12345); err != nil {
		t.Fatal(err)
	}
	s.Close()
	fakeBoot(t, 2, true)
	s2 := openTest(t, Config{Path: path})
	for i, st := range streams {
		if got := enqueueN(t, s2, st, 1); got[0] != uint64(100*(i+1)+1) {
			t.Errorf("%s: first seq %d, want %d", st, got[0], 100*(i+1)+1)
		}
	}
	if v, _, _ := s2.Mark(ctx, "rollups"); v != 12345 {
		t.Errorf("mark rollups %d", v)
	}
	var n int
	if err := s2.rdb.Load().QueryRowContext(ctx, `SELECT count(*) FROM outbox_seq WHERE stream LIKE '%floor%' OR stream = ''`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d stray outbox_seq rows (%v)", n, err)
	}
}
