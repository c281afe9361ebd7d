package main

import (
	"log/slog"
	"time"

	"plantd/config"
	"plantd/forecast"
	"plantd/hass"
	"plantd/siteplan"
	"plantd/store"
	"plantd/tariffs"
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
	if d.tariffs != nil || d.forecast != nil {
		hp := hassPlan{tariffs: d.tariffs, plan: d.plan, forecast: d.forecast, locs: map[string]*time.Location{}, now: d.now}
		if cfg.Tariffs != nil {
			hp.plant = cfg.Tariffs.Plant
		}
		for _, p := range d.plants {
			hp.locs[p.ID] = p.Location
		}
		deps.Plan = hp
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

// hassPlan is the tariffs, the PV forecast and the day-ahead plan as the
// link's price, forecast and plan sensors, on the daemon's clock: the
// prices of the instant, the plan's step that holds it, the forecast's
// energy from now to the plant's midnight. tariffs and forecast may be
// nil (not configured).
type hassPlan struct {
	tariffs  *tariffs.Service
	plan     *siteplan.Runner
	forecast *forecast.Service
	plant    string                    // the tariffs' plant
	locs     map[string]*time.Location // the plants' zones: their midnight
	now      func() time.Time
}

var _ hass.Plan = hassPlan{}

func (a hassPlan) PlanState(plantID string) hass.PlanState {
	var st hass.PlanState
	now := a.now()
	if a.tariffs != nil && plantID == a.plant {
		st.Tariffs = true
		if sl := a.tariffs.Slots(now, now.Add(time.Second)); len(sl) > 0 && !sl[0].Start.After(now) {
			imp, feed := sl[0].Import, sl[0].FeedIn
			st.ImportEURPerKWh, st.FeedInEURPerKWh = &imp, &feed
		}
		if a.plan != nil {
			snap := a.plan.Snapshot()
			if p := snap.Plan; p != nil {
				for _, s := range p.Steps {
					if !s.Start.After(now) && now.Before(s.Start.Add(p.Slot)) {
						st.BatteryAction = string(s.Battery)
					}
				}
			} else if snap.Fallback != "" {
				st.BatteryAction = hass.SurplusOnly
			}
		}
	}
	if a.forecast == nil {
		return st
	}
	f, _, ok := a.forecast.Forecast(plantID)
	if !ok {
		return st
	}
	st.Forecast = true
	if len(f.Slots) == 0 {
		return st
	}
	loc := a.locs[plantID]
	if loc == nil {
		loc = time.UTC
	}
	l := now.In(loc)
	midnight := time.Date(l.Year(), l.Month(), l.Day()+1, 0, 0, 0, 0, l.Location())
	var wh float64
	for _, s := range f.Slots {
		from, to := s.Start, s.Start.Add(forecast.SlotLength)
		if from.Before(now) {
			from = now
		}
		if to.After(midnight) {
			to = midnight
		}
		if to.After(from) {
			wh += s.PowerW * to.Sub(from).Hours()
		}
	}
	kwh := wh / 1000
	st.ForecastRestOfTodayKWh = &kwh
	return st
}
