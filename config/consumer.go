package config

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/robfig/cron/v3"

	"plantd/consumer/drivers"
	"plantd/plant"
	"plantd/plant/kind"
)

// Consumer is a switchable load's settings (devices[].consumer, for kind
// consumer). The surplus controller switches it on PV surplus in Auto
// mode, in priority order, within its guards.
type Consumer struct {
	// Settings are the driver's: its name (relay, sgready, shelly or
	// ocpp) and its keys (coil, coilB, switchId, watchdog, a charger's
	// chargePointId, password, phases and currents); package
	// consumer/drivers defines, checks and defaults them.
	drivers.Settings `yaml:",inline"`
	// RatedPower is the load's power while on, W (1..1000000); required.
	// It is the surplus a consumer needs, and its consumption estimate
	// when nothing measures it.
	RatedPower float64 `yaml:"ratedPower"`
	// Meter is the id of a meter device that measures this consumer
	// alone (a SunSpec meter 20x). That meter then counts in no grid
	// balance.
	Meter string `yaml:"meter"`
	// Mode at the first start: Auto (default), On or Off. A mode set
	// over the API is kept in the database and wins over this one.
	Mode plant.ConsumerMode `yaml:"mode"`
	// Priority orders consumers on surplus: lower first (default 10).
	Priority int `yaml:"priority"`
	// MinOnTime and MinOffTime protect the machine (a compressor): the
	// output stays at least this long after a switch (0..24h, default
	// 5m and 5m).
	MinOnTime  time.Duration `yaml:"minOnTime"`
	MinOffTime time.Duration `yaml:"minOffTime"`
	// MaxSwitchesPerHour bounds the switchings in any hour (0 = no bound;
	// default 6).
	MaxSwitchesPerHour int `yaml:"maxSwitchesPerHour"`
	// SwitchOnSurplus is the surplus (W) that switches the consumer on
	// (default RatedPower); it switches off when the surplus it sees,
	// its own consumption included, falls below SwitchOnSurplus −
	// Hysteresis (default 10 % of RatedPower).
	SwitchOnSurplus float64  `yaml:"switchOnSurplus"`
	Hysteresis      *float64 `yaml:"hysteresis"`
	// MustRun windows run the consumer whatever the surplus (Auto mode).
	MustRun []MustRun `yaml:"mustRun"`
	// Controllable marks a controllable consumer in the sense of §14a
	// EnWG (steuerbare Verbrauchseinrichtung: a heat pump, a wallbox, an
	// air conditioner): the grid operator's dimming signal limits it.
	// Default true for an SG-Ready heat pump and a charger, false
	// otherwise (the driver table's Controllable).
	Controllable *bool `yaml:"controllable"`
	// PartOf names the consumer this one belongs to as one §14a device:
	// a heat pump's immersion heater (its auxiliary or emergency heater)
	// is part of the heat pump (BK6-22-300). Both are dimmed together and
	// count as one in the minimum power; a part is controllable.
	PartOf string `yaml:"partOf"`
}

// IsControllable reports whether the consumer is a §14a controllable
// consumer (a part of one; Controllable; else true for an SG-Ready heat
// pump).
func (c *Consumer) IsControllable() bool {
	if c.PartOf != "" {
		return true
	}
	if c.Controllable != nil {
		return *c.Controllable
	}
	k, _ := drivers.Lookup(c.Driver)
	return k.Controllable
}

// Battery is a plant's battery priority for the home energy manager
// (plants[].battery), with evcc's names and meaning. Below PrioritySoc
// (%, 0..100) the battery charges first: its charging is not surplus for
// the consumers. At or above it, the power the battery charges with is
// surplus they may take. Its discharge is never surplus, except that
// above BufferSoc (%, above PrioritySoc; 0 = never) consumers already
// running may keep drawing from the battery down to BufferSoc (none
// switches on from it). Defaults: PrioritySoc 100 (the battery charges
// first at any SoC, as plantd's energy manager always did; evcc's 0 makes
// the consumers go first) and BufferSoc 0: the battery never feeds them.
type Battery struct {
	PrioritySoc float64 `yaml:"prioritySoc"`
	BufferSoc   float64 `yaml:"bufferSoc"`
}

