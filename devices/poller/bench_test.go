package poller_test

import (
	"context"
	"log/slog"
	"runtime/metrics"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"plantd/devices/poller"
	"plantd/modbus"
	"plantd/plant"
	"plantd/sim"
	"plantd/sim/simtest"
)

// BenchmarkPollScale polls 200 simulated devices behind 10 gateway
// addresses at the shortest interval, as scripts/scale does with 1,000
// behind 50, once discovery is over; an op is one device's poll, handed
// to plant.Live as the daemon's sink does (Apply, then Readings). It
// reports the process's CPU time per poll (user and system, the
// in-process simulator's included) and the goroutines started per poll;
// allocs/op count the simulator's too.
func BenchmarkPollScale(b *testing.B) {
	const devices, gateways = 200, 10
	cfg, err := sim.ScaleConfig(devices, gateways)
	if err != nil {
		b.Fatal(err)
	}
	p := simtest.Start(b, cfg)
	var cfgs []poller.DeviceConfig
	var infos []plant.DeviceInfo
	for _, d := range p.Devices() {
		cfgs = append(cfgs, poller.DeviceConfig{ID: d.ID(), Address: d.Addr(), Unit: d.Unit(), Interval: poller.MinInterval, Timeout: time.Second})
		infos = append(infos, plant.DeviceInfo{ID: d.ID(), PlantID: "p"})
	}
	live := plant.NewLive([]plant.Plant{{ID: "p"}}, infos, nil)
	var polls, failed atomic.Int64
	var goal atomic.Int64
	goal.Store(-1)
	reached := make(chan struct{}, 1)
	sink := func(s plant.Sample) {
		if s.Err != nil {
			failed.Add(1)
		}
		live.Apply(s)
		if _, rs, _ := live.Readings(s.Device); len(rs) == 0 && s.Err == nil {
			failed.Add(1)
		}
		if polls.Add(1) == goal.Load() {
			reached <- struct{}{}
		}
	}
	pool := modbus.NewPool(slog.New(slog.DiscardHandler))
	defer pool.Close()
	pl, err := poller.New(cfgs, pool, sink, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan struct{})
	go func() { pl.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	<-pl.FirstRound()
	// A second round, so that every device polls at its phase.
	goal.Store(polls.Load() + 2*devices)
	<-reached

	created := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(created)
	g0 := created[0].Value.Uint64()
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ReportAllocs()
	b.ResetTimer()
	goal.Store(polls.Load() + int64(b.N))
	<-reached
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	metrics.Read(created)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/poll")
	b.ReportMetric(float64(created[0].Value.Uint64()-g0)/float64(b.N), "goroutines/poll")
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d polls failed", n)
	}
}
