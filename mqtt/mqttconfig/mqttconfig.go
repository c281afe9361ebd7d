package mqttconfig

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"plantd/internal/confcheck"
)

// Config configures publishing to a broker (mqtt). MQTT is off when
// Broker and Brokers are empty; the other fields are then not used.
type Config struct {
	// Broker URL: tcp://host:port or mqtt://host:port (plain), ssl://,
	// tls:// or mqtts://host:port (TLS), ws:// or wss://host[:port]/path
	// (WebSocket).
	Broker string `yaml:"broker"`
	// Brokers are the URLs of one clustered broker's nodes (or of load
	// balancers in front of it), each as Broker: plantd connects to one and
	// on a failure takes the next. Give broker or brokers, not both.
	Brokers []string `yaml:"brokers,omitempty"`
	// Username and Password authenticate at the broker (a password needs a
	// username).
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// CAFile is a PEM bundle to verify the broker's certificate (default:
	// the system's roots). ClientCert and ClientKey (PEM, both or neither)
	// authenticate plantd by certificate. TLS brokers only.
	CAFile     string `yaml:"caFile"`
	ClientCert string `yaml:"clientCert"`
	ClientKey  string `yaml:"clientKey"`
	// TopicPrefix precedes the gateway id in every topic. Default
	// "plantd/v1". No wildcards, no empty levels.
	TopicPrefix string `yaml:"topicPrefix"`
	// KeepAlive is the MQTT keep-alive, 1s..65535s. Default 30s.
	KeepAlive time.Duration `yaml:"keepAlive"`
	// LiveInterval is how often the live energy balance and the devices'
	// live values are published, 1s..1h. Default 10s.
	LiveInterval time.Duration `yaml:"liveInterval"`
	Outbox       Outbox        `yaml:"outbox"`
	Backlog      Backlog       `yaml:"backlog"`
	// RemoteControl accepts schedules and commands from the cloud
	// (down/schedule/{plantId}, down/cmd). Default false.
	RemoteControl bool `yaml:"remoteControl"`
	// RemoteRole is the role the cloud's requests run with: standard,
	// installer or gridoperator. Default installer.
	RemoteRole string `yaml:"remoteRole"`
}

// Backlog caps the drain of queued rollups and log entries after an
// outage, so that a metered link is not flooded; live values and acks are
// not capped.
type Backlog struct {
	// MessagesPerSecond, > 0. Default 100.
	MessagesPerSecond float64 `yaml:"messagesPerSecond"`
	// BytesPerSecond of payload, >= 1024. Default 262144 (256 KiB).
	BytesPerSecond float64 `yaml:"bytesPerSecond"`
}

// Outbox bounds the SQLite outbox of messages not yet acknowledged by the
// broker, per stream.
type Outbox struct {
	// MaxRows per stream, >= 1. Default 500000.
	MaxRows int `yaml:"maxRows"`
	// MaxAge of a queued message, at least 1h. Default 720h (30 days).
	MaxAge time.Duration `yaml:"maxAge"`
}

// Defaults of mqtt.
const (
	defaultTopicPrefix     = "plantd/v1"
	defaultKeepAlive       = 30 * time.Second
	defaultOutboxMaxRows   = 500000
	defaultOutboxMaxAge    = 720 * time.Hour
	defaultLiveInterval    = 10 * time.Second
	defaultBacklogMessages = 100
	defaultBacklogBytes    = 256 << 10
	defaultRemoteRole      = confcheck.RoleInstaller
)

// SetDefaults sets every default of mqtt.
func (m *Config) SetDefaults() {
	m.TopicPrefix = defaultTopicPrefix
	m.KeepAlive = defaultKeepAlive
	m.Outbox.MaxRows = defaultOutboxMaxRows
	m.Outbox.MaxAge = defaultOutboxMaxAge
	m.LiveInterval = defaultLiveInterval
	m.Backlog.MessagesPerSecond = defaultBacklogMessages
	m.Backlog.BytesPerSecond = defaultBacklogBytes
	m.RemoteRole = defaultRemoteRole
}

// BrokerURLs are the uplink's broker URLs: Brokers, or Broker alone; none
// when MQTT is off.
func (m Config) BrokerURLs() []string {
	if m.Broker != "" {
		return []string{m.Broker}
	}
	return m.Brokers
}

var (
	brokerSchemes = []string{"tcp", "mqtt", "ssl", "tls", "mqtts", "ws", "wss"}
	tlsSchemes    = []string{"ssl", "tls", "mqtts", "wss"}
)

