package main

import (
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"plantd/modbus"
	"plantd/sim"
	"plantd/sim/simtest"
)

// BenchmarkInputEdgeToWrite measures issue 29's input edge → first
// inverter register written, with the real binary, on the simulator's
// side: from the write of the ripple-control receiver's coil K3 (the
// module's trace) to the first write of an inverter's WMaxLimPct (123 or
// 704) with K3's 30 % (the inverters' traces). It splits the time at the
// daemon's first read of the module's inputs after the edge (the
// module's record of its reads): detection (waiting for the input poll)
// and processing (read → window stored → control cycle woken → register
// written). Each edge comes at a random phase of the poll, as a
// receiver's relay switches. One sub-benchmark per input poll interval;
// each iteration is one edge (and the release after it, not measured).
//
//	go test -run '^$' -bench InputEdgeToWrite -benchtime 30x ./cmd/plantd
//
// scripts/input-latency runs it and prints the table.
func BenchmarkInputEdgeToWrite(b *testing.B) {
	for _, poll := range []time.Duration{time.Second, 500 * time.Millisecond, 250 * time.Millisecond} {
		b.Run("poll="+poll.String(), func(b *testing.B) { benchInputEdge(b, poll) })
	}
}

func benchInputEdge(b *testing.B, poll time.Duration) {
	scfg := noonConfig()
	scfg.Devices = append(scfg.Devices, sim.DeviceConfig{ID: "rcr", Relay: true, InputsFollowCoils: true, Unit: 1})
	p := simtest.Start(b, scfg)
	cfg := inputConfig(b, p, time.Minute)
	raw, err := os.ReadFile(cfg)
	if err != nil {
		b.Fatal(err)
	}
	writeConfig(b, cfg, strings.Replace(string(raw), "pollInterval: 1s", "pollInterval: "+poll.String(), 1))
	d := startDaemon(b, cfg)
	d.waitAPI(15 * time.Second)
	d.waitOnline(10*time.Second, "inv1", "inv2")
	pool := modbus.NewPool(nil)
	defer pool.Close()
	rcr := pool.Endpoint(modbus.EndpointConfig{Address: p.Device("rcr").Addr()}).Unit(1, 2*time.Second)
	limited := func(ok func(float64) bool) bool {
		return ok(p.Device("inv1").State().LimitPct) || ok(p.Device("inv2").State().LimitPct)
	}
	await := func(what string, cond func() bool) {
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				b.Fatalf("after 15 s: still not %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	released := func() bool {
		return p.Device("inv1").State().EffectiveLimitPct == 100 && p.Device("inv2").State().EffectiveLimitPct == 100
	}
	await("no limit before the first edge", released)

	var total, detect, process []time.Duration
	for b.Loop() {
		time.Sleep(time.Duration(rand.Int64N(int64(poll)))) // a random phase of the poll
		if err := rcr.WriteCoils(b.Context(), 0, []bool{false, false, true, false}); err != nil {
			b.Fatal(err)
		}
		tr := p.Trace("rcr")
		edge := tr[len(tr)-1].WallTime // the coil write, as the module took it
		await("an inverter at K3's 30 %", func() bool { return limited(func(v float64) bool { return v <= 30 }) })
		var wrote time.Time
		for _, id := range []string{"inv1", "inv2"} {
			for _, e := range p.Trace(id) {
				pt, ok := e.Point("WMaxLimPct")
				if !e.WallTime.After(edge) || e.Error != "" || !ok || pt.Value > 30 {
					continue
				}
				if wrote.IsZero() || e.WallTime.Before(wrote) {
					wrote = e.WallTime
				}
				break
			}
		}
		rs, _ := p.Device("rcr").Relay()
		i := slices.IndexFunc(rs.InputReads, func(r time.Time) bool { return !r.Before(edge) })
		if wrote.IsZero() || i < 0 {
			b.Fatalf("edge at %v: limit write %v, input reads %v: want both after the edge", edge, wrote, rs.InputReads)
		}
		seen := rs.InputReads[i]
		total, detect, process = append(total, wrote.Sub(edge)), append(detect, seen.Sub(edge)), append(process, wrote.Sub(seen))
		if err := rcr.WriteCoils(b.Context(), 0, []bool{false, false, false, false}); err != nil {
			b.Fatal(err)
		}
		await("both inverters released", released)
	}
	b.StopTimer()
	stat := func(ds []time.Duration) (median, maximum time.Duration) {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2], s[len(s)-1]
	}
	tm, tx := stat(total)
	dm, dx := stat(detect)
	pm, px := stat(process)
	b.Logf("poll %v, %d edges: edge→write median %v max %v; detection median %v max %v; processing median %v max %v",
		poll, len(total), tm.Round(time.Millisecond), tx.Round(time.Millisecond), dm.Round(time.Millisecond), dx.Round(time.Millisecond),
		pm.Round(time.Millisecond), px.Round(time.Millisecond))
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(tm), "edge-p50-ms")
	b.ReportMetric(ms(tx), "edge-max-ms")
	b.ReportMetric(ms(dm), "detect-p50-ms")
	b.ReportMetric(ms(dx), "detect-max-ms")
	b.ReportMetric(ms(pm), "process-p50-ms")
	b.ReportMetric(ms(px), "process-max-ms")
	b.ReportMetric(0, "ns/op") // an edge's time is the metrics above, not the loop's
}
