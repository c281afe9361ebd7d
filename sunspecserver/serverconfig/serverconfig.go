package serverconfig

import (
	"net/netip"

	"plantd/internal/confcheck"
)

// Config is the SunSpec Modbus TCP server (modbusServer): the plant as
// one SunSpec device for a SCADA system or a direct marketer's box
// (package sunspecserver). Off while Listen is empty (the default).
type Config struct {
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

// Defaults of modbusServer.
const (
	defaultUnit           = 1
	defaultRole           = confcheck.RoleInstaller
	defaultConns          = 32
	defaultConnsPerClient = 4
)

// SetDefaults sets every default of modbusServer.
func (m *Config) SetDefaults() {
	m.UnitID, m.Role = defaultUnit, defaultRole
	m.MaxConns, m.MaxConnsPerClient = defaultConns, defaultConnsPerClient
}

// AllowPrefixes returns Allow as prefixes (an address as its /32 or
// /128). Call it on a validated config.
func (m Config) AllowPrefixes() []netip.Prefix { return confcheck.AllowPrefixes(m.Allow) }

// Validate checks the section; c is at modbusServer. plantKnown reports
// whether the config has a plant of that id.
func (m Config) Validate(c confcheck.Checker, plantKnown func(id string) bool) {
	if m.Listen == "" {
		return
	}
	c.Listen("listen", m.Listen, "0.0.0.0:502")
	switch {
	case m.Plant == "":
		c.Add("plant", "required when more than one plant is configured")
	case !plantKnown(m.Plant):
		c.Add("plant", "unknown plant %q", m.Plant)
	}
	if m.UnitID < 1 || m.UnitID > 247 {
		c.Add("unitId", "%d is not a Modbus unit id of a server (1..247)", m.UnitID)
	}
	switch m.Role {
	case confcheck.RoleGridOperator, confcheck.RoleInstaller:
	default:
		c.Add("role", "%q is not a role that may send schedules (gridoperator or installer)", m.Role)
	}
	c.AllowList("allow", m.Allow, m.Writes)
	if m.Writes && len(m.Allow) == 0 {
		c.Add("allow", "required when writes is true: list the addresses of the masters that may write the limit "+
			"(allow: [192.168.10.20] or a CIDR), or set writes: false")
	}
	if m.MaxConns < 1 || m.MaxConns > confcheck.MaxConns {
		c.Add("maxConns", "%d is out of range (1..%d)", m.MaxConns, confcheck.MaxConns)
	}
	c.ConnsPerClient("maxConnsPerClient", m.MaxConnsPerClient)
}
