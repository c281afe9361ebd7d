package drivers

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"plantd/consumer"
)

// TestSGReadyStates sets the four states on the simulated heat pump
// (coils 2, 3: one write each) and reads them back; the pump's draw
// follows, in the plant's balance too.
func TestSGReadyStates(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	d, err := NewSGReady(r.client("rb"), SGReadyConfig{CoilA: 2, CoilB: 3, Watchdog: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	base := r.p.Balance().LoadW - r.load(t, "hp").PowerW
	tests := []struct {
		set   consumer.Output
		state int
		coils [2]bool
		w     float64
	}{
		{consumer.Output{SGReady: consumer.SGForced}, consumer.SGForced, [2]bool{true, true}, 2400},
		{consumer.Output{SGReady: consumer.SGLocked}, consumer.SGLocked, [2]bool{true, false}, 0},
		{consumer.Output{SGReady: consumer.SGRecommend}, consumer.SGRecommend, [2]bool{false, true}, 1600},
		{consumer.Output{SGReady: consumer.SGNormal}, consumer.SGNormal, [2]bool{false, false}, 700},
		{consumer.Output{On: true}, consumer.SGRecommend, [2]bool{false, true}, 1600},
		{consumer.Output{On: false}, consumer.SGNormal, [2]bool{false, false}, 700},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%+v", tt.set), func(t *testing.T) {
			writes := len(r.p.Trace("rb"))
			if err := d.Set(ctx, tt.set); err != nil {
				t.Fatal(err)
			}
			got, err := d.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := (consumer.Output{SGReady: tt.state, On: tt.state >= consumer.SGRecommend}); got.Output != want || got.HasPower {
				t.Errorf("Read = %+v, want %+v", got, want)
			}
			st := r.board(t)
			if [2]bool{st.Coils[2], st.Coils[3]} != tt.coils {
				t.Errorf("coils 2, 3 = %v, %v; want %v", st.Coils[2], st.Coils[3], tt.coils)
			}
			hp := r.load(t, "hp")
			if hp.SGReady != tt.state || hp.PowerW != tt.w {
				t.Errorf("heat pump in state %d drawing %v W, want %d, %v W", hp.SGReady, hp.PowerW, tt.state, tt.w)
			}
			if lw := r.p.Balance().LoadW - base; math.Abs(lw-tt.w) > 1e-6 {
				t.Errorf("the plant's load counts %v W of the pump, want %v", lw, tt.w)
			}
			// Adjacent coils: one write of both (after the arming's two
			// register writes the first time).
			tr := r.p.Trace("rb")[writes:]
			if last := tr[len(tr)-1]; last.Addr != 2 || last.Count != 2 || len(tr) > 3 {
				t.Errorf("writes %+v, want one of coils 2+2", tr)
			}
		})
	}
	if err := d.Set(ctx, consumer.Output{SGReady: 5}); !errors.Is(err, ErrSGState) {
		t.Errorf("Set(5) = %v, want ErrSGState", err)
	}
	if d.Watchdog() != 10*time.Second {
		t.Errorf("Watchdog() = %v", d.Watchdog())
	}
}

// TestSGReadyApart drives contacts on coils that are not adjacent (A 7,
// B 5): each state takes two single writes, read back with one read, and
// no switch passes through the lock or forced operation on the way to
// another state.
func TestSGReadyApart(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	d, err := NewSGReady(r.client("rb"), SGReadyConfig{CoilA: 7, CoilB: 5})
	if err != nil {
		t.Fatal(err)
	}
	a, b := false, false // the contacts as the pump sees them
	for _, from := range []int{consumer.SGNormal, consumer.SGLocked, consumer.SGRecommend, consumer.SGForced} {
		for _, to := range []int{consumer.SGNormal, consumer.SGLocked, consumer.SGRecommend, consumer.SGForced} {
			if err := d.Set(ctx, consumer.Output{SGReady: from}); err != nil {
				t.Fatal(err)
			}
			a, b = sgContacts[from][0], sgContacts[from][1]
			writes := len(r.p.Trace("rb"))
			if err := d.Set(ctx, consumer.Output{SGReady: to}); err != nil {
				t.Fatal(err)
			}
			tr := r.p.Trace("rb")[writes:]
			if len(tr) != 2 {
				t.Fatalf("%d -> %d: %d writes, want 2", from, to, len(tr))
			}
			for _, e := range tr {
				p, ok := e.Point(fmt.Sprintf("coil[%d]", e.Addr))
				if !ok || e.Count != 1 {
					t.Fatalf("write %+v, want one coil", e)
				}
				switch e.Addr {
				case 7:
					a = p.Value == 1
				case 5:
					b = p.Value == 1
				}
				if s := sgState(a, b); s != from && s != to && (s == consumer.SGLocked || s == consumer.SGForced) {
					t.Errorf("%d -> %d passed through state %d", from, to, s)
				}
			}
			got, err := d.Read(ctx)
			if err != nil || got.Output.SGReady != to {
				t.Errorf("%d -> %d: read %+v, %v", from, to, got, err)
			}
		}
	}
}
