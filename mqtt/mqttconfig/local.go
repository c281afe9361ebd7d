package mqttconfig

import (
	"time"

	"plantd/internal/confcheck"
)

// Local is Home Assistant's MQTT discovery on a broker of the local
// network (local.mqtt; package hass; docs/home-assistant.md): its own
// connection, without the uplink's outbox, under its own topic prefix.
// Off when Broker is empty; the other fields are then not used.
type Local struct {
	// Broker URL, as mqtt.broker: tcp://host:port or mqtt://host:port
	// (plain), ssl://, tls:// or mqtts://host:port (TLS, verified against
	// the system's roots), ws:// or wss://host[:port]/path; without
	// credentials (Username, Password), as it is logged.
	Broker string `yaml:"broker"`
	// Username and Password authenticate at the broker (a password needs
	// a username). Keep the config readable by root and plantd only, as
	// for mqtt.password.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// ClientID is the MQTT client id at the broker; letters, digits, '.',
	// '_' and '-', at most 64. Default (empty): the gateway id and "-ha"
	// (EffectiveClientID; never the uplink's id, which is the gateway id:
	// a broker drops one of two clients with one id).
	ClientID string `yaml:"clientId"`
	// Prefix precedes the gateway id in plantd's own topics (state,
	// commands, availability). Default "plantd". No wildcards, no empty
	// levels, not starting with $.
	Prefix string `yaml:"prefix"`
	// DiscoveryPrefix is Home Assistant's discovery prefix. Default
	// "homeassistant" (Home Assistant's own default).
	DiscoveryPrefix string `yaml:"discoveryPrefix"`
	// Role is the role commands from Home Assistant act with (the
	// FeedInLimit number, the consumers' switches and modes): standard
	// (read only: every command is refused and logged), installer or
	// gridoperator. Default installer, the role of the installer's own
	// page: the household's limits are an installer's, and a grid
	// operator's limit stays mandatory over them. gridoperator needs
	// Username and Password: the broker's credentials and ACL are the
	// only gate of the command topics, and an anonymous broker would let
	// anyone on the network act as the grid operator (DESIGN §6.1).
	Role string `yaml:"role"`
	// Interval is the longest time between two publications of a state
	// (states are also published when they change), 10s..1h. Default 5m.
	Interval time.Duration `yaml:"interval"`
	// LimitWindow is how long a feed-in limit set from Home Assistant
	// holds (a grid-control window from the time of the command), 1m..
	// 168h. Default 24h: an automation renews it; a Home Assistant that
	// went away leaves no limit forever.
	LimitWindow time.Duration `yaml:"limitWindow"`
}

// Defaults of local.mqtt.
const (
	defaultLocalPrefix      = "plantd"
	defaultDiscoveryPrefix  = "homeassistant"
	defaultLocalRole        = confcheck.RoleInstaller
	defaultLocalInterval    = 5 * time.Minute
	defaultLocalLimitWindow = 24 * time.Hour
	localClientIDSuffix     = "-ha"
)

// SetDefaults sets every default of local.mqtt.
func (l *Local) SetDefaults() {
	l.Prefix, l.DiscoveryPrefix, l.Role = defaultLocalPrefix, defaultDiscoveryPrefix, defaultLocalRole
	l.Interval, l.LimitWindow = defaultLocalInterval, defaultLocalLimitWindow
}

// EffectiveClientID is the client id the link uses: ClientID, or by
// default the gateway id and "-ha" (cut to the length of an id).
func (l Local) EffectiveClientID(gatewayID string) string {
	if l.ClientID != "" {
		return l.ClientID
	}
	id := gatewayID
	if len(id)+len(localClientIDSuffix) > MaxClientIDLen {
		id = id[:MaxClientIDLen-len(localClientIDSuffix)]
	}
	return id + localClientIDSuffix
}

// Validate checks the link's settings; c is at local.mqtt. uplinkID is
// the uplink's client id (the gateway id) when the uplink is on, else
// "": the link must not take it.
func (l Local) Validate(c confcheck.Checker, uplinkID string) {
	if l.Broker == "" {
		for _, f := range []struct{ name, value string }{{"username", l.Username}, {"password", l.Password}} {
			if f.value != "" {
				c.Add(f.name, "needs a broker (local.mqtt.broker)")
			}
		}
		return
	}
	if u := CheckBrokerURL(c, "broker", l.Broker); u != nil && u.User != nil {
		// The URL is logged: credentials go in username and password.
		c.Add("broker", "%q holds credentials: give them as username and password", u.Redacted())
	}
	if l.Password != "" && l.Username == "" {
		c.Add("password", "a password needs a username")
	}
	if l.ClientID != "" && !ValidClientID(l.ClientID) {
		c.Add("clientId", "%q is not a client id (letters, digits and . _ -, starting with a letter or digit, at most %d)", l.ClientID, MaxClientIDLen)
	} else if uplinkID != "" && l.ClientID == uplinkID {
		c.Add("clientId", "%q is the uplink's client id (the gateway id): a broker keeps only one of two clients with one id", l.ClientID)
	}
	CheckTopicPrefix(c, "prefix", l.Prefix)
	CheckTopicPrefix(c, "discoveryPrefix", l.DiscoveryPrefix)
	if l.Prefix == l.DiscoveryPrefix {
		c.Add("prefix", "%q is the discovery prefix too: give plantd's topics their own prefix", l.Prefix)
	}
	c.Role("role", l.Role)
	if l.Role == confcheck.RoleGridOperator && (l.Username == "" || l.Password == "") {
		c.Add("role", "gridoperator needs the broker connection's credentials (local.mqtt.username and local.mqtt.password): "+
			"the broker's credentials and ACL are the only gate of Home Assistant's command topics; use installer without them")
	}
	c.Duration("interval", l.Interval, 10*time.Second, time.Hour)
	c.Duration("limitWindow", l.LimitWindow, time.Minute, 168*time.Hour)
}
