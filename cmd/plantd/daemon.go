package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"plantd/config"
	"plantd/devices"
	"plantd/devices/poller"
	"plantd/modbus"
	"plantd/plant"
)

// daemon is a running plantd: the components a config asks for, wired
// together. Data flows one way: poller → live state (→ store, MQTT and the
// HTTP API as they arrive).
type daemon struct {
	log    *slog.Logger
	pool   *modbus.Pool
	poller *poller.Poller
	live   *plant.Live
	plants []plant.Plant
	// reportEvery, when set, logs each plant's live energy balance at that
	// interval (the demo does, so that its user sees the plant work).
	reportEvery time.Duration
}

// newDaemon builds the components of a validated config.
func newDaemon(cfg *config.Config, logger *slog.Logger) (*daemon, error) {
	plants, infos, err := domainOf(cfg)
	if err != nil {
		return nil, err
	}
	d := &daemon{log: logger, pool: modbus.NewPool(logger.With("component", "modbus")), plants: plants}
	d.live = plant.NewLive(plants, infos, time.Now)
	d.poller, err = poller.New(pollerConfigs(cfg), d.pool, d.live.Apply, logger.With("component", "poller"))
	if err != nil {
		d.pool.Close()
		return nil, err
	}
	return d, nil
}

// run runs every component until ctx ends, then stops them and returns.
func (d *daemon) run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.poller.Run(ctx)
	}()
	if d.reportEvery > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.report(ctx)
		}()
	}
	<-ctx.Done()
	wg.Wait()
	return d.pool.Close()
}

// domainOf maps the config onto the domain types of package plant.
func domainOf(cfg *config.Config) ([]plant.Plant, []plant.DeviceInfo, error) {
	var plants []plant.Plant
	for _, p := range cfg.Plants {
		loc, err := p.Zone()
		if err != nil {
			return nil, nil, fmt.Errorf("plant %s: %w", p.ID, err)
		}
		plants = append(plants, plant.Plant{ID: p.ID, Name: p.Name, Description: p.Description, Location: loc})
	}
	var infos []plant.DeviceInfo
	for _, d := range cfg.Devices {
		if !d.Enabled {
			continue
		}
		info := plant.DeviceInfo{ID: d.ID, PlantID: d.Plant, Name: d.Name}
		if d.Kind != "" {
			k, err := plant.ParseKind(d.Kind)
			if err != nil {
				return nil, nil, fmt.Errorf("device %s: %w", d.ID, err)
			}
			info.Kind = k
		}
		infos = append(infos, info)
	}
	return plants, infos, nil
}

// pollerConfigs lists the enabled devices for the poller.
func pollerConfigs(cfg *config.Config) []poller.DeviceConfig {
	var out []poller.DeviceConfig
	for _, d := range cfg.Devices {
		if !d.Enabled {
			continue
		}
		pc := poller.DeviceConfig{
			ID: d.ID, Address: d.Address(), Unit: byte(d.Unit), Kind: devices.Kind(d.Kind),
			Interval: d.PollInterval, Timeout: d.Timeout, ConnectDelay: d.ConnectDelay,
		}
		if d.Base != nil {
			pc.Bases = []uint16{uint16(*d.Base)}
		}
		out = append(out, pc)
	}
	return out
}

// report logs the live energy balance of every plant each reportEvery.
func (d *daemon) report(ctx context.Context) {
	t := time.NewTicker(d.reportEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, p := range d.plants {
			b, err := d.live.EnergyBalance(p.ID)
			if err != nil {
				continue
			}
			attrs := []any{"plant", p.ID}
			for _, f := range []struct {
				name string
				v    *float64
			}{
				{"pv_w", b.PVGenerationW}, {"consumption_w", b.TotalConsumptionW},
				{"grid_feed_in_w", b.GridFeedInW}, {"grid_purchase_w", b.GridConsumptionW},
				{"battery_charge_w", b.BatteryChargingW}, {"battery_discharge_w", b.BatteryDischargingW},
				{"battery_soc_pct", b.BatteryStateOfChargePct},
			} {
				if f.v != nil {
					attrs = append(attrs, f.name, math.Round(*f.v))
				}
			}
			if b.Error != nil {
				attrs = append(attrs, "incomplete", b.Error.Message)
			}
			d.log.Info("live energy balance", attrs...)
		}
	}
}