// Validate checks the uplink's settings; c is at mqtt.
func (m Config) Validate(c confcheck.Checker) {
	if m.Broker != "" && len(m.Brokers) > 0 {
		c.Add("brokers", "give broker or brokers, not both")
	}
	fields := []string{"broker"}
	if m.Broker == "" {
		fields = fields[:0]
		for i := range m.Brokers {
			fields = append(fields, "brokers["+strconv.Itoa(i)+"]")
		}
	}
	seen := map[string]bool{}
	plain := ""
	for i, b := range m.BrokerURLs() {
		if seen[b] {
			c.Add(fields[i], "%q is listed twice", b)
		}
		seen[b] = true
		if u := CheckBrokerURL(c, fields[i], b); u != nil && !slices.Contains(tlsSchemes, u.Scheme) && plain == "" {
			plain = u.Scheme
		}
	}
	if plain != "" {
		m.tlsSettings(c, plain)
	}
	if m.Password != "" && m.Username == "" {
		c.Add("password", "a password needs a username")
	}
	switch {
	case m.ClientCert != "" && m.ClientKey == "":
		c.Add("clientCert", "clientKey is missing (give both or neither)")
	case m.ClientKey != "" && m.ClientCert == "":
		c.Add("clientKey", "clientCert is missing (give both or neither)")
	}
	CheckTopicPrefix(c, "topicPrefix", m.TopicPrefix)
	c.Duration("keepAlive", m.KeepAlive, time.Second, 65535*time.Second)
	if m.Outbox.MaxRows < 1 {
		c.Add("outbox.maxRows", "%d is out of range (at least 1)", m.Outbox.MaxRows)
	}
	c.Duration("outbox.maxAge", m.Outbox.MaxAge, time.Hour, 0)
	c.Duration("liveInterval", m.LiveInterval, time.Second, time.Hour)
	if r := m.Backlog.MessagesPerSecond; !(r > 0) {
		c.Add("backlog.messagesPerSecond", "%g is out of range (more than 0)", r)
	}
	if r := m.Backlog.BytesPerSecond; !(r >= 1024) {
		c.Add("backlog.bytesPerSecond", "%g is out of range (at least 1024)", r)
	}
	c.Role("remoteRole", m.RemoteRole)
	if m.RemoteControl && len(m.BrokerURLs()) == 0 {
		c.Add("remoteControl", "needs a broker (mqtt.broker or mqtt.brokers)")
	}
}

// tlsSettings checks that the TLS settings are given for TLS brokers
// only: scheme is the first non-TLS scheme among the uplink's brokers.
func (m Config) tlsSettings(c confcheck.Checker, scheme string) {
	for _, f := range []struct{ name, value string }{{"caFile", m.CAFile}, {"clientCert", m.ClientCert}, {"clientKey", m.ClientKey}} {
		if f.value != "" {
			c.Add(f.name, "needs a TLS broker (ssl://, tls://, mqtts:// or wss://), not %s://", scheme)
		}
	}
}

// CheckTopicPrefix checks an MQTT topic prefix (mqtt.topicPrefix,
// local.mqtt.prefix, local.mqtt.discoveryPrefix).
func CheckTopicPrefix(c confcheck.Checker, field, p string) {
	if p == "" || strings.ContainsAny(p, "+#\x00") || strings.HasPrefix(p, "$") ||
		strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//") {
		c.Add(field, "%q is not a topic prefix (levels separated by /, no wildcards, no empty level, not starting with $)", p)
	}
}

// CheckBrokerURL checks a broker URL (scheme, host, port, path) and
// returns it parsed, or nil when it is not a broker URL at all.
func CheckBrokerURL(c confcheck.Checker, field, broker string) *url.URL {
	u, err := url.Parse(broker)
	if err != nil || !strings.Contains(broker, "://") {
		c.Add(field, "%q is not a broker URL (as in tcp://host:1883 or ssl://host:8883)", broker)
		return nil
	}
	if !slices.Contains(brokerSchemes, u.Scheme) {
		c.Add(field, "%q has an unsupported scheme (tcp, mqtt, ssl, tls, mqtts, ws or wss)", broker)
		return nil
	}
	ws := u.Scheme == "ws" || u.Scheme == "wss"
	port := 1883
	if slices.Contains(tlsSchemes, u.Scheme) {
		port = 8883
	}
	switch {
	case u.Hostname() == "":
		c.Add(field, "%q has no host", broker)
	case u.Port() == "" && !ws:
		c.Add(field, "%q has no port (as in %s://%s:%d)", broker, u.Scheme, u.Hostname(), port)
	case u.Port() != "":
		if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
			c.Add(field, "%q has no valid port", broker)
		}
	}
	if !ws && u.Path != "" {
		c.Add(field, "%q has a path; only ws:// and wss:// URLs have one", broker)
	}
	return u
}

// MaxClientIDLen is the longest MQTT client id plantd uses.
const MaxClientIDLen = 64

// ClientIDPattern is the characters of ValidClientID.
var ClientIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ValidClientID reports whether id is an MQTT client id as plantd uses
// them (the gateway id, Home Assistant's link's id): letters, digits and
// . _ -, starting with a letter or digit, at most MaxClientIDLen.
func ValidClientID(id string) bool {
	return id != "" && len(id) <= MaxClientIDLen && ClientIDPattern.MatchString(id)
}