// check reports what is wrong with b's values, field by field.
func (b Battery) check(add func(field, format string, args ...any)) {
	if math.IsNaN(b.PrioritySoc) || b.PrioritySoc < 0 || b.PrioritySoc > 100 {
		add("prioritySoc", "%v is out of range (0..100)", b.PrioritySoc)
	}
	switch {
	case math.IsNaN(b.BufferSoc) || b.BufferSoc < 0 || b.BufferSoc > 100:
		add("bufferSoc", "%v is out of range (0..100, 0 = consumers never draw from the battery)", b.BufferSoc)
	case b.BufferSoc > 0 && b.BufferSoc <= b.PrioritySoc:
		add("bufferSoc", "%v is not above prioritySoc %v (0 = consumers never draw from the battery)", b.BufferSoc, b.PrioritySoc)
	}
}

// MustRun is one must-run rule of a consumer: either At (a cron spec,
// five fields: run For from each time it names; "0 13 * * *" is a boost
// at 13:00 every day) or By (a cron spec: have run For in total since the
// previous time it names by the next one, switched on late enough to make
// it; "0 18 * * *" with 2h is "2 h by 18:00").
type MustRun struct {
	At  string        `yaml:"at"`
	By  string        `yaml:"by"`
	For time.Duration `yaml:"for"`
}

// Consumer defaults.
const (
	defaultConsumerPriority = 10
	defaultConsumerWatchdog = 60 * time.Second
	defaultMinOnOff         = 5 * time.Minute
	defaultMaxSwitches      = 6
	defaultShellyPort       = 80
)

func (c *Consumer) setDefaults() {
	c.Mode = plant.ModeAuto
	c.Priority = defaultConsumerPriority
	c.MinOnTime = defaultMinOnOff
	c.MinOffTime = defaultMinOnOff
	c.MaxSwitchesPerHour = defaultMaxSwitches
	c.Watchdog = defaultConsumerWatchdog
}

// NewConsumer returns consumer settings with their defaults set, for
// configs built in code (the demo).
func NewConsumer() *Consumer {
	c := new(Consumer)
	c.setDefaults()
	return c
}

// OnThreshold and OffThreshold are the surplus (W) that switches the
// consumer on, and below which it switches off.
func (c *Consumer) OnThreshold() float64 {
	if c.SwitchOnSurplus > 0 {
		return c.SwitchOnSurplus
	}
	return c.RatedPower
}

// OffThreshold: see OnThreshold.
func (c *Consumer) OffThreshold() float64 {
	h := 0.1 * c.RatedPower
	if c.Hysteresis != nil {
		h = *c.Hysteresis
	}
	return c.OnThreshold() - h
}

// cronParser reads the five-field specs of must-run rules.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses a must-run rule's cron spec (five fields, or a
// descriptor such as @daily).
func ParseCron(spec string) (cron.Schedule, error) { return cronParser.Parse(spec) }

