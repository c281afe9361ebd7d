package powercut

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"plantd/store"
)

// TestReused: an image lets the next start reuse a published seq when
// the stream's next seq after a reboot is at or below it (outbox
// streams: outbox_seq or above the floor) or, for a live stream, the
// live mark is below it.
func TestReused(t *testing.T) {
	for _, tt := range []struct {
		name      string
		st        State
		published map[string]uint64
		want      []string
	}{
		{"nothing published", State{}, nil, nil},
		{"no outbox at all", State{}, map[string]uint64{"log/pc": 6}, []string{"log/pc: published up to 6, next start numbers from 1"}},
		{"next above", State{Outbox: map[string]Stream{"log/pc": {Next: 7}}}, map[string]uint64{"log/pc": 6}, nil},
		{"next at", State{Outbox: map[string]Stream{"log/pc": {Next: 6}}}, map[string]uint64{"log/pc": 6}, []string{"log/pc: published up to 6, next start numbers from 6"}},
		{"floor covers", State{Outbox: map[string]Stream{"log/pc": {Next: 2, Floor: 65536}}}, map[string]uint64{"log/pc": 6}, nil},
		{"live under the mark", State{LiveMark: 65536}, map[string]uint64{"live/pc": 65536}, nil},
		{"live above the mark", State{LiveMark: 65536}, map[string]uint64{"live/pc": 65537}, []string{"live/pc: published up to 65537, live mark 65536"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.st.Reused(tt.published); !slices.Equal(got, tt.want) {
				t.Errorf("Reused = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReadFloors: Read finds the floors and the live mark plantd's store
// writes.
func TestReadFloors(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), DBName)
	st, err := store.Open(ctx, store.Config{Path: path, Plants: []store.PlantInfo{{ID: "pc"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.EnqueueBatch(ctx, []store.OutboxAppend{{Stream: "log/pc"}, {Stream: "log/pc"}, {Stream: "rollup/pc"}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ReserveSeqs(ctx, "log/pc", 65538); err != nil {
		t.Fatal(err)
	}
	if err := st.SyncMark(ctx, "live.seq", 131072); err != nil {
		t.Fatal(err)
	}
	db, err := Open(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := Read(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if l := got.Outbox["log/pc"]; l.Next != 3 || l.Floor != 65538 || l.NextAfterReboot() != 65539 {
		t.Errorf("log/pc %+v, next after a reboot %d; want next 3, floor 65538, 65539", l, l.NextAfterReboot())
	}
	if r := got.Outbox["rollup/pc"]; r.Floor != 0 || r.NextAfterReboot() != 2 {
		t.Errorf("rollup/pc %+v, next after a reboot %d; want no floor, 2", r, r.NextAfterReboot())
	}
	if got.LiveMark != 131072 {
		t.Errorf("live mark %d, want 131072", got.LiveMark)
	}
}
