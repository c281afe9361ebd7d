package main

import (
	"fmt"
	"net"

	"plantd/config"
	"plantd/sunspecserver"
)

// newSunSpec makes the SunSpec Modbus server of the config
// (modbusServer; nil without listen) on ln, or on its listen address
// when ln is nil (the demo binds its port before the banner).
func (d *daemon) newSunSpec(cfg *config.Config, ln net.Listener) (*sunspecserver.Server, net.Listener, error) {
	m := cfg.ModbusServer
	if m.Listen == "" && ln == nil {
		return nil, nil, nil
	}
	s, err := sunspecserver.New(sunspecserver.Config{
		PlantID: m.Plant, UnitID: byte(m.UnitID), Writes: m.Writes, Role: m.Role,
		Allow: m.AllowPrefixes(), MaxConns: m.MaxConns,
		GatewayID: cfg.Gateway.ID, Version: versionString(), Now: d.now,
	}, d.live, d.grid, d.log.With("component", "sunspec"))
	if err != nil {
		return nil, nil, err
	}
	if ln == nil {
		if ln, err = net.Listen("tcp", m.Listen); err != nil {
			return nil, nil, fmt.Errorf("sunspec server: %w", err)
		}
	}
	return s, ln, nil
}
