package mqtt

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
)

// fakePlan is plant p1's tariffs and plan; version changes both.
type fakePlan struct{ version atomic.Int64 }

// TariffsItem's fromUtc moves with the clock, outside the key.
func (f *fakePlan) TariffsItem(plantID string) (json.RawMessage, []byte, bool) {
	if plantID != "p1" {
		return nil, nil, false
	}
	v := f.version.Load()
	return json.RawMessage(fmt.Sprintf(`{"configured":true,"plantId":"p1","stale":false,"fromUtc":%q,"slots":[{"startUtc":"2026-12-06T12:00:00Z","endUtc":"2026-12-06T13:00:00Z","importEurPerKWh":0.%d,"feedInEurPerKWh":0.08,"source":"fixed"}]}`,
		time.Now().UTC().Format(time.RFC3339Nano), 30+v)), []byte{byte(v)}, true
}

func (f *fakePlan) PlanItem(plantID string) (json.RawMessage, []byte, bool) {
	if plantID != "p1" {
		return nil, nil, false
	}
	item := json.RawMessage(fmt.Sprintf(`{"configured":true,"plantId":"p1","savingEur":%d,"steps":[{"startUtc":"2026-12-06T12:00:00Z","battery":"hold","socPct":50}]}`, f.version.Load()))
	return item, item, true
}

// TestLivePlan: the tariffs and the plan go up on live/tariffs/<plantId>
// and live/plan/<plantId> once, again only when their key changes (not
// with the tariffs' fromUtc, which moves with the clock), and once more
// after a reconnect (live messages are not replayed); the item is the
// source's with its time.
func TestLivePlan(t *testing.T) {
	t.Parallel() // its own broker, store and uplink
	b := newBroker(t, nil)
	col := mqtttest.Collect(t, b)
	st := openStore(t, filepath.Join(t.TempDir(), "plantd.db"))
	src := &fakePlan{}
	u, err := New(fastConfig(b, "gw-plan"), Deps{Outbox: st, Live: fakeLive{}, Plan: src}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	runUplink(t, u)
	type item struct {
		Time      string
		PlantID   string
		SavingEur *float64
		Slots     []struct{ ImportEurPerKWh float64 }
		Steps     []struct{ Battery string }
	}
	// Enough live ticks (50 ms) for any repeat to show: 40 of the plant's
	// balance.
	ticks := func(n int) {
		t.Helper()
		from := len(col.ItemsOf("live/p1"))
		proctest.WaitFor(t, fmt.Sprintf("%d live ticks", n), 10*time.Second, func() bool { return len(col.ItemsOf("live/p1")) >= from+n })
	}
	want := func(stage string, n int, imp, saving float64) {
		t.Helper()
		var tar, pl []json.RawMessage
		proctest.WaitFor(t, stage, 10*time.Second, func() bool {
			tar, pl = col.ItemsOf("live/tariffs/p1"), col.ItemsOf("live/plan/p1")
			return len(tar) >= n && len(pl) >= n
		})
		ticks(40)
		tar, pl = col.ItemsOf("live/tariffs/p1"), col.ItemsOf("live/plan/p1")
		if len(tar) != n || len(pl) != n {
			t.Fatalf("%s: %d tariffs and %d plan items, want %d each", stage, len(tar), len(pl), n)
		}
		var ti, pi item
		if err := json.Unmarshal(tar[n-1], &ti); err != nil || ti.PlantID != "p1" || len(ti.Slots) != 1 || ti.Slots[0].ImportEurPerKWh != imp {
			t.Errorf("%s: tariffs item %s: %+v %v", stage, tar[n-1], ti, err)
		}
		if err := json.Unmarshal(pl[n-1], &pi); err != nil || pi.SavingEur == nil || *pi.SavingEur != saving || len(pi.Steps) != 1 || pi.Steps[0].Battery != "hold" {
			t.Errorf("%s: plan item %s: %+v %v", stage, pl[n-1], pi, err)
		}
		for _, it := range []item{ti, pi} {
			if at, err := time.Parse(time.RFC3339Nano, it.Time); err != nil || time.Since(at) > time.Minute {
				t.Errorf("%s: item time %q: %v", stage, it.Time, err)
			}
		}
	}
	want("first connection", 1, 0.30, 0)
	src.version.Store(1)
	want("after a change", 2, 0.31, 1)
	b.Kill()
	b.Start()
	want("after a reconnect", 3, 0.31, 1)
	if _, dups, gaps := col.Check("live/plan/p1", true); dups != 0 || len(gaps) != 0 {
		t.Errorf("live/plan/p1: %d duplicates, gaps %v", dups, gaps)
	}
}
