// Package modbusproxy is a device's Modbus TCP proxy (config
// devices[].proxy): a server on a port of its own through which a third
// party (a vendor's logger, a wallbox or battery controller, plantd scan)
// reaches a device whose Modbus connection plantd owns, for devices that
// accept a single client. Its requests join plantd's own request queue
// for the device's endpoint (the modbus.Client the poller's requests take
// turns with), never a second connection.
//
// Rules:
//
//   - A client outside Config.Allow (IP addresses and CIDRs; empty: every
//     client) is closed at connect. Each client address keeps at most
//     Config.MaxConnsPerClient connections (default 4), the proxy 32: one
//     more closes the oldest idle one (modbus.Server), so idle sockets
//     never lock a master out.
//   - Reads (functions 1, 2, 3, 4) go to the device's unit, whatever unit
//     id the client sends; the device's answer, or its exception, goes
//     back.
//   - The proxy is read-only unless Config.Writes: a write (5, 6, 15, 16)
//     answers exception 1 (illegal function) and never reaches the
//     device. The config (devices[].proxy.writes) requires a non-empty
//     allow with writes.
//   - With writes on, a register write touching a model that carries a
//     control plantd holds now (Config.Held: grid control's HeldModels,
//     the models' places from discovery) is refused with exception 6
//     (server device busy: try again when the window has ended).
//   - With writes on, a register write touching a nameplate or settings
//     model (SettingsModels: SunSpec 1, 120, 121, 701, 702; Config.Models:
//     the models' places from discovery) answers exception 2 (illegal data
//     address) unless Config.WriteSettings; while the device's models are
//     not known yet (not discovered), exception 6. Coil writes (5, 15)
//     touch no SunSpec model and pass with writes on.
//   - Each client address gets a token bucket (Config.RequestsPerSecond,
//     burst Config.Burst); a request beyond it answers exception 6 at
//     once, so a chatty client cannot crowd plantd's polls out of the
//     queue.
//   - A request the device does not answer (timeout, connection lost)
//     answers exception 0x0B (gateway target failed to respond).
//   - Refusals (a client outside allow, a refused write, a frame that is
//     no Modbus TCP) are logged through one limiter shared with the
//     server (modbus.NewRefusals, a plantd/internal/logthrottle Limiter):
//     the first of a client address and reason, then at most one line a
//     minute with the count suppressed.
//
// Its section of the config file, proxyconfig.Settings
// (devices[].proxy), with its defaults and its Validate, is in the leaf
// modbusproxy/proxyconfig, which imports no transport; package config
// holds it in a device and calls Validate with the file's lines, and
// cmd/plantd makes a Config of it.
//
// It imports plantd/modbus (the server and the client),
// plantd/internal/logthrottle (the refusals' limiter) and
// golang.org/x/time/rate; only cmd/plantd imports it.
//
// Imports: plantd/internal/logthrottle, plantd/modbus
package modbusproxy
