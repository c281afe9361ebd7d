package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestScalars decodes one value of a device or plant at line 4 of a small
// config and checks the value or the problem.
func TestScalars(t *testing.T) {
	const tmpl = "plants: [{id: p, name: P, timezone: UTC}]\ndevices:\n  - id: inv\n    %s\n    host: h\n"
	for _, tt := range []struct {
		line    string
		check   func(d Device) bool // for a good value
		wantErr string              // for a bad one
	}{
		{line: "pollInterval: 250ms", check: func(d Device) bool { return d.PollInterval == 250*time.Millisecond }},
		{line: "pollInterval: 1m30s", check: func(d Device) bool { return d.PollInterval == 90*time.Second }},
		{line: `pollInterval: "2s"`, check: func(d Device) bool { return d.PollInterval == 2*time.Second }},
		{line: "connectDelay: 0", check: func(d Device) bool { return d.ConnectDelay == 0 }},
		{line: "pollInterval: fast", wantErr: `devices[0].pollInterval: "fast" is not a duration`},
		{line: "pollInterval: 5", wantErr: `devices[0].pollInterval: 5 is not a duration (give a unit, as in "5s")`},
		{line: "pollInterval: 1.5", wantErr: `devices[0].pollInterval: 1.5 is not a duration`},
		{line: "pollInterval: [5s]", wantErr: `devices[0].pollInterval: a list is not a duration`},
		{line: "unit: 010", check: func(d Device) bool { return d.Unit == 10 }},
		{line: "unit: 0x10", check: func(d Device) bool { return d.Unit == 16 }},
		{line: "port: 5_020", check: func(d Device) bool { return d.Port == 5020 }},
		{line: `port: "502"`, wantErr: `devices[0].port: "502" is not an integer`},
		{line: "port: 502.5", wantErr: `devices[0].port: 502.5 is not an integer`},
		{line: "port: 99999999999999999999", wantErr: `devices[0].port: 99999999999999999999 is not an integer`},
		{line: "port: {a: 1}", wantErr: `devices[0].port: a mapping is not an integer`},
		{line: "enabled: false", check: func(d Device) bool { return !d.Enabled }},
		{line: "enabled: yes", wantErr: `devices[0].enabled: "yes" is not a boolean (true or false)`},
		{line: "enabled: 1", wantErr: `devices[0].enabled: 1 is not a boolean (true or false)`},
		{line: "name: 7190000", check: func(d Device) bool { return d.Name == "7190000" }},
		{line: "name: 1.10", check: func(d Device) bool { return d.Name == "1.10" }},
		{line: "name: true", check: func(d Device) bool { return d.Name == "true" }},
		{line: "name: ~", check: func(d Device) bool { return d.Name == "inv" }},
		{line: "name: [a, b]", wantErr: `devices[0].name: expected a string, got a list`},
		{line: "base: 40000", check: func(d Device) bool { return d.Base != nil && *d.Base == 40000 }},
		{line: "base: high", wantErr: `devices[0].base: "high" is not an integer`},
		{line: "kind: &k meter", check: func(d Device) bool { return d.Kind == "meter" }},
	} {
		t.Run(tt.line, func(t *testing.T) {
			c, err := parse("plantd.yaml", []byte(fmt.Sprintf(tmpl, tt.line)), testHostname)
			if tt.wantErr != "" {
				if want := "plantd.yaml:4: " + tt.wantErr; err == nil || err.Error() != want {
					t.Errorf("error = %v\nwant    %s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c.Devices[0]) {
				t.Errorf("decoded %+v", c.Devices[0])
			}
		})
	}
}

// TestPlantScalars covers floats, optional numbers and dates.
func TestPlantScalars(t *testing.T) {
	const tmpl = "plants:\n  - id: p\n    name: P\n    timezone: UTC\n    installation: {%s}\n"
	for _, tt := range []struct {
		value   string
		check   func(in Installation) bool
		wantErr string
	}{
		{value: "azimuth: 0", check: func(in Installation) bool { return in.Azimuth != nil && *in.Azimuth == 0 }},
		{value: "azimuth: 187.5", check: func(in Installation) bool { return *in.Azimuth == 187.5 }},
		{value: "peakPowerW: 9.9e3", check: func(in Installation) bool { return in.PeakPowerW == 9900 }},
		{value: "azimuth: south", wantErr: `plants[0].installation.azimuth: "south" is not a number`},
		{value: "azimuth: .nan", wantErr: `plants[0].installation.azimuth: .nan is not a finite number`},
		{value: "peakPowerW: -.inf", wantErr: `plants[0].installation.peakPowerW: -.inf is not a finite number`},
		{value: "startUp: 2019-05-14", check: func(in Installation) bool { return in.StartUp == Date{2019, time.May, 14} }},
		{value: `startUp: "2019-05-14"`, check: func(in Installation) bool { return in.StartUp.String() == "2019-05-14" }},
		{value: "startUp: 2019-13-01", wantErr: `plants[0].installation.startUp: "2019-13-01" is not a date (YYYY-MM-DD)`},
		{value: "startUp: 2019-05-14T10:00:00Z", wantErr: `plants[0].installation.startUp: 2019-05-14T10:00:00Z is not a date (YYYY-MM-DD)`},
		{value: "startUp: 20190514", wantErr: `plants[0].installation.startUp: 20190514 is not a date (YYYY-MM-DD)`},
	} {
		t.Run(tt.value, func(t *testing.T) {
			c, err := parse("plantd.yaml", []byte(fmt.Sprintf(tmpl, tt.value)), testHostname)
			if tt.wantErr != "" {
				if want := "plantd.yaml:5: " + tt.wantErr; err == nil || err.Error() != want {
					t.Errorf("error = %v\nwant    %s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c.Plants[0].Installation) {
				t.Errorf("decoded %+v", c.Plants[0].Installation)
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	keys := fieldsOf(reflect.TypeFor[Device]()).names
	for _, tt := range []struct{ name, want string }{
		{"prot", "port"},
		{"pot", ""},
		{"ID", "id"},
		{"Port", "port"},
		{"pollIntervall", "pollInterval"},
		{"poll_interval", "pollInterval"},
		{"polInterval", "pollInterval"},
		{"connectdelay", "connectDelay"},
		{"timout", "timeout"},
		{"enable", "enabled"},
		{"hots", "host"},
		{"address", ""},
		{"ip", ""},
		{"slave", ""},
	} {
		if got := suggest(tt.name, keys); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"port", "port", 0},
		{"prot", "port", 1},
		{"pot", "port", 1},
		{"", "abc", 3},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // optimal string alignment, not full Damerau
		{"größe", "grösse", 2},
	} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := editDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestParent(t *testing.T) {
	for _, tt := range []struct{ path, want string }{
		{"devices[2].port", "devices[2]"},
		{"devices[2]", "devices"},
		{"devices", ""},
		{"plants[0].installation.pvModuleAreas[1].name", "plants[0].installation.pvModuleAreas[1]"},
		{"migrated.devices.old1", "migrated.devices"},
	} {
		if got := parent(tt.path); got != tt.want {
			t.Errorf("parent(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

// TestLines checks that problems carry the line of their key, and that a
// missing value gets the line of its entry.
func TestLines(t *testing.T) {
	src := strings.Join([]string{
		"plants:",                   // 1
		"  - id: p",                 // 2
		"    name: P",               // 3
		"    timezone: UTC",         // 4
		"devices:",                  // 5
		"  - id: a",                 // 6
		"    port: 0",               // 7
		"  -",                       // 8
		"    name: no id, no host",  // 9
		"http:",                     // 10
		"  listen: nowhere",         // 11
		"  tlsKey: /etc/plantd/key", // 12
	}, "\n")
	_, err := parse("f.yaml", []byte(src), testHostname)
	want := strings.Join([]string{
		"f.yaml:6: devices[0].host: required (a host name or IP address, or give serial)",
		"f.yaml:7: devices[0].port: 0 is not a TCP port",
		"f.yaml:9: devices[1].id: required",
		"f.yaml:9: devices[1].host: required (a host name or IP address, or give serial)",
		`f.yaml:11: http.listen: "nowhere" is not host:port (as in 127.0.0.1:8080)`,
		"f.yaml:12: http.tlsKey: tlsCert is missing (give both or neither)",
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
}

// TestSyntaxErrors checks that YAML syntax errors point at the line of the
// mistake, not at the start of the enclosing block as yaml.v3 does.
func TestSyntaxErrors(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"plants:\n  - id: p\n    name: P\n   timezone: UTC\n", "f:4: did not find expected '-' indicator"},
		{"plants:\n  - id: p\n\tname: x\n", "f:3: found a tab character that violates indentation"},
		{"log:\n  level: info\n format: text\nhttp: {}\n", "f:3: did not find expected key"},
		{"log:\n  level: info: x\n", "f:2: mapping values are not allowed in this context"},
		{"a: 'x\nb: 1\nc: 2\n", "f:1: found unexpected end of stream"},
		{"plants: [{id: p,\n  name: P, timezone: UTC}]\nlog: {level: x\nhttp: {}\n", "f:3: did not find expected ',' or '}'"},
		{"a: b\n---\nc: [\n", "f:3: did not find expected node content"},
		{"a: b\n---\nc: d\n", "f:2: a second YAML document begins here; the config is one document"},
	} {
		_, err := parse("f", []byte(tt.src), testHostname)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q:\ngot  %v\nwant %s", tt.src, err, tt.want)
		}
	}
}

// TestMergeKeys: merge keys expand once, explicit keys win, the first merged
// mapping wins over later ones, and cycles are problems, not hangs.
func TestMergeKeys(t *testing.T) {
	const plants = "plants: [{id: p, name: P, timezone: UTC}]\n"
	c, err := parse("f", []byte(plants+`devices:
  - &a {id: a, host: h, unit: 1, timeout: 3s}
  - &b {id: b, host: h, unit: 2, timeout: 4s, pollInterval: 1s}
  - <<: [*b, *a, *b]
    id: c
    unit: 3
`), testHostname)
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Devices[2]; d.ID != "c" || d.Unit != 3 || d.Timeout != 4*time.Second || d.PollInterval != time.Second || d.Host != "h" {
		t.Errorf("merged device = %+v", d)
	}
	for _, src := range []string{
		"devices: [&d {<<: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]}]\n",
		"devices:\n  - &d\n    id: x\n    <<: *d\n",
	} {
		_, err := parse("f", []byte(plants+src), testHostname)
		if err == nil || !strings.Contains(err.Error(), "<< merges a mapping that contains it") {
			t.Errorf("%q: %v", src, err)
		}
	}
}
