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
			[]time.Duration{0, 333333333, 333333333, 666666666}}, // 3 slots: as many as units at one address
		{"four addresses of their own", []*device{dev("a:502", 4*time.Second), dev("b:502", 4*time.Second), dev("c:502", 4*time.Second), dev("d:502", 4*time.Second)}, nil,
			[]time.Duration{0, 0, 0, 0}}, // a small plant: one slot
		{"1,000 addresses share twenty slots", ownAddresses(1000), nil, ownAddressesWant(1000)},
		{"two gateways of two units", []*device{dev("a:502", time.Second), dev("a:502", time.Second), dev("b:502", time.Second), dev("b:502", time.Second)}, nil,
			[]time.Duration{0, 500 * time.Millisecond, 0, 500 * time.Millisecond}}, // 2 slots
		{"200 units behind one address at 5 s: 100 slots of 50 ms", unitsAt(200, 5*time.Second), nil, unitsAtWant(200, 100, 5*time.Second)},
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

// ownAddresses is n devices at addresses of their own, polled every
// second.
func ownAddresses(n int) []*device {
	var out []*device
	for i := range n {
		out = append(out, &device{cfg: DeviceConfig{Address: fmt.Sprintf("10.0.%d.%d:502", i/250, i%250), Interval: time.Second}})
	}
	return out
}

// ownAddressesWant: device e of n (n >= 1,000) at e/n s, rounded down to
// the 50 ms of one of 20 slots.
func ownAddressesWant(n int) []time.Duration {
	var out []time.Duration
	for e := range n {
		out = append(out, time.Duration(e)*time.Second/time.Duration(n)/(50*time.Millisecond)*(50*time.Millisecond))
	}
	return out
}

// unitsAt is n units behind one address, polled every iv.
func unitsAt(n int, iv time.Duration) []*device {
	var out []*device
	for range n {
		out = append(out, &device{cfg: DeviceConfig{Address: "gw:502", Interval: iv}})
	}
	return out
}

// unitsAtWant: unit k of n at k/n of iv, rounded down to one of slots.
func unitsAtWant(n, slots int, iv time.Duration) []time.Duration {
	var out []time.Duration
	slot := iv / time.Duration(slots)
	for k := range n {
		out = append(out, iv*time.Duration(k)/time.Duration(n)/slot*slot)
	}
	return out
}
