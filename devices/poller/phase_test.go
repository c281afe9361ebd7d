package poller

import (
	"fmt"
	"testing"
	"time"
)

// TestSetPhases checks how polls are spread: the units behind one address
// over its interval, the addresses within one unit's share, and only the
// devices asked for.
func TestSetPhases(t *testing.T) {
	dev := func(addr string, iv time.Duration) *device {
		return &device{cfg: DeviceConfig{Address: addr, Interval: iv}}
	}
	for _, tc := range []struct {
		name string
		devs []*device
		only []int // indexes of the devices to set (nil: all)
		want []time.Duration
	}{
		{"one device", []*device{dev("a:502", time.Second)}, nil, []time.Duration{0}},
		{"three units behind one address, one device alone",
			[]*device{dev("a:502", time.Second), dev("a:502", time.Second), dev("b:502", time.Second), dev("a:502", time.Second)}, nil,
			[]time.Duration{0, 300 * time.Millisecond, 500 * time.Millisecond, 650 * time.Millisecond}}, // in slots of 50 ms
		{"four addresses of their own", []*device{dev("a:502", 4*time.Second), dev("b:502", 4*time.Second), dev("c:502", 4*time.Second), dev("d:502", 4*time.Second)}, nil,
			[]time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second}},
		{"fifty addresses share twenty slots", fifty(), nil, fiftyWant()},
		{"two gateways of two units", []*device{dev("a:502", time.Second), dev("a:502", time.Second), dev("b:502", time.Second), dev("b:502", time.Second)}, nil,
			[]time.Duration{0, 500 * time.Millisecond, 250 * time.Millisecond, 750 * time.Millisecond}},
		{"only the new device", []*device{dev("a:502", time.Second), dev("a:502", time.Second)}, []int{1},
			[]time.Duration{0, 500 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := map[*device]bool{}
			for _, d := range tc.devs {
				d.phase = -1 // untouched unless set
				if tc.only == nil {
					set[d] = true
				}
			}
			for _, i := range tc.only {
				set[tc.devs[i]] = true
			}
			setPhases(tc.devs, set)
			for i, d := range tc.devs {
				want := tc.want[i]
				if !set[d] {
					want = -1
				}
				if d.phase != want {
					t.Errorf("device %d (%s): phase %v, want %v", i, d.cfg.Address, d.phase, want)
				}
			}
		})
	}
}

// fifty is fifty devices at addresses of their own, polled every second.
func fifty() []*device {
	var out []*device
	for i := range 50 {
		out = append(out, &device{cfg: DeviceConfig{Address: fmt.Sprintf("10.0.0.%d:502", i), Interval: time.Second}})
	}
	return out
}

// fiftyWant: device e of 50 at e/50 s, rounded down to 50 ms.
func fiftyWant() []time.Duration {
	var out []time.Duration
	for e := range 50 {
		out = append(out, time.Duration(e*20)*time.Millisecond/(50*time.Millisecond)*(50*time.Millisecond))
	}
	return out
}
