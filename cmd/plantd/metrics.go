package main

import (
	"time"

	"plantd/consumer"
	"plantd/devices/poller"
	"plantd/metrics"
	"plantd/modbus"
	"plantd/mqtt"
	"plantd/plant"
	"plantd/store"
)

// daemonCollector exports the poller's, the Modbus endpoints' and the
// store's counters at /metrics. It reads their Stats at scrape time, so
// the poll loop and the writer pay nothing for it.
type daemonCollector struct {
	poller *poller.Poller
	homes  *consumer.Manager // nil without consumers
	pool   *modbus.Pool
	store  *store.Store
	live   *plant.Live
}

func newDaemonCollector(p *poller.Poller, pool *modbus.Pool, s *store.Store, l *plant.Live) *daemonCollector {
	return &daemonCollector{poller: p, pool: pool, store: s, live: l}
}

func (c *daemonCollector) Collect(w *metrics.Writer) {
	stats := c.poller.Stats()
	if c.homes != nil {
		stats = append(stats, c.homes.Stats()...)
	}
	for _, s := range stats {
		online := 0.0
		if s.State == plant.StateOnline {
			online = 1
		}
		w.Counter("plantd_device_polls_total", "Polls of a device, successful or not.", float64(s.Polls), "device", s.ID)
		w.Counter("plantd_device_poll_failures_total", "Failed polls of a device.", float64(s.Polls-s.Successes), "device", s.ID)
		w.Gauge("plantd_device_online", "1 while the device's last poll succeeded.", online, "device", s.ID)
		w.Gauge("plantd_device_poll_duration_seconds", "Duration of the device's last poll.", s.LastDuration.Seconds(), "device", s.ID)
	}
	for _, n := range c.live.Implausible() {
		w.Counter("plantd_device_implausible_values_total", "Values of a device's channel dropped as implausible (plant/doc.go, Plausibility).",
			float64(n.Count), "device", n.DeviceID, "channel", n.Channel.Name())
	}
	collectEndpoints(w, c.pool.Stats())
	st := c.store.Stats()
	healthy := 1.0
	if c.store.Health() != nil {
		healthy = 0
	}
	rolled := 0.0
	if !st.RolledUpTo.IsZero() {
		rolled = float64(st.RolledUpTo.Unix())
	}
	w.Gauge("plantd_store_queued", "Measurements and log entries waiting for the writer.", float64(st.Queued))
	w.Counter("plantd_store_measurements_written_total", "Measurements committed.", float64(st.Written))
	w.Counter("plantd_store_samples_written_total", "Channel values committed.", float64(st.Samples))
	w.Counter("plantd_store_dropped_total", "Measurements and log entries refused (queue full, read-only storage, too old).", float64(st.Dropped))
	w.Counter("plantd_store_failed_total", "Measurements and log entries lost in a batch that could not be committed.", float64(st.Failed))
	w.Gauge("plantd_store_healthy", "1 while the storage accepts writes.", healthy)
	w.Gauge("plantd_store_rolled_up_to_seconds", "Unix time up to which rollups are complete.", rolled)
	u := c.store.Usage()
	if u.BytesWrittenOK {
		w.Counter("plantd_store_bytes_written_total", "Bytes the whole plantd process sent to the block layer since it started (write_bytes of /proc/self/io): the database, its WAL and anything else plantd writes. The storage's wear rate.", float64(u.BytesWritten))
	}
	w.Gauge("plantd_store_database_bytes", "Size of the SQLite database file plus its -wal file.", float64(u.FileBytes+u.WALBytes))
}

