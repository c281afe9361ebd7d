package modbus

import (
	"context"
	"sync"
)

// class is a request's place in an endpoint's queue: a control request
// (a [Client] of [Endpoint.ControlUnit]) takes the turn before every
// ordinary request that waits (the poller's reads, a proxied master's).
type class int

const (
	classControl class = iota
	classOrdinary
	numClasses
)

// turn serialises an endpoint's requests: one holder at a time; the
// others wait in one queue per class, first come first served within it,
// and the holder's release hands the turn to the first waiter of the
// first class that has one. A grid operator's limit is renewed by
// control requests within its reversion timeout even on a bus whose
// units' polls keep the queue full: a control request waits for the
// request in flight only, not for every poll queued before it.
//
// A request that got its turn at once costs a lock and an unlock; one
// that waits uses a signal channel of a pool, so that waiting allocates
// nothing once the pool holds one per waiter.
type turn struct {
	mu      sync.Mutex
	held    bool
	waiting [numClasses][]chan struct{}
}

// signals are the waiters' channels (capacity 1: the release's signal
// never blocks).
var signals = sync.Pool{New: func() any { return make(chan struct{}, 1) }}

// take takes the turn if nobody holds it and reports whether it did.
func (t *turn) take() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held {
		return false
	}
	t.held = true
	return true
}

// wait waits for the turn in c's queue until ctx ends or done is closed;
// on an error the caller does not hold the turn.
func (t *turn) wait(ctx context.Context, c class, done <-chan struct{}) error {
	t.mu.Lock()
	if !t.held {
		t.held = true
		t.mu.Unlock()
		return nil
	}
	sig := signals.Get().(chan struct{})
	t.waiting[c] = append(t.waiting[c], sig)
	t.mu.Unlock()
	var err error
	select {
	case <-sig:
		signals.Put(sig)
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-done:
		err = ErrClosed
	}
	t.mu.Lock()
	if t.dequeue(c, sig) {
		t.mu.Unlock()
		signals.Put(sig)
		return err
	}
	t.mu.Unlock()
	// The turn was handed over meanwhile: pass it on.
	<-sig
	signals.Put(sig)
	t.release()
	return err
}

// dequeue removes sig from c's queue and reports whether it was there.
// The caller holds mu.
func (t *turn) dequeue(c class, sig chan struct{}) bool {
	q := t.waiting[c]
	for i, s := range q {
		if s == sig {
			copy(q[i:], q[i+1:])
			q[len(q)-1] = nil
			t.waiting[c] = q[:len(q)-1]
			return true
		}
	}
	return false
}

// release hands the turn to the first waiter of the first class that has
// one, or frees it.
func (t *turn) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.waiting {
		if q := t.waiting[c]; len(q) > 0 {
			sig := q[0]
			copy(q, q[1:])
			q[len(q)-1] = nil
			t.waiting[c] = q[:len(q)-1]
			sig <- struct{}{}
			return
		}
	}
	t.held = false
}
