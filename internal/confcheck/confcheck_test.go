package confcheck

import (
	"slices"
	"testing"
	"time"
)

func TestCheckerPaths(t *testing.T) {
	var l List
	root := New(&l, "")
	mq := root.In("mqtt")
	mq.Add("outbox.maxRows", "%d is out of range", 0)
	in := root.In("inputs").In("[2]")
	in.Add("", "whole entry")
	in.In("actions[1]").Add("contacts", "pattern %s is %s already", "K1", in.Where("actions[0]"))
	in.Unique(map[string]string{"K1": "actions[0]"}, "K1", "actions[1].contacts", "actions[1]", "pattern")
	want := []string{
		"mqtt.outbox.maxRows: 0 is out of range",
		"inputs[2]: whole entry",
		"inputs[2].actions[1].contacts: pattern K1 is inputs[2].actions[0] already",
		`inputs[2].actions[1].contacts: duplicate pattern "K1" (first in inputs[2].actions[0])`,
	}
	if !slices.Equal(l.Problems, want) {
		t.Errorf("problems\n%q\nwant\n%q", l.Problems, want)
	}
}

func TestCheckerRules(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name  string
		check func(Checker)
		want  []string
	}{
		{"duration in range", func(c Checker) { c.Duration("d", time.Second, 0, time.Hour) }, nil},
		{"duration below", func(c Checker) { c.Duration("d", time.Millisecond, time.Second, 0) }, []string{"d: 1ms is out of range (at least 1s)"}},
		{"duration odd hours", func(c Checker) { c.Duration("d", 70000*time.Second, time.Second, 65535*time.Second) }, []string{"d: 70000s is out of range (1s..65535s)"}},
		{"listen", func(c Checker) { c.Listen("l", "x", ":1") }, []string{`l: "x" is not host:port (as in :1)`}},
		{"listen host", func(c Checker) { c.Listen("l", "192.168.1.300:80", ":1") }, []string{`l: "192.168.1.300:80" has no valid host`}},
		{"listen ok", func(c Checker) { c.Listen("l", ":502", ":1") }, nil},
		{"role", func(c Checker) { c.Role("r", "king") }, []string{`r: "king" is not a role (standard, installer or gridoperator)`}},
		{"sha256", func(c Checker) { c.SHA256("s", "") }, []string{"s: required (the hex SHA-256 of the secret, 64 digits)"}},
		{"allow", func(c Checker) { c.AllowList("a", []string{"10.0.0.1", "::/0", "x"}, true) }, []string{
			`a[1]: "::/0" allows every address, and writes is true: list the masters that may write (e.g. 192.168.10.20 or 192.168.10.0/24)`,
			`a[2]: "x" is not an IP address or CIDR`}},
		{"range", func(c Checker) { c.OptRange("p", f(150), 0, 100) }, []string{"p: 150 is out of range (0..100)"}},
		{"conns", func(c Checker) { c.ConnsPerClient("m", 0) }, []string{"m: 0 is out of range (1..1024)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l List
			tt.check(New(&l, ""))
			if !slices.Equal(l.Problems, tt.want) {
				t.Errorf("got %q, want %q", l.Problems, tt.want)
			}
		})
	}
}
