package modbus

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"plantd/internal/proctest"
)

// TestControlRequestsGoFirst: requests queue for an endpoint's turn one
// after another while the test holds it; on its release the server must
// see them in turn order: every control request (Endpoint.ControlUnit)
// before every ordinary one, first come first served within each, and a
// request whose context ended while it waited leaves its queue without
// disturbing the others.
func TestControlRequestsGoFirst(t *testing.T) {
	type req struct {
		unit    byte
		control bool
		cancel  bool // its context ends while it waits
	}
	for _, tt := range []struct {
		name string
		reqs []req
		want []byte // units in the order the server sees them
	}{
		{"control after polls", []req{{unit: 1}, {unit: 2}, {unit: 3}, {unit: 9, control: true}}, []byte{9, 1, 2, 3}},
		{"two controls keep their order", []req{{unit: 1}, {unit: 8, control: true}, {unit: 2}, {unit: 9, control: true}}, []byte{8, 9, 1, 2}},
		{"ordinary only: first come first served", []req{{unit: 3}, {unit: 1}, {unit: 2}}, []byte{3, 1, 2}},
		{"cancelled waiters leave", []req{{unit: 1}, {unit: 7, control: true, cancel: true}, {unit: 2, cancel: true}, {unit: 9, control: true}, {unit: 3}}, []byte{9, 1, 3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startFaultServer(t)
			ep := newTestPool(t).Endpoint(EndpointConfig{Address: srv.addr()})
			if _, err := ep.Unit(100, 0).ReadHoldingRegisters(t.Context(), 0, 1, nil); err != nil {
				t.Fatal(err) // connected: the order below is not a connect's
			}
			if !ep.turn.take() {
				t.Fatal("the endpoint's turn is held")
			}
			errs := make(chan error, len(tt.reqs))
			var cancels []context.CancelFunc
			for i, r := range tt.reqs {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if r.cancel {
					cancels = append(cancels, cancel)
				}
				c := ep.Unit(r.unit, 5*time.Second)
				if r.control {
					c = ep.ControlUnit(r.unit, 5*time.Second)
				}
				go func() {
					_, err := c.ReadHoldingRegisters(ctx, 0, 1, nil)
					if r.cancel && errors.Is(err, context.Canceled) {
						err = nil
					}
					errs <- err
				}()
				proctest.WaitFor(t, fmt.Sprintf("request %d waiting", i+1), 10*time.Second, func() bool { return ep.Stats().Waiting == int64(i+1) })
			}
			for _, cancel := range cancels {
				cancel()
			}
			proctest.WaitFor(t, "the cancelled requests gone", 10*time.Second, func() bool {
				return ep.Stats().Waiting == int64(len(tt.reqs)-len(cancels))
			})
			ep.turn.release()
			for range tt.reqs {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
			var got []byte
			for _, r := range srv.requests()[1:] {
				got = append(got, r.unit)
			}
			if string(got) != string(tt.want) {
				t.Errorf("units in the server's order %v, want %v", got, tt.want)
			}
		})
	}
}

// TestTurnHandedOverWhileCancelled: a waiter whose context ends just as
// the turn is handed to it passes the turn on, so the next waiter still
// gets it and the endpoint is not left held. Run many times so that the
// hand-over and the cancellation race (go test -race).
func TestTurnHandedOverWhileCancelled(t *testing.T) {
	var tn turn
	for i := range 2000 {
		if !tn.take() {
			t.Fatalf("round %d: the turn is held at the start", i)
		}
		ctx, cancel := context.WithCancel(t.Context())
		first := make(chan error, 1)
		go func() { first <- tn.wait(ctx, classOrdinary, nil) }()
		second := make(chan error, 1)
		go func() { second <- tn.wait(t.Context(), classOrdinary, nil) }()
		go cancel()
		tn.release()
		if err := <-first; err == nil {
			tn.release() // it got the turn before its context ended
		}
		if err := <-second; err != nil {
			t.Fatalf("round %d: second waiter: %v", i, err)
		}
		tn.release()
	}
	if !tn.take() {
		t.Fatal("the turn is held after the last round")
	}
}
