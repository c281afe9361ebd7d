package main

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"plantd/devices"

	"plantd/modbus"
	"plantd/sim"
	"plantd/sim/simtest"
	"plantd/sunspec"
)

// BenchmarkDoorToWrite measures, with the real binary, a limit sent
// through one door of grid control to the first inverter register written
// with it (issue 39: median < 200 ms, p99 < 1 s per door). The time runs
// from just before the door's request leaves the client to the earliest
// write of WMaxLimPct with the new value on either simulated inverter (the
// simulator's write trace, its wall clock). Each iteration is a tighter
// limit than the last (95 %, 91 %, ...: a tighter limit is written at once,
// a looser one ramps by design), so run at most 22 iterations:
//
//	go test -run '^$' -bench DoorToWrite -benchtime 20x ./cmd/plantd
//
// The input door has its own benchmark (BenchmarkInputEdgeToWrite), whose
// time includes waiting for the input's poll.
func BenchmarkDoorToWrite(b *testing.B) {
	for _, door := range []string{"api", "modbus"} {
		b.Run("door="+door, func(b *testing.B) { benchDoor(b, door) })
	}
}

func benchDoor(b *testing.B, door string) {
	if b.N > 22 {
		b.Skip("at most 22 limits tighten one after the other")
	}
	p := simtest.Start(b, noonConfig())
	path := gridConfigWith(b, p, "modbusServer:\n  listen: 127.0.0.1:0\n  writes: true\n  role: installer\n  allow: [127.0.0.1]\n")
	d := startDaemon(b, path)
	d.waitAPI(15 * time.Second)
	d.waitOnline(30*time.Second, "inv1", "inv2", "meter")

	send := sendLimit(b, d, door)
	var lat []time.Duration
	i := 0
	for b.Loop() {
		pct := 95 - 4*float64(i)
		i++
		sent := time.Now()
		send(pct)
		deadline := sent.Add(10 * time.Second)
		var wrote time.Time
		for wrote.IsZero() {
			wrote = firstLimitWrite(p, sent, pct)
			if time.Now().After(deadline) {
				b.Fatalf("%s door: no inverter wrote %v %% within 10 s", door, pct)
			}
			time.Sleep(2 * time.Millisecond)
		}
		lat = append(lat, wrote.Sub(sent))
	}
	b.StopTimer()
	s := slices.Clone(lat)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.Logf("%s door, %d limits: submitted → first register written median %v, p99 %v, max %v", door, len(s),
		s[len(s)/2].Round(time.Millisecond), s[len(s)*99/100].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
	b.ReportMetric(ms(s[len(s)/2]), "write-p50-ms")
	b.ReportMetric(ms(s[len(s)*99/100]), "write-p99-ms")
	b.ReportMetric(0, "ns/op") // a command's time is the metrics above
}

// sendLimit returns how the benchmark sends an opModMaxLimW in % through
// a door: a POST of a schedule with the installer's token (api), or a
// master's write of 123's WMaxLimPct to the SunSpec server, enabled once
// before the timer (modbus).
func sendLimit(b *testing.B, d *plantdRun, door string) func(pct float64) {
	switch door {
	case "api":
		return func(pct float64) {
			body := fmt.Sprintf(`{"commands":[{"command":"opModMaxLimW","start":"+0s","end":"+1h","value":%s}]}`, strconv.FormatFloat(pct, 'f', -1, 64))
			if code, out := d.request("POST", "/gridcontrol/v1/plants/p1/schedules", tokInst, body); code != 201 {
				b.Fatalf("POST schedule: %d %s", code, out)
			}
		}
	case "modbus":
		addr := d.sunspecAddr(10 * time.Second)
		pool := modbus.NewPool(nil)
		b.Cleanup(func() { _ = pool.Close() })
		c := pool.Endpoint(modbus.EndpointConfig{Address: addr}).Unit(1, 2*time.Second)
		dev, err := devices.Discover(b.Context(), c)
		if err != nil {
			b.Fatalf("discover the SunSpec server: %v", err)
		}
		ref, _ := dev.Ref(123)
		m := sunspec.ModelByID(123)
		pctAddr, enaAddr := ref.Addr+m.Point("WMaxLimPct").Offset, ref.Addr+m.Point("WMaxLim_Ena").Offset
		write := func(addr uint16, v uint16) {
			if err := c.WriteRegisters(b.Context(), addr, []uint16{v}); err != nil {
				b.Fatalf("write %d = %d to the SunSpec server: %v", addr, v, err)
			}
		}
		write(pctAddr, 99)
		write(enaAddr, 1)
		return func(pct float64) { write(pctAddr, uint16(pct)) }
	}
	b.Fatalf("no door %q", door)
	return nil
}

// firstLimitWrite is the earliest write after since of WMaxLimPct at pct
// on either demo inverter (zero: none yet).
func firstLimitWrite(p *sim.Plant, since time.Time, pct float64) time.Time {
	var first time.Time
	for _, id := range []string{"inv1", "inv2"} {
		for _, e := range p.Trace(id) {
			pt, ok := e.Point("WMaxLimPct")
			if !ok || e.Error != "" || !e.WallTime.After(since) || pt.Value != pct {
				continue
			}
			if first.IsZero() || e.WallTime.Before(first) {
				first = e.WallTime
			}
			break
		}
	}
	return first
}
