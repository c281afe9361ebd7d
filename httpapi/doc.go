// Package httpapi serves plantd's HTTP API: the monitoring (/monitoring/v1),
// grid-control (/gridcontrol/v1) and live (/live/v1, /live/v2) interfaces of
// spec/plant-api.md §4 with the shapes of DESIGN §4, bearer-token and OAuth2
// client-credentials auth with roles (DESIGN §5), 308 redirects for migrated
// ids (DESIGN §3), RFC 9457 problem-JSON errors, /healthz, /metrics and
// /openapi.json.
//
// Usage: build a Server with New(Config, Deps, logger), then Run(ctx) until
// the context ends (graceful shutdown), or mount Handler() yourself.
//
// Live values come from plant.Live (through the Live interface defined
// here); history, logs and schedules come from a History, an interface
// defined here with its own types, which cmd/plantd adapts the store to.
//
// Import boundary: httpapi imports plant (with plant/kind), config and
// devices (types only).
// It never imports store, mqtt, gridcontrol or cmd.
package httpapi
