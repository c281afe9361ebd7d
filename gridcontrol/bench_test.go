package gridcontrol_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"plantd/gridcontrol"
	"plantd/plant/kind"
	"plantd/sim"
)

// report adds the median, 99th percentile and maximum of ds in ms.
func report(b *testing.B, name string, ds []time.Duration) {
	if len(ds) == 0 {
		b.Fatalf("no %s measured", name)
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(s[len(s)/2]), name+"-p50-ms")
	b.ReportMetric(ms(s[len(s)*99/100]), name+"-p99-ms")
	b.ReportMetric(ms(s[len(s)-1]), name+"-max-ms")
	b.ReportMetric(float64(len(s)), name+"-n")
}

// BenchmarkEdgeToWrite: b.N back-to-back one-second limit windows on the
// demo plant's two inverters, each tighter than the one before (99.5 %
// down by 0.5 % a window, so at most 199); the latency from each window
// start (a cron boundary, whole seconds) to the first register written,
// with the default 1 s control cycle. Every start asks for a write at
// once: a window looser than the one before starts a ramp, whose first
// step comes a cycle later by design (TestRampNeverExceedsItsRate). Run
// with -benchtime 100x.
func BenchmarkEdgeToWrite(b *testing.B) {
	if b.N > 199 {
		b.Skip("at most 199 windows tighten one after the other")
	}
	r := newRig(b, rigOpts{cfg: gridcontrol.Config{Cycle: time.Second, RevertTimeout: 60 * time.Second}})
	start, _ := window(time.Second, 0)
	var cmds []string
	for i := range b.N {
		s := start.Add(time.Duration(i) * time.Second)
		cmds = append(cmds, limitCmd("opModMaxLimW", s, s.Add(time.Second), 99.5-0.5*float64(i)))
	}
	r.mustSubmit(body(cmds...))
	b.ResetTimer()
	// Until every window's start wrote (the last window's end, whose ramp
	// is not measured, comes later).
	r.await("a write for every window's start", time.Until(start)+time.Duration(b.N+5)*time.Second, func() bool {
		return len(r.controller().Stats().EdgeToWrite) >= b.N
	})
	b.StopTimer()
	report(b, "edge", r.controller().Stats().EdgeToWrite)
}

// BenchmarkFeedInCycle50: a plant of 50 simulated inverters (25 classic,
// 25 DER) and a meter under FeedInLimit, the household load stepping by
// 3 kW every cycle so that every cycle writes a new limit to all 50. The
// duration of one cycle: read the meter and the 50 inverters, compute,
// write all 50 (Modbus TCP on loopback, one port per device).
func BenchmarkFeedInCycle50(b *testing.B) {
	var devs []sim.DeviceConfig
	for i := range 50 {
		devs = append(devs, sim.DeviceConfig{ID: fmt.Sprintf("inv%02d", i+1), Kind: kind.Inverter, DER: i%2 == 1, Unit: 1})
	}
	devs = append(devs, sim.DeviceConfig{ID: "meter", Kind: kind.Meter, Unit: 1})
	const cycle = 200 * time.Millisecond
	r := newRig(b, rigOpts{devices: devs, cfg: gridcontrol.Config{Cycle: cycle, RampPctPerSecond: 100}})
	start, _ := window(time.Second, 0)
	r.mustSubmit(body(limitCmd("FeedInLimit", start, start.Add(time.Hour), 10)))
	r.await("the FeedInLimit loop running", time.Until(start)+5*time.Second, func() bool { return len(r.controller().Stats().Cycles) > 0 })
	stop := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(cycle):
			}
			r.sim.SetLoadOffset(float64(i%2) * 3000)
		}
	}()
	before := len(r.controller().Stats().Cycles)
	b.ResetTimer()
	r.await("b.N cycles", time.Duration(b.N+10)*cycle+10*time.Second, func() bool { return len(r.controller().Stats().Cycles) >= before+b.N })
	b.StopTimer()
	close(stop)
	cycles := r.controller().Stats().Cycles
	report(b, "cycle", cycles[min(before, len(cycles)):])
	st := r.controller().Stats()
	b.ReportMetric(float64(st.Writes), "writes")
	b.ReportMetric(float64(st.WriteErrors), "write-errors")
}
