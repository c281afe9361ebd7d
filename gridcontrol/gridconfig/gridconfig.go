package gridconfig

import (
	"time"

	"plantd/internal/confcheck"
)

// Config configures the execution of grid-control schedules.
type Config struct {
	// ReversionTimeout written with every control, whole seconds,
	// 2s..65535s. Default 60s.
	ReversionTimeout time.Duration `yaml:"reversionTimeout"`
	// RampRatePercentPerSecond limits how fast a limit is loosened, in % of
	// nominal power per second, (0, 100]. Default 10.
	RampRatePercentPerSecond float64 `yaml:"rampRatePercentPerSecond"`
	// MeterLossGrace is how long inverters are held at their last limit
	// after the meter is lost while a feed-in limit is active, 0..1h.
	// Default 30s.
	MeterLossGrace time.Duration `yaml:"meterLossGrace"`
	// DimmingMinPowerW is what the controllable consumers of a plant may
	// still draw while the grid operator dims them (§14a EnWG), W; 0 =
	// the BNetzA minimum for their number (consumer/doc.go). Default 0.
	DimmingMinPowerW float64  `yaml:"dimmingMinPowerW"`
	Defaults         Defaults `yaml:"defaults"`
}

// Defaults are the values fallbacks restore.
type Defaults struct {
	// PowerLimitPercent, 0..100, when given; nil = the device's own value
	// read at first contact.
	PowerLimitPercent *float64 `yaml:"powerLimitPercent"`
}

// Defaults of gridControl.
const (
	defaultReversionTimeout = 60 * time.Second
	defaultRampRate         = 10 // % of nominal power per second
	defaultMeterLossGrace   = 30 * time.Second
)

// SetDefaults sets every default of gridControl.
func (g *Config) SetDefaults() {
	g.ReversionTimeout = defaultReversionTimeout
	g.RampRatePercentPerSecond = defaultRampRate
	g.MeterLossGrace = defaultMeterLossGrace
}

// Validate checks the section; c is at gridControl.
func (g Config) Validate(c confcheck.Checker) {
	if c.Duration("reversionTimeout", g.ReversionTimeout, 2*time.Second, 65535*time.Second) &&
		g.ReversionTimeout%time.Second != 0 {
		c.Add("reversionTimeout", "%s is not a whole number of seconds", confcheck.FmtDuration(g.ReversionTimeout))
	}
	if r := g.RampRatePercentPerSecond; !(r > 0 && r <= 100) {
		c.Add("rampRatePercentPerSecond", "%s is out of range (more than 0, at most 100)", confcheck.Num(r))
	}
	c.Duration("meterLossGrace", g.MeterLossGrace, 0, time.Hour)
	c.OptRange("defaults.powerLimitPercent", g.Defaults.PowerLimitPercent, 0, 100)
	if w := g.DimmingMinPowerW; w < 0 || w > 1e6 {
		c.Add("dimmingMinPowerW", "%v W is out of range (0..1000000; 0 = the BNetzA minimum)", w)
	}
}
