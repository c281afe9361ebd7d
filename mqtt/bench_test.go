package mqtt

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
	"plantd/plant"
	"plantd/store"
)

// BenchmarkBacklogDrain: 10,000 outbox messages (log entries of about 150
// bytes) per iteration drained to a local mosquitto with QoS 1 and no rate
// cap, until the broker acknowledged every one; batched (up to 4 KiB per
// MQTT message, the default) and one per MQTT message.
//
//	go test -run '^$' -bench BacklogDrain ./mqtt/
func BenchmarkBacklogDrain(b *testing.B) {
	for _, bc := range []struct {
		name  string
		batch int
	}{{"batched-4KiB", 4096}, {"one-per-message", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			br := mqtttest.Start(b, mqtttest.Options{})
			st := openStore(b, "")
			cfg := fastConfig(br, "gw-bench")
			cfg.BatchBytes = bc.batch
			u, err := New(cfg, Deps{Outbox: st}, nil)
			if err != nil {
				b.Fatal(err)
			}
			runUplink(b, u)
			proctest.WaitFor(b, "connected", 30*time.Second, u.connected.Load)
			const n = 10000
			msgs := make([]store.OutboxAppend, n)
			var el time.Duration
			var rows, published, bytes uint64
			seq := 0
			for b.Loop() {
				for i := range msgs {
					seq++
					msgs[i] = store.OutboxAppend{Stream: "log/p1", Created: time.Now(), Payload: fmt.Appendf(nil,
						`[{"time":"2026-06-21T10:00:00.123Z","level":"warning","code":"DeviceStale","message":"device inv%d stale: read timeout","deviceId":"inv1"}]`, seq)}
				}
				if _, err := st.EnqueueBatch(context.Background(), msgs, nil); err != nil {
					b.Fatal(err)
				}
				before := u.Status()
				start := time.Now()
				u.notify("log/p1")
				proctest.WaitFor(b, "the backlog acknowledged", 120*time.Second, func() bool { return u.Status().Acked >= before.Acked+n })
				el += time.Since(start)
				after := u.Status()
				rows += after.Acked - before.Acked
				published += after.Published - before.Published
				bytes += after.PublishedBytes - before.PublishedBytes
			}
			b.ReportMetric(float64(rows)/el.Seconds(), "outbox-msgs/s")
			b.ReportMetric(float64(published)/el.Seconds(), "mqtt-msgs/s")
			b.ReportMetric(float64(bytes)/el.Seconds(), "bytes/s")
		})
	}
}

// plant100 is a live plant of 100 inverters with every plain channel,
// new values at every call.
type plant100 struct{ readings []plant.Reading }

func newPlant100() plant100 {
	var p plant100
	for c := plant.Channel(1); c.Valid(); c++ {
		if !c.Indexed() {
			p.readings = append(p.readings, plant.Reading{Channel: c, Value: float64(c) * 12.5})
		}
	}
	return p
}

func (plant100) Plants() []plant.Plant {
	return []plant.Plant{{ID: "p1", Name: "P1", Location: time.UTC}}
}

func (plant100) EnergyBalance(string) (plant.Balance, error) {
	pv, load := 81234.5, 1234.0
	return plant.Balance{PlantID: "p1", Time: time.Now(), PVGenerationW: &pv, TotalConsumptionW: &load}, nil
}

func (p plant100) Devices(string) ([]plant.DeviceLive, error) {
	now := time.Now()
	out := make([]plant.DeviceLive, 100)
	for i := range out {
		out[i] = plant.DeviceLive{Info: plant.DeviceInfo{ID: fmt.Sprintf("inv%03d", i+1), PlantID: "p1"}, LastUpdate: now, Readings: p.readings}
	}
	return out, nil
}

// BenchmarkLive100Devices: a plant of 100 devices published every second
// to a local mosquitto for 20 s (PLANTD_BENCH_LIVE sets another
// duration); reports the CPU the process used (the uplink and paho; live
// values do not pass through the SQLite outbox; the broker is another
// process) as a share of one core.
//
//	go test -run '^$' -bench Live100Devices ./mqtt/
func BenchmarkLive100Devices(b *testing.B) {
	run := 20 * time.Second
	if s := getenvDuration(b, "PLANTD_BENCH_LIVE"); s > 0 {
		run = s
	}
	br := mqtttest.Start(b, mqtttest.Options{})
	st := openStore(b, "")
	cfg := fastConfig(br, "gw-live")
	cfg.LiveInterval = time.Second
	p := newPlant100()
	u, err := New(cfg, Deps{Outbox: st, Live: p}, nil)
	if err != nil {
		b.Fatal(err)
	}
	stop := runUplink(b, u)
	proctest.WaitFor(b, "connected", 30*time.Second, u.connected.Load)
	for b.Loop() {
		before, cpu0, start := u.Status(), cpuTime(b), time.Now()
		time.Sleep(run)
		after, cpu1, el := u.Status(), cpuTime(b), time.Since(start)
		b.ReportMetric(100*(cpu1-cpu0).Seconds()/el.Seconds(), "%core")
		b.ReportMetric(float64(after.Published-before.Published)/el.Seconds(), "mqtt-msgs/s")
		b.ReportMetric(float64(after.PublishedBytes-before.PublishedBytes)/el.Seconds(), "bytes/s")
	}
	stop()
	st2 := u.Status()
	b.Logf("%d readings per device; %d MQTT messages published, %d acknowledged", len(p.readings), st2.Published, st2.Acked)
}

// cpuTime is the user and system CPU time of this process so far.
func cpuTime(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
