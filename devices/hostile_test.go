package devices_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"plantd/devices"

	"plantd/sim"
	"plantd/sim/simtest"
	"plantd/sunspec"
)

// countingReader counts the requests a Reader serves.
type countingReader struct {
	r sunspec.Reader
	n atomic.Int64
}

func (c *countingReader) ReadHoldingRegisters(ctx context.Context, addr, n uint16, buf []uint16) ([]uint16, error) {
	c.n.Add(1)
	return c.r.ReadHoldingRegisters(ctx, addr, n, buf)
}

// TestHostileModelLength: a simulated inverter whose model 103 header
// claims L=25462 (its definition has 50), so that the chain runs to the
// end of the address space. Discovery and every poll must read 103 only to
// its defined length, in a handful of requests, and decode it.
func TestHostileModelLength(t *testing.T) {
	p := simtest.Start(t, sim.DefaultConfig())
	inv := simtest.Device(t, p, "inv1")
	if err := inv.Override(103, "L", 25462); err != nil {
		t.Fatal(err)
	}
	cr := &countingReader{r: newClient(t, newPool(t), inv, 2*time.Second)}
	info, err := devices.Discover(t.Context(), cr)
	if err != nil {
		t.Fatalf("discover: %v", err)
	}
	ref, ok := info.Ref(103)
	if !ok || ref.Len != 25462 {
		t.Fatalf("discovered %+v", info.Models)
	}
	if n := cr.n.Load(); n > 20 {
		t.Errorf("discovery took %d requests", n)
	}
	plan, err := devices.NewReadPlan(info, info.PollModels())
	if err != nil {
		t.Fatal(err)
	}
	if c := plan.Capped(); len(c) != 1 || c[0].ID != 103 {
		t.Errorf("capped models %+v, want 103", c)
	}
	cr.n.Store(0)
	insts, err := plan.Read(t.Context(), cr)
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	if n := cr.n.Load(); n > 2 {
		t.Errorf("one poll took %d requests", n)
	}
	for _, in := range insts {
		if in.Model.ID == 103 {
			if w, err := in.Float("W"); err != nil || w < 0 || w > 12000 {
				t.Errorf("103 W = %v, %v", w, err)
			}
		}
	}
}

// TestModelMaxLen: a fixed model's longest length is its definition's; a
// model with repeating groups is bounded by MaxRepeats occurrences.
func TestModelMaxLen(t *testing.T) {
	if got := sunspec.ModelByID(103).MaxLen(); got != 50 {
		t.Errorf("103: %d, want 50", got)
	}
	m160 := sunspec.ModelByID(160)
	if got := m160.MaxLen(); got <= 50 || got > 50+sunspec.MaxRepeats*20 {
		t.Errorf("160: %d", got)
	}
	for _, m := range sunspec.Models() {
		if l := m.MaxLen(); l < int(m.Group.FixedLen)-2 || l > 65535 {
			t.Errorf("model %d: MaxLen %d", m.ID, l)
		}
	}
}
