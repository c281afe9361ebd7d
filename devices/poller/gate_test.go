package poller_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"plantd/devices/poller"
	"plantd/modbus"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/sim/simtest"
)

// TestDiscoveryOneAtATimePerAddress starts eight inverters behind one
// gateway address: their first polls discover them one after the other,
// the others waiting at the poller's gate and not inside the Modbus
// client, where each waiting poll held a deep stack (1,000 devices at
// start: 8.7 MB). While the first round runs, no request waits for the
// gateway's connection, and every device comes online.
func TestDiscoveryOneAtATimePerAddress(t *testing.T) {
	t.Parallel()
	cfg := sim.DefaultConfig()
	cfg.Devices = nil
	for i := range 8 {
		cfg.Devices = append(cfg.Devices, sim.DeviceConfig{ID: "inv" + strconv.Itoa(i+1), Kind: kind.Inverter, Unit: uint8(i + 1), Endpoint: "gw"})
	}
	p := simtest.Start(t, cfg)
	var cfgs []poller.DeviceConfig
	for _, d := range p.Devices() {
		// A long interval: no device polls a second time during the
		// first round, so every request of the round is a discovering
		// poll's.
		cfgs = append(cfgs, poller.DeviceConfig{ID: d.ID(), Address: d.Addr(), Unit: d.Unit(), Interval: time.Minute, Timeout: 2 * time.Second})
	}
	var (
		mu      sync.Mutex
		pool    *modbus.Pool
		waiting int64
		states  = map[string]plant.CommState{}
	)
	ready := make(chan struct{})
	sink := func(s plant.Sample) {
		<-ready
		mu.Lock()
		defer mu.Unlock()
		states[s.Device] = s.State
		for _, st := range pool.Stats() {
			waiting = max(waiting, st.Waiting)
		}
	}
	pl, pl2pool, _ := runPoller(t, cfgs, sink)
	mu.Lock()
	pool = pl2pool
	mu.Unlock()
	close(ready)
	select {
	case <-pl.FirstRound():
	case <-time.After(30 * time.Second):
		t.Fatal("first round did not end")
	}
	mu.Lock()
	defer mu.Unlock()
	if waiting != 0 {
		t.Errorf("%d requests waited for the gateway's connection during the first round, want 0", waiting)
	}
	for _, d := range p.Devices() {
		if states[d.ID()] != plant.StateOnline {
			t.Errorf("%s: state %v after its first poll, want online", d.ID(), states[d.ID()])
		}
	}
}
