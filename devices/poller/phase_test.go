package poller

import (
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
			[]time.Duration{0, 333333333, 500 * time.Millisecond, 666666666}},
		{"four addresses of their own", []*device{dev("a:502", 4*time.Second), dev("b:502", 4*time.Second), dev("c:502", 4*time.Second), dev("d:502", 4*time.Second)}, nil,
			[]time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second}},
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
