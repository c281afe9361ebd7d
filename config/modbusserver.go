package config

import (
	"fmt"
	"net/netip"
	"strings"

	"plantd/plant/kind"
)

// ModbusServer is the SunSpec Modbus TCP server (modbusServer): the plant
// as one SunSpec device for a SCADA system or a direct marketer's box
// (package sunspecserver). Off while Listen is empty (the default).
type ModbusServer struct {
	// Listen is the host:port to serve on ("0.0.0.0:502", or port 0 for a
	// free one); empty: no server.
	Listen string `yaml:"listen"`
	// Plant is the plant the server shows (required with more than one
	// plant).
	Plant string `yaml:"plant"`
	// UnitID is the unit id the server answers to (1..247, default 1).
	UnitID int `yaml:"unitId"`
	// Writes lets masters write the active power limit (models 123 and
	// 704), which becomes a schedule of the master's own channel; default
	// false: every write is refused with exception 1. With writes on,
	// Allow is required.
	Writes bool `yaml:"writes"`
	// Role is the role of the schedules the writes make: installer
	// (default) or gridoperator. An installer's limit tightens but never
	// loosens a grid operator's; gridoperator is for a master that is the
	// grid operator's own control box, and plantd logs it at start (a
	// warning naming the allowed masters).
	Role string `yaml:"role"`
	// Allow lists the client addresses that may connect, as IP addresses
	// or CIDRs; default none: every client may read. Required (and not a
	// catch-all such as 0.0.0.0/0) when Writes is on: every allowed
	// master may then write its own limit.
	Allow []string `yaml:"allow"`
	// MaxConns bounds the open connections (1..1024, default 32) and
	// MaxConnsPerClient those of one client address (1..1024, default
	// 4). A connection past either bound closes an idle one to make room
	// (the client's own one idle the longest; when the server is full,
	// the one idle the longest of the client holding the most), so idle
	// sockets never lock a master out; it is closed at once only when
	// all of those are answering a request. A connection idle for 60 s
	// is closed.
	MaxConns          int `yaml:"maxConns"`
	MaxConnsPerClient int `yaml:"maxConnsPerClient"`
}

// Bounds of modbusServer.maxConns and maxConnsPerClient, and of a
// proxy's maxConnsPerClient.
const maxModbusServerConns = 1024

// AllowPrefixes returns Allow as prefixes (an address as its /32 or
// /128). Call it on a validated config.
func (m ModbusServer) AllowPrefixes() []netip.Prefix { return allowPrefixes(m.Allow) }

// allowPrefixes returns an allow-list's addresses and CIDRs as prefixes;
// entries that are neither are left out (validation refused them).
func allowPrefixes(allow []string) []netip.Prefix {
	var out []netip.Prefix
	for _, a := range allow {
		if p, err := netip.ParsePrefix(a); err == nil {
			out = append(out, p.Masked())
		} else if ip, err := netip.ParseAddr(a); err == nil {
			out = append(out, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
		}
	}
	return out
}

// allowList checks an allow-list's entries (path: its key); with writes
// on, a catch-all (0.0.0.0/0, ::/0) is refused: the list names who may
// write.
func (v *validator) allowList(path string, allow []string, writes bool) {
	for i, a := range allow {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			if _, err := netip.ParseAddr(a); err != nil {
				v.add(fmt.Sprintf("%s[%d]", path, i), "%q is not an IP address or CIDR", a)
			}
			continue
		}
		if writes && p.Bits() == 0 {
			v.add(fmt.Sprintf("%s[%d]", path, i), "%q allows every address, and writes is true: list the masters that may write (e.g. 192.168.10.20 or 192.168.10.0/24)", a)
		}
	}
}

// connsPerClient checks a maxConnsPerClient (path: its key).
func (v *validator) connsPerClient(path string, n int) {
	if n < 1 || n > maxModbusServerConns {
		v.add(path, "%d is out of range (1..%d)", n, maxModbusServerConns)
	}
}

func (v *validator) modbusServer() {
	m := v.c.ModbusServer
	if m.Listen == "" {
		return
	}
	v.listen("modbusServer.listen", m.Listen, "0.0.0.0:502")
	plants := map[string]bool{}
	for _, p := range v.c.Plants {
		plants[p.ID] = true
	}
	switch {
	case m.Plant == "":
		v.add("modbusServer.plant", "required when more than one plant is configured")
	case m.Plant != "" && !plants[m.Plant]:
		v.add("modbusServer.plant", "unknown plant %q", m.Plant)
	}
	if m.UnitID < 1 || m.UnitID > 247 {
		v.add("modbusServer.unitId", "%d is not a Modbus unit id of a server (1..247)", m.UnitID)
	}
	switch m.Role {
	case RoleGridOperator, RoleInstaller:
	default:
		v.add("modbusServer.role", "%q is not a role that may send schedules (gridoperator or installer)", m.Role)
	}
	v.allowList("modbusServer.allow", m.Allow, m.Writes)
	if m.Writes && len(m.Allow) == 0 {
		v.add("modbusServer.allow", "required when writes is true: list the addresses of the masters that may write the limit "+
			"(allow: [192.168.10.20] or a CIDR), or set writes: false")
	}
	if m.MaxConns < 1 || m.MaxConns > maxModbusServerConns {
		v.add("modbusServer.maxConns", "%d is out of range (1..%d)", m.MaxConns, maxModbusServerConns)
	}
	v.connsPerClient("modbusServer.maxConnsPerClient", m.MaxConnsPerClient)
}

