package config

import (
	"os"
	"strings"
	"time"

	"plantd/consumer/drivers"
)

// All defaults are set from this file: config's own here, each
// component's section's by its SetDefaults, called from here (and by the
// decoder for list elements and pointers).
//
// A default is set before decoding, on a fresh Config and on every fresh
// list element, and the YAML overwrites what it gives. So a value written
// explicitly, even 0 or false, is kept and validated, never replaced by the
// default (unit: 0 is unit 0, not unit 1). Defaults that depend on other
// values (the gateway id, a device's plant and name) are derived after
// decoding, in deriveDefaults.

const (
	defaultListen            = "127.0.0.1:8080"
	defaultRequestsPerSecond = 20
	defaultBurst             = 40
	defaultDatabasePath      = "/var/lib/plantd/plantd.db"
	defaultRawRetention      = 168 * time.Hour
	defaultCommitInterval    = 10 * time.Second
	defaultTokenTTL          = 300 * time.Second
	defaultLogLevel          = "info"
	defaultLogFormat         = "text"
	defaultCO2SavingsFactor  = 400 // g/kWh
	defaultPort              = 502
	defaultUnit              = 1
	defaultPollInterval      = 5 * time.Second
	defaultTimeout           = 2 * time.Second
	gatewayIDPrefix          = "plantd-"
	// The default memory limit: a base and a share per device.
	defaultMemoryBaseMB     = 64
	defaultMemoryPerDeviceB = 32 << 10
)

// MemoryLimit returns the soft memory limit in bytes: gateway.memoryLimitMB,
// or, when that is 0, the default sized to the number of devices.
func (c *Config) MemoryLimit() int64 {
	if c.Gateway.MemoryLimitMB > 0 {
		return int64(c.Gateway.MemoryLimitMB) << 20
	}
	return defaultMemoryBaseMB<<20 + int64(len(c.Devices))*defaultMemoryPerDeviceB
}

// Default returns a Config with every default set and no plants or devices:
// the base that Parse decodes into. Its gateway id comes from the host name.
func Default() *Config {
	c := &Config{}
	c.setDefaults()
	c.deriveDefaults(os.Hostname)
	return c
}

// NewPlant returns a plant entry with its defaults set, for configs built
// in code (the demo).
func NewPlant() Plant {
	var p Plant
	p.setDefaults()
	return p
}

// NewDevice returns a device entry with its defaults set, for configs
// built in code (the demo).
func NewDevice() Device {
	var d Device
	d.setDefaults()
	return d
}

// defaulter is implemented by config's types that have defaults, and
// sectionDefaulter by the sections' types of the components' packages; the
// decoder calls setDefaults (SetDefaults) on each new list element and
// pointer before decoding into it.
type (
	defaulter        interface{ setDefaults() }
	sectionDefaulter interface{ SetDefaults() }
)

// setDefaultsOf sets the defaults of *v, when it has any.
func setDefaultsOf(v any) {
	switch d := v.(type) {
	case defaulter:
		d.setDefaults()
	case sectionDefaulter:
		d.SetDefaults()
	}
}

func (c *Config) setDefaults() {
	c.HTTP.Listen = defaultListen
	c.HTTP.RateLimit.RequestsPerSecond = defaultRequestsPerSecond
	c.HTTP.RateLimit.Burst = defaultBurst
	c.HTTP.TokenTTL = defaultTokenTTL
	c.Database.Path = defaultDatabasePath
	c.Database.RawRetention = defaultRawRetention
	c.Database.CommitInterval = defaultCommitInterval
	c.Log.Level = defaultLogLevel
	c.Log.Format = defaultLogFormat
	c.MQTT.SetDefaults()
	c.GridControl.SetDefaults()
	c.Local.MQTT.SetDefaults()
	c.OCPP.SetDefaults()
	c.ModbusServer.SetDefaults()
	c.EEBus.SetDefaults()
	c.Forecast.SetDefaults()
}

func (p *Plant) setDefaults() {
	p.Installation.CO2SavingsFactor = defaultCO2SavingsFactor
	p.Battery.SetDefaults()
}

func (d *Device) setDefaults() {
	d.Port = defaultPort
	d.Framing = FramingTCP
	d.Unit = defaultUnit
	d.PollInterval = defaultPollInterval
	d.Timeout = defaultTimeout
	d.Enabled = true
}

// deriveDefaults fills the defaults that depend on other values or on the
// machine. hostname is os.Hostname outside tests.
func (c *Config) deriveDefaults(hostname func() (string, error)) {
	if c.Gateway.ID == "" {
		c.Gateway.ID = gatewayIDFromHostname(hostname)
	}
	if c.ModbusServer.Plant == "" && len(c.Plants) == 1 {
		c.ModbusServer.Plant = c.Plants[0].ID
	}
	if c.EEBus.Plant == "" && len(c.Plants) == 1 {
		c.EEBus.Plant = c.Plants[0].ID
	}
	if c.Tariffs != nil && c.Tariffs.Plant == "" && len(c.Plants) == 1 {
		c.Tariffs.Plant = c.Plants[0].ID
	}
	if c.Forecast.Service.Plant == "" && len(c.Plants) == 1 {
		c.Forecast.Service.Plant = c.Plants[0].ID
	}
	for i := range c.Inputs {
		in := &c.Inputs[i]
		if in.Plant == "" && len(c.Plants) == 1 {
			in.Plant = c.Plants[0].ID
		}
		if in.Name == "" {
			in.Name = in.ID
		}
	}
	for i := range c.Devices {
		d := &c.Devices[i]
		if d.Plant == "" && len(c.Plants) == 1 {
			d.Plant = c.Plants[0].ID
		}
		if d.Name == "" {
			d.Name = d.ID
		}
		if c := d.Consumer; c != nil {
			drivers.Defaults(&c.Settings)
			k, _ := drivers.Lookup(c.Driver)
			if k.Connects == drivers.ConnectsHTTP && d.Port == defaultPort {
				d.Port = defaultShellyPort // an HTTP device: 502 is Modbus's default
			}
			if k.Connects == drivers.ConnectsInbound && c.ChargePointID == "" {
				c.ChargePointID = d.ID
			}
			if c.Driver == drivers.NameOCPP && c.RatedPower == 0 {
				c.RatedPower = c.MaxCurrent * float64(c.Phases) * drivers.NominalVoltage
			}
		}
	}
}

// gatewayIDFromHostname returns "plantd-" and the first label of the host
// name, lower-cased, with characters a gateway id may not hold replaced by
// '-'; "plantd" when there is no usable host name.
func gatewayIDFromHostname(hostname func() (string, error)) string {
	h, err := hostname()
	if err != nil {
		return "plantd"
	}
	h, _, _ = strings.Cut(strings.ToLower(h), ".")
	h = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, h)
	h = strings.Trim(h, "-_")
	if h == "" {
		return "plantd"
	}
	id := gatewayIDPrefix + h
	if len(id) > maxIDLen {
		id = strings.TrimRight(id[:maxIDLen], "-_")
	}
	return id
}
