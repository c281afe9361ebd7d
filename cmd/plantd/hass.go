package main

import (
	"fmt"
	"log/slog"
	"time"

	"plantd/config"
	"plantd/hass"
	"plantd/store"
)

// newHass builds the Home Assistant link of cfg's local.mqtt (nil when it
// is off): the daemon's live state, store, grid control and consumers as
// its sources, and the HTTP API as "ha:<clientId>" with the configured
// role for its commands, so that they pass the API's checks.
func (d *daemon) newHass(cfg *config.Config, logger *slog.Logger) (*hass.Link, error) {
	l := cfg.Local.MQTT
	if l.Broker == "" {
		return nil, nil
	}
	clientID := l.EffectiveClientID(cfg.Gateway.ID)
	commands, err := d.api.AsRole("ha:"+clientID, l.Role)
	if err != nil {
		return nil, fmt.Errorf("home assistant: %w", err)
	}
	deps := hass.Deps{Live: d.live, Energy: hassEnergy{d.store}, Limits: d.grid, Commands: commands}
	if d.homes != nil {
		deps.Consumers = d.homes
	}
	return hass.New(hass.Config{
		Broker: l.Broker, Username: l.Username, Password: l.Password, ClientID: clientID,
		GatewayID: cfg.Gateway.ID, Version: versionString(), Prefix: l.Prefix, DiscoveryPrefix: l.DiscoveryPrefix,
		Interval: l.Interval, LimitWindow: l.LimitWindow,
	}, deps, logger)
}

// hassEnergy is the store as the link reads the lifetime energies: its
// measurement sets and the end of its last rollup.
type hassEnergy struct{ *store.Store }

func (e hassEnergy) RolledUpTo() time.Time { return e.Stats().RolledUpTo }
