// Package charger is plantd's OCPP 1.6J central system: EV chargers on
// the LAN connect to it over a websocket, report their state and meter
// values, and take the charging current plantd sets through OCPP smart
// charging profiles. The daemon's consumer driver calls [Central.SetCurrent]
// and [Central.Status]; the OCPP side is github.com/lorenzodonini/ocpp-go.
//
// # Job
//
// A [Central] ([New], then [Central.Run]) listens on Config.Listen; each
// configured [Point] connects to ws://host:port/ocpp/<id> with the
// websocket subprotocol ocpp1.6. A connection of an id not configured,
// or without the configured password (HTTP basic auth, user name = id,
// compared in constant time), is refused with HTTP 401 and one warning
// line naming the id, the remote address and the reason, at most one a
// minute per remote host and reason (internal/logthrottle). A frame
// ocpp-go cannot handle (no JSON, no OCPP-J call, an invalid payload) is
// answered with an OCPP-J CallError where it has an id, and logged the
// same way; the connection and the other chargers carry on. A second
// connection of a connected id replaces the first (a charger that
// reconnects has usually lost the old one without a close).
//
// plantd answers the Core profile's requests: BootNotification
// (Accepted, heartbeat every 60 s, plantd's time), Heartbeat (the time:
// chargers set their clocks from these two), StatusNotification (the
// configured connector's status becomes Status.State), MeterValues
// (within a transaction or not), StartTransaction and StopTransaction
// (plantd numbers the transactions from 1 per run), Authorize (Accepted),
// DataTransfer (UnknownVendorId), and the Firmware Management profile's
// DiagnosticsStatusNotification and FirmwareStatusNotification (logged).
// plantd does not authorize cars: every id tag is Accepted, and who may
// charge is the charger's business (its RFID list, or free charging).
// Other profiles' requests get ocpp-go's NotImplemented error.
//
// After the charger's first message that is no BootNotification on a
// connection (it sends one once it has the boot's answer, or, on a
// reconnection without a boot, first thing), plantd installs the
// fallback profile and asks, ignoring a refusal, for meter values every
// 10 s (MeterValueSampleInterval) of Energy.Active.Import.Register,
// Power.Active.Import, Current.Import, Current.Offered and SoC
// (MeterValuesSampledData). A charger that rejects the fallback is
// logged as a warning: plantd cannot then guarantee the fallback current
// if it stops.
//
// # Profile stacking
//
// OCPP 1.6 §3.13 stacks charging profiles of one purpose: the valid
// profile with the highest stack level rules; when it ends (its validTo
// passes, or its schedule's duration runs out) the next lower one rules
// again, and a profile with the stack level and purpose (or the id) of
// one the charger has replaces it. plantd uses two TxDefaultProfiles
// (the default for every transaction on the connector, also the ones
// that start later), in amperes, on Point.ConnectorID:
//
//   - level 0, id 1, the fallback: Relative, no start, no duration, no
//     validTo, FallbackCurrentA on Point.Phases phases. It lasts until
//     replaced, and needs no clock.
//   - level 1, id 2, each SetCurrent: Absolute from now, validFrom now,
//     validTo and the schedule's duration Validity later, the limit on the
//     phases asked. Each replaces the previous one.
//
// So the charger falls back by itself when plantd dies: nothing has to
// be sent for that, and a process killed with SIGKILL or a cut network
// ends in the fallback as surely as a clean stop. Worked example:
// fallback 6 A at level 0; plantd sets 16 A for 60 s at level 1 and the
// caller renews it every 20 s (a third of Validity: two renewals may be
// lost before the limit lapses), so the 16 A never end while plantd runs.
// kill -9 at 12:00:05, the last renewal at 12:00:00 valid until 12:01:00:
// at 12:01:00 at the latest the charger is back at 6 A, without plantd.
// A clean stop leaves the limit to lapse the same way, so a restart
// within Validity does not interrupt the charging.
//
// The level-1 profile's end is an absolute time: it relies on the
// charger's clock, which chargers set from the BootNotification's and
// Heartbeat's answers (plantd's Config.Now). OCPP-J timestamps are whole
// seconds: the start is truncated to the second and the duration rounded
// up, so a limit lasts Validity plus less than a second.
//
// # Status
//
// [Central.Status] returns what the charger last said (see [Status]):
// the configured connector's state, whether a transaction runs, power,
// energy, offered current and SoC from its meter values, the limit in
// force as far as plantd knows (the last SetCurrent the charger accepted
// while its validity lasts, then the fallback), and the last request's
// failure. On a disconnection State goes to "" and Connected to false;
// the meter values stay, as old as Updated says. A BootNotification
// forgets the limits (a rebooted charger may have lost its profiles)
// until the fallback is installed again.
//
// Meter values: Power.Active.Import in W or kW (the total, else the sum
// of the phases, else the sum over the phases of Current.Import ×
// Voltage), Energy.Active.Import.Register in Wh or kWh (also the
// measurand of a value without one), Current.Offered in A, SoC in
// Percent; StartTransaction's meterStart and StopTransaction's meterStop
// set the energy register. Signed values, other locations than Outlet
// (SoC: any), and unknown units are skipped.
//
// Not supported: OCPP 2.0.1, TLS (wss; put a TLS proxy in front),
// security profile 3 (client certificates), more than one connector per
// Point, ChargePointMaxProfile and TxProfile, limits in watts, remote
// start and stop, reservations, local authorization lists, firmware
// updates.
//
// # ocpp-go
//
// ocpp-go's central system runs on a websocket server of this package
// (wsserver.go) instead of ocpp-go's ws.Server, which in v0.19.0 listens
// on ":port" only (every interface, whatever Config.Listen's host), sets
// the address Addr reports without a lock while Start runs, and does not
// wait for its connections' goroutines when stopped. ocpp-go calls the
// handlers on goroutines of its own; one mutex guards the state. ocpp-go's
// package loggers stay the silent default (they are globals); errors
// reach plantd's log through this package's own lines. Run returns once
// the listener, every connection and the setup goroutines are done;
// ocpp-go's answer callbacks may run a moment longer (they only fill a
// buffered channel).
//
// # Import boundary
//
// This package imports only the standard library, ocpp-go and its
// dependencies (gorilla/websocket), and plantd/internal/logthrottle. No
// plantd package but the consumer driver and cmd/plantd imports it.
//
// Imports: plantd/internal/logthrottle
package charger
