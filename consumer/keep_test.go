package consumer

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"plantd/plant"
)

// TestKeptEncoding packs a guard state and unpacks it; a short, long or
// other version's state is refused.
func TestKeptEncoding(t *testing.T) {
	at := time.UnixMilli(1_782_036_000_000)
	k := kept{has: true, out: Output{On: true, SGReady: plant.SGForced}, last: at,
		switches: []time.Time{at.Add(-40 * time.Minute), at},
		byRan:    []time.Duration{90 * time.Minute, 0}, byEnd: []time.Time{at.Add(5 * time.Hour), {}},
		dayOK: true, day: "2026-06-21", dayWh: 1234.5, estWh: 98765.25}
	b := k.encode()
	if want := 33 + 2*8 + 2*16; len(b) != want {
		t.Errorf("%d bytes, want %d", len(b), want)
	}
	var got kept
	if err := got.decode(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, k) {
		t.Errorf("decoded %+v, want %+v", got, k)
	}
	var none kept
	if err := none.decode((&kept{}).encode()); err != nil || !reflect.DeepEqual(none, kept{switches: []time.Time{}, byRan: []time.Duration{}, byEnd: []time.Time{}}) {
		t.Errorf("empty state: %+v, %v", none, err)
	}
	for name, bad := range map[string][]byte{"short": b[:len(b)-1], "long": append(b[:len(b):len(b)], 0), "version": append([]byte{9}, b[1:]...)} {
		if err := new(kept).decode(bad); !errors.Is(err, errKept) {
			t.Errorf("%s: %v, want errKept", name, err)
		}
	}
}

// memGuards is the store's consumer_guard in memory.
type memGuards struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (g *memGuards) ConsumerGuard(_ context.Context, id string) ([]byte, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, ok := g.m[id]
	return b, ok, nil
}

func (g *memGuards) SetConsumerGuard(_ context.Context, id string, state []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.m[id] = state
	return nil
}

// deadDriver never answers.
type deadDriver struct{}

func (deadDriver) Read(context.Context) (Reading, error) { return Reading{}, errors.New("no answer") }
func (deadDriver) Set(context.Context, Output) error     { return errors.New("no answer") }
func (deadDriver) Watchdog() time.Duration               { return 0 }
func (deadDriver) Close() error                          { return nil }
func (deadDriver) Fallback() Output                      { return Output{} }

// TestKeptWhileOffline: a consumer that never answers during a run keeps
// the guard state of the run before, untouched at stop.
func TestKeptWhileOffline(t *testing.T) {
	at := time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC)
	k := kept{has: true, out: Output{On: true}, last: at.Add(-2 * time.Minute), switches: []time.Time{at.Add(-2 * time.Minute)}}
	g := &memGuards{m: map[string][]byte{"heater": k.encode()}}
	before := g.m["heater"]
	failed := make(chan struct{}, 1)
	sink := func(s plant.Sample) {
		if s.Err != nil {
			select {
			case failed <- struct{}{}:
			default:
			}
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	m, err := New(ctx, []Spec{{ID: "heater", PlantID: "p", Driver: deadDriver{}, RatedW: 3000, MinOn: 10 * time.Minute,
		MaxSwitchesPerHour: 4, Interval: 50 * time.Millisecond}}, Deps{Sink: sink, Guards: g, Now: func() time.Time { return at }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	<-failed
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, _, _ := g.ConsumerGuard(t.Context(), "heater"); !bytes.Equal(got, before) {
		t.Errorf("kept state changed by a run that never read the device: %x, was %x", got, before)
	}
}
