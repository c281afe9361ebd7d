// Package consumer is plantd's home energy manager: the consumer devices
// the spec names (switchable loads: a relay output of a Modbus I/O module,
// an SG-Ready heat pump on a relay pair, a Shelly Gen2/Gen3 plug or relay
// over its HTTP RPC), their polling and switching, the guards that
// protect their machines (minimum on and off times, switchings per hour),
// and the surplus controller that switches them on PV surplus, in the
// control cycle of grid control's FeedInLimit, so that a consumer absorbs
// surplus before PV is curtailed.
//
// # Job
//
// Each consumer has a [Driver] (driver.go; relay.go, sgready.go,
// shelly.go) and a loop that reads it on its interval and hands a
// plant.Sample with a plant.ConsumerReading to the daemon's sink, like
// the SunSpec poller does for the other devices, and writes its output
// when the controller or a mode change asks. Drivers arm the device's own
// watchdog, so that an output falls to its safe state when plantd dies:
// the Modbus relay drivers (Relay, SGReady) write a WatchdogProfile's
// registers on their first Set, by default those of Beckhoff's EK9000
// bus coupler (watchdog.go), and again after a Read found them changed.
//
// # Import boundary
//
// consumer imports plant and plant/kind (the domain's vocabulary),
// modbus (the relay modules' coils), internal/backoff and
// github.com/robfig/cron/v3 (must-run windows); net/http for the Shelly
// RPC. It knows nothing of storage, the HTTP API, MQTT or grid control:
// grid control calls the controller through a small interface, and
// cmd/plantd wires them.
package consumer
