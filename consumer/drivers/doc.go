// Package drivers is the hardware side of plantd's home energy manager:
// one driver per kind of consumer device, each a consumer.Driver that
// reads the device and puts the manager's setpoint on it, and the one
// table of them (table.go) that config validation, the config's defaults
// and the daemon's wiring all read.
//
// # Job
//
// A driver takes one kind of setpoint (consumer.Setpoint): a switch
// (relay.go: a coil of a Modbus TCP I/O module; shelly.go: a Shelly
// Gen2/Gen3 plug over its HTTP RPC), an SG-Ready state (sgready.go: two
// coils), or a charging current (charger.go: an EV charger over OCPP
// 1.6J, through the central system of package charger, which
// cmd/plantd adapts to ChargePoints). Each arms the device's own fail-safe
// so that its output falls to Fallback() when plantd goes quiet: the
// relay modules' communication watchdog (watchdog.go, Beckhoff EK9000's
// registers by default), a Shelly's toggle_after, a charger's profile
// validity above the fallback profile the central system installs.
//
// The table (Kind: name, setpoint, §14a default, how plantd reaches the
// device, the checks and defaults of its Settings, its constructor) is
// the one list of drivers: consumer/consumerconfig.Config embeds
// Settings, its Validate calls Check and config calls Defaults,
// cmd/plantd calls New with an Env (the Modbus pool, the central
// system). A new driver is one entry and its file.
//
// The tests here run the drivers on the simulator (sim) over
// real sockets, and the manager with them end to end: surplus and modes
// with the simulated Shelly (manager_test.go), restarts on a SQLite file
// with the relay board (restart_test.go), BenchmarkAbsorb50.
//
// # Import boundary
//
// drivers imports consumer (the Driver interface and the setpoint) and
// net/http (the Shelly RPC). It imports no Modbus transport: the relay
// modules' coils and watchdog registers are reached through ModbusClient
// (modbus.go), the methods the drivers call, which the daemon's pool's
// *modbus.Client has (cmd/plantd asserts it), and the exception
// "illegal data address" is told by its ExceptionCode method, as
// sunspec.IsException does. It imports no OCPP library either: a
// charger reaches its central system through ChargePoints. config
// imports it for Settings and the table, so it must not import config,
// and whatever it imports config (and mqtt, httpapi, gridcontrol above
// it) depends on.
//
// Imports: plantd/consumer
package drivers
