package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkSurplusToRelay measures, with the real binary and the
// simulator's relay board, how long a surplus step takes to reach the
// heater's relay: from the step at the simulated meter to the coil
// written (the meter polled every 500 ms, the control cycle 1 s), and
// back off when the surplus is gone. Guards are off so that every step
// switches. Reports p50 and p99 of the on and the off latency
// (target: p99 < 2 s).
//
//	go test -run x -bench SurplusToRelay -benchtime 20x ./cmd/plantd
func BenchmarkSurplusToRelay(b *testing.B) {
	p := consumerSim(b)
	setExport(p, -500)
	cfg := consumerConfig(b, p)
	raw, err := os.ReadFile(cfg)
	if err != nil {
		b.Fatal(err)
	}
	// No bound on the switchings: every step switches.
	writeConfig(b, cfg, strings.ReplaceAll(string(raw), "watchdog: 5s", "watchdog: 5s, maxSwitchesPerHour: 0"))
	d := startDaemon(b, cfg)
	d.waitAPI(15 * time.Second)
	d.waitOnline(10*time.Second, "meter", "heater")
	var on, off []time.Duration
	wait := func(want bool) time.Duration {
		began := time.Now()
		for {
			if h, _, _ := consumersOn(p); h == want {
				return time.Since(began)
			}
			if time.Since(began) > 15*time.Second {
				b.Fatalf("heater not %v after 15 s", want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for b.Loop() {
		setExport(p, 3800)
		on = append(on, wait(true))
		time.Sleep(4 * time.Second) // the consumer's min on time
		setExport(p, -2000)
		off = append(off, wait(false))
		time.Sleep(2 * time.Second) // its min off time
	}
	pct := func(ds []time.Duration, q float64) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[min(len(s)-1, int(q*float64(len(s))))].Seconds()
	}
	b.ReportMetric(pct(on, 0.5), "on-p50-s")
	b.ReportMetric(pct(on, 0.99), "on-p99-s")
	b.ReportMetric(pct(off, 0.5), "off-p50-s")
	b.ReportMetric(pct(off, 0.99), "off-p99-s")
}

// BenchmarkSurplusToCurrent measures, with the real binary and the
// simulator's OCPP twin, how long a surplus step takes to reach the
// charger: from the step at the simulated meter (5 ↔ 9 kW) to the twin's
// limit within ±1 A of the new target (7 or 13 A: the meter polled every
// 500 ms, the control cycle 1 s, SetChargingProfile over the WebSocket).
// Reports p50 and p99 (target: p99 < 2 s).
//
//	go test -run x -bench SurplusToCurrent -benchtime 20x ./cmd/plantd
func BenchmarkSurplusToCurrent(b *testing.B) {
	p := chargerSim(b)
	cp := p.ChargePoint("wallbox")
	setCarExport(p, 5000)
	d := startDaemon(b, chargerConfig(b, p))
	d.waitAPI(15 * time.Second)
	connectTwins(b, p, d)
	d.waitOnline(15*time.Second, "meter", "wallbox")
	waitLimit(b, cp, 20*time.Second, "7 A for 5 kW", near(7))
	var lat []time.Duration
	high := false
	for b.Loop() {
		high = !high
		w, a := 5000.0, 7.0
		if high {
			w, a = 9000, 13
		}
		setCarExport(p, w)
		began := time.Now()
		waitLimit(b, cp, 15*time.Second, fmt.Sprintf("%v A", a), near(a))
		lat = append(lat, time.Since(began))
	}
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2].Seconds(), "p50-s")
	b.ReportMetric(lat[min(len(lat)-1, int(0.99*float64(len(lat))))].Seconds(), "p99-s")
}
