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
//   - Reads (functions 1, 2, 3, 4) and writes (5, 6, 15, 16) go to the
//     device's unit, whatever unit id the client sends; the device's
//     answer, or its exception, goes back.
//   - A write touching a model that carries a control plantd holds now
//     (Config.Held: grid control's HeldModels, the models' places from
//     discovery) is refused with exception 6 (server device busy: try
//     again when the window has ended) and never reaches the device.
//   - Each client address gets a token bucket (Config.RequestsPerSecond,
//     burst Config.Burst); a request beyond it answers exception 6 at
//     once, so a chatty client cannot crowd plantd's polls out of the
//     queue.
//   - A request the device does not answer (timeout, connection lost)
//     answers exception 0x0B (gateway target failed to respond).
//
// It imports plantd/modbus (the server and the client) and
// golang.org/x/time/rate; only cmd/plantd imports it.
package modbusproxy
