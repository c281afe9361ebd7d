package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"plantd/config"
	"plantd/consumer"
	"plantd/consumer/consumerconfig"
	"plantd/consumer/drivers"
	"plantd/modbus"
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
	k, ok := drivers.Lookup(c.Driver)
	if !ok {
		return consumer.Spec{}, fmt.Errorf("unknown driver %q", c.Driver) // the config refuses it
	}
	s := consumer.Spec{ID: dc.ID, PlantID: dc.Plant, Name: dc.Name, DriverName: c.Driver, Setpoint: k.Setpoint,
		Controllable: c.IsControllable(), PartOf: c.PartOf, RatedW: c.RatedPower, Meter: c.Meter, Mode: c.Mode,
		Priority: c.Priority, MinOn: c.MinOnTime, MinOff: c.MinOffTime, MaxSwitchesPerHour: c.MaxSwitchesPerHour,
		OnW: c.OnThreshold(), OffW: c.OffThreshold(), Interval: dc.PollInterval, Timeout: dc.Timeout, PlanLock: c.PlanLock}
	if k.Setpoint == consumer.SetpointSGReady {
		n, r, f := c.SGReadyPowers()
		s.SGReadyW = [3]float64{n, r, f}
	}
	for _, r := range c.MustRun {
		var mr consumer.MustRun
		var err error
		if r.At != "" {
			mr.At, err = consumerconfig.ParseCron(r.At)
		} else {
			mr.By, err = consumerconfig.ParseCron(r.By)
		}
		if err != nil {
			return s, fmt.Errorf("must-run rule: %w", err) // the config checked it
		}
		mr.For = r.For
		s.MustRun = append(s.MustRun, mr)
	}
	if k.Setpoint == consumer.SetpointCurrent {
		enable, disable := c.Delays()
		s.Charger = consumer.ChargerSpec{MinA: c.MinCurrent, MaxA: c.MaxCurrent, Phases: c.Phases,
			EnableDelay: enable, DisableDelay: disable, VehicleCapacityWh: c.VehicleCapacity * 1000}
	}
	drv, err := drivers.New(drivers.Device{ID: dc.ID, Host: dc.Host, Port: dc.Port, Timeout: dc.Timeout}, c.Settings, driverEnv{d})
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

// driverEnv is the daemon's side of the consumer drivers: the Modbus
// pool, shared with the SunSpec devices behind the same address, and the
// OCPP central system.
type driverEnv struct{ d *daemon }

// The pool's clients are the drivers' Modbus clients: drivers declares
// the methods it calls so that it does not import the transport.
var _ drivers.ModbusClient = (*modbus.Client)(nil)

func (e driverEnv) Modbus(deviceID string) (drivers.ModbusClient, error) {
	for _, dc := range e.d.cfg.Devices {
		if dc.ID == deviceID {
			return e.d.pool.Endpoint(endpointOf(dc)).Unit(byte(dc.Unit), dc.Timeout), nil
		}
	}
	return nil, fmt.Errorf("no device %q", deviceID)
}

func (e driverEnv) ChargePoints() (drivers.ChargePoints, error) {
	if e.d.chargePoints == nil { // the config has no charger
		return nil, errors.New("no OCPP central system runs (config ocpp)")
	}
	return e.d.chargePoints, nil
}