// DeviceProxy is a device's Modbus TCP proxy (devices[].proxy, package
// modbusproxy): a port of its own through which a third party reaches a
// device that accepts one Modbus client, its requests queued with
// plantd's own on the device's connection. It is read-only unless
// Writes is on.
type DeviceProxy struct {
	// Listen is the host:port to serve on; required.
	Listen string `yaml:"listen"`
	// Allow lists the client addresses that may connect, as IP addresses
	// or CIDRs; default none: every client (reads only, unless Writes).
	Allow []string `yaml:"allow"`
	// Writes lets the clients in Allow write (functions 5, 6, 15, 16);
	// default false: every write answers exception 1. It needs a
	// non-empty Allow. A write to a control plantd holds is refused all
	// the same (exception 6), and one to the nameplate and settings
	// models (SunSpec 1, 120, 121, 701, 702) unless WriteSettings
	// (exception 2).
	Writes bool `yaml:"writes"`
	// WriteSettings lets the writes reach the nameplate and settings
	// models too; it needs Writes.
	WriteSettings bool `yaml:"writeSettings"`
	// RequestsPerSecond and Burst are each client's token bucket (more
	// than 0 and at most 1000, default 10; 1..1000, default 20): a
	// request beyond it answers exception 6.
	RequestsPerSecond float64 `yaml:"requestsPerSecond"`
	Burst             int     `yaml:"burst"`
	// MaxConnsPerClient bounds the open connections of one client
	// address (1..1024, default 4), as modbusServer's; the proxy keeps
	// 32 in all.
	MaxConnsPerClient int `yaml:"maxConnsPerClient"`
}

// AllowPrefixes returns Allow as prefixes (an address as its /32 or
// /128). Call it on a validated config.
func (p DeviceProxy) AllowPrefixes() []netip.Prefix { return allowPrefixes(p.Allow) }

// Defaults and bounds of a device's proxy.
const (
	maxProxyRate = 1000
)

func (p *DeviceProxy) setDefaults() {
	p.RequestsPerSecond = defaultProxyRate
	p.Burst = defaultProxyBurst
	p.MaxConnsPerClient = defaultConnsPerClient
}

// proxies checks the devices' proxies: a valid, distinct listen address,
// a device on Modbus (not a consumer), rates and bounds in range, writes
// only with an allow-list, settings only with writes.
func (v *validator) proxies() {
	seen := map[string]string{}
	for i, d := range v.c.Devices {
		if d.Proxy == nil {
			continue
		}
		path := fmt.Sprintf("devices[%d].proxy", i)
		if d.Proxy.Listen == "" {
			v.add(path+".listen", "required (host:port, as in 0.0.0.0:1502)")
		} else {
			v.listen(path+".listen", d.Proxy.Listen, "0.0.0.0:1502")
			if other, ok := seen[d.Proxy.Listen]; ok && !strings.HasSuffix(d.Proxy.Listen, ":0") {
				v.add(path+".listen", "%q is %s's too", d.Proxy.Listen, other)
			}
			seen[d.Proxy.Listen] = d.ID
		}
		if d.Kind == kind.Consumer {
			v.add(path, "a consumer has no Modbus connection to share")
		}
		if r := d.Proxy.RequestsPerSecond; !(r > 0 && r <= maxProxyRate) {
			v.add(path+".requestsPerSecond", "%v is out of range (more than 0, at most %d)", r, maxProxyRate)
		}
		if b := d.Proxy.Burst; b < 1 || b > maxProxyRate {
			v.add(path+".burst", "%d is out of range (1..%d)", b, maxProxyRate)
		}
		v.allowList(path+".allow", d.Proxy.Allow, d.Proxy.Writes)
		if d.Proxy.Writes && len(d.Proxy.Allow) == 0 {
			v.add(path+".allow", "required with writes: true (the addresses of the masters that may write, as IP addresses or CIDRs)")
		}
		if d.Proxy.WriteSettings && !d.Proxy.Writes {
			v.add(path+".writeSettings", "needs writes: true")
		}
		v.connsPerClient(path+".maxConnsPerClient", d.Proxy.MaxConnsPerClient)
	}
}
