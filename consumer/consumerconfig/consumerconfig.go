package consumerconfig

import (
	"fmt"
	"math"
	"time"

	"github.com/robfig/cron/v3"

	"plantd/consumer/drivers"
	"plantd/internal/confcheck"
	"plantd/plant"
)

// Config is a switchable load's settings (devices[].consumer, for kind
// consumer). The surplus controller switches it on PV surplus in Auto
// mode, in priority order, within its guards.
type Config struct {
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
	// The day-ahead plan's keys (package siteplan, with a tariffs:
	// section). VehicleCapacity is a charger's car's usable battery
	// capacity (kWh, 0..1000; 0 = unknown): a Plan target may then be a
	// SoC where the charger reports the car's. PlanLock lets the plan
	// lock an SG-Ready heat pump (state 1) in the most expensive hours,
	// within the utilities' lock rules (at most 3 locks of 2 h, 6 h a
	// day); default false: state 1 is the grid operator's. SGReadyPower
	// is an SG-Ready pump's mean draw in states 2, 3 and 4 for the plan
	// (W; 0 = ratedPower).
	VehicleCapacity float64      `yaml:"vehicleCapacity"`
	PlanLock        bool         `yaml:"planLock"`
	SGReadyPower    SGReadyPower `yaml:"sgReadyPower"`
}

// SGReadyPower is an SG-Ready heat pump's mean draw per state (W).
type SGReadyPower struct {
	Normal      float64 `yaml:"normal"`
	Recommended float64 `yaml:"recommended"`
	Forced      float64 `yaml:"forced"`
}

