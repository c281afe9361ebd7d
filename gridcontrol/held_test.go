package gridcontrol_test

import (
	"slices"
	"testing"
	"time"
)

// TestHeldModels: while a limit window holds the inverters, their limit
// models are held; nothing is before the window, and after it once the
// limit is restored.
func TestHeldModels(t *testing.T) {
	r := newRig(t, rigOpts{stepped: true})
	gc := r.controller()
	if m := gc.HeldModels("inv1"); m != nil {
		t.Fatalf("held before any window: %v", m)
	}
	r.mustSubmit(`{"commands":[{"command":"opModMaxLimW","start":"+0s","end":"+3s","value":50,"unit":"%"}]}`)
	r.await("inv1 limited", 10*time.Second, func() bool { return r.limitOf("inv1") == 50 })
	for _, id := range []string{"inv1", "inv2"} {
		if m := gc.HeldModels(id); !slices.Equal(m, []uint16{123, 704}) {
			t.Errorf("%s holds %v during the window, want [123 704]", id, m)
		}
	}
	if m := gc.HeldModels("meter"); m != nil {
		t.Errorf("the meter holds %v", m)
	}
	r.await("the limit released", 30*time.Second, func() bool { return gc.HeldModels("inv1") == nil && gc.HeldModels("inv2") == nil })
}
