package gridinput

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"plantd/gridinput/inputconfig"
)

// bitsReader answers the bits it holds, or err.
type bitsReader struct {
	mu   sync.Mutex
	bits []bool
	err  error
}

func (r *bitsReader) ReadInputs(context.Context) ([]bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bits, r.err
}

// clockGrid is a submitter on a clock the test holds: a window ends its
// length after the clock's now.
type clockGrid struct {
	fakeGrid
	now    func() time.Time
	err    error         // guarded by fakeGrid.mu
	failed chan struct{} // a submit that failed
}

func (g *clockGrid) setErr(err error) { g.mu.Lock(); g.err = err; g.mu.Unlock() }

func (g *clockGrid) Submit(ctx context.Context, plantID string, a inputconfig.Action, length time.Duration, by Origin) (string, time.Time, error) {
	g.mu.Lock()
	err := g.err
	g.mu.Unlock()
	if err != nil {
		select {
		case g.failed <- struct{}{}:
		default:
		}
		return "", time.Time{}, err
	}
	// The end before the call is seen: a test that advances the clock
	// once it sees the call must not move this window's end.
	end := g.now().Add(time.Hour)
	id, _, err := g.fakeGrid.Submit(ctx, plantID, a, length, by)
	return id, end, err
}

// TestInputRenews: while the signal stands, the window is renewed from
// half its length on (a new one first, then the old one ended), on the
// controller's clock; a failed submit is tried again at the next poll.
func TestInputRenews(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 6, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	grid := &clockGrid{fakeGrid: fakeGrid{calls: make(chan call, 16)}, now: clock, failed: make(chan struct{}, 1)}
	rd := &bitsReader{bits: []bool{false, false, true, false}}
	in, err := New(Spec{ID: "rcr", PlantID: "p1", Reader: rd, Contacts: map[string]int{"K1": 0, "K2": 1, "K3": 2, "K4": 3},
		Actions: receiver(), PollInterval: 10 * time.Millisecond, Window: time.Hour},
		Deps{Submitter: grid, Now: clock}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	defer func() { cancel(); <-done }()

	if c := await(t, grid.calls, "submit"); c.op != "submit" || c.id != "s1" || c.end != "+1h0m0s" {
		t.Fatalf("got %+v, want s1 for 1 h", c)
	}
	advance(29 * time.Minute)
	select {
	case c := <-grid.calls:
		t.Fatalf("renewed before half the window: %+v", c)
	default:
	}
	advance(time.Minute)
	if c := await(t, grid.calls, "renewal"); c.op != "submit" || c.id != "s2" || c.by != "input:rcr/K3" {
		t.Fatalf("got %+v, want the renewal s2", c)
	}
	if c := await(t, grid.calls, "end of s1"); c.op != "end" || c.id != "s1" {
		t.Fatalf("got %+v, want s1 ended after s2 was stored", c)
	}

	// A submit that fails is tried again at the next poll.
	grid.setErr(errors.New("store busy"))
	rd.mu.Lock()
	rd.bits = []bool{false, true, false, false}
	rd.mu.Unlock()
	await(t, grid.failed, "a failed submit")
	await(t, grid.failed, "a second try")
	grid.setErr(nil)
	if c := await(t, grid.calls, "K2"); c.op != "submit" || c.value != 60 {
		t.Fatalf("got %+v, want K2's 60 %%", c)
	}
}

// TestInputEndsEarlierRun: the windows an earlier run left open are ended
// once the contacts decide: at once when they are open, after the new
// window is stored when one is closed.
func TestInputEndsEarlierRun(t *testing.T) {
	tests := []struct {
		name  string
		bits  []bool
		calls []string // op id
	}{
		{"contacts open", []bool{false, false, false, false}, []string{"end old1"}},
		{"K3 closed", []bool{false, false, true, false}, []string{"submit s1", "end old1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			grid := &fakeGrid{calls: make(chan call, 16), open: []string{"old1"}}
			in, err := New(Spec{ID: "rcr", PlantID: "p1", Reader: &bitsReader{bits: tt.bits},
				Contacts: map[string]int{"K1": 0, "K2": 1, "K3": 2, "K4": 3}, Actions: receiver(), PollInterval: 10 * time.Millisecond},
				Deps{Submitter: grid}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- in.Run(ctx) }()
			defer func() { cancel(); <-done }()
			for _, want := range tt.calls {
				if c := await(t, grid.calls, want); c.op+" "+c.id != want {
					t.Fatalf("got %+v, want %s", c, want)
				}
			}
		})
	}
}
