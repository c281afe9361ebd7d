package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"plantd/devices/poller"
	"plantd/mqtt"
	"plantd/plant"
	"plantd/store"
)

// daemonCollector exports the poller's and the store's counters at
// /metrics. It reads their Stats at scrape time, so the poll loop and the
// writer pay nothing for it.
type daemonCollector struct {
	poller *poller.Poller
	store  *store.Store
	live   *plant.Live

	implausible                                                  *prometheus.Desc
	polls, failures, online, pollSeconds                         *prometheus.Desc
	queued, written, samples, dropped, failed, healthy, rolledUp *prometheus.Desc
}

func newDaemonCollector(p *poller.Poller, s *store.Store, l *plant.Live) *daemonCollector {
	dev := []string{"device"}
	return &daemonCollector{
		poller:      p,
		store:       s,
		live:        l,
		implausible: prometheus.NewDesc("plantd_device_implausible_values_total", "Values of a device's channel dropped as implausible (plant/doc.go, Plausibility).", []string{"device", "channel"}, nil),
		polls:       prometheus.NewDesc("plantd_device_polls_total", "Polls of a device, successful or not.", dev, nil),
		failures:    prometheus.NewDesc("plantd_device_poll_failures_total", "Failed polls of a device.", dev, nil),
		online:      prometheus.NewDesc("plantd_device_online", "1 while the device's last poll succeeded.", dev, nil),
		pollSeconds: prometheus.NewDesc("plantd_device_poll_duration_seconds", "Duration of the device's last poll.", dev, nil),
		queued:      prometheus.NewDesc("plantd_store_queued", "Measurements and log entries waiting for the writer.", nil, nil),
		written:     prometheus.NewDesc("plantd_store_measurements_written_total", "Measurements committed.", nil, nil),
		samples:     prometheus.NewDesc("plantd_store_samples_written_total", "Channel values committed.", nil, nil),
		dropped:     prometheus.NewDesc("plantd_store_dropped_total", "Measurements and log entries refused (queue full, read-only storage, too old).", nil, nil),
		failed:      prometheus.NewDesc("plantd_store_failed_total", "Measurements and log entries lost in a batch that could not be committed.", nil, nil),
		healthy:     prometheus.NewDesc("plantd_store_healthy", "1 while the storage accepts writes.", nil, nil),
		rolledUp:    prometheus.NewDesc("plantd_store_rolled_up_to_seconds", "Unix time up to which rollups are complete.", nil, nil),
	}
}

func (c *daemonCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.implausible, c.polls, c.failures, c.online, c.pollSeconds,
		c.queued, c.written, c.samples, c.dropped, c.failed, c.healthy, c.rolledUp} {
		ch <- d
	}
}

func (c *daemonCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.poller.Stats() {
		online := 0.0
		if s.State == poller.StateOnline {
			online = 1
		}
		ch <- prometheus.MustNewConstMetric(c.polls, prometheus.CounterValue, float64(s.Polls), s.ID)
		ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(s.Polls-s.Successes), s.ID)
		ch <- prometheus.MustNewConstMetric(c.online, prometheus.GaugeValue, online, s.ID)
		ch <- prometheus.MustNewConstMetric(c.pollSeconds, prometheus.GaugeValue, s.LastDuration.Seconds(), s.ID)
	}
	for _, n := range c.live.Implausible() {
		ch <- prometheus.MustNewConstMetric(c.implausible, prometheus.CounterValue, float64(n.Count), n.DeviceID, n.Channel.Name())
	}
	st := c.store.Stats()
	healthy := 1.0
	if c.store.Health() != nil {
		healthy = 0
	}
	rolled := 0.0
	if !st.RolledUpTo.IsZero() {
		rolled = float64(st.RolledUpTo.Unix())
	}
	ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(st.Queued))
	ch <- prometheus.MustNewConstMetric(c.written, prometheus.CounterValue, float64(st.Written))
	ch <- prometheus.MustNewConstMetric(c.samples, prometheus.CounterValue, float64(st.Samples))
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(st.Dropped))
	ch <- prometheus.MustNewConstMetric(c.failed, prometheus.CounterValue, float64(st.Failed))
	ch <- prometheus.MustNewConstMetric(c.healthy, prometheus.GaugeValue, healthy)
	ch <- prometheus.MustNewConstMetric(c.rolledUp, prometheus.GaugeValue, rolled)
}

