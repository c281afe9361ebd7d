package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/mqtt/mqtttest"
	"plantd/sim"
	"plantd/sim/simtest"
)

// TestMQTTBrokersFailover runs the real binary with mqtt.brokers (three
// mosquittos as the nodes of a cluster, a collector at each): /healthz and
// /metrics name the broker in use; killed (SIGKILL), the uplink moves to
// another within seconds and live values go on there; plantd itself
// killed and started again connects, and across the brokers the log
// stream has every seq from 1.
func TestMQTTBrokersFailover(t *testing.T) {
	t.Parallel() // its own daemon, brokers and files
	if testing.Short() {
		t.Skip("runs the daemon against three brokers (~10 s)")
	}
	p := simtest.Start(t, sim.DefaultConfig())
	var (
		brokers []*mqtttest.Broker
		cols    []*mqtttest.Collector
		urls    []string
	)
	for range 3 {
		b := mqtttest.Start(t, mqtttest.Options{})
		brokers = append(brokers, b)
		cols = append(cols, mqtttest.Collect(t, b))
		urls = append(urls, b.URL())
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(`gateway:
  id: gw-failover
http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: Failover, timezone: Europe/Berlin}
devices:
%smqtt:
  brokers: [%s]
  liveInterval: 1s
`, filepath.Join(dir, "plantd.db"), plantDevices(p.Devices()[:2]), strings.Join(urls, ", "))
	cfgPath := filepath.Join(dir, "plantd.yaml")
	writeConfig(t, cfgPath, cfg)

	// inUse is the broker /healthz names while connected (-1: none), and
	// checks that /metrics names the same.
	inUse := func(d *plantdRun) int {
		code, body := d.request("GET", "/healthz", "", "")
		var h struct {
			MQTT struct{ Status, Broker string }
		}
		if code != 200 || json.Unmarshal(body, &h) != nil {
			t.Fatalf("/healthz: %d %s", code, body)
		}
		i := slices.Index(urls, h.MQTT.Broker)
		if h.MQTT.Status != "Connected" || i < 0 {
			return -1
		}
		_, m := d.request("GET", "/metrics", "", "")
		if want := fmt.Sprintf(`plantd_mqtt_broker_info{broker=%q} 1`, urls[i]); !strings.Contains(string(m), want) {
			return -1 // not yet the same scrape: the next round asks again
		}
		return i
	}
	d := startDaemon(t, cfgPath)
	d.waitAPI(10 * time.Second)
	var i int
	proctest.WaitFor(t, "connected, in /healthz and /metrics", 10*time.Second, func() bool { i = inUse(d); return i >= 0 })
	proctest.WaitFor(t, "live values", 10*time.Second, func() bool { return len(cols[i].Seqs("live/p1")) >= 2 })
	killed := time.Now()
	brokers[i].Kill()
	var next int
	proctest.WaitFor(t, "the uplink on another broker", 15*time.Second, func() bool { next = inUse(d); return next >= 0 && next != i })
	t.Logf("broker %d killed; plantd on broker %d after %v", i, next, time.Since(killed).Round(time.Millisecond))
	n := len(cols[next].Seqs("live/p1"))
	proctest.WaitFor(t, "live values on the new broker", 10*time.Second, func() bool { return len(cols[next].Seqs("live/p1")) >= n+2 })
	brokers[i].Start()

	// plantd killed: what it logged before is delivered, and the new run's
	// log entries follow without a gap.
	logged := func() map[uint64]bool {
		seen := map[uint64]bool{}
		for _, c := range cols {
			for _, s := range c.Seqs("log/p1") {
				seen[s] = true
			}
		}
		return seen
	}
	before := len(logged())
	d.Kill()
	d = startDaemon(t, cfgPath)
	d.waitAPI(10 * time.Second)
	proctest.WaitFor(t, "connected after the restart", 15*time.Second, func() bool { return inUse(d) >= 0 })
	proctest.WaitFor(t, "the new run's log entries", 15*time.Second, func() bool { return len(logged()) > before })
	seen := logged()
	var hi uint64
	for s := range seen {
		hi = max(hi, s)
	}
	var missing []uint64
	for s := uint64(1); s <= hi; s++ {
		if !seen[s] {
			missing = append(missing, s)
		}
	}
	t.Logf("log/p1 across 3 brokers: seqs 1..%d, %d before the kill, %d missing", hi, before, len(missing))
	if before == 0 || len(missing) > 0 {
		t.Errorf("log/p1: %d seqs before the kill, missing %v", before, missing)
	}
}
