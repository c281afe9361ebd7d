package gridcontrol_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"plantd/gridcontrol"
	"plantd/plant"
	"plantd/store"
	"plantd/sunspec"
)

// storeBetween is the real store with its first schedule write and the
// controller's load of the stored schedules made to cross: the write
// lands, then load reads the store (and finds the schedule), and only
// once load is done does the write return to Submit.
type storeBetween struct {
	*store.Store
	once   sync.Once
	stored chan struct{}
	loaded func() <-chan struct{}
}

func (s *storeBetween) PutSchedule(ctx context.Context, sc plant.Schedule) error {
	if err := s.Store.PutSchedule(ctx, sc); err != nil {
		return err
	}
	first := false
	s.once.Do(func() { first = true })
	if first {
		close(s.stored)
		<-s.loaded()
	}
	return nil
}

func (s *storeBetween) Schedules(ctx context.Context, plantID string) ([]plant.Schedule, error) {
	<-s.stored
	return s.Store.Schedules(ctx, plantID)
}

// TestSubmitDuringLoadHeldOnce: a schedule submitted while Run loads the
// stored ones, stored before load reads the store and held by Submit only
// after load took it from there, is held once: listed once and active,
// not superseded by its own copy (as it was when load and Submit each
// held one).
func TestSubmitDuringLoadHeldOnce(t *testing.T) {
	t.Parallel()
	st, err := store.Open(context.Background(), store.Config{Path: filepath.Join(t.TempDir(), "plantd.db"),
		Plants: []store.PlantInfo{{ID: "demo", Location: time.UTC}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithCancel(context.Background())
	sdone := make(chan struct{})
	go func() { defer close(sdone); _ = st.Run(sctx) }()
	t.Cleanup(func() { scancel(); <-sdone; _ = st.Close() })

	sb := &storeBetween{Store: st, stored: make(chan struct{})}
	live := plant.NewLive([]plant.Plant{{ID: "demo", Name: "Demo", Location: time.UTC}}, nil, time.Now)
	gc, err := gridcontrol.New(gridcontrol.Config{}, sb, live, func(string) (sunspec.ReadWriter, bool) { return nil, false }, nil)
	if err != nil {
		t.Fatal(err)
	}
	sb.loaded = gc.Loaded
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	sc, err := gc.Submit(context.Background(), "demo", gridOperator, []gridcontrol.Order{{Command: "opModMaxLimW", For: time.Hour, Value: ptr(30.0), Unit: "%"}},
		gridcontrol.SkipEligibilityCheck(true))
	if err != nil {
		t.Fatal(err)
	}
	list, err := gc.Schedules("demo")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ScheduleID != sc.ScheduleID {
		t.Fatalf("listed %d schedules, want the one submitted once: %+v", len(list), list)
	}
	if s := list[0].Commands[0].Status; s == gridcontrol.StatusSuperseded {
		t.Errorf("the window is %s: the schedule was held twice", s)
	}
}
