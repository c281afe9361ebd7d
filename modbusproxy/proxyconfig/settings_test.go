package proxyconfig

import (
	"slices"
	"testing"

	"plantd/internal/confcheck"
)

func TestSettingsValidate(t *testing.T) {
	for _, tt := range []struct {
		name   string
		modify func(*Settings)
		others Others
		want   []string
	}{
		{"defaults with a listen address", func(*Settings) {}, Others{}, nil},
		{"no listen", func(s *Settings) { s.Listen = "" }, Others{}, []string{"p.listen: required (host:port, as in 0.0.0.0:1502)"}},
		{"listen taken", func(*Settings) {}, Others{ListenedBy: "inv1"}, []string{`p.listen: ":1502" is inv1's too`}},
		{"port 0 is never taken", func(s *Settings) { s.Listen = "127.0.0.1:0" }, Others{ListenedBy: "inv1"}, nil},
		{"a consumer's", func(*Settings) {}, Others{Consumer: true}, []string{"p: a consumer has no Modbus connection to share"}},
		{"writes", func(s *Settings) { s.Writes = true }, Others{}, []string{
			"p.allow: required with writes: true (the addresses of the masters that may write, as IP addresses or CIDRs)"}},
		{"settings without writes", func(s *Settings) { s.WriteSettings = true }, Others{}, []string{"p.writeSettings: needs writes: true"}},
		{"rates", func(s *Settings) { s.RequestsPerSecond, s.Burst, s.MaxConnsPerClient = 1001, 0, 0 }, Others{}, []string{
			"p.requestsPerSecond: 1001 is out of range (more than 0, at most 1000)",
			"p.burst: 0 is out of range (1..1000)",
			"p.maxConnsPerClient: 0 is out of range (1..1024)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s Settings
			s.SetDefaults()
			s.Listen = ":1502"
			tt.modify(&s)
			var l confcheck.List
			s.Validate(confcheck.New(&l, "p"), tt.others)
			if !slices.Equal(l.Problems, tt.want) {
				t.Errorf("problems\n%q\nwant\n%q", l.Problems, tt.want)
			}
		})
	}
}
