package proxyconfig

import (
	"net/netip"
	"strings"

	"plantd/internal/confcheck"
)

// Settings is a device's proxy in plantd's config file (devices[].proxy):
// a port of its own through which a third party reaches a device that
// accepts one Modbus client, its requests queued with plantd's own on the
// device's connection. It is read-only unless Writes is on. cmd/plantd
// makes a Config of it.
type Settings struct {
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

// Defaults and bounds of a device's proxy.
const (
	defaultRate           = 10
	defaultBurst          = 20
	defaultConnsPerClient = 4
	maxRate               = 1000
)

// SetDefaults sets every default of a device's proxy.
func (s *Settings) SetDefaults() {
	s.RequestsPerSecond, s.Burst, s.MaxConnsPerClient = defaultRate, defaultBurst, defaultConnsPerClient
}

// AllowPrefixes returns Allow as prefixes (an address as its /32 or
// /128). Call it on validated settings.
func (s Settings) AllowPrefixes() []netip.Prefix { return confcheck.AllowPrefixes(s.Allow) }

// Others is what a proxy's rules need of the rest of the config, which
// package config finds.
type Others struct {
	// ListenedBy is the id of the device whose proxy listens at Listen
	// already ("": none).
	ListenedBy string
	// Consumer: the proxy's device is a consumer, which has no Modbus
	// connection to share.
	Consumer bool
}

// Validate checks the proxy's settings; c is at devices[i].proxy.
func (s Settings) Validate(c confcheck.Checker, o Others) {
	if s.Listen == "" {
		c.Add("listen", "required (host:port, as in 0.0.0.0:1502)")
	} else {
		c.Listen("listen", s.Listen, "0.0.0.0:1502")
		if o.ListenedBy != "" && !strings.HasSuffix(s.Listen, ":0") {
			c.Add("listen", "%q is %s's too", s.Listen, o.ListenedBy)
		}
	}
	if o.Consumer {
		c.Add("", "a consumer has no Modbus connection to share")
	}
	if r := s.RequestsPerSecond; !(r > 0 && r <= maxRate) {
		c.Add("requestsPerSecond", "%v is out of range (more than 0, at most %d)", r, maxRate)
	}
	if b := s.Burst; b < 1 || b > maxRate {
		c.Add("burst", "%d is out of range (1..%d)", b, maxRate)
	}
	c.AllowList("allow", s.Allow, s.Writes)
	if s.Writes && len(s.Allow) == 0 {
		c.Add("allow", "required with writes: true (the addresses of the masters that may write, as IP addresses or CIDRs)")
	}
	if s.WriteSettings && !s.Writes {
		c.Add("writeSettings", "needs writes: true")
	}
	c.ConnsPerClient("maxConnsPerClient", s.MaxConnsPerClient)
}