// IsControllable reports whether the consumer is a §14a controllable
// consumer (a part of one; Controllable; else true for an SG-Ready heat
// pump).
func (c *Config) IsControllable() bool {
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
//
// The day-ahead plan (package siteplan, with a tariffs: section) reads two
// more: GridCharge lets it charge the battery from the grid in cheap
// hours (default false: from PV only), and ReserveSoc (%, 0..100,
// default 10) is the state of charge it never plans below.
type Battery struct {
	PrioritySoc float64 `yaml:"prioritySoc"`
	BufferSoc   float64 `yaml:"bufferSoc"`
	GridCharge  bool    `yaml:"gridCharge"`
	ReserveSoc  float64 `yaml:"reserveSoc"`
}

// defaultPrioritySoc: the battery charges first at any state of charge,
// as the energy manager did before the key existed.
const defaultPrioritySoc = 100

// SetDefaults sets the battery priority's defaults.
func (b *Battery) SetDefaults() { b.PrioritySoc, b.ReserveSoc = defaultPrioritySoc, defaultReserveSoc }

// defaultReserveSoc is the SoC the day-ahead plan keeps at least.
const defaultReserveSoc = 10

// Validate checks the battery priority; c is at plants[i].battery.
func (b Battery) Validate(c confcheck.Checker) {
	if math.IsNaN(b.PrioritySoc) || b.PrioritySoc < 0 || b.PrioritySoc > 100 {
		c.Add("prioritySoc", "%v is out of range (0..100)", b.PrioritySoc)
	}
	if math.IsNaN(b.ReserveSoc) || b.ReserveSoc < 0 || b.ReserveSoc > 100 {
		c.Add("reserveSoc", "%v is out of range (0..100)", b.ReserveSoc)
	}
	switch {
	case math.IsNaN(b.BufferSoc) || b.BufferSoc < 0 || b.BufferSoc > 100:
		c.Add("bufferSoc", "%v is out of range (0..100, 0 = consumers never draw from the battery)", b.BufferSoc)
	case b.BufferSoc > 0 && b.BufferSoc <= b.PrioritySoc:
		c.Add("bufferSoc", "%v is not above prioritySoc %v (0 = consumers never draw from the battery)", b.BufferSoc, b.PrioritySoc)
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
	defaultPriority    = 10
	defaultWatchdog    = 60 * time.Second
	defaultMinOnOff    = 5 * time.Minute
	defaultMaxSwitches = 6
)

// SetDefaults sets the defaults that do not depend on the driver
// (drivers.Defaults sets those, after decoding).
func (c *Config) SetDefaults() {
	c.Mode = plant.ModeAuto
	c.Priority = defaultPriority
	c.MinOnTime = defaultMinOnOff
	c.MinOffTime = defaultMinOnOff
	c.MaxSwitchesPerHour = defaultMaxSwitches
	c.Watchdog = defaultWatchdog
}

// New returns consumer settings with their defaults set, for configs
// built in code (the demo).
func New() *Config {
	c := new(Config)
	c.SetDefaults()
	return c
}

// OnThreshold is the surplus (W) that switches the consumer on.
func (c *Config) OnThreshold() float64 {
	if c.SwitchOnSurplus > 0 {
		return c.SwitchOnSurplus
	}
	return c.RatedPower
}

// OffThreshold is the surplus (W) below which the consumer switches off.
func (c *Config) OffThreshold() float64 {
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

// Others is what a consumer's rules need of the rest of the config,
// which package config finds.
type Others struct {
	// ChargePointUsedBy describes the consumer that uses the same charge
	// point id already ("devices[2].consumer at line 40"); "": none.
	ChargePointUsedBy string
	// ChargePointID is the id it is used as (the consumer's, or by
	// default its device's).
	ChargePointID string
}

// Validate checks the driver's settings and the consumer's own; ck is at
// devices[i].consumer. The device's kind, and what the consumer names
// (its meter, the consumer it is part of, its coils), config checks.
func (c *Config) Validate(ck confcheck.Checker, o Others) {
	drivers.Check(&c.Settings, ck.AddFunc())
	if o.ChargePointUsedBy != "" {
		ck.Add("chargePointId", "duplicate charge point id %q (first in %s)", o.ChargePointID, o.ChargePointUsedBy)
	}
	charger := c.Driver == drivers.NameOCPP
	if (c.RatedPower < 1 || c.RatedPower > 1e6) && !(charger && c.RatedPower == 0) {
		ck.Add("ratedPower", "%v W is out of range (1..1000000 W); required", c.RatedPower)
	}
	switch m, ok := plant.ParseConsumerMode(string(c.Mode)); {
	case !ok && charger:
		ck.Add("mode", "%q is not a charger's mode (Off, Now, MinPV or PV)", c.Mode)
	case !ok:
		ck.Add("mode", "%q is not a mode (Auto, On or Off)", c.Mode)
	case m == plant.ModeMinPV && !charger:
		ck.Add("mode", "MinPV is a charger's mode (Auto, On or Off)")
	}
	if c.Priority < 0 || c.Priority > 1000 {
		ck.Add("priority", "%d is out of range (0..1000)", c.Priority)
	}
	ck.Duration("minOnTime", c.MinOnTime, 0, 24*time.Hour)
	ck.Duration("minOffTime", c.MinOffTime, 0, 24*time.Hour)
	if c.MaxSwitchesPerHour < 0 || c.MaxSwitchesPerHour > 3600 {
		ck.Add("maxSwitchesPerHour", "%d is out of range (0..3600; 0 = no bound)", c.MaxSwitchesPerHour)
	}
	if c.SwitchOnSurplus < 0 || c.SwitchOnSurplus > 1e6 {
		ck.Add("switchOnSurplus", "%v W is out of range (0..1000000 W)", c.SwitchOnSurplus)
	}
	if c.Hysteresis != nil && (*c.Hysteresis < 0 || *c.Hysteresis > c.OnThreshold()) {
		ck.Add("hysteresis", "%v W is out of range (0..switchOnSurplus)", *c.Hysteresis)
	}
	if math.IsNaN(c.VehicleCapacity) || c.VehicleCapacity < 0 || c.VehicleCapacity > 1000 {
		ck.Add("vehicleCapacity", "%v kWh is out of range (0..1000)", c.VehicleCapacity)
	} else if c.VehicleCapacity > 0 && !charger {
		ck.Add("vehicleCapacity", "only a charger (ocpp) has a car")
	}
	sgready := c.Driver == drivers.NameSGReady
	if c.PlanLock && !sgready {
		ck.Add("planLock", "only an SG-Ready heat pump (sgready) can be locked")
	}
	if p := c.SGReadyPower; p != (SGReadyPower{}) {
		n, r, f := c.SGReadyPowers()
		switch {
		case !sgready:
			ck.Add("sgReadyPower", "only an SG-Ready heat pump (sgready) has states")
		case math.IsNaN(p.Normal+p.Recommended+p.Forced) || p.Normal < 0 || p.Recommended < 0 || p.Forced < 0 || p.Forced > 1e6:
			ck.Add("sgReadyPower", "a power is out of range (0..1000000 W)")
		case n > r || r > f:
			ck.Add("sgReadyPower", "want normal %v ≤ recommended %v ≤ forced %v W (0 = ratedPower)", n, r, f)
		}
	}
	for j, m := range c.MustRun {
		mc := ck.In(fmt.Sprintf("mustRun[%d]", j))
		switch {
		case (m.At == "") == (m.By == ""):
			mc.Add("", "give either at (run from a time) or by (have run by a time)")
		case m.At != "":
			if _, err := ParseCron(m.At); err != nil {
				mc.Add("at", "%q is not a cron spec (minute hour day month weekday): %v", m.At, err)
			}
		default:
			if _, err := ParseCron(m.By); err != nil {
				mc.Add("by", "%q is not a cron spec (minute hour day month weekday): %v", m.By, err)
			}
		}
		mc.Duration("for", m.For, time.Minute, 24*time.Hour)
	}
}

// SGReadyPowers is an SG-Ready pump's draw in states 2, 3 and 4 (W):
// SGReadyPower's, ratedPower where 0.
func (c *Config) SGReadyPowers() (normal, recommended, forced float64) {
	or := func(w float64) float64 {
		if w > 0 {
			return w
		}
		return c.RatedPower
	}
	return or(c.SGReadyPower.Normal), or(c.SGReadyPower.Recommended), or(c.SGReadyPower.Forced)
}
