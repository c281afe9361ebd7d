package poller_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"plantd/devices/poller"
	"plantd/internal/proctest"
	"plantd/plant"
	"plantd/sim"
	"plantd/sim/simtest"
)

// TestRequestBudget: a device whose poll needs more requests than its
// budget is not polled past it: its polls fail with ErrRequestBudget and
// the reason; with the default budget the same device polls fine, and a
// hostile model length (103 L=25462) still polls within the default.
func TestRequestBudget(t *testing.T) {
	p := simtest.Start(t, sim.DefaultConfig())
	inv := simtest.Device(t, p, "inv1")
	var c collector
	cfgs := []poller.DeviceConfig{
		{ID: "tight", Address: inv.Addr(), Unit: inv.Unit(), Interval: interval, Timeout: time.Second, MaxRequests: 1},
		{ID: "default", Address: inv.Addr(), Unit: inv.Unit(), Interval: interval, Timeout: time.Second},
	}
	runPoller(t, cfgs, c.sink)
	defer func() {
		if t.Failed() {
			for _, id := range []string{"tight", "default"} {
				s, _ := c.last(id)
				t.Logf("%s: %v %v", id, s.State, s.Err)
			}
		}
	}()
	proctest.WaitFor(t, "tight refused and default online", 10*time.Second, func() bool {
		tight, ok1 := c.last("tight")
		def, ok2 := c.last("default")
		return ok1 && ok2 && tight.Err != nil && def.Err == nil && len(def.Registers) > 0
	})
	tight, _ := c.last("tight")
	if !errors.Is(tight.Err, poller.ErrRequestBudget) || !strings.Contains(tight.Err.Error(), "budget 1") {
		t.Errorf("tight: %v", tight.Err)
	}
	// Now the hostile header: the device is discovered again after it
	// went offline (exception) and then polls 103 within the budget.
	if err := inv.Override(103, "L", 25462); err != nil {
		t.Fatal(err)
	}
	inv.SetFault(sim.Fault{Kind: sim.FaultOffline})
	proctest.WaitFor(t, "default offline", 10*time.Second, func() bool {
		s, ok := c.last("default")
		return ok && s.State == plant.StateOffline
	})
	inv.SetFault(sim.Fault{})
	since := time.Now()
	proctest.WaitFor(t, "default online with the hostile 103", 20*time.Second, func() bool {
		for _, s := range c.since("default", since) {
			if s.Err == nil && hasModel(s, 103) {
				return true
			}
		}
		return false
	})
}
