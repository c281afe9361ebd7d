// Package httpapi serves plantd's HTTP API: the monitoring (/monitoring/v1),
// grid-control (/gridcontrol/v1) and live (/live/v1, /live/v2) interfaces of
// spec/plant-api.md §4 with the shapes of DESIGN §4, 308 redirects for
// migrated ids (DESIGN §3), RFC 9457 problem-JSON errors, /healthz,
// /metrics and /openapi.json. Authentication (bearer tokens, OAuth2 and
// roles, DESIGN §5) is the authorization server of package httpapi/oauth2,
// which httpapi mounts and uses through authServer (auth.go) and which
// answers problems through httpapi's authHost; the OpenAPI document
// takes its routes and schemas from it (oauth2.Routes, oauth2.AddSchemas).
// Both describe their routes and schemas with the building blocks of
// package httpapi/apidoc (one Route type, the JSON Schema constructors).
// The document is rendered by go generate into openapi.json.gz, which the
// binary embeds and serves (TestOpenAPIGenerated keeps the file true to
// the code), so the builder code is only in the tests' binary.
// The document tags each operation with its interface, whose tag carries
// the spec's description version (§9; info.version lists all three), and
// marks the spec's obsolete routes deprecated; those answer a Deprecation
// header (RFC 9745) and a Link to their successor (routes.go, deprecated).
//
// Every answer is encoded with encoding/json from typed values, never
// assembled as text: a handler states its answer's members in one line
// with envelope(field("plant", plantObj(p)), field("schedules", list))
// (envelope.go), which encodes as the struct of those members would.
// Schedules are plant.Schedule, the one shape grid control and the store
// use (GET lists them as grid control holds them, or, without grid
// control, as the store kept them).
//
// Usage: build a Server with New(Config, Deps, logger), then Run(ctx) until
// the context ends (graceful shutdown), or mount Handler() yourself.
//
// The live answers are encoded once per change of the live state (or
// second) and kept with their ETag (answercache.go); the live balance and
// the v2 device list are served by a fast path in front of the Gin engine
// (livefast.go) with the same answers, headers, metrics and checks
// (oauth2's Admitted), which leaves every other request, and any it would
// not answer 200 or 304, to the engine.
//
// Live values come from plant.Live (through the Live interface defined
// here); history, logs and schedules come from a History, an interface
// defined here with its own types, which cmd/plantd adapts the store to;
// grid-control schedules go to a GridControl (a *gridcontrol.Controller);
// the home energy manager's consumers (/gateway/v1/consumers) come from
// and are switched through a Consumers (a *consumer.Manager), an
// interface defined here on plant's types, so httpapi never imports
// package consumer.
//
// Import boundary: httpapi imports plant (with plant/kind), config,
// gridcontrol (the GridControl interface's types and errors, the command
// table and the eligibility check of
// /gridcontrol/v1/plants/eligibilityCheck), httpapi/oauth2, httpapi/apidoc,
// metrics, web, tariffs and tariffs/tariffconfig (the Tariffs
// interface's types: the price slots, the fetcher's status, the
// section shown at /gateway/v1/tariffs), forecast (the PV forecast's
// types, /gateway/v1/forecast, read through the Forecasts interface),
// plan and siteplan (the day-ahead plan at /gateway/v1/plan, read
// through the Planner interface) and internal/jsondup (a JSON body that gives a key twice
// in one object, at any depth, is refused 400 naming it). It does not
// import devices, the poller or modbus: what discovery learned of a
// device comes as plant.Nameplate. It never imports store,
// mqtt or cmd.
//
// Imports: plantd/config, plantd/gridcontrol, plantd/httpapi/apidoc, plantd/httpapi/oauth2, plantd/internal/jsondup, plantd/metrics, plantd/plant, plantd/plant/kind, plantd/web, plantd/httpapi/oauth2/oauthconfig, plantd/tariffs, plantd/tariffs/tariffconfig, plantd/plan, plantd/siteplan, plantd/forecast
package httpapi