// collectEndpoints writes the counters of the Modbus endpoints (one
// host:port each, shared by the devices behind it): what the link did,
// where the poller's figures say what the devices did.
func collectEndpoints(w *metrics.Writer, eps []modbus.EndpointStats) {
	for _, e := range eps {
		connected := 0.0
		if e.Connected {
			connected = 1
		}
		w.Gauge("plantd_modbus_connected", "1 while plantd holds a connection to the Modbus endpoint.", connected, "endpoint", e.Address)
		w.Gauge("plantd_modbus_waiting_requests", "Requests waiting for their turn on the endpoint's connection now.", float64(e.Waiting), "endpoint", e.Address)
		w.Counter("plantd_modbus_requests_total", "Modbus requests sent to the endpoint.", float64(e.Requests), "endpoint", e.Address)
		for _, f := range []struct {
			reason string
			n      uint64
		}{
			{"timeout", e.Timeouts}, {"mismatch", e.Mismatches}, {"malformed", e.Malformed},
			{"io", e.IOErrors},
		} {
			w.Counter("plantd_modbus_request_failures_total", "Modbus requests without a valid answer, by reason (timeout, mismatch, malformed, io); on TCP each closed the connection, on a serial line only io reopens the port.",
				float64(f.n), "endpoint", e.Address, "reason", f.reason)
		}
		w.Counter("plantd_modbus_exceptions_total", "Modbus exception answers of the endpoint's devices.", float64(e.Exceptions), "endpoint", e.Address)
		w.Counter("plantd_modbus_connects_total", "Connections opened to the endpoint (a serial line: its port opened).", float64(e.Connects), "endpoint", e.Address)
		w.Counter("plantd_modbus_connect_failures_total", "Failed connection attempts to the endpoint.", float64(e.ConnectFailures), "endpoint", e.Address)
		// The bus view: how full the link is and what it carried.
		transport := string(e.Transport)
		if transport == "" {
			transport = string(modbus.TransportTCP)
		}
		w.Counter("plantd_modbus_busy_seconds_total", "Time the endpoint's link was busy with a request (its turn taken to its answer); its rate is the bus utilisation.",
			e.Busy.Seconds(), "endpoint", e.Address, "transport", transport)
		w.Gauge("plantd_modbus_utilisation", "Share of the time since the endpoint was created that its link was busy (0..1): busy time, from a request's turn to its answer or timeout, frame gaps and the device's think time included; not the share of the line's bytes carrying frames, which on a saturated RTU line is a few points lower.",
			e.Utilisation(), "endpoint", e.Address, "transport", transport)
		w.Counter("plantd_modbus_crc_errors_total", "RTU answers with a wrong CRC (also counted as malformed).", float64(e.CRCErrors), "endpoint", e.Address, "transport", transport)
		w.Counter("plantd_modbus_bytes_written_total", "Bytes plantd wrote to the endpoint's link.", float64(e.BytesWritten), "endpoint", e.Address, "transport", transport)
		w.Counter("plantd_modbus_bytes_read_total", "Bytes plantd read from the endpoint's link.", float64(e.BytesRead), "endpoint", e.Address, "transport", transport)
	}
}

// uplinkCollector exports the MQTT uplink's state at /metrics, read at
// scrape time (the outbox figures are refreshed by the uplink every few
// seconds).
type uplinkCollector struct {
	up *mqtt.Uplink
}

func newUplinkCollector(up *mqtt.Uplink) *uplinkCollector { return &uplinkCollector{up: up} }

func (c *uplinkCollector) Collect(w *metrics.Writer) {
	st := c.up.Status()
	connected := 0.0
	if st.Connected {
		connected = 1
	}
	w.Gauge("plantd_mqtt_connected", "1 while connected to the broker.", connected)
	if st.Broker != "" {
		w.Gauge("plantd_mqtt_broker_info", "1 for the broker URL in use (while connected) or last tried.", 1, "broker", st.Broker)
	}
	for _, v := range []struct {
		name, help string
		n          uint64
	}{
		{"plantd_mqtt_connection_attempts_total", "Connection attempts to the broker.", st.Attempts},
		{"plantd_mqtt_connections_total", "Successful connections to the broker.", st.Connects},
		{"plantd_mqtt_published_messages_total", "MQTT messages published (a backlog message may carry several outbox messages).", st.Published},
		{"plantd_mqtt_published_bytes_total", "Payload bytes published.", st.PublishedBytes},
		{"plantd_mqtt_acked_total", "Outbox messages acknowledged by the broker (PUBACK) and deleted.", st.Acked},
		{"plantd_mqtt_log_dropped_total", "Log entries not handed to the uplink because its queue was full.", st.LogDropped},
		{"plantd_mqtt_commands_total", "Schedules and commands from the cloud answered on up/ack.", st.Commands},
		{"plantd_mqtt_commands_dropped_total", "Incoming messages dropped because the command queue was full.", st.CommandsDropped},
	} {
		w.Counter(v.name, v.help, float64(v.n))
	}
	for _, s := range st.Streams {
		age := 0.0
		if s.Depth > 0 && !s.Oldest.IsZero() {
			age = time.Since(s.Oldest).Seconds()
		}
		w.Gauge("plantd_mqtt_outbox_depth", "Messages in the outbox not yet acknowledged, per stream.", float64(s.Depth), "stream", s.Stream)
		w.Gauge("plantd_mqtt_outbox_oldest_unsent_age_seconds", "Age of the oldest unacknowledged message, per stream (0 when empty).", age, "stream", s.Stream)
		w.Counter("plantd_mqtt_outbox_dropped_total", "Messages dropped, per stream: by the outbox caps (count and age) on rollup and log streams; on live streams, live messages given up unacknowledged when a connection ended or left by an older plantd (live values are never replayed).", float64(s.Dropped), "stream", s.Stream)
	}
}
