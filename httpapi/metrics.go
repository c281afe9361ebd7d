package httpapi

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the API's Prometheus metrics.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(reg *prometheus.Registry) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "plantd", Subsystem: "http", Name: "requests_total",
			Help: "HTTP API requests by method, route and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "plantd", Subsystem: "http", Name: "request_duration_seconds",
			Help:    "HTTP API request latency by method, route and status.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"method", "route", "status"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("httpapi: register metrics: %w", err)
		}
	}
	return m, nil
}

// middleware counts and times every request by its route template (never
// the raw path, so unknown paths cannot blow up the label set).
func (m *metrics) middleware(c *gin.Context) {
	start := time.Now()
	c.Next()
	method := c.Request.Method
	switch method {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
	default:
		method = "OTHER"
	}
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	status := strconv.Itoa(c.Writer.Status())
	m.requests.WithLabelValues(method, route, status).Inc()
	m.latency.WithLabelValues(method, route, status).Observe(time.Since(start).Seconds())
}
