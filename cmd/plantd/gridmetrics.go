package main

import (
	"maps"
	"slices"

	"plantd/gridcontrol"
	"plantd/metrics"
)

// gridCollector exports the grid controller's counters at /metrics, read
// at scrape time.
type gridCollector struct {
	grid *gridcontrol.Controller
}

func newGridCollector(g *gridcontrol.Controller) *gridCollector { return &gridCollector{grid: g} }

func (c *gridCollector) Collect(w *metrics.Writer) {
	s := c.grid.Stats()
	w.Counter("plantd_gridcontrol_writes_total", "Grid-control writes a device accepted and read back.", float64(s.Writes))
	w.Counter("plantd_gridcontrol_write_errors_total", "Grid-control writes that failed (refused, or no answer); each is retried.", float64(s.WriteErrors))
	w.Counter("plantd_gridcontrol_restores_total", "Controls restored to the device's default after their last window.", float64(s.Restores))
	if n := len(s.Cycles); n > 0 {
		w.Gauge("plantd_gridcontrol_cycle_seconds", "Duration of the last control cycle that wrote or ran the FeedInLimit loop.", s.Cycles[n-1].Seconds())
		w.Gauge("plantd_gridcontrol_last_cycle_timestamp_seconds", "When the last control cycle that wrote or ran the FeedInLimit loop began (Unix time): a stalled loop stops moving it.", float64(s.LastCycle.UnixNano())/1e9)
	}
	if n := len(s.EdgeToWrite); n > 0 {
		w.Gauge("plantd_gridcontrol_edge_to_write_seconds", "Latency from the last window start or end to the first write it caused.", s.EdgeToWrite[n-1].Seconds())
	}
	w.Gauge("plantd_gridcontrol_devices_not_following", "Inverters whose output stays above their limit although it reads back right and the enable was toggled.", float64(s.NotFollowing))
	for _, id := range slices.Sorted(maps.Keys(s.Tampered)) {
		w.Counter("plantd_gridcontrol_control_tampered_total", "Episodes in which a control grid control held on the device read back changed by another writer (rewritten at once; ControlTampered in the plant log).", float64(s.Tampered[id]), "device", id)
	}
	w.Counter("plantd_gridcontrol_held_reads_total", "Reads of a held control model grid control made itself because the device's poll brought nothing new since its last cycle (at most one a second per model; none for devices polled at least once a cycle).", float64(s.HeldReads))
	for _, b := range c.grid.BatterySetpoints() {
		w.Gauge("plantd_gridcontrol_battery_setpoint_watts", "Battery setpoint plantd holds on the battery (W, positive discharging, negative charging, 0 a hold; BatteryPower), after a FeedInLimit's cap.", b.W, "plant", b.PlantID, "device", b.DeviceID)
		w.Gauge("plantd_gridcontrol_battery_setpoint_asked_watts", "What the battery setpoint's window asks of the battery (W, its share of the plant's), before a FeedInLimit's cap.", b.WantW, "plant", b.PlantID, "device", b.DeviceID)
	}
	w.Counter("plantd_gridcontrol_edges_total", "Window starts and ends that caused a write (last 1000 kept for the latency).", float64(s.Edges))
}
