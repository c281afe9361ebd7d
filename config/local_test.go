package config

import (
	"strings"
	"testing"
)

func TestEffectiveClientID(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("g", maxIDLen)
	for _, tc := range []struct {
		l         LocalMQTT
		gatewayID string
		want      string
	}{
		{LocalMQTT{}, "plantd-home", "plantd-home-ha"},
		{LocalMQTT{ClientID: "ha-bridge"}, "plantd-home", "ha-bridge"},
		{LocalMQTT{}, long, long[:maxIDLen-3] + "-ha"},
	} {
		got := tc.l.EffectiveClientID(tc.gatewayID)
		if got != tc.want || len(got) > maxIDLen || !gatewayIDPattern.MatchString(got) {
			t.Errorf("EffectiveClientID(%q) with clientId %q = %q, want %q", tc.gatewayID, tc.l.ClientID, got, tc.want)
		}
	}
}
