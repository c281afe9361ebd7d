package forecastconfig

import (
	"net"
	"net/url"
	"time"

	"plantd/internal/confcheck"
)

// Config is the PV forecast (forecast).
type Config struct {
	// Enabled computes a forecast for every plant with a latitude and
	// longitude (default true).
	Enabled bool `yaml:"enabled"`
	// HistoryDays is how many past days the plant's clear-sky response is
	// fitted to (3..365, default 30).
	HistoryDays int `yaml:"historyDays"`
	// Service is a forecast service; none unless Provider is set.
	Service Service `yaml:"service"`
}

// Service is a forecast service the plant's clearness is taken from.
type Service struct {
	// Provider is "" (none, the default) or "open-meteo" (its forecast
	// API's minutely_15 shortwave_radiation).
	Provider string `yaml:"provider"`
	// URL is the service's endpoint; https, or http on a loopback host
	// (default https://api.open-meteo.com/v1/forecast).
	URL string `yaml:"url"`
	// APIKey is sent as open-meteo's apikey parameter (its commercial
	// endpoint, customer-api.open-meteo.com; none for the free API).
	APIKey string `yaml:"apiKey"`
	// Plant is the plant the service forecasts (required with more than
	// one plant); it needs a latitude and longitude.
	Plant string `yaml:"plant"`
	// Refresh is how often the service is asked (15m..24h, default 1h).
	Refresh time.Duration `yaml:"refresh"`
}

// Defaults of forecast.
const (
	DefaultHistoryDays  = 30
	DefaultOpenMeteoURL = "https://api.open-meteo.com/v1/forecast"
	DefaultRefresh      = time.Hour
	// ProviderOpenMeteo is open-meteo's forecast API.
	ProviderOpenMeteo = "open-meteo"
)

// SetDefaults sets every default of forecast.
func (c *Config) SetDefaults() {
	c.Enabled = true
	c.HistoryDays = DefaultHistoryDays
	c.Service.URL = DefaultOpenMeteoURL
	c.Service.Refresh = DefaultRefresh
}

// Validate checks the section; c is at forecast. plantLocated reports
// whether the config has a plant of that id (known) and whether it has a
// latitude and longitude (located).
func (c Config) Validate(ck confcheck.Checker, plantLocated func(id string) (known, located bool)) {
	if c.HistoryDays < 3 || c.HistoryDays > 365 {
		ck.Add("historyDays", "%d is out of range (3..365)", c.HistoryDays)
	}
	s := c.Service
	switch s.Provider {
	case "":
		return
	case ProviderOpenMeteo:
	default:
		ck.Add("service.provider", "%q is not a forecast service (open-meteo, or empty for none)", s.Provider)
		return
	}
	if !c.Enabled {
		ck.Add("service.provider", "a service needs the forecast enabled (enabled: true)")
	}
	if u, err := url.Parse(s.URL); err != nil || u.Host == "" {
		ck.Add("service.url", "%q is not a URL", s.URL)
	} else if u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname())) {
		ck.Add("service.url", "%q: want https (http only on a loopback host)", s.URL)
	}
	switch known, located := plantLocated(s.Plant); {
	case s.Plant == "":
		ck.Add("service.plant", "required when more than one plant is configured")
	case !known:
		ck.Add("service.plant", "unknown plant %q", s.Plant)
	case !located:
		ck.Add("service.plant", "plant %q has no location.latitude and location.longitude: the service needs them", s.Plant)
	}
	ck.Duration("service.refresh", s.Refresh, 15*time.Minute, 24*time.Hour)
}

// loopback reports whether host is localhost or a loopback address.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
