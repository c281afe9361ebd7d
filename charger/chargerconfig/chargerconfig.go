package chargerconfig

import (
	"strings"

	"plantd/internal/confcheck"
)

// Config is plantd's OCPP 1.6J central system: the WebSocket server the
// chargers (devices of kind consumer with driver ocpp) connect to, at
// ws://<gateway>:<port><path>/<chargePointId>.
type Config struct {
	// Listen is host:port (default ":8887", where evcc listens too).
	Listen string `yaml:"listen"`
	// Path is the URL path before the charge point id (default "/ocpp").
	Path string `yaml:"path"`
}

// Defaults of ocpp.
const (
	defaultListen = ":8887"
	defaultPath   = "/ocpp"
)

// SetDefaults sets every default of ocpp.
func (o *Config) SetDefaults() { o.Listen, o.Path = defaultListen, defaultPath }

// Validate checks the section; c is at ocpp.
func (o Config) Validate(c confcheck.Checker) {
	c.Listen("listen", o.Listen, defaultListen)
	if p := o.Path; p == "" || p[0] != '/' || strings.ContainsAny(p, " ?#") || len(p) > 1 && strings.HasSuffix(p, "/") {
		c.Add("path", "%q is not a URL path (as /ocpp: a leading /, no trailing /, no space, ? or #)", p)
	}
}
