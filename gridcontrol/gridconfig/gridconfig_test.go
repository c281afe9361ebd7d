package gridconfig

import (
	"slices"
	"testing"
	"time"

	"plantd/internal/confcheck"
)

func TestValidate(t *testing.T) {
	pct := func(v float64) *float64 { return &v }
	for _, tt := range []struct {
		name   string
		modify func(*Config)
		want   []string
	}{
		{"defaults", func(*Config) {}, nil},
		{"reversion not whole seconds", func(g *Config) { g.ReversionTimeout = 2500 * time.Millisecond },
			[]string{"gridControl.reversionTimeout: 2.5s is not a whole number of seconds"}},
		{"reversion too long", func(g *Config) { g.ReversionTimeout = 70000 * time.Second },
			[]string{"gridControl.reversionTimeout: 70000s is out of range (2s..65535s)"}},
		{"ramp and grace", func(g *Config) { g.RampRatePercentPerSecond, g.MeterLossGrace = 0, 2*time.Hour }, []string{
			"gridControl.rampRatePercentPerSecond: 0 is out of range (more than 0, at most 100)",
			"gridControl.meterLossGrace: 2h is out of range (0s..1h)"}},
		{"defaults and dimming", func(g *Config) { g.Defaults.PowerLimitPercent, g.DimmingMinPowerW = pct(101), -1 }, []string{
			"gridControl.defaults.powerLimitPercent: 101 is out of range (0..100)",
			"gridControl.dimmingMinPowerW: -1 W is out of range (0..1000000; 0 = the BNetzA minimum)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var g Config
			g.SetDefaults()
			tt.modify(&g)
			var l confcheck.List
			g.Validate(confcheck.New(&l, "gridControl"))
			if !slices.Equal(l.Problems, tt.want) {
				t.Errorf("problems\n%q\nwant\n%q", l.Problems, tt.want)
			}
		})
	}
}
