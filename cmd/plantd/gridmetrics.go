package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"plantd/gridcontrol"
)

// gridCollector exports the grid controller's counters at /metrics, read
// at scrape time.
type gridCollector struct {
	grid                                             *gridcontrol.Controller
	writes, errors, restores, cycle, edge, edgeCount *prometheus.Desc
}

func newGridCollector(g *gridcontrol.Controller) *gridCollector {
	return &gridCollector{
		grid:      g,
		writes:    prometheus.NewDesc("plantd_gridcontrol_writes_total", "Grid-control writes a device accepted and read back.", nil, nil),
		errors:    prometheus.NewDesc("plantd_gridcontrol_write_errors_total", "Grid-control writes that failed (refused, or no answer); each is retried.", nil, nil),
		restores:  prometheus.NewDesc("plantd_gridcontrol_restores_total", "Controls restored to the device's default after their last window.", nil, nil),
		cycle:     prometheus.NewDesc("plantd_gridcontrol_cycle_seconds", "Duration of the last control cycle that wrote or ran the FeedInLimit loop.", nil, nil),
		edge:      prometheus.NewDesc("plantd_gridcontrol_edge_to_write_seconds", "Latency from the last window start or end to the first write it caused.", nil, nil),
		edgeCount: prometheus.NewDesc("plantd_gridcontrol_edges_total", "Window starts and ends that caused a write (last 1000 kept for the latency).", nil, nil),
	}
}

func (c *gridCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.writes, c.errors, c.restores, c.cycle, c.edge, c.edgeCount} {
		ch <- d
	}
}

func (c *gridCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.grid.Stats()
	ch <- prometheus.MustNewConstMetric(c.writes, prometheus.CounterValue, float64(s.Writes))
	ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(s.WriteErrors))
	ch <- prometheus.MustNewConstMetric(c.restores, prometheus.CounterValue, float64(s.Restores))
	if n := len(s.Cycles); n > 0 {
		ch <- prometheus.MustNewConstMetric(c.cycle, prometheus.GaugeValue, s.Cycles[n-1].Seconds())
	}
	if n := len(s.EdgeToWrite); n > 0 {
		ch <- prometheus.MustNewConstMetric(c.edge, prometheus.GaugeValue, s.EdgeToWrite[n-1].Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.edgeCount, prometheus.CounterValue, float64(s.Edges))
}
