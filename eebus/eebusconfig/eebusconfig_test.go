package eebusconfig

import (
	"slices"
	"testing"
	"time"

	"plantd/internal/confcheck"
)

const ski = "0123456789abcdef0123456789abcdef01234567"

func TestValidate(t *testing.T) {
	known := func(id string) bool { return id == "p1" }
	neg := -1.0
	for _, tt := range []struct {
		name   string
		modify func(*Config)
		want   []string
	}{
		{"off: nothing checked", func(e *Config) { e.Enabled, e.Trusted, e.Port = false, nil, 0 }, nil},
		{"on", func(*Config) {}, nil},
		{"a SKI as a control box prints it", func(e *Config) { e.Trusted = []string{"01 23 45 67 89 AB CD EF 01 23 45 67 89 ab cd ef 01 23 45 67"} }, nil},
		{"no trusted SKI", func(e *Config) { e.Trusted = nil }, []string{
			"eebus.trusted: required when enabled: list the control box's SKI (40 hex digits, printed on it or in its installer's portal)"}},
		{"bad and duplicate SKIs", func(e *Config) { e.Trusted = []string{ski, "abc", "01234567-89abcdef0123456789abcdef01234567"} }, []string{
			`eebus.trusted[1]: "abc" is not a SKI (40 hex digits)`,
			`eebus.trusted[2]: duplicate SKI "0123456789abcdef0123456789abcdef01234567" (first in eebus.trusted[0])`}},
		{"plant", func(e *Config) { e.Plant = "p2" }, []string{`eebus.plant: unknown plant "p2"`}},
		{"no plant", func(e *Config) { e.Plant = "" }, []string{"eebus.plant: required when more than one plant is configured"}},
		{"port, names; no serial: the gateway id", func(e *Config) { e.Port, e.Serial, e.Brand = 70000, "", " " }, []string{
			"eebus.port: 70000 is not a TCP port (1..65535)", "eebus.brand: required when enabled"}},
		{"timeouts and failsafe", func(e *Config) {
			e.HeartbeatTimeout, e.Failsafe.Duration, e.Failsafe.ConsumptionW, e.Failsafe.ProductionW = 0, time.Hour, -5, &neg
		}, []string{
			"eebus.heartbeatTimeout: 0s is out of range (1s..1h)",
			"eebus.failsafe.consumptionW: -5 is out of range (0..1000000)",
			"eebus.failsafe.productionW: -1 is out of range (0..1e+07)",
			"eebus.failsafe.duration: 1h is out of range (2h..24h)"}},
		{"production command", func(e *Config) { e.ProductionCommand = "OpModDisconnect" }, []string{
			`eebus.productionCommand: "OpModDisconnect" is not a limit command (FeedInLimit or opModMaxLimW)`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var e Config
			e.SetDefaults()
			e.Enabled, e.Plant, e.Serial, e.Trusted = true, "p1", "gw1", []string{ski}
			tt.modify(&e)
			var l confcheck.List
			e.Validate(confcheck.New(&l, "eebus"), known)
			if !slices.Equal(l.Problems, tt.want) {
				t.Errorf("problems\n%q\nwant\n%q", l.Problems, tt.want)
			}
		})
	}
}

func TestNormalizeSKI(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{ski, ski, true},
		{"01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67", ski, true},
		{"0123", "0123", false},
		{"g123456789abcdef0123456789abcdef01234567", "g123456789abcdef0123456789abcdef01234567", false},
	} {
		got, ok := NormalizeSKI(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("NormalizeSKI(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
