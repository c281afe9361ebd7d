package channels_test

import (
	"context"
	"log/slog"
	"math"
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

// TestHostileDevices runs the poller against simulated inverters that
// answer like hostile or broken devices, one case each, and feeds Live:
// nothing may panic, every value that reaches the live state must be
// finite and within its bounds, and the other device (the meter, on its
// own port) keeps being polled.
func TestHostileDevices(t *testing.T) {
	type pin struct {
		model uint16
		point string
		raw   uint64
	}
	tests := []struct {
		name  string
		pins  []pin
		fault sim.FaultKind
	}{
		{"model length 0", []pin{{103, "L", 0}}, sim.FaultNone},
		{"model length 65535", []pin{{103, "L", 65535}}, sim.FaultNone},
		{"model length to the end of the address space", []pin{{103, "L", 25462}}, sim.FaultNone},
		{"common model length 0", []pin{{1, "L", 0}}, sim.FaultNone},
		{"wrong byte counts and broken frames", nil, sim.FaultGarbage},
		{"scale factor +32767", []pin{{103, "W_SF", 32767}, {103, "Hz_SF", 32767}}, sim.FaultNone},
		{"scale factor -32767", []pin{{103, "W_SF", 0x8001}, {103, "A_SF", 0x8001}}, sim.FaultNone},
		{"wild values", []pin{{103, "W", 32767}, {103, "W_SF", 10}, {103, "PF", 0x7FFF}, {103, "PhVphA", 0xFFFE}}, sim.FaultNone},
		{"answers one request behind", nil, sim.FaultWrongTID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := sim.DefaultConfig()
			cfg.Devices = []sim.DeviceConfig{{ID: "inv1", Kind: kind.Inverter}, {ID: "meter", Kind: kind.Meter}}
			p := simtest.Start(t, cfg)
			inv := simtest.Device(t, p, "inv1")
			for _, pn := range tt.pins {
				if err := inv.Override(pn.model, pn.point, pn.raw); err != nil {
					t.Fatal(err)
				}
			}
			if tt.fault != sim.FaultNone {
				inv.SetFault(sim.Fault{Kind: tt.fault})
			}
			live := plant.NewLive([]plant.Plant{{ID: "p"}}, []plant.DeviceInfo{{ID: "inv1", PlantID: "p", Kind: kind.Inverter}, {ID: "meter", PlantID: "p", Kind: kind.Meter}}, nil)
			var mu sync.Mutex
			polls := map[string]int{}
			pool := modbus.NewPool(slog.New(slog.DiscardHandler))
			defer pool.Close()
			var pcs []poller.DeviceConfig
			for _, d := range p.Devices() {
				pcs = append(pcs, poller.DeviceConfig{ID: d.ID(), Address: d.Addr(), Unit: d.Unit(), Interval: 250 * time.Millisecond, Timeout: 500 * time.Millisecond})
			}
			pl, err := poller.New(pcs, pool, func(s plant.Sample) {
				live.Apply(s)
				mu.Lock()
				polls[s.Device]++
				mu.Unlock()
			}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { pl.Run(ctx); close(done) }()
			deadline := time.Now().Add(30 * time.Second)
			for {
				mu.Lock()
				n, m := polls["inv1"], polls["meter"]
				mu.Unlock()
				if n >= 4 && m >= 4 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 30 s: %d polls of the hostile inverter, %d of the meter", n, m)
				}
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			<-done
			for _, id := range []string{"inv1", "meter"} {
				d, _ := live.Device(id)
				for _, r := range d.Readings {
					lo, hi := plant.Bound(d.Nameplate, r.Channel)
					if math.IsNaN(r.Value) || math.IsInf(r.Value, 0) || r.Value < lo || r.Value > hi {
						t.Errorf("%s %s = %g reached the live state (bounds %g..%g)", id, r.Channel, r.Value, lo, hi)
					}
				}
			}
			if d, _ := live.Device("meter"); len(d.Readings) == 0 {
				t.Error("the meter has no values")
			}
			for _, st := range pl.Stats() {
				if st.ID == "inv1" {
					t.Logf("inv1: %d polls, %d good, last error %q", st.Polls, st.Successes, st.LastError)
				}
			}
		})
	}
}
