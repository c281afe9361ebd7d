package drivers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"plantd/consumer"
	"plantd/consumer/drivers"
	"plantd/internal/proctest"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sim"
)

// BenchmarkAbsorb50 is the surplus decision of a control cycle for 50
// consumers (50 simulated Shelly plugs over HTTP, each read once), in
// steady state: the surplus moves within the consumers' hysteresis, so
// nothing switches. Target: < 1 ms per cycle, no allocation.
func BenchmarkAbsorb50(b *testing.B) {
	const n = 50
	cfg := sim.Config{ClearSky: true, Devices: []sim.DeviceConfig{{ID: "meter", Kind: kind.Meter}}}
	for i := range n {
		cfg.Shellies = append(cfg.Shellies, sim.ShellyConfig{ID: fmt.Sprintf("plug%d", i), RatedW: 1000})
	}
	p, err := sim.New(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	smp := newSamples()
	var specs []consumer.Spec
	for i, sh := range p.Shellies() {
		d, err := drivers.NewShelly(sh.URL(), 0, nil, 0)
		if err != nil {
			b.Fatal(err)
		}
		specs = append(specs, consumer.Spec{ID: sh.ID(), PlantID: "p", DriverName: "shelly", Driver: d, RatedW: 1000,
			Priority: i, MinOn: time.Minute, MinOff: time.Minute, MaxSwitchesPerHour: 6, OnW: 1000, OffW: 900,
			Interval: time.Hour, Timeout: time.Second})
	}
	m, err := consumer.New(ctx, specs, consumer.Deps{Sink: smp.sink}, nil)
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- m.Run(runCtx) }()
	seen := map[string]bool{}
	for len(seen) < n {
		s := smp.waitB(b)
		seen[s.Device] = true
	}
	now := time.Now()
	// 20.5 kW export: the first 20 run; then the surplus wobbles by ±50 W.
	m.Absorb(ctx, "p", plant.Surplus{Time: now, GridW: -20500, GridOK: true})
	// The loops write the 20 switch-ons; then they are idle (an hour's
	// interval), and only the decision runs below.
	for range 20 {
		smp.waitB(b) // each kicked loop polls once, then writes
	}
	proctest.WaitValue(b, "the 20 plugs on (last: how many)", 30*time.Second, func() (int, bool) {
		on := 0
		for _, sh := range p.Shellies() {
			if sh.State().On {
				on++
			}
		}
		return on, on == 20
	})
	// Stop the loops (and their HTTP clients), so that only the decision
	// runs, and allocates, below.
	stopRun()
	<-ran
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		m.Absorb(ctx, "p", plant.Surplus{Time: now, GridW: -20500 + float64(i%2)*100, GridOK: true})
	}
}

// waitB waits for the next sample in a benchmark.
func (s *samples) waitB(b *testing.B) plant.Sample {
	for {
		s.mu.Lock()
		if len(s.got) > 0 {
			x := s.got[0]
			s.got = s.got[1:]
			s.mu.Unlock()
			return x
		}
		s.mu.Unlock()
		select {
		case <-s.note:
		case <-time.After(30 * time.Second):
			b.Fatal("no sample")
		}
	}
}
