package mqtt

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
	"plantd/store"
)

// outboxLive reads, from the database file at path (a connection of its
// own, read-only), the live streams' rows in the outbox and their
// counters in outbox_seq (stream → next seq).
func outboxLive(t *testing.T, path string) (rows int, next map[string]uint64) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`SELECT count(*) FROM outbox WHERE stream LIKE 'live/%'`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	r, err := db.Query(`SELECT stream, next FROM outbox_seq WHERE stream LIKE 'live/%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	next = map[string]uint64{}
	for r.Next() {
		var s string
		var n uint64
		if err := r.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		next[s] = n
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return rows, next
}

// TestLiveInMemory: against a real mosquitto, live values go out at every
// tick without touching the outbox (no live row, the outbox's live
// counters unchanged across dozens of ticks; the only write is the seq
// reservation at the first tick), their seqs are contiguous while
// connected, and a restart on the same database numbers above the run
// before. A database of a plantd that numbered live streams in the
// outbox continues above those numbers and loses its live rows (counted).
func TestLiveInMemory(t *testing.T) {
	t.Parallel() // its own brokers, stores and uplinks
	streams := []string{"live/p1", "live/devices/inv1"}
	for _, tc := range []struct {
		name string
		// old: live rows an older plantd left (seqs 1..old, the last
		// 5 unacknowledged).
		old int
	}{
		{"new database", 0},
		{"database of a plantd with live values in the outbox", 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBroker(t, nil)
			col := mqtttest.Collect(t, b)
			path := filepath.Join(t.TempDir(), "plantd.db")
			st := openStore(t, path)
			ctx := context.Background()
			if tc.old > 0 {
				var msgs []store.OutboxAppend
				for _, s := range streams {
					for i := range tc.old {
						msgs = append(msgs, store.OutboxAppend{Stream: s, Payload: fmt.Appendf(nil, `[{"old":%d}]`, i+1)})
					}
				}
				if _, err := st.EnqueueBatch(ctx, msgs, nil); err != nil {
					t.Fatal(err)
				}
				acked := map[string]uint64{}
				for _, s := range streams {
					acked[s] = uint64(tc.old - 5)
				}
				if err := st.AckBatch(ctx, acked); err != nil {
					t.Fatal(err)
				}
			}
			cfg := fastConfig(b, "gw-mem-"+fmt.Sprint(tc.old))
			var prevHigh map[string]uint64
			var mark int64
			for run := 1; run <= 2; run++ {
				u, err := New(cfg, Deps{Outbox: st, Live: fakeLive{}}, testLogger())
				if err != nil {
					t.Fatal(err)
				}
				stop := runUplink(t, u)
				first := map[string]int{}
				for _, s := range streams {
					first[s] = len(col.Seqs(s))
				}
				proctest.WaitFor(t, "the first live values", 10*time.Second, func() bool {
					return len(col.Seqs("live/p1")) >= first["live/p1"]+3 && len(col.Seqs("live/devices/inv1")) >= first["live/devices/inv1"]+3
				})
				rows0, next0 := outboxLive(t, path)
				m0, ok, err := st.Mark(ctx, liveSeqMark)
				if err != nil || !ok {
					t.Fatalf("run %d: live seq mark: %d %v %v", run, m0, ok, err)
				}
				at := map[string]int{}
				for _, s := range streams {
					at[s] = len(col.Seqs(s))
				}
				// Dozens of ticks, the outbox watched at each arrival.
				proctest.WaitFor(t, "40 more live values per stream", 30*time.Second, func() bool {
					if rows, _ := outboxLive(t, path); rows != 0 {
						t.Fatalf("run %d: %d live rows in the outbox", run, rows)
					}
					return len(col.Seqs("live/p1")) >= at["live/p1"]+40 && len(col.Seqs("live/devices/inv1")) >= at["live/devices/inv1"]+40
				})
				rows1, next1 := outboxLive(t, path)
				m1, _, _ := st.Mark(ctx, liveSeqMark)
				if run == 1 && tc.old > 0 {
					for _, s := range streams {
						if d := droppedOf(u, s); d != 5 {
							t.Errorf("%s: %d dropped while connected, want the older plantd's 5 live rows", s, d)
						}
					}
				}
				stop()
				t.Logf("run %d: live rows in the outbox %d then %d; outbox live counters %v then %v; mark %d then %d",
					run, rows0, rows1, next0, next1, m0, m1)
				if rows0 != 0 || rows1 != 0 || !maps.Equal(next0, next1) || m0 != m1 {
					t.Errorf("run %d: the live ticks touched the outbox: rows %d→%d, counters %v→%v, mark %d→%d", run, rows0, rows1, next0, next1, m0, m1)
				}
				if m0 <= mark {
					t.Errorf("run %d: mark %d not above the last run's %d", run, m0, mark)
				}
				high := map[string]uint64{}
				for _, s := range streams {
					// This run's: above the last run's mark (a message of
					// the last run may arrive after it stopped).
					seqs := slices.DeleteFunc(slices.Clone(col.Seqs(s)[first[s]:]), func(q uint64) bool { return q <= uint64(mark) })
					// Contiguous while connected: each seq the last + 1.
					for i := 1; i < len(seqs); i++ {
						if seqs[i] != seqs[i-1]+1 {
							t.Errorf("run %d, %s: seq %d after %d (%d live messages dropped: %d)", run, s, seqs[i], seqs[i-1],
								len(seqs), droppedOf(u, s))
							break
						}
					}
					high[s] = seqs[len(seqs)-1]
					if h := col.Historical(s); h != 0 {
						t.Errorf("%s: %d historical live messages", s, h)
					}
					switch {
					case run == 1 && tc.old == 0 && seqs[0] != 1:
						t.Errorf("%s: a new database's first live seq is %d, want 1", s, seqs[0])
					case run == 1 && tc.old > 0 && seqs[0] <= uint64(tc.old):
						t.Errorf("%s: first live seq %d, the older plantd's outbox had numbered up to %d", s, seqs[0], tc.old)
					case run == 2 && seqs[0] <= prevHigh[s]:
						t.Errorf("%s: the restart's first live seq %d is not above the last run's %d", s, seqs[0], prevHigh[s])
					}
				}
				prevHigh, mark = high, m0
			}
		})
	}
}

// droppedOf is a stream's dropped count in u's status.
func droppedOf(u *Uplink, stream string) uint64 {
	i := slices.IndexFunc(u.Status().Streams, func(s StreamStatus) bool { return s.Stream == stream })
	if i < 0 {
		return 0
	}
	return u.Status().Streams[i].Dropped
}

// fakeEEBus is a plant p1's control box over EEBus in failsafe.
type fakeEEBus struct{}

func (fakeEEBus) EEBusItem(plantID string) (any, bool) {
	if plantID != "p1" {
		return nil, false
	}
	return map[string]any{"plantId": "p1", "connected": false, "failsafe": true, "consumptionLimitW": 4200}, true
}

// TestLiveEEBus: with a control box over EEBus, its state goes up with
// the live values on live/eebus/<plantId>, an item per tick.
func TestLiveEEBus(t *testing.T) {
	t.Parallel() // its own broker, store and uplink
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	st := openStore(t, filepath.Join(t.TempDir(), "plantd.db"))
	u, err := New(fastConfig(b, "gw-eebus"), Deps{Outbox: st, Live: fakeLive{}, EEBus: fakeEEBus{}}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	runUplink(t, u)
	items := proctest.WaitValue(t, "the control box's state on live/eebus/p1", 10*time.Second, func() ([]json.RawMessage, bool) {
		its := col.ItemsOf("live/eebus/p1")
		return its, len(its) >= 2
	})
	var it struct {
		PlantID           string
		Failsafe          bool
		ConsumptionLimitW float64
	}
	if err := json.Unmarshal(items[0], &it); err != nil || it.PlantID != "p1" || !it.Failsafe || it.ConsumptionLimitW != 4200 {
		t.Errorf("item %s: %+v %v", items[0], it, err)
	}
}
