package mqttconfig

import (
	"strings"
	"testing"
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
