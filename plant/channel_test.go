package plant

import (
	"strings"
	"testing"

	"plantd/plant/kind"
)

func TestChannelNames(t *testing.T) {
	seen := map[string]Channel{}
	for _, c := range Channels() {
		n := c.Name()
		if n == "" || strings.ToLower(n[:1]) != n[:1] || strings.ContainsAny(n, " _-") {
			t.Errorf("channel %d: name %q is not lowerCamelCase", c, n)
		}
		if prev, dup := seen[n]; dup {
			t.Errorf("channels %d and %d share the name %q", prev, c, n)
		}
		seen[n] = c
		if c.Set() == "" {
			t.Errorf("channel %s: no measurement set", c)
		}
		if got, ok := ChannelByName(n); !ok || got != c {
			t.Errorf("ChannelByName(%q) = %v, %v", n, got, ok)
		}
		if c.Counter() != (c.Unit() == UnitWh) {
			t.Errorf("channel %s: counter %v with unit %q", c, c.Counter(), c.Unit())
		}
	}
	tests := []struct {
		c     Channel
		field string
	}{
		{PVGeneration, "pvGeneration"},
		{PVGenerationTotal, "pvGeneration"},
		{GridFeedInTotal, "gridFeedIn"},
		{GridConsumptionTotal, "gridConsumption"},
		{DCEnergyInput, "dcEnergyInput"},
		{VoltagePhaseA2B, "voltagePhaseA2B"},
	}
	for _, tt := range tests {
		if got := tt.c.Field(); got != tt.field {
			t.Errorf("%s.Field() = %q, want %q", tt.c, got, tt.field)
		}
	}
	if _, ok := ChannelByName("activepower"); ok {
		t.Error("ChannelByName is case-insensitive")
	}
	if s := Channel(0).String(); s != "Channel(0)" {
		t.Errorf("Channel(0).String() = %q", s)
	}
	for i, want := range map[int]string{1: "A", 2: "B", 26: "Z", 27: "27"} {
		if got := IndexLabel(i); got != want {
			t.Errorf("IndexLabel(%d) = %q, want %q", i, got, want)
		}
	}
}
func TestKinds(t *testing.T) {
	tests := []struct {
		word string
		kind kind.Kind
		typ  string
	}{
		{"inverter", kind.Inverter, "Solar Inverters"},
		{"meter", kind.Meter, "Energy Meter"},
		{"battery", kind.Battery, "Battery Inverter"},
		{"sensor", kind.Sensor, "Sensor technology"},
		{"gateway", kind.Gateway, "Monitoring and control"},
	}
	for _, tt := range tests {
		k, err := kind.Parse(tt.word)
		if err != nil || k != tt.kind {
			t.Errorf("kind.Parse(%q) = %q, %v", tt.word, k, err)
		}
		if got := (DeviceInfo{Kind: k}).Type(); got != tt.typ {
			t.Errorf("%s type = %q, want %q", k, got, tt.typ)
		}
	}
	if _, err := kind.Parse("Inverter"); err == nil {
		t.Error("ParseKind accepts a capitalised word")
	}
}
