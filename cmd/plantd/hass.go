package main

import (
	"log/slog"
	"time"

	"plantd/config"
	"plantd/hass"
	"plantd/store"
)

// newHass builds the Home Assistant link of cfg's local.mqtt (nil when it
// is off): the daemon's live state, store, grid control and consumers as
// its sources; its commands go to grid control's Submit and the
// consumers' SetMode as "ha:<clientId>" with the configured role, limited
// as the HTTP API limits a credential (http.rateLimit).
func (d *daemon) newHass(cfg *config.Config, logger *slog.Logger) (*hass.Link, error) {
	l := cfg.Local.MQTT
	if l.Broker == "" {
		return nil, nil
	}
	deps := hass.Deps{Live: d.live, Energy: hassEnergy{d.store}, Limits: d.grid, Grid: d.grid}
	if d.homes != nil {
		deps.Consumers = d.homes
	}
	if d.eebus != nil {
		deps.Limit14a = eebusLimit{s: d.eebus, plant: cfg.EEBus.Plant}
	}
	return hass.New(hass.Config{
		Broker: l.Broker, Username: l.Username, Password: l.Password, ClientID: l.EffectiveClientID(cfg.Gateway.ID),
		GatewayID: cfg.Gateway.ID, Version: versionString(), Prefix: l.Prefix, DiscoveryPrefix: l.DiscoveryPrefix,
		Interval: l.Interval, LimitWindow: l.LimitWindow, Role: l.Role,
		CommandRate: cfg.HTTP.RateLimit.RequestsPerSecond, CommandBurst: cfg.HTTP.RateLimit.Burst,
	}, deps, logger)
}

// hassEnergy is the store as the link reads the lifetime energies: its
// measurement sets and the end of its last rollup.
type hassEnergy struct{ *store.Store }

func (e hassEnergy) RolledUpTo() time.Time { return e.Stats().RolledUpTo }
