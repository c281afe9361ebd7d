package channels

import (
	"errors"
	. "plantd/plant"
	"slices"
	"testing"
	"time"
)

// TestPolledRegs: the control models' registers of the latest successful
// poll are kept as copies (the poller reuses its buffers), numbered by
// the device's successful polls; a failed poll keeps them and the number.
func TestPolledRegs(t *testing.T) {
	plants, devs := testPlant()
	l := NewLive(plants, devs, fixedClock(t0))
	if regs, n := l.PolledRegs("inv1", 123, nil); regs != nil || n != 0 {
		t.Fatalf("before any poll: %v, %d", regs, n)
	}
	m123 := mk(t, 123, nil, val("WMaxLimPct", 20), raw("WMaxLim_Ena", 1))
	l.Apply(sample("inv1", t0, mk(t, 103, nil, val("W", 4000)), m123))
	want := slices.Clone(m123.Regs)
	m123.Regs[2] = 0xdead // the poller reads into its buffer again
	regs, n := l.PolledRegs("inv1", 123, make([]uint16, 0, 64))
	if !slices.Equal(regs, want) || n != 1 {
		t.Fatalf("after a poll: %v (%d), want %v (1)", regs, n, want)
	}
	if a := testing.AllocsPerRun(100, func() { regs, _ = l.PolledRegs("inv1", 123, regs) }); a != 0 {
		t.Errorf("PolledRegs into a kept slice: %g allocs", a)
	}
	if regs, n := l.PolledRegs("inv1", 704, nil); regs != nil || n != 1 {
		t.Errorf("model 704, not polled: %v, %d", regs, n)
	}
	l.Apply(Sample{Device: "inv1", Time: t0.Add(time.Second), Err: errors.New("timeout")})
	if regs, n := l.PolledRegs("inv1", 123, nil); !slices.Equal(regs, want) || n != 1 {
		t.Errorf("after a failed poll: %v, %d", regs, n)
	}
	l.Apply(sample("inv1", t0.Add(2*time.Second), mk(t, 103, nil, val("W", 4000))))
	if regs, n := l.PolledRegs("inv1", 123, nil); regs != nil || n != 2 {
		t.Errorf("a poll without 123: %v, %d", regs, n)
	}
}
