package main

import (
	"fmt"
	"log/slog"
	"time"

	"plantd/config"
	"plantd/tariffs"
)

// newTariffs builds the tariffs of cfg's tariffs: section (nil without
// one): prices on the daemon's clock in the plant's time zone, requests
// spaced on the wall clock, kept in the store.
func (d *daemon) newTariffs(cfg *config.Config, logger *slog.Logger) (*tariffs.Service, error) {
	t := cfg.Tariffs
	if t == nil {
		return nil, nil
	}
	for _, p := range d.plants {
		if p.ID == t.Plant {
			return tariffs.New(*t, tariffs.Deps{Location: p.Location, Store: d.store, Now: d.now, WallClock: time.Now,
				Logger: logger.With("component", "tariffs")})
		}
	}
	return nil, fmt.Errorf("tariffs: unknown plant %q", t.Plant)
}
