package gridcontrol

import (
	"slices"
	"testing"
	"time"
)

// TestEdgesFireOncePerPassInTimeOrder: the armed edges fire when the clock
// passes them, each once and in time order however far the clock jumps
// (a DST change, a stepped clock, a machine back from suspend); a
// recurring spec passed several times fires once and waits for its next
// time after now; re-arming a plant leaves the other plants' edges alone.
func TestEdgesFireOncePerPassInTimeOrder(t *testing.T) {
	t0 := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC)
	var fired []string
	job := func(name string) func(time.Time) {
		return func(due time.Time) { fired = append(fired, name+"@"+due.Format("15:04")) }
	}
	hourly, err := parseSpec("0 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	var e edges
	e.replace("a", t0, []edge{
		{plant: "a", sched: once(t0.Add(2 * time.Hour)), job: job("a-end")},
		{plant: "a", sched: once(t0.Add(30 * time.Minute)), job: job("a-start")},
		{plant: "a", sched: once(t0.Add(-time.Minute)), job: job("a-past")}, // dropped: not after now
	})
	e.replace("b", t0, []edge{{plant: "b", sched: hourly, job: job("b-hourly")}})
	if next, ok := e.nearest(); !ok || !next.Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("nearest: %v %v, want 01:00", next, ok)
	}

	steps := []struct {
		by   time.Duration
		want []string
	}{
		{29 * time.Minute, nil}, // 00:59
		{time.Minute, []string{"a-start@01:00", "b-hourly@01:00"}}, // 01:00: both due at once
		{0, nil}, // the same time again: nothing twice
		{3*time.Hour + 10*time.Minute, []string{"b-hourly@02:00", "a-end@02:30"}}, // 04:10: a jump over 02:00, 02:30, 03:00, 04:00
		{50 * time.Minute, []string{"b-hourly@05:00"}},                            // 05:00: the spec's next after the jump
	}
	now := t0
	for i, s := range steps {
		now = now.Add(s.by)
		fired = nil
		if n := e.fire(now); n != len(s.want) {
			t.Errorf("step %d (%s): %d fired, want %d", i, now.Format("15:04"), n, len(s.want))
		}
		if !slices.Equal(fired, s.want) {
			t.Errorf("step %d (%s): fired %v, want %v", i, now.Format("15:04"), fired, s.want)
		}
	}
	// Re-arming a leaves b's edge; a with nothing ahead has no edge left.
	e.replace("a", now, nil)
	if len(e.list) != 1 || e.list[0].plant != "b" || !e.list[0].next.Equal(t0.Add(5*time.Hour+30*time.Minute)) {
		t.Errorf("after re-arming a: %+v", e.list)
	}
}
