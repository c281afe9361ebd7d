package main

import (
	"fmt"
	"log/slog"
	"time"

	"plantd/config"
	"plantd/plant"
	"plantd/siteplan"
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

// newPlan builds the day-ahead plan's runner for the tariffs' plant (nil
// without tariffs): its battery reserve and grid charging from the
// plant's battery: section, the feed-in floor from the tariffs' (default
// 0 EUR/kWh), setpoints and windows through grid control's gate, the
// heat pump's and the car's steps through the energy manager, on the
// daemon's clock.
func (d *daemon) newPlan(cfg *config.Config, logger *slog.Logger) (*siteplan.Runner, error) {
	if d.tariffs == nil {
		return nil, nil
	}
	spec := siteplan.Spec{PlantID: cfg.Tariffs.Plant, Now: d.now}
	if f := cfg.Tariffs.FeedIn.Floor; f != nil {
		spec.FeedInFloor = *f
	}
	for _, p := range cfg.Plants {
		if p.ID == spec.PlantID {
			spec.GridCharge, spec.MinSoCPct = p.Battery.GridCharge, p.Battery.ReserveSoc
		}
	}
	deps := siteplan.Deps{Prices: d.tariffs, Gate: d.grid, Live: d.live, Log: func(e plant.LogEntry) { d.logEntry(e) }}
	if d.homes != nil {
		deps.Consumers = d.homes // the heat pump and the car in Plan mode
	}
	if d.forecast != nil {
		deps.PV = func(from time.Time, n int) ([]float64, bool) { return d.forecast.Power(spec.PlantID, from, n) }
		deps.Load = func(from time.Time, n int) ([]float64, bool) { return d.forecast.Load(spec.PlantID, from, n) }
	} else {
		logger.Warn("plan: no PV forecast (forecast off, or the plant has no location): the plan takes the plant's PV as 0",
			"plant", spec.PlantID)
	}
	return siteplan.New(spec, deps, logger.With("component", "plan"))
}
