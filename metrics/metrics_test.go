package metrics

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
)

type collectorFunc func(w *Writer)

func (f collectorFunc) Collect(w *Writer) { f(w) }

func TestExposition(t *testing.T) {
	t.Parallel()
	reg := NewRegistry()
	reg.MustRegister(collectorFunc(func(w *Writer) {
		for _, d := range []string{"inv1", `we"ird\dev`} {
			w.Counter("plantd_device_polls_total", "Polls of a device.", 3, "device", d)
			w.Gauge("plantd_device_online", "1 while online.\nSecond line.", 1, "device", d)
		}
		w.Gauge("plantd_store_healthy", "1 while healthy.", 1)
		w.Gauge("plantd_nan", "Not a number.", math.NaN())
		w.Counter("plantd_implausible_total", "Labels sorted by name.", 2, "device", "inv1", "channel", "activePower")
	}))
	reqs := NewCounterVec("plantd_http_requests_total", "Requests.", "method", "route")
	lat := NewHistogramVec("plantd_http_request_duration_seconds", "Latency.", []float64{0.01, 0.001}, "method")
	reg.MustRegister(reqs, lat)
	reqs.Inc("GET", "/healthz")
	reqs.Inc("GET", "/healthz")
	reqs.Inc("POST", "/token")
	lat.Observe(0.0005, "GET")
	lat.Observe(0.001, "GET")
	lat.Observe(0.5, "GET")

	want := `# HELP plantd_device_polls_total Polls of a device.
# TYPE plantd_device_polls_total counter
plantd_device_polls_total{device="inv1"} 3
plantd_device_polls_total{device="we\"ird\\dev"} 3
# HELP plantd_device_online 1 while online.\nSecond line.
# TYPE plantd_device_online gauge
plantd_device_online{device="inv1"} 1
plantd_device_online{device="we\"ird\\dev"} 1
# HELP plantd_store_healthy 1 while healthy.
# TYPE plantd_store_healthy gauge
plantd_store_healthy 1
# HELP plantd_nan Not a number.
# TYPE plantd_nan gauge
plantd_nan NaN
# HELP plantd_implausible_total Labels sorted by name.
# TYPE plantd_implausible_total counter
plantd_implausible_total{channel="activePower",device="inv1"} 2
# HELP plantd_http_requests_total Requests.
# TYPE plantd_http_requests_total counter
plantd_http_requests_total{method="GET",route="/healthz"} 2
plantd_http_requests_total{method="POST",route="/token"} 1
# HELP plantd_http_request_duration_seconds Latency.
# TYPE plantd_http_request_duration_seconds histogram
plantd_http_request_duration_seconds_bucket{method="GET",le="0.001"} 2
plantd_http_request_duration_seconds_bucket{method="GET",le="0.01"} 2
plantd_http_request_duration_seconds_bucket{method="GET",le="+Inf"} 3
plantd_http_request_duration_seconds_sum{method="GET"} 0.5015
plantd_http_request_duration_seconds_count{method="GET"} 3
`
	srv := httptest.NewServer(reg)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if string(body) != want {
		t.Errorf("exposition:\n%s\nwant:\n%s", body, want)
	}
	if ct := resp.Header.Get("Content-Type"); ct != ContentType {
		t.Errorf("Content-Type %q", ct)
	}
}

// BenchmarkObserve is the per-request cost of the HTTP API's metrics.
func BenchmarkObserve(b *testing.B) {
	reqs := NewCounterVec("r", "", "method", "route", "status")
	lat := NewHistogramVec("l", "", []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}, "method", "route", "status")
	b.ReportAllocs()
	for b.Loop() {
		reqs.Inc("GET", "/live/v2/plants/:plantId/devices", "200")
		lat.Observe(0.0007, "GET", "/live/v2/plants/:plantId/devices", "200")
	}
}
