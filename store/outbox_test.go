package store

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestOutboxBatchMarksAndTrim(t *testing.T) {
	t.Parallel() // its own database files
	s := openTest(t, Config{})
	ctx := t.Context()
	t0 := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	var msgs []OutboxAppend
	for i := range 10 {
		msgs = append(msgs, OutboxAppend{Stream: "log/p1", Payload: []byte{byte(i)}, Created: t0.Add(time.Duration(i) * time.Minute)})
	}
	msgs = append(msgs, OutboxAppend{Stream: "ack", Payload: []byte("a")})
	seqs, err := s.EnqueueBatch(ctx, msgs, &OutboxMark{Key: "rollup/p1", Value: 42})
	if err != nil || len(seqs) != 11 || seqs[0] != 1 || seqs[9] != 10 || seqs[10] != 1 {
		t.Fatalf("enqueue batch: %v, %v", seqs, err)
	}
	if v, ok, err := s.Mark(ctx, "rollup/p1"); v != 42 || !ok || err != nil {
		t.Errorf("mark %d %v %v", v, ok, err)
	}
	if _, ok, _ := s.Mark(ctx, "none"); ok {
		t.Error("unknown mark found")
	}
	// Enqueue and EnqueueBatch share the counters.
	if seq, _ := s.Enqueue(ctx, "log/p1", []byte{10}); seq != 11 {
		t.Errorf("enqueue after batch: seq %d, want 11", seq)
	}
	ms, err := s.PeekAfter(ctx, "log/p1", 8, 2)
	if err != nil || len(ms) != 2 || ms[0].Seq != 9 || ms[1].Seq != 10 || !ms[0].Created.Equal(t0.Add(8*time.Minute)) {
		t.Errorf("peek after 8: %+v, %v", ms, err)
	}
	st, err := s.OutboxStreams(ctx)
	if err != nil || len(st) != 2 || st[0].Stream != "ack" || st[1].Depth != 11 || st[1].First != 1 || st[1].Last != 11 || !st[1].Oldest.Equal(t0) {
		t.Errorf("streams %+v, %v", st, err)
	}
	// Age: the messages before t0+3m go; rows: the newest 5 stay.
	if n, err := s.TrimOutbox(ctx, "log/p1", 0, t0.Add(3*time.Minute)); n != 3 || err != nil {
		t.Errorf("trim by age: %d, %v", n, err)
	}
	if n, err := s.TrimOutbox(ctx, "log/p1", 5, time.Time{}); n != 3 || err != nil {
		t.Errorf("trim by rows: %d, %v", n, err)
	}
	ms, _ = s.Peek(ctx, "log/p1", 100)
	if len(ms) != 5 || ms[0].Seq != 7 {
		t.Errorf("after trims: %d messages from %d", len(ms), ms[0].Seq)
	}
	if _, err := s.EnqueueBatch(ctx, []OutboxAppend{{Stream: ""}}, nil); !errors.Is(err, ErrBadQuery) {
		t.Errorf("empty stream: %v", err)
	}
}

// TestOutboxAckBatch: one call deletes each stream's acknowledged prefix
// and nothing else; the counters go on; PeekStreams reads what is left.
func TestOutboxAckBatch(t *testing.T) {
	t.Parallel() // its own database files
	s := openTest(t, Config{})
	ctx := t.Context()
	var msgs []OutboxAppend
	for _, stream := range []string{"live/p1", "log/p1", "ack"} {
		for range 5 {
			msgs = append(msgs, OutboxAppend{Stream: stream, Payload: []byte("x")})
		}
	}
	if _, err := s.EnqueueBatch(ctx, msgs, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.AckBatch(ctx, map[string]uint64{"live/p1": 5, "log/p1": 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.AckBatch(ctx, nil); err != nil {
		t.Errorf("empty batch: %v", err)
	}
	st, err := s.OutboxStreams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]uint64{}
	for _, x := range st {
		got[x.Stream] = [2]uint64{uint64(x.Depth), x.First}
	}
	for _, tc := range []struct {
		stream       string
		depth, first uint64
	}{{"ack", 5, 1}, {"log/p1", 3, 3}, {"live/p1", 0, 0}} {
		if g := got[tc.stream]; g != [2]uint64{tc.depth, tc.first} {
			t.Errorf("%s: depth %d from %d, want %d from %d", tc.stream, g[0], g[1], tc.depth, tc.first)
		}
	}
	if seq, _ := s.Enqueue(ctx, "live/p1", nil); seq != 6 {
		t.Errorf("next live seq %d, want 6", seq)
	}
	// PeekStreams: each stream after its seq, at most limit, empty ones
	// absent.
	for _, tc := range []struct {
		after map[string]uint64
		limit int
		want  map[string][]uint64
	}{
		{map[string]uint64{"log/p1": 3, "ack": 0, "live/p1": 0, "none": 0}, 10,
			map[string][]uint64{"log/p1": {4, 5}, "ack": {1, 2, 3, 4, 5}, "live/p1": {6}}},
		{map[string]uint64{"ack": 1, "live/p1": 6}, 2, map[string][]uint64{"ack": {2, 3}}},
	} {
		got, err := s.PeekStreams(ctx, tc.after, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		seqs := map[string][]uint64{}
		for stream, ms := range got {
			for _, m := range ms {
				if m.Stream != stream {
					t.Errorf("message of %s under %s", m.Stream, stream)
				}
				seqs[stream] = append(seqs[stream], m.Seq)
			}
		}
		if fmt.Sprint(seqs) != fmt.Sprint(tc.want) {
			t.Errorf("PeekStreams(%v, %d) = %v, want %v", tc.after, tc.limit, seqs, tc.want)
		}
	}
	if _, err := s.PeekStreams(ctx, map[string]uint64{"ack": 0}, 0); !errors.Is(err, ErrBadQuery) {
		t.Errorf("limit 0: %v", err)
	}
	s.Close()
	if err := s.AckBatch(ctx, map[string]uint64{"log/p1": 3}); !errors.Is(err, ErrClosed) {
		t.Errorf("after close: %v", err)
	}
}
