// Package metrics serves plantd's /metrics in the Prometheus text
// exposition format (version 0.0.4): a [Registry] of [Collector]s that
// write their samples at scrape time through a [Writer], and the two
// instruments the HTTP API updates per request, [CounterVec] and
// [HistogramVec].
//
// It replaces github.com/prometheus/client_golang, of which plantd used
// only constant metrics and two vectors: that module (with protobuf,
// procfs and their registries) was 2.5 MB of the 16.5 MB stripped binary.
// The format is written by hand; nothing here parses it.
//
// # Import boundary
//
// The standard library only; any plantd package may import it.
//
// Imports: none
package metrics
