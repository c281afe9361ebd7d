package modbus_test

import (
	"testing"

	"plantd/devices/sim"
	"plantd/devices/sim/simtest"
	"plantd/modbus"
)

// simInverter starts the simulated classic inverter alone.
func simInverter(b *testing.B) *sim.Device {
	cfg := sim.DefaultConfig()
	cfg.Devices = cfg.Devices[:1]
	return simtest.Start(b, cfg).Devices()[0]
}

// BenchmarkSimRawLoop is the ceiling of the simulator: a raw client loop
// reading 125 registers per request over one connection.
func BenchmarkSimRawLoop(b *testing.B) {
	d := simInverter(b)
	modbus.BenchRawLoop(b, d.Addr(), d.Unit())
}

// BenchmarkSimClientRead is the same read through the transport; compare
// its req/s with BenchmarkSimRawLoop's.
func BenchmarkSimClientRead(b *testing.B) {
	d := simInverter(b)
	modbus.BenchClientRead(b, d.Addr(), d.Unit())
}
