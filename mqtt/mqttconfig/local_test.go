package mqttconfig

import (
	"slices"
	"strings"
	"testing"

	"plantd/internal/confcheck"
)

func TestEffectiveClientID(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("g", MaxClientIDLen)
	for _, tc := range []struct {
		l         Local
		gatewayID string
		want      string
	}{
		{Local{}, "plantd-home", "plantd-home-ha"},
		{Local{ClientID: "ha-bridge"}, "plantd-home", "ha-bridge"},
		{Local{}, long, long[:MaxClientIDLen-3] + "-ha"},
	} {
		got := tc.l.EffectiveClientID(tc.gatewayID)
		if got != tc.want || len(got) > MaxClientIDLen || !ValidClientID(got) {
			t.Errorf("EffectiveClientID(%q) with clientId %q = %q, want %q", tc.gatewayID, tc.l.ClientID, got, tc.want)
		}
	}
}

func TestLocalValidate(t *testing.T) {
	for _, tt := range []struct {
		name   string
		modify func(*Local)
		uplink string
		want   []string
	}{
		{"off", func(l *Local) { l.Broker = "" }, "", nil},
		{"off with credentials", func(l *Local) { l.Broker, l.Username = "", "u" }, "", []string{"l.username: needs a broker (local.mqtt.broker)"}},
		{"on", func(*Local) {}, "gw", nil},
		{"the uplink's id", func(l *Local) { l.ClientID = "gw" }, "gw", []string{
			`l.clientId: "gw" is the uplink's client id (the gateway id): a broker keeps only one of two clients with one id`}},
		{"the uplink off", func(l *Local) { l.ClientID = "gw" }, "", nil},
		{"credentials in the URL", func(l *Local) { l.Broker = "tcp://u:p@h:1883" }, "", []string{
			`l.broker: "tcp://u:xxxxx@h:1883" holds credentials: give them as username and password`}},
		{"one prefix", func(l *Local) { l.Prefix = l.DiscoveryPrefix }, "", []string{
			`l.prefix: "homeassistant" is the discovery prefix too: give plantd's topics their own prefix`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var l Local
			l.SetDefaults()
			l.Broker = "tcp://ha.local:1883"
			tt.modify(&l)
			var list confcheck.List
			l.Validate(confcheck.New(&list, "l"), tt.uplink)
			if !slices.Equal(list.Problems, tt.want) {
				t.Errorf("problems\n%q\nwant\n%q", list.Problems, tt.want)
			}
		})
	}
}
