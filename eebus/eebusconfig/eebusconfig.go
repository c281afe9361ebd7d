package eebusconfig

import (
	"strconv"
	"strings"
	"time"

	"plantd/internal/confcheck"
)

// Config is the EEBus service (eebus): plantd as the controllable system
// for LPC (limitation of power consumption) and LPP (limitation of power
// production) of the grid operator's control box. Off unless Enabled.
type Config struct {
	// Enabled starts the EEBus service (default false).
	Enabled bool `yaml:"enabled"`
	// Plant is the plant the limits act on (required with more than one
	// plant).
	Plant string `yaml:"plant"`
	// Port is the TCP port of the SHIP server (TLS WebSockets), on every
	// interface (1..65535, default 4712; SHIP's own default 4711 is often
	// taken by a wallbox's or heat pump's stack on the same host).
	Port int `yaml:"port"`
	// Brand, Model and Serial are what the control box is shown of plantd
	// (mDNS and the SPINE device address). Defaults "plantd", "plantd"
	// and (empty) the gateway id, taken where it is used, so that a new
	// gateway id is no change of this section.
	Brand  string `yaml:"brand"`
	Model  string `yaml:"model"`
	Serial string `yaml:"serial"`
	// Trusted are the SKIs of the control boxes plantd pairs with (40 hex
	// digits, spaces and dashes allowed, as control boxes print them).
	// Any other SKI is refused and logged. Required when enabled.
	Trusted []string `yaml:"trusted"`
	// Interfaces are the network interfaces mDNS announces and browses on
	// (default: every interface the system has).
	Interfaces []string `yaml:"interfaces"`
	// HeartbeatTimeout is how long plantd waits for the control box's
	// heartbeat before it applies the failsafe limits (1s..1h, default
	// 120s, the use cases' own value).
	HeartbeatTimeout time.Duration `yaml:"heartbeatTimeout"`
	// Failsafe are the failsafe values until the control box writes its
	// own (which are stored and win over these).
	Failsafe Failsafe `yaml:"failsafe"`
	// ProductionCommand is the grid-control command an LPP limit becomes:
	// FeedInLimit (default: the export at the grid meter) or opModMaxLimW
	// (the inverters' output, for a plant without a grid meter).
	ProductionCommand string `yaml:"productionCommand"`
}

// Failsafe are the default failsafe values.
type Failsafe struct {
	// ConsumptionW is the controllable consumers' limit in failsafe, in W
	// (0..1e6, default 4200: §14a's minimum for one device; never below
	// the §14a minimum for the plant's controllable consumers).
	ConsumptionW float64 `yaml:"consumptionW"`
	// ProductionW is the production limit in failsafe, in W (0..1e7);
	// none unless set.
	ProductionW *float64 `yaml:"productionW"`
	// Duration is the failsafe duration minimum: once in failsafe, plantd
	// stays there at least this long (2h..24h, default 2h, the use cases'
	// range).
	Duration time.Duration `yaml:"duration"`
}

// Defaults of eebus.
const (
	DefaultPort             = 4712
	DefaultHeartbeatTimeout = 120 * time.Second
	DefaultFailsafeW        = 4200
	DefaultFailsafeDuration = 2 * time.Hour
	// MinFailsafeDuration and MaxFailsafeDuration bound the failsafe
	// duration minimum (LPC/LPP: 2 h to 24 h).
	MinFailsafeDuration = 2 * time.Hour
	MaxFailsafeDuration = 24 * time.Hour
	defaultBrand        = "plantd"
	defaultModel        = "plantd"
)

// SetDefaults sets every default of eebus but Serial (the gateway id,
// taken where it is used: SerialOr).
func (e *Config) SetDefaults() {
	e.Port, e.Brand, e.Model = DefaultPort, defaultBrand, defaultModel
	e.HeartbeatTimeout = DefaultHeartbeatTimeout
	e.Failsafe.ConsumptionW, e.Failsafe.Duration = DefaultFailsafeW, DefaultFailsafeDuration
	e.ProductionCommand = "FeedInLimit"
}

// SerialOr is Serial, or gatewayID when it is empty.
func (e Config) SerialOr(gatewayID string) string {
	if e.Serial != "" {
		return e.Serial
	}
	return gatewayID
}

// NormalizeSKI returns a SKI as lower-case hex without spaces, dashes or
// colons; ok is false when that is not 40 hex digits.
func NormalizeSKI(s string) (string, bool) {
	s = strings.ToLower(strings.NewReplacer(" ", "", "-", "", ":", "").Replace(s))
	if len(s) != 40 {
		return s, false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return s, false
		}
	}
	return s, true
}

// TrustedSKIs returns Trusted normalized (call it on a validated config).
func (e Config) TrustedSKIs() []string {
	out := make([]string, 0, len(e.Trusted))
	for _, s := range e.Trusted {
		n, _ := NormalizeSKI(s)
		out = append(out, n)
	}
	return out
}

// Validate checks the section; c is at eebus. plantKnown reports whether
// the config has a plant of that id.
func (e Config) Validate(c confcheck.Checker, plantKnown func(id string) bool) {
	if !e.Enabled {
		return
	}
	switch {
	case e.Plant == "":
		c.Add("plant", "required when more than one plant is configured")
	case !plantKnown(e.Plant):
		c.Add("plant", "unknown plant %q", e.Plant)
	}
	if e.Port < 1 || e.Port > 65535 {
		c.Add("port", "%d is not a TCP port (1..65535)", e.Port)
	}
	for _, f := range []struct{ name, v string }{{"brand", e.Brand}, {"model", e.Model}} {
		if strings.TrimSpace(f.v) == "" {
			c.Add(f.name, "required when enabled")
		}
	}
	if len(e.Trusted) == 0 {
		c.Add("trusted", "required when enabled: list the control box's SKI (40 hex digits, printed on it or in its installer's portal)")
	}
	seen := map[string]string{}
	for i, s := range e.Trusted {
		field := "trusted[" + strconv.Itoa(i) + "]"
		n, ok := NormalizeSKI(s)
		if !ok {
			c.Add(field, "%q is not a SKI (40 hex digits)", s)
			continue
		}
		c.Unique(seen, n, field, field, "SKI")
	}
	for i, s := range e.Interfaces {
		if strings.TrimSpace(s) == "" {
			c.Add("interfaces["+strconv.Itoa(i)+"]", "empty interface name")
		}
	}
	c.Duration("heartbeatTimeout", e.HeartbeatTimeout, time.Second, time.Hour)
	if !(e.Failsafe.ConsumptionW >= 0 && e.Failsafe.ConsumptionW <= 1e6) {
		c.Add("failsafe.consumptionW", "%s is out of range (0..1000000)", confcheck.Num(e.Failsafe.ConsumptionW))
	}
	c.OptRange("failsafe.productionW", e.Failsafe.ProductionW, 0, 1e7)
	c.Duration("failsafe.duration", e.Failsafe.Duration, MinFailsafeDuration, MaxFailsafeDuration)
	switch e.ProductionCommand {
	case "FeedInLimit", "opModMaxLimW":
	default:
		c.Add("productionCommand", "%q is not a limit command (FeedInLimit or opModMaxLimW)", e.ProductionCommand)
	}
}
