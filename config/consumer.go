package config

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/robfig/cron/v3"

	"plantd/plant"
	"plantd/plant/kind"
)

// ConsumerDriver names the hardware of a consumer.
type ConsumerDriver string

// The consumer drivers.
const (
	// DriverRelay: one coil of a Modbus TCP relay / I/O module (host,
	// port, unit of the device entry; Consumer.Coil).
	DriverRelay ConsumerDriver = "relay"
	// DriverSGReady: an SG-Ready heat pump on two coils of a relay
	// module (Consumer.Coil is contact A, Consumer.CoilB contact B).
	DriverSGReady ConsumerDriver = "sgready"
	// DriverShelly: a Shelly Gen2/Gen3 plug or relay over its HTTP RPC
	// (host; port is its HTTP port, 80 unless given; Consumer.SwitchID).
	DriverShelly ConsumerDriver = "shelly"
)

// Consumer is a switchable load's settings (devices[].consumer, for kind
// consumer). The surplus controller switches it on PV surplus in Auto
// mode, in priority order, within its guards.
type Consumer struct {
	// Driver: relay, sgready or shelly; required.
	Driver ConsumerDriver `yaml:"driver"`
	// Coil is the relay output (0-based coil address, 0..65535; SG-Ready:
	// contact A). CoilB is SG-Ready's contact B (default Coil+1).
	Coil  int  `yaml:"coil"`
	CoilB *int `yaml:"coilB"`
	// SwitchID is a Shelly's switch component id (default 0).
	SwitchID int `yaml:"switchId"`
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
	// Watchdog is the device's fail-safe time: its output falls to off
	// (SG-Ready: normal) when plantd stops renewing it (5s..1h, default
	// 60s).
	Watchdog time.Duration `yaml:"watchdog"`
	// Controllable marks a controllable consumer in the sense of §14a
	// EnWG (steuerbare Verbrauchseinrichtung: a heat pump, a wallbox, an
	// air conditioner): the grid operator's dimming signal limits it.
	// Default true for an SG-Ready heat pump, false otherwise.
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
	return c.Driver == DriverSGReady
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
	defaultMinOnOff         = 5 * time.Minute
	defaultMaxSwitches      = 6
	defaultConsumerWatchdog = 60 * time.Second
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

// ContactB returns SG-Ready's contact B coil.
func (c *Consumer) ContactB() int {
	if c.CoilB != nil {
		return *c.CoilB
	}
	return c.Coil + 1
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
		switch c.Driver {
		case DriverRelay, DriverSGReady, DriverShelly:
		case "":
			v.add(path+".driver", "required (relay, sgready or shelly)")
		default:
			v.add(path+".driver", "%q is not a consumer driver (relay, sgready or shelly)", c.Driver)
		}
		if c.Coil < 0 || c.Coil > 0xFFFF {
			v.add(path+".coil", "%d is not a coil address (0..65535)", c.Coil)
		}
		if c.CoilB != nil {
			switch {
			case c.Driver != DriverSGReady:
				v.add(path+".coilB", "only an sgready consumer has a second contact")
			case *c.CoilB < 0 || *c.CoilB > 0xFFFF:
				v.add(path+".coilB", "%d is not a coil address (0..65535)", *c.CoilB)
			case *c.CoilB == c.Coil:
				v.add(path+".coilB", "%d is contact A's coil too", *c.CoilB)
			}
		} else if c.Driver == DriverSGReady && c.Coil == 0xFFFF {
			v.add(path+".coil", "contact B would be coil %d (give coilB)", c.Coil+1)
		}
		if c.SwitchID < 0 || c.SwitchID > 255 {
			v.add(path+".switchId", "%d is not a switch id (0..255)", c.SwitchID)
		}
		if c.RatedPower < 1 || c.RatedPower > 1e6 {
			v.add(path+".ratedPower", "%v W is out of range (1..1000000 W); required", c.RatedPower)
		}
		if _, ok := plant.ParseConsumerMode(string(c.Mode)); !ok {
			v.add(path+".mode", "%q is not a mode (Auto, On or Off)", c.Mode)
		}
		if c.Priority < 0 || c.Priority > 1000 {
			v.add(path+".priority", "%d is out of range (0..1000)", c.Priority)
		}
		v.duration(path+".minOnTime", c.MinOnTime, 0, 24*time.Hour)
		v.duration(path+".minOffTime", c.MinOffTime, 0, 24*time.Hour)
		v.duration(path+".watchdog", c.Watchdog, 5*time.Second, time.Hour)
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
		if d.Enabled && (c.Driver == DriverRelay || c.Driver == DriverSGReady) {
			outs := []int{c.Coil}
			if c.Driver == DriverSGReady {
				outs = append(outs, c.ContactB())
			}
			for _, coil := range outs {
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
