package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	ucapi "github.com/enbility/eebus-go/usecases/api"

	"plantd/eebus"
	"plantd/eebus/controlbox"
	"plantd/internal/proctest"
)

// BenchmarkEEBusLimitToWrite measures issue 44's limit received → first
// inverter register written, with the real binary, on the simulator's
// side: from the control box's write of an LPP limit (as opModMaxLimW,
// so that the write's value names the limit) to the first write of an
// inverter's WMaxLimPct below 100 % (the inverters' traces). The time
// includes the box's SPINE write over SHIP/TLS on loopback, plantd's
// approval, the window through the gate and the control cycle's write.
// Each iteration is one limit (and its end, not measured, waiting for
// both inverters back at 100 %).
//
//	go test -run '^$' -bench EEBusLimitToWrite -benchtime 30x ./cmd/plantd
func BenchmarkEEBusLimitToWrite(b *testing.B) {
	p := dimmingSim(b)
	path := dimmingConfig(b, p)
	cert, err := eebus.LoadOrCreateCert(filepath.Dir(path), "gw")
	if err != nil {
		b.Fatal(err)
	}
	ski, err := eebus.SKI(cert)
	if err != nil {
		b.Fatal(err)
	}
	port := proctest.FreePort(b)
	box, err := controlbox.New(controlbox.Spec{Port: proctest.FreePort(b), Trust: ski, PeerAddr: fmt.Sprintf("127.0.0.1:%d", port), Heartbeat: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(f, "eebus: {enabled: true, port: %d, trusted: [%q], productionCommand: opModMaxLimW}\ngridControl: {rampRatePercentPerSecond: 100}\n", port, box.SKI())
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	d := startDaemon(b, path)
	d.waitAPI(15 * time.Second)
	d.waitOnline(10*time.Second, "inv1", "inv2")
	box.Start()
	b.Cleanup(box.Stop)
	if err := box.Ready(b.Context()); err != nil {
		b.Fatal(err)
	}
	limit := func(l ucapi.LoadLimit) {
		ctx, cancel := context.WithTimeout(b.Context(), 5*time.Second)
		defer cancel()
		if n, err := box.Limit(ctx, true, l); err != nil && !errors.Is(err, controlbox.ErrNoAnswer) || err == nil && n != 0 {
			b.Fatalf("limit %+v: error %d, %v", l, n, err)
		}
	}
	released := func() bool {
		return p.Device("inv1").State().EffectiveLimitPct == 100 && p.Device("inv2").State().EffectiveLimitPct == 100
	}
	proctest.WaitFor(b, "no limit before the first", 15*time.Second, released)
	var lat []time.Duration
	for b.Loop() {
		sent := time.Now()
		limit(ucapi.LoadLimit{IsActive: true, Value: 3000})
		wrote := proctest.WaitValue(b, "an inverter's WMaxLimPct written below 100 %", 15*time.Second, func() (time.Time, bool) {
			var first time.Time
			for _, id := range []string{"inv1", "inv2"} {
				for _, e := range p.Trace(id) {
					if pt, ok := e.Point("WMaxLimPct"); ok && e.WallTime.After(sent) && e.Error == "" && pt.Value < 100 {
						if first.IsZero() || e.WallTime.Before(first) {
							first = e.WallTime
						}
						break
					}
				}
			}
			return first, !first.IsZero()
		})
		lat = append(lat, wrote.Sub(sent))
		limit(ucapi.LoadLimit{IsActive: false})
		proctest.WaitFor(b, "both inverters released", 15*time.Second, released)
	}
	b.StopTimer()
	slices.Sort(lat)
	q := func(f float64) time.Duration { return lat[min(len(lat)-1, int(f*float64(len(lat))))] }
	b.Logf("%d limits: limit → first register written median %v, p99 %v, max %v", len(lat),
		q(0.5).Round(time.Millisecond), q(0.99).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(q(0.5)), "p50-ms")
	b.ReportMetric(ms(q(0.99)), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
