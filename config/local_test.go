package config

import (
	"strings"
	"testing"
)

// TestLocalGridOperatorNeedsCredentials: local.mqtt.role gridoperator is
// refused unless the broker connection has a username and a password (the
// broker's credentials and ACL gate Home Assistant's command topics);
// installer and standard need none.
func TestLocalGridOperatorNeedsCredentials(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		role, creds string
		ok          bool
	}{
		{"gridoperator", "", false},
		{"gridoperator", "username: plantd, ", false},
		{"gridoperator", "username: plantd, password: s3cret, ", true},
		{"installer", "", true},
		{"standard", "", true},
	} {
		src := "gateway: {id: gw}\nplants: [{id: p, name: P, timezone: UTC}]\n" +
			"local:\n  mqtt: {broker: tcp://homeassistant.local:1883, " + tc.creds + "role: " + tc.role + "}\n"
		_, err := parse("plantd.yaml", []byte(src), testHostname)
		switch {
		case tc.ok && err != nil:
			t.Errorf("role %s with %q: %v", tc.role, tc.creds, err)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), "local.mqtt.role: gridoperator needs the broker connection's credentials (local.mqtt.username and local.mqtt.password)")):
			t.Errorf("role %s with %q: error %v, want the refusal naming local.mqtt.username and local.mqtt.password", tc.role, tc.creds, err)
		}
	}
}