// consumers checks the consumer settings of every device (kind and
// settings belong together) and the meters they name.
func (v *validator) consumers() {
	meters := map[string]string{} // meter id -> consumer path
	coils := map[string]string{}  // host:port unit coil -> path
	chargePoints := map[string]string{}
	for i, d := range v.c.Devices {
		path := fmt.Sprintf("devices[%d]", i)
		c := d.Consumer
		switch {
		case d.Kind == kind.Consumer && c == nil:
			v.add(path+".consumer", "required for kind consumer (driver, ratedPower, ...)")
			continue
		case d.Kind != kind.Consumer && c != nil:
			v.add(path+".consumer", "only a device of kind consumer has consumer settings")
			continue
		case c == nil:
			continue
		}
		path += ".consumer"
		drivers.Check(&c.Settings, func(field, format string, args ...any) { v.add(path+"."+field, format, args...) })
		if k, _ := drivers.Lookup(c.Driver); k.Connects == drivers.ConnectsInbound && d.Enabled {
			id := c.ChargePointID
			if id == "" {
				id = d.ID
			}
			v.unique(chargePoints, id, path+".chargePointId", path, "charge point id")
		}
		charger := c.Driver == drivers.NameOCPP
		if (c.RatedPower < 1 || c.RatedPower > 1e6) && !(charger && c.RatedPower == 0) {
			v.add(path+".ratedPower", "%v W is out of range (1..1000000 W); required", c.RatedPower)
		}
		switch m, ok := plant.ParseConsumerMode(string(c.Mode)); {
		case !ok && charger:
			v.add(path+".mode", "%q is not a charger's mode (Off, Now, MinPV or PV)", c.Mode)
		case !ok:
			v.add(path+".mode", "%q is not a mode (Auto, On or Off)", c.Mode)
		case m == plant.ModeMinPV && !charger:
			v.add(path+".mode", "MinPV is a charger's mode (Auto, On or Off)")
		}
		if c.Priority < 0 || c.Priority > 1000 {
			v.add(path+".priority", "%d is out of range (0..1000)", c.Priority)
		}
		v.duration(path+".minOnTime", c.MinOnTime, 0, 24*time.Hour)
		v.duration(path+".minOffTime", c.MinOffTime, 0, 24*time.Hour)
		if c.MaxSwitchesPerHour < 0 || c.MaxSwitchesPerHour > 3600 {
			v.add(path+".maxSwitchesPerHour", "%d is out of range (0..3600; 0 = no bound)", c.MaxSwitchesPerHour)
		}
		if c.SwitchOnSurplus < 0 || c.SwitchOnSurplus > 1e6 {
			v.add(path+".switchOnSurplus", "%v W is out of range (0..1000000 W)", c.SwitchOnSurplus)
		}
		if c.Hysteresis != nil && (*c.Hysteresis < 0 || *c.Hysteresis > c.OnThreshold()) {
			v.add(path+".hysteresis", "%v W is out of range (0..switchOnSurplus)", *c.Hysteresis)
		}
		for j, m := range c.MustRun {
			mp := fmt.Sprintf("%s.mustRun[%d]", path, j)
			switch {
			case (m.At == "") == (m.By == ""):
				v.add(mp, "give either at (run from a time) or by (have run by a time)")
			case m.At != "":
				if _, err := ParseCron(m.At); err != nil {
					v.add(mp+".at", "%q is not a cron spec (minute hour day month weekday): %v", m.At, err)
				}
			default:
				if _, err := ParseCron(m.By); err != nil {
					v.add(mp+".by", "%q is not a cron spec (minute hour day month weekday): %v", m.By, err)
				}
			}
			v.duration(mp+".for", m.For, time.Minute, 24*time.Hour)
		}
		if c.Meter != "" {
			v.consumerMeter(path+".meter", c.Meter, d.ID, meters)
		}
		if c.PartOf != "" {
			v.consumerPartOf(path+".partOf", d, c)
		}
		if d.Enabled {
			for _, coil := range c.Coils() {
				key := fmt.Sprintf("%s unit %d coil %d", net.JoinHostPort(canonicalHost(d.Host), strconv.Itoa(d.Port)), d.Unit, coil)
				if prev, ok := coils[key]; ok {
					v.add(path+".coil", "%s is already switched by %s", key, v.where(prev))
				} else {
					coils[key] = path
				}
			}
		}
	}
}

// consumerPartOf checks the consumer a part names: another controllable
// consumer of the same plant that is no part itself.
func (v *validator) consumerPartOf(field string, d Device, c *Consumer) {
	if c.Controllable != nil && !*c.Controllable {
		v.add(field, "a part of a §14a device is controllable (remove controllable: false)")
	}
	for _, o := range v.c.Devices {
		if o.ID != c.PartOf {
			continue
		}
		switch {
		case o.ID == d.ID:
			v.add(field, "a consumer is not a part of itself")
		case o.Kind != kind.Consumer || o.Consumer == nil:
			v.add(field, "%q is not a consumer", c.PartOf)
		case o.Consumer.PartOf != "":
			v.add(field, "%q is a part of %q itself: name the whole", c.PartOf, o.Consumer.PartOf)
		case !o.Consumer.IsControllable():
			v.add(field, "%q is not a controllable consumer", c.PartOf)
		case o.Plant != d.Plant:
			v.add(field, "%q is in plant %q, not %q", c.PartOf, o.Plant, d.Plant)
		}
		return
	}
	v.add(field, "no device %q", c.PartOf)
}

// consumerMeter checks the meter a consumer names: a device of kind meter
// (or not yet discovered) in the config, named by one consumer only.
func (v *validator) consumerMeter(field, id, self string, seen map[string]string) {
	if prev, ok := seen[id]; ok {
		v.add(field, "meter %q already measures the consumer of %s", id, v.where(prev))
		return
	}
	seen[id] = field
	for _, d := range v.c.Devices {
		if d.ID != id {
			continue
		}
		if d.Kind != "" && d.Kind != kind.Meter || id == self {
			v.add(field, "%q is not a meter", id)
		}
		return
	}
	v.add(field, "no device %q", id)
}
