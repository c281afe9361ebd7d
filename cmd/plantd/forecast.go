package main

import (
	"log/slog"
	"path/filepath"

	"plantd/config"
	"plantd/forecast"
	"plantd/forecast/forecastconfig"
	"plantd/plant/kind"
)

// newForecast builds the PV forecast of the config's plants that have a
// location (nil: forecast off, or no plant located). Its state file lies
// beside the database, as the EEBus state does.
func (d *daemon) newForecast(cfg *config.Config, logger *slog.Logger) (*forecast.Service, error) {
	if !cfg.Forecast.Enabled {
		return nil, nil
	}
	var plants []forecast.PlantConfig
	for _, p := range cfg.Plants {
		lat, lon := p.Location.Latitude, p.Location.Longitude
		if lat == nil || lon == nil {
			continue
		}
		zone, err := p.Zone()
		if err != nil {
			return nil, err
		}
		pc := forecast.PlantConfig{ID: p.ID, Site: forecast.Site{Lat: *lat, Lon: *lon, PeakW: p.Installation.PeakPowerW}, Zone: zone,
			Sensor: func() string { return d.weatherSensor(p.ID) }, Flexible: func() []string { return d.flexibleMetered(p.ID) }}
		if s := cfg.Forecast.Service; s.Provider == forecastconfig.ProviderOpenMeteo && s.Plant == p.ID {
			pc.Service = forecast.OpenMeteo{URL: s.URL, APIKey: s.APIKey, Lat: *lat, Lon: *lon}
			pc.ServiceRefresh = s.Refresh
		}
		plants = append(plants, pc)
	}
	if len(plants) == 0 {
		return nil, nil
	}
	return forecast.New(forecast.Config{Plants: plants, HistoryDays: cfg.Forecast.HistoryDays,
		StateFile: filepath.Join(filepath.Dir(cfg.Database.Path), forecast.StateFile), Now: d.now}, d.store, logger)
}

// flexibleMetered are the plant's consumers the day-ahead plan schedules
// (its heat pump and car, consumer.Manager.Flexible) that are metered:
// their stored consumption is not the base load the plan forecasts (an
// unmetered one stays in it, as in the plan's live load).
func (d *daemon) flexibleMetered(plantID string) []string {
	if d.homes == nil {
		return nil
	}
	now := d.now()
	hp, car := d.homes.Flexible(plantID, now, now)
	var ids []string
	if hp != nil && hp.DrawOK {
		ids = append(ids, hp.ID)
	}
	if car != nil && car.DrawOK {
		ids = append(ids, car.ID)
	}
	return ids
}

// weatherSensor is the plant's first active device of kind sensor ("":
// none, or none discovered yet).
func (d *daemon) weatherSensor(plantID string) string {
	devs, err := d.live.DeviceStatuses(plantID)
	if err != nil {
		return ""
	}
	for _, dev := range devs {
		if dev.Info.Kind == kind.Sensor && dev.Info.Active() {
			return dev.Info.ID
		}
	}
	return ""
}