// uplinkCollector exports the MQTT uplink's state at /metrics, read at
// scrape time (the outbox figures are refreshed by the uplink every few
// seconds).
type uplinkCollector struct {
	up *mqtt.Uplink

	connected, attempts, connects, published, publishedBytes, acked *prometheus.Desc
	logDropped, commands, commandsDropped                           *prometheus.Desc
	depth, oldest, dropped                                          *prometheus.Desc
}

func newUplinkCollector(up *mqtt.Uplink) *uplinkCollector {
	stream := []string{"stream"}
	return &uplinkCollector{
		up:              up,
		connected:       prometheus.NewDesc("plantd_mqtt_connected", "1 while connected to the broker.", nil, nil),
		attempts:        prometheus.NewDesc("plantd_mqtt_connection_attempts_total", "Connection attempts to the broker.", nil, nil),
		connects:        prometheus.NewDesc("plantd_mqtt_connections_total", "Successful connections to the broker.", nil, nil),
		published:       prometheus.NewDesc("plantd_mqtt_published_messages_total", "MQTT messages published (a backlog message may carry several outbox messages).", nil, nil),
		publishedBytes:  prometheus.NewDesc("plantd_mqtt_published_bytes_total", "Payload bytes published.", nil, nil),
		acked:           prometheus.NewDesc("plantd_mqtt_acked_total", "Outbox messages acknowledged by the broker (PUBACK) and deleted.", nil, nil),
		logDropped:      prometheus.NewDesc("plantd_mqtt_log_dropped_total", "Log entries not handed to the uplink because its queue was full.", nil, nil),
		commands:        prometheus.NewDesc("plantd_mqtt_commands_total", "Schedules and commands from the cloud answered on up/ack.", nil, nil),
		commandsDropped: prometheus.NewDesc("plantd_mqtt_commands_dropped_total", "Incoming messages dropped because the command queue was full.", nil, nil),
		depth:           prometheus.NewDesc("plantd_mqtt_outbox_depth", "Messages in the outbox not yet acknowledged, per stream.", stream, nil),
		oldest:          prometheus.NewDesc("plantd_mqtt_outbox_oldest_unsent_age_seconds", "Age of the oldest unacknowledged message, per stream (0 when empty).", stream, nil),
		dropped:         prometheus.NewDesc("plantd_mqtt_outbox_dropped_total", "Messages dropped by the outbox caps (count and age), per stream.", stream, nil),
	}
}

func (c *uplinkCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.connected, c.attempts, c.connects, c.published, c.publishedBytes, c.acked,
		c.logDropped, c.commands, c.commandsDropped, c.depth, c.oldest, c.dropped} {
		ch <- d
	}
}

func (c *uplinkCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.up.Status()
	connected := 0.0
	if st.Connected {
		connected = 1
	}
	ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, connected)
	for _, v := range []struct {
		d *prometheus.Desc
		n uint64
	}{{c.attempts, st.Attempts}, {c.connects, st.Connects}, {c.published, st.Published}, {c.publishedBytes, st.PublishedBytes},
		{c.acked, st.Acked}, {c.logDropped, st.LogDropped}, {c.commands, st.Commands}, {c.commandsDropped, st.CommandsDropped}} {
		ch <- prometheus.MustNewConstMetric(v.d, prometheus.CounterValue, float64(v.n))
	}
	for _, s := range st.Streams {
		age := 0.0
		if s.Depth > 0 && !s.Oldest.IsZero() {
			age = time.Since(s.Oldest).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(s.Depth), s.Stream)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age, s.Stream)
		ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(s.Dropped), s.Stream)
	}
}
