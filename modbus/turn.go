package modbus

import (
	"context"
	"sync"
)

// class is a request's place in an endpoint's queue: a control request
// (a [Client] of [Endpoint.ControlUnit]) takes the turn before every
// ordinary request that waits (the poller's reads, a proxied master's).
// The zero value is ordinary, so that no client is a control client
// unless made one.
type class int

const (
	classOrdinary class = iota
	classControl
	numClasses
)

// byPriority is the order in which release serves the queues.
var byPriority = [numClasses]class{classControl, classOrdinary}

// turn serialises an endpoint's requests: one holder at a time; the
// others wait in one queue per class, first come first served within it,
// and the holder's release hands the turn to the first waiter of the
// first class in byPriority that has one. So a control request waits for
// the request in flight only, not for every poll queued before it, and
// grid control renews a limit within its reversion timeout even on a bus
// whose units' polls keep the queue full. Control requests are a few per
// device and cycle, so ordinary ones are delayed, never starved.
//
// A request that got its turn at once costs a lock and an unlock; one
// that waits takes a signal channel from a sync.Pool, so that waiting
// allocates nothing in the steady state.
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

// release hands the turn to the first waiter of the first class in
// byPriority that has one, or frees it.
func (t *turn) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range byPriority {
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
