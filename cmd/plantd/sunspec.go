package main

import (
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"slices"

	"plantd/config"
	"plantd/devices"
	"plantd/metrics"
	"plantd/modbus"
	"plantd/modbusproxy"
	"plantd/modbusproxy/proxyconfig"
	"plantd/sunspec"
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
		Allow: m.AllowPrefixes(), MaxConns: m.MaxConns, MaxConnsPerClient: m.MaxConnsPerClient,
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
	id string
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
		p := modbusproxy.New(modbusproxy.Config{Device: id, Client: client,
			Allow: dc.Proxy.AllowPrefixes(), Writes: dc.Proxy.Writes, WriteSettings: dc.Proxy.WriteSettings,
			Models:            func() ([]modbusproxy.Model, bool) { return d.modelPlaces(id) },
			Held:              func() []modbus.Range { return d.heldRanges(id) },
			RequestsPerSecond: dc.Proxy.RequestsPerSecond, Burst: dc.Proxy.Burst, MaxConnsPerClient: dc.Proxy.MaxConnsPerClient},
			d.log.With("component", "modbusproxy"))
		out = append(out, deviceProxy{id: id, p: p, ln: ln})
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
	dev, _ := dl.Discovered.(*sunspec.Device)
	if !ok || dev == nil {
		return nil
	}
	var out []modbus.Range
	for _, m := range dev.Models {
		if slices.Contains(held, m.ID) {
			out = append(out, devices.Range(m))
		}
	}
	return out
}

// modelPlaces are the device's SunSpec models and their registers, as
// discovery found them; false while it has not (a template device has
// none, and they are known).
func (d *daemon) modelPlaces(id string) ([]modbusproxy.Model, bool) {
	dl, ok := d.live.Device(id)
	dev, _ := dl.Discovered.(*sunspec.Device)
	if !ok || dev == nil {
		return nil, false
	}
	out := make([]modbusproxy.Model, 0, len(dev.Models))
	for _, m := range dev.Models {
		out = append(out, modbusproxy.Model{ID: m.ID, Range: devices.Range(m)})
	}
	return out, true
}

// proxiesChanged reports whether a reload changes the devices' proxies,
// which take effect at the next start only (a proxy keeps its port and
// its device's client).
func proxiesChanged(a, b *config.Config, log *slog.Logger) bool {
	proxies := func(c *config.Config) map[string]proxyconfig.Settings {
		out := map[string]proxyconfig.Settings{}
		for _, d := range c.Devices {
			if d.Proxy != nil && d.Enabled {
				out[d.ID] = *d.Proxy
			}
		}
		return out
	}
	if reflect.DeepEqual(proxies(a), proxies(b)) {
		return false
	}
	log.Warn("the devices' proxies changed in the config: the change takes effect at the next start (systemctl restart plantd)")
	return true
}

// serversCollector exports the counters of plantd's Modbus servers (the
// SunSpec server, the devices' proxies) at /metrics, read at scrape time.
type serversCollector struct{ d *daemon }

func (c serversCollector) Collect(w *metrics.Writer) {
	one := func(name string, s modbus.ServerStats) {
		w.Gauge("plantd_modbus_server_connections", "Open connections of plantd's Modbus servers (server: sunspec, or proxy:<device>).", float64(s.Open), "server", name)
		w.Counter("plantd_modbus_server_requests_total", "Requests a Modbus server answered, exceptions included.", float64(s.Requests), "server", name)
		w.Counter("plantd_modbus_server_exceptions_total", "Requests a Modbus server answered with an exception.", float64(s.Exceptions), "server", name)
		w.Counter("plantd_modbus_server_refused_total", "Connections a Modbus server closed at once: a client outside the allow-list (allow), over maxConns or maxConnsPerClient with no idle connection to close for it (full).",
			float64(s.Refused), "server", name, "reason", "allow")
		w.Counter("plantd_modbus_server_refused_total", "", float64(s.Full), "server", name, "reason", "full")
		w.Counter("plantd_modbus_server_evicted_total", "Idle connections a Modbus server closed to make room for a new one (over maxConns or maxConnsPerClient).", float64(s.Evicted), "server", name)
		w.Counter("plantd_modbus_server_idle_closed_total", "Connections a Modbus server closed for idling.", float64(s.Idle), "server", name)
	}
	if c.d.sunspec != nil {
		one("sunspec", c.d.sunspec.Stats())
	}
	for _, p := range c.d.proxies {
		one("proxy:"+p.id, p.p.Stats())
	}
}
