package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"plantd/metrics"
)

// apiMetrics are the API's request metrics.
type apiMetrics struct {
	requests *metrics.CounterVec
	latency  *metrics.HistogramVec
	// authFailures counts failed logins by reason: invalid_client (a
	// wrong secret or unknown client at /oauth2/token), invalid_token (a
	// bearer token plantd does not know), rate_limited (refused unchecked
	// because the address used up its failed logins).
	authFailures *metrics.CounterVec
}

func newMetrics(reg *metrics.Registry) *apiMetrics {
	m := &apiMetrics{
		requests: metrics.NewCounterVec("plantd_http_requests_total",
			"HTTP API requests by method, route and status.", "method", "route", "status"),
		latency: metrics.NewHistogramVec("plantd_http_request_duration_seconds",
			"HTTP API request latency by method, route and status.",
			[]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}, "method", "route", "status"),
	}
	m.authFailures = metrics.NewCounterVec("plantd_auth_failures_total",
		"Failed logins by reason (invalid_client, invalid_token, rate_limited).", "reason")
	reg.MustRegister(m.requests, m.latency, m.authFailures)
	return m
}

// middleware counts and times every request by its route template (never
// the raw path, so unknown paths cannot blow up the label set).
func (m *apiMetrics) middleware(c *gin.Context) {
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
	m.count(method, route, c.Writer.Status(), start)
}

// count counts and times one request that came at start.
func (m *apiMetrics) count(method, route string, status int, start time.Time) {
	code := statusLabel(status)
	m.requests.Inc(method, route, code)
	m.latency.Observe(time.Since(start).Seconds(), method, route, code)
}

// statusLabel is the metrics label of a status: the common ones without
// a string made per request.
func statusLabel(status int) string {
	switch status {
	case http.StatusOK:
		return "200"
	case http.StatusNotModified:
		return "304"
	}
	return strconv.Itoa(status)
}
