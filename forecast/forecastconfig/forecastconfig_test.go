package forecastconfig

import (
	"slices"
	"testing"
	"time"

	"plantd/internal/confcheck"
)

func TestValidate(t *testing.T) {
	located := func(id string) (bool, bool) { return id == "p1" || id == "nowhere", id == "p1" }
	for _, tt := range []struct {
		name   string
		modify func(*Config)
		want   []string
	}{
		{"defaults: history only", func(*Config) {}, nil},
		{"off", func(c *Config) { c.Enabled = false }, nil},
		{"history days", func(c *Config) { c.HistoryDays = 2 }, []string{"forecast.historyDays: 2 is out of range (3..365)"}},
		{"open-meteo", func(c *Config) { c.Service.Provider, c.Service.Plant = ProviderOpenMeteo, "p1" }, nil},
		{"open-meteo on a loopback test server", func(c *Config) {
			c.Service.Provider, c.Service.Plant, c.Service.URL = ProviderOpenMeteo, "p1", "http://127.0.0.1:8089/v1/forecast"
		}, nil},
		{"unknown provider", func(c *Config) { c.Service.Provider = "solcast" }, []string{
			`forecast.service.provider: "solcast" is not a forecast service (open-meteo, or empty for none)`}},
		{"plain http elsewhere, no plant, refresh", func(c *Config) {
			c.Service.Provider, c.Service.URL, c.Service.Refresh = ProviderOpenMeteo, "http://api.open-meteo.com/v1/forecast", time.Minute
		}, []string{
			`forecast.service.url: "http://api.open-meteo.com/v1/forecast": want https (http only on a loopback host)`,
			"forecast.service.plant: required when more than one plant is configured",
			"forecast.service.refresh: 1m is out of range (15m..24h)"}},
		{"plants", func(c *Config) { c.Service.Provider, c.Service.Plant = ProviderOpenMeteo, "p9" }, []string{`forecast.service.plant: unknown plant "p9"`}},
		{"a plant without a location", func(c *Config) { c.Service.Provider, c.Service.Plant = ProviderOpenMeteo, "nowhere" }, []string{
			`forecast.service.plant: plant "nowhere" has no location.latitude and location.longitude: the service needs them`}},
		{"service with the forecast off", func(c *Config) { c.Enabled, c.Service.Provider, c.Service.Plant = false, ProviderOpenMeteo, "p1" }, []string{
			"forecast.service.provider: a service needs the forecast enabled (enabled: true)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c Config
			c.SetDefaults()
			tt.modify(&c)
			var l confcheck.List
			c.Validate(confcheck.New(&l, "forecast"), located)
			if !slices.Equal(l.Problems, tt.want) {
				t.Errorf("problems\n%q\nwant\n%q", l.Problems, tt.want)
			}
		})
	}
}
