package main

import (
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"

	"plantd/config"
	"plantd/modbus"
	"plantd/modbusproxy"
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

// deviceProxy is a device's Modbus proxy and its listener.
type deviceProxy struct {
	p  *modbusproxy.Proxy
	ln net.Listener
}

// newProxies makes the proxies of the config's enabled devices
// (devices[].proxy) and binds their ports; on error the ports bound so
// far are closed.
func (d *daemon) newProxies(cfg *config.Config) ([]deviceProxy, error) {
	var out []deviceProxy
	for _, dc := range cfg.Devices {
		if dc.Proxy == nil || !dc.Enabled {
			continue
		}
		rw, ok := d.conns.get(dc.ID)
		client, isModbus := rw.(*modbus.Client)
		if !ok || !isModbus {
			continue // not polled over Modbus
		}
		ln, err := net.Listen("tcp", dc.Proxy.Listen)
		if err != nil {
			for _, p := range out {
				_ = p.ln.Close()
			}
			return nil, fmt.Errorf("device %s: proxy: %w", dc.ID, err)
		}
		id := dc.ID
		p := modbusproxy.New(modbusproxy.Config{Device: id, Client: client, Held: func() []modbus.Range { return d.heldRanges(id) },
			RequestsPerSecond: dc.Proxy.RequestsPerSecond, Burst: dc.Proxy.Burst}, d.log.With("component", "modbusproxy"))
		out = append(out, deviceProxy{p: p, ln: ln})
	}
	return out, nil
}

// heldRanges are the registers of the models carrying a control grid
// control holds on the device now.
func (d *daemon) heldRanges(id string) []modbus.Range {
	held := d.grid.HeldModels(id)
	if len(held) == 0 {
		return nil
	}
	dl, ok := d.live.Device(id)
	if !ok || dl.Discovered == nil {
		return nil
	}
	var out []modbus.Range
	for _, m := range dl.Discovered.Models {
		if slices.Contains(held, m.ID) {
			out = append(out, m.Range())
		}
	}
	return out
}

// proxiesChanged reports whether a reload changes the devices' proxies,
// which take effect at the next start only (a proxy keeps its port and
// its device's client).
func proxiesChanged(a, b *config.Config, log *slog.Logger) bool {
	proxies := func(c *config.Config) map[string]config.DeviceProxy {
		out := map[string]config.DeviceProxy{}
		for _, d := range c.Devices {
			if d.Proxy != nil && d.Enabled {
				out[d.ID] = *d.Proxy
			}
		}
		return out
	}
	if maps.Equal(proxies(a), proxies(b)) {
		return false
	}
	log.Warn("the devices' proxies changed in the config: the change takes effect at the next start (systemctl restart plantd)")
	return true
}
