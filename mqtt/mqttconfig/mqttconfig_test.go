package mqttconfig

import (
	"slices"
	"testing"

	"plantd/internal/confcheck"
)

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		name   string
		modify func(*Config)
		want   []string
	}{
		{"off", func(*Config) {}, nil},
		{"one broker", func(m *Config) { m.Broker = "ssl://b.example.com:8883" }, nil},
		{"a cluster", func(m *Config) { m.Brokers = []string{"tcp://a:1883", "ws://b/mqtt", "tcp://a:1883"} }, []string{
			`m.brokers[2]: "tcp://a:1883" is listed twice`}},
		{"TLS files with a plain broker", func(m *Config) { m.Broker, m.CAFile = "mqtt://a:1883", "ca.pem" }, []string{
			"m.caFile: needs a TLS broker (ssl://, tls://, mqtts:// or wss://), not mqtt://"}},
		{"remote control without a broker", func(m *Config) { m.RemoteControl = true }, []string{
			"m.remoteControl: needs a broker (mqtt.broker or mqtt.brokers)"}},
		{"broker URLs", func(m *Config) { m.Brokers = []string{"a:1883", "http://a:1", "tcp://a", "tcp://a:1883/x"} }, []string{
			`m.brokers[0]: "a:1883" is not a broker URL (as in tcp://host:1883 or ssl://host:8883)`,
			`m.brokers[1]: "http://a:1" has an unsupported scheme (tcp, mqtt, ssl, tls, mqtts, ws or wss)`,
			`m.brokers[2]: "tcp://a" has no port (as in tcp://a:1883)`,
			`m.brokers[3]: "tcp://a:1883/x" has a path; only ws:// and wss:// URLs have one`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var m Config
			m.SetDefaults()
			tt.modify(&m)
			var l confcheck.List
			m.Validate(confcheck.New(&l, "m"))
			if !slices.Equal(l.Problems, tt.want) {
				t.Errorf("problems\n%q\nwant\n%q", l.Problems, tt.want)
			}
		})
	}
}
