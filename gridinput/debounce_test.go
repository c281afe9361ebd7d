package gridinput

import (
	"testing"
	"time"
)

// TestDebounce: a pattern acts once it has been read unchanged for the
// debounce time; a change in between starts it anew; 0 takes every
// pattern at its first read; after reset (a failed poll) a pattern waits
// again.
func TestDebounce(t *testing.T) {
	t0 := time.Date(2026, 6, 21, 12, 0, 0, 0, time.UTC)
	type read struct {
		at    time.Duration // after t0
		key   string
		reset bool // a failed poll before this read
		// stands, else when the pattern will (after t0)
		stands bool
		due    time.Duration
	}
	tests := []struct {
		name  string
		d     time.Duration
		reads []read
	}{
		{"0: at the first read", 0, []read{
			{at: 0, key: "K3", stands: true},
			{at: time.Second, key: "open", stands: true},
			{at: 2 * time.Second, key: "K3", stands: true},
		}},
		{"stands after the debounce", 2 * time.Second, []read{
			{at: 0, key: "K3", due: 2 * time.Second},
			{at: time.Second, key: "K3", due: 2 * time.Second},
			{at: 2 * time.Second, key: "K3", stands: true},
			{at: 3 * time.Second, key: "K3", stands: true},
		}},
		{"a chattering contact never stands", 2 * time.Second, []read{
			{at: 0, key: "K3", due: 2 * time.Second},
			{at: time.Second, key: "open", due: 3 * time.Second},
			{at: 2 * time.Second, key: "K3", due: 4 * time.Second},
			{at: 3 * time.Second, key: "open", due: 5 * time.Second},
			{at: 4 * time.Second, key: "K3", due: 6 * time.Second},
		}},
		{"a dimming contact is part of the pattern", time.Second, []read{
			{at: 0, key: "K3 dim=false", due: time.Second},
			{at: 500 * time.Millisecond, key: "K3 dim=true", due: 1500 * time.Millisecond},
			{at: 1500 * time.Millisecond, key: "K3 dim=true", stands: true},
		}},
		{"after a failed poll it waits again", time.Second, []read{
			{at: 0, key: "K2", due: time.Second},
			{at: time.Second, key: "K2", stands: true},
			{at: 3 * time.Second, key: "K2", reset: true, due: 4 * time.Second},
			{at: 4 * time.Second, key: "K2", stands: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := debounce{d: tt.d}
			for i, r := range tt.reads {
				if r.reset {
					b.reset()
				}
				at, stands := b.see(r.key, t0.Add(r.at))
				if stands != r.stands || (!stands && !at.Equal(t0.Add(r.due))) {
					t.Errorf("read %d (%s at %v): stands %v, due %v; want %v, due %v", i, r.key, r.at, stands, at.Sub(t0), r.stands, r.due)
				}
			}
		})
	}
}

// TestChatteringContact drives the loop with the simulator's I/O module: a
// contact that closes for a moment again and again (each flicker a coil
// written on, read so by the 20 ms poll, and written off) makes no window
// with a debounce of 1 s; held closed, it makes one, and opened, that one
// ends.
func TestChatteringContact(t *testing.T) {
	p, cl, ext := simModule(t)
	rcr := p.Device("rcr")
	grid := &fakeGrid{calls: make(chan call, 64)}
	spec := Spec{ID: "rcr", PlantID: "p1", Reader: Bits{Client: cl, Count: 4},
		Contacts: map[string]int{"K1": 0, "K2": 1, "K3": 2, "K4": 3}, Actions: receiver(),
		PollInterval: 20 * time.Millisecond, LossGrace: 5 * time.Second, Debounce: time.Second}
	runInput(t, spec, Deps{Submitter: grid})
	k3 := func(on bool) {
		t.Helper()
		if err := ext.WriteCoils(t.Context(), 0, []bool{false, false, on, false}); err != nil {
			t.Fatal(err)
		}
	}
	// The wall time of the board's last write (the trace) and of its last
	// read of the inputs.
	wrote := func() time.Time { tr := p.Trace("rcr"); return tr[len(tr)-1].WallTime }
	lastRead := func() time.Time {
		rs, _ := rcr.Relay()
		if n := len(rs.InputReads); n > 0 {
			return rs.InputReads[n-1]
		}
		return time.Time{}
	}
	readAfter := func(at time.Time) {
		for !lastRead().After(at) {
			time.Sleep(time.Millisecond)
		}
	}
	// Five flickers: K3 closed until the loop has read it so, then open
	// again, for a poll or two, far less than the debounce.
	for range 5 {
		k3(true)
		readAfter(wrote())
		k3(false)
	}
	// The loop steps one after another: once it has read the open contact
	// after the last flicker, any window a flicker made is submitted.
	readAfter(wrote())
	grid.mu.Lock()
	n := grid.n
	grid.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d windows from 5 flickers, want none", n)
	}
	k3(true)
	if c := await(t, grid.calls, "submit"); c.op != "submit" || c.id != "s1" || c.by != "input:rcr/K3" {
		t.Fatalf("got %+v, want s1 by input:rcr/K3, the first window", c)
	}
	k3(false)
	if c := await(t, grid.calls, "end"); c.op != "end" || c.id != "s1" {
		t.Errorf("got %+v, want s1 ended", c)
	}
}
