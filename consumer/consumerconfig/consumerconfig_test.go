package consumerconfig

import (
	"slices"
	"strings"
	"testing"
	"time"

	"plantd/consumer/drivers"
	"plantd/internal/confcheck"
)

func TestValidate(t *testing.T) {
	neg := -1.0
	for _, tt := range []struct {
		name   string
		modify func(*Config)
		others Others
		want   []string
	}{
		{"a relay with defaults", func(*Config) {}, Others{}, nil},
		{"no driver", func(c *Config) { c.Driver = "" }, Others{}, []string{"c.driver: required (" + drivers.Names() + ")"}},
		{"rated power", func(c *Config) { c.RatedPower = 0 }, Others{}, []string{"c.ratedPower: 0 W is out of range (1..1000000 W); required"}},
		{"a charger's mode on a relay", func(c *Config) { c.Mode = "MinPV" }, Others{}, []string{"c.mode: MinPV is a charger's mode (Auto, On or Off)"}},
		{"guards", func(c *Config) {
			c.Priority, c.MinOnTime, c.MaxSwitchesPerHour, c.SwitchOnSurplus, c.Hysteresis = 1001, 25*time.Hour, -1, -1, &neg
		}, Others{}, []string{
			"c.priority: 1001 is out of range (0..1000)",
			"c.minOnTime: 25h is out of range (0s..24h)",
			"c.maxSwitchesPerHour: -1 is out of range (0..3600; 0 = no bound)",
			"c.switchOnSurplus: -1 W is out of range (0..1000000 W)",
			"c.hysteresis: -1 W is out of range (0..switchOnSurplus)"}},
		{"must-run rules", func(c *Config) {
			c.MustRun = []MustRun{{At: "0 13 * * *", For: time.Hour}, {For: time.Hour}, {By: "nope", For: time.Second}}
		}, Others{}, []string{
			"c.mustRun[1]: give either at (run from a time) or by (have run by a time)",
			`c.mustRun[2].by: "nope" is not a cron spec (minute hour day month weekday)`,
			"c.mustRun[2].for: 1s is out of range (1m..24h)"}},
		{"charge point id taken", func(*Config) {}, Others{ChargePointID: "cp1", ChargePointUsedBy: "devices[0].consumer"},
			[]string{`c.chargePointId: duplicate charge point id "cp1" (first in devices[0].consumer)`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := New()
			c.Driver, c.RatedPower = "relay", 2000
			tt.modify(c)
			var l confcheck.List
			c.Validate(confcheck.New(&l, "c"), tt.others)
			got := l.Problems
			for i := range got { // a cron error's own words are robfig/cron's
				if j := strings.Index(got[i], " weekday): "); j > 0 {
					got[i] = got[i][:j+len(" weekday)")]
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestBatteryValidate(t *testing.T) {
	for _, tt := range []struct {
		b    Battery
		want []string
	}{
		{Battery{PrioritySoc: 100}, nil},
		{Battery{PrioritySoc: 50, BufferSoc: 90}, nil},
		{Battery{PrioritySoc: 101}, []string{"b.prioritySoc: 101 is out of range (0..100)"}},
		{Battery{PrioritySoc: 50, BufferSoc: 40}, []string{"b.bufferSoc: 40 is not above prioritySoc 50 (0 = consumers never draw from the battery)"}},
	} {
		var l confcheck.List
		tt.b.Validate(confcheck.New(&l, "b"))
		if !slices.Equal(l.Problems, tt.want) {
			t.Errorf("%+v: %q, want %q", tt.b, l.Problems, tt.want)
		}
	}
	var b Battery
	b.SetDefaults()
	if b.PrioritySoc != 100 || b.BufferSoc != 0 {
		t.Errorf("defaults %+v", b)
	}
}
