package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"plantd/config"
	"plantd/consumer"
	"plantd/plant"
	"plantd/plant/kind"
)

// newConsumers builds the home energy manager of the config's consumers
// (nil when there are none): each enabled consumer with its driver,
// reading into the daemon's sample sink like the SunSpec poller.
func (d *daemon) newConsumers(ctx context.Context, cfg *config.Config) (*consumer.Manager, error) {
	locs := map[string]*time.Location{}
	for _, p := range d.plants {
		locs[p.ID] = p.Location
	}
	var specs []consumer.Spec
	for _, dc := range cfg.Devices {
		if dc.Kind != kind.Consumer || dc.Consumer == nil || !dc.Enabled {
			continue
		}
		s, err := consumerSpec(dc, d)
		if err != nil {
			for _, made := range specs {
				made.Driver.Close()
			}
			return nil, fmt.Errorf("consumer %s: %w", dc.ID, err)
		}
		s.Location = locs[dc.Plant]
		specs = append(specs, s)
	}
	if len(specs) == 0 {
		return nil, nil
	}
	batteries := map[string]consumer.Battery{}
	for _, p := range cfg.Plants {
		batteries[p.ID] = consumer.Battery{PrioritySoC: p.Battery.PrioritySoc, BufferSoC: p.Battery.BufferSoc}
	}
	return consumer.New(ctx, specs, consumer.Deps{
		Sink:        d.onSample,
		Live:        d.live,
		Log:         func(e plant.LogEntry) { d.logEntry(e) },
		Marks:       d.store,
		Guards:      d.store,
		Now:         d.now,
		DimmingMinW: cfg.GridControl.DimmingMinPowerW,
		Batteries:   batteries,
	}, d.log.With("component", "consumer"))
}

// consumerSpec maps a consumer's config onto the manager's spec, with its
// driver.
func consumerSpec(dc config.Device, d *daemon) (consumer.Spec, error) {
	c := dc.Consumer
	s := consumer.Spec{ID: dc.ID, PlantID: dc.Plant, Name: dc.Name, DriverName: string(c.Driver),
		SGReady: c.Driver == config.DriverSGReady, Controllable: c.IsControllable(), PartOf: c.PartOf, RatedW: c.RatedPower, Meter: c.Meter, Mode: c.Mode,
		Priority: c.Priority, MinOn: c.MinOnTime, MinOff: c.MinOffTime, MaxSwitchesPerHour: c.MaxSwitchesPerHour,
		OnW: c.OnThreshold(), OffW: c.OffThreshold(), Interval: dc.PollInterval, Timeout: dc.Timeout}
	for _, r := range c.MustRun {
		var mr consumer.MustRun
		var err error
		if r.At != "" {
			mr.At, err = config.ParseCron(r.At)
		} else {
			mr.By, err = config.ParseCron(r.By)
		}
		if err != nil {
			return s, fmt.Errorf("must-run rule: %w", err) // the config checked it
		}
		mr.For = r.For
		s.MustRun = append(s.MustRun, mr)
	}
	drv, err := consumerDriver(dc, d)
	if err != nil {
		return s, err
	}
	s.Driver = drv
	return s, nil
}

// consumerMeters maps each meter that measures a consumer to it.
func consumerMeters(cfg *config.Config) map[string]string {
	out := map[string]string{}
	for _, dc := range cfg.Devices {
		if dc.Consumer != nil && dc.Consumer.Meter != "" {
			out[dc.Consumer.Meter] = dc.ID
		}
	}
	return out
}

// consumersChanged reports whether a reload changes the consumers, which
// take effect at the next start only (their guards and must-run
// accounting live in the running manager).
func consumersChanged(a, b *config.Config, log *slog.Logger) bool {
	pick := func(c *config.Config) map[string]config.Device {
		m := map[string]config.Device{}
		for _, dc := range c.Devices {
			if dc.Kind == kind.Consumer {
				m[dc.ID] = dc
			}
		}
		return m
	}
	// DeepEqual: a consumer's settings hold pointers (coilB, hysteresis),
	// which two loads of one file fill with equal values.
	changed := !reflect.DeepEqual(pick(a), pick(b))
	if changed {
		log.Warn("the consumers changed in the config: the change takes effect at the next start (systemctl restart plantd)")
	}
	return changed
}

// consumerDriver makes a consumer's driver: a Shelly over HTTP, or a relay
// module's coils through the Modbus pool (shared with the SunSpec devices
// behind the same address).
func consumerDriver(dc config.Device, d *daemon) (consumer.Driver, error) {
	c := dc.Consumer
	switch c.Driver {
	case config.DriverShelly:
		base := "http://" + net.JoinHostPort(dc.Host, strconv.Itoa(dc.Port))
		return consumer.NewShelly(base, c.SwitchID, &http.Client{Timeout: dc.Timeout}, c.Watchdog)
	case config.DriverRelay, config.DriverSGReady:
		ep := d.pool.Endpoint(endpointOf(dc))
		cl := ep.Unit(byte(dc.Unit), dc.Timeout)
		if c.Driver == config.DriverRelay {
			return consumer.NewRelay(cl, consumer.RelayConfig{Coil: uint16(c.Coil), Watchdog: c.Watchdog})
		}
		return consumer.NewSGReady(cl, consumer.SGReadyConfig{CoilA: uint16(c.Coil), CoilB: uint16(c.ContactB()), Watchdog: c.Watchdog})
	}
	return nil, fmt.Errorf("unknown driver %q", c.Driver) // the config refuses it
}
