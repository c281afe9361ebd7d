package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // time zone checks must not depend on the machine's zoneinfo

	"go.yaml.in/yaml/v3"

	"plantd/plant/kind"
)

var update = flag.Bool("update", false, "rewrite testdata/*/want.err and want.yaml from the current output")

// testHostname stands in for os.Hostname, so derived gateway ids are stable.
func testHostname() (string, error) { return "GW01.example.com", nil }

// TestCases walks testdata/<case>/: each plantd.yaml is parsed as
// "plantd.yaml". A case with want.err must fail with exactly that text; a
// case with want.yaml must succeed, and want.yaml is the effective config
// with every default filled in.
func TestCases(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*/plantd.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no test cases: %v", err)
	}
	for _, file := range dirs {
		dir := filepath.Dir(file)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := parse("plantd.yaml", data, testHostname)
			wantErrFile, wantYAMLFile := filepath.Join(dir, "want.err"), filepath.Join(dir, "want.yaml")
			if *update {
				got, stale := wantErrFile, wantYAMLFile
				content := []byte(nil)
				if err != nil {
					content = []byte(err.Error() + "\n")
				} else {
					got, stale = wantYAMLFile, wantErrFile
					content = marshal(t, cfg)
				}
				if err := os.WriteFile(got, content, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(stale); err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Fatal(err)
				}
			}
			if want, rerr := os.ReadFile(wantErrFile); rerr == nil {
				if err == nil {
					t.Fatalf("Parse succeeded, want:\n%s", want)
				}
				var problems *Errors
				if !errors.As(err, &problems) {
					t.Fatalf("error is %T, want *Errors: %v", err, err)
				}
				for _, p := range problems.Problems {
					if p.File != "plantd.yaml" {
						t.Errorf("problem %q has file %q", p, p.File)
					}
				}
				if got := err.Error() + "\n"; got != string(want) {
					t.Errorf("errors differ (go test -update rewrites want.err)\ngot:\n%s\nwant:\n%s", got, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want, rerr := os.ReadFile(wantYAMLFile)
			if rerr != nil {
				t.Fatalf("case has neither want.err nor want.yaml: %v", rerr)
			}
			got := marshal(t, cfg)
			if !bytes.Equal(got, want) {
				t.Errorf("effective config differs (go test -update rewrites want.yaml)\ngot:\n%s\nwant:\n%s", got, want)
			}
			// The effective config reads back as itself.
			again, err := parse("want.yaml", got, testHostname)
			if err != nil {
				t.Fatalf("effective config does not parse: %v", err)
			}
			if back := marshal(t, again); !bytes.Equal(back, got) {
				t.Errorf("effective config does not read back as itself:\n%s", back)
			}
		})
	}
}

func marshal(t *testing.T, c *Config) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestThreeMistakes guards the fixture of the check-config acceptance: three
// mistakes on three lines, all reported, in line order.
func TestThreeMistakes(t *testing.T) {
	_, err := Load("testdata/three-mistakes/plantd.yaml")
	var problems *Errors
	if !errors.As(err, &problems) {
		t.Fatalf("Load: %v, want *Errors", err)
	}
	if len(problems.Problems) != 3 {
		t.Fatalf("%d problems, want 3:\n%v", len(problems.Problems), err)
	}
	wantFields := []string{"plants[0].timezone", "devices[0].prot", "devices[1].port"}
	for i, p := range problems.Problems {
		if p.File != "testdata/three-mistakes/plantd.yaml" {
			t.Errorf("problem %d: file %q, want the path given to Load", i, p.File)
		}
		if p.Field != wantFields[i] {
			t.Errorf("problem %d: field %q, want %q", i, p.Field, wantFields[i])
		}
		if i > 0 && p.Line <= problems.Problems[i-1].Line {
			t.Errorf("problem %d: line %d not after line %d", i, p.Line, problems.Problems[i-1].Line)
		}
	}
}

// TestDefaults checks the defaults filled into testdata/minimal, which
// gives only a plant and a device's id and host.
func TestDefaults(t *testing.T) {
	c, err := Load("testdata/minimal/plantd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := c.Devices[0]
	for _, tt := range []struct {
		name      string
		got, want any
	}{
		{"gateway.id", c.Gateway.ID, gatewayIDFromHostname(os.Hostname)},
		{"http.listen", c.HTTP.Listen, "127.0.0.1:8080"},
		{"http.tlsCert", c.HTTP.TLSCert, ""},
		{"http.rateLimit.requestsPerSecond", c.HTTP.RateLimit.RequestsPerSecond, 20.0},
		{"http.rateLimit.burst", c.HTTP.RateLimit.Burst, 40},
		{"database.path", c.Database.Path, "/var/lib/plantd/plantd.db"},
		{"database.rawRetention", c.Database.RawRetention, 168 * time.Hour},
		{"database.commitInterval", c.Database.CommitInterval, 10 * time.Second},
		{"log.level", c.Log.Level, "info"},
		{"log.format", c.Log.Format, "text"},
		{"plants[0].installation.co2SavingsFactor", c.Plants[0].Installation.CO2SavingsFactor, 400.0},
		{"plants[0].installation.azimuth", c.Plants[0].Installation.Azimuth, (*float64)(nil)},
		{"plants[0].installation.startUp", c.Plants[0].Installation.StartUp.IsZero(), true},
		{"plants[0].location.latitude", c.Plants[0].Location.Latitude, (*float64)(nil)},
		{"devices[0].plant", d.Plant, "home"},
		{"devices[0].name", d.Name, "inv1"},
		{"devices[0].port", d.Port, 502},
		{"devices[0].unit", d.Unit, 1},
		{"devices[0].kind", d.Kind, kind.Kind("")},
		{"devices[0].base", d.Base, (*int)(nil)},
		{"devices[0].pollInterval", d.PollInterval, 5 * time.Second},
		{"devices[0].timeout", d.Timeout, 2 * time.Second},
		{"devices[0].connectDelay", d.ConnectDelay, time.Duration(0)},
		{"devices[0].enabled", d.Enabled, true},
		{"devices[0].Address()", d.Address(), "192.168.1.10:502"},
		{"tokens", len(c.Tokens), 0},
		{"mqtt.broker", c.MQTT.Broker, ""},
		{"mqtt.topicPrefix", c.MQTT.TopicPrefix, "plantd/v1"},
		{"mqtt.keepAlive", c.MQTT.KeepAlive, 30 * time.Second},
		{"mqtt.outbox.maxRows", c.MQTT.Outbox.MaxRows, 500000},
		{"mqtt.outbox.maxAge", c.MQTT.Outbox.MaxAge, 720 * time.Hour},
		{"gridControl.reversionTimeout", c.GridControl.ReversionTimeout, 60 * time.Second},
		{"gridControl.rampRatePercentPerSecond", c.GridControl.RampRatePercentPerSecond, 10.0},
		{"gridControl.meterLossGrace", c.GridControl.MeterLossGrace, 30 * time.Second},
		{"gridControl.defaults.powerLimitPercent", c.GridControl.Defaults.PowerLimitPercent, (*float64)(nil)},
		{"migrated.devices", len(c.Migrated.Devices), 0},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %#v, want %#v", tt.name, tt.got, tt.want)
		}
	}
}

// TestExplicitZeroKept: a value the file gives is kept and validated, never
// replaced by the default.
func TestExplicitZeroKept(t *testing.T) {
	const src = `
plants: [{id: p, name: P, timezone: UTC}]
devices:
  - {id: a, host: h, unit: 0, base: 0, enabled: false, connectDelay: 0}
  - {id: b, host: h, unit: 255, port: ~}
`
	c, err := parse("plantd.yaml", []byte(src), testHostname)
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Devices[0], c.Devices[1]
	if a.Unit != 0 || a.Base == nil || *a.Base != 0 || a.Enabled || a.ConnectDelay != 0 {
		t.Errorf("device a = %+v, want unit 0, base 0, disabled", a)
	}
	if b.Unit != 255 || b.Port != 502 || b.Base != nil || !b.Enabled {
		t.Errorf("device b = %+v, want unit 255, port 502 (null keeps the default), no base, enabled", b)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(good, "plants: [{id: p, name: P, timezone: UTC}]\n")
	write(bad, "plants: [{id: p, name: P, timezone: UTC}]\nlog: {level: loud}\n")

	if c, err := Load(good); err != nil || c.Plants[0].ID != "p" {
		t.Errorf("Load(good) = %+v, %v", c, err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want fs.ErrNotExist", err)
	}
	_, err := Load(bad)
	want := bad + `:2: log.level: "loud" is not a log level (debug, info, warn or error)`
	if err == nil || err.Error() != want {
		t.Errorf("Load(bad) = %v, want %s", err, want)
	}
}

// TestValidateInCode checks Validate on a Config built in code: problems
// without file and line, and a device's plant may stay empty with one plant.
func TestValidateInCode(t *testing.T) {
	c := Default()
	if err := c.Validate(); err == nil || err.Error() != "plants: at least one plant is required" {
		t.Errorf("Default().Validate() = %v", err)
	}
	c.Plants = []Plant{{ID: "p", Name: "P", Timezone: "Europe/Vienna"}}
	d := Device{ID: "inv", Host: "10.0.0.1"}
	d.setDefaults()
	c.Devices = []Device{d}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() = %v, want nil", err)
	}
	c.Devices[0].Port = 0
	c.Devices[0].Unit = 300
	c.Plants[0].Timezone = "Mars/Olympus"
	want := "plants[0].timezone: unknown time zone \"Mars/Olympus\"\n" +
		"devices[0].port: 0 is not a TCP port\n" +
		"devices[0].unit: 300 is not a Modbus unit id (0..247 or 255)"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate() = %v\nwant:\n%s", err, want)
	}
}

func TestGatewayIDFromHostname(t *testing.T) {
	for _, tt := range []struct {
		host string
		err  error
		want string
	}{
		{"raspberrypi", nil, "plantd-raspberrypi"},
		{"GW01.example.com", nil, "plantd-gw01"},
		{"data manager", nil, "plantd-data-manager"},
		{"gw_1", nil, "plantd-gw_1"},
		{"--", nil, "plantd"},
		{"", nil, "plantd"},
		{"x", errors.New("no host name"), "plantd"},
		{strings.Repeat("a", 70), nil, "plantd-" + strings.Repeat("a", 57)},
	} {
		got := gatewayIDFromHostname(func() (string, error) { return tt.host, tt.err })
		if got != tt.want {
			t.Errorf("gatewayIDFromHostname(%q) = %q, want %q", tt.host, got, tt.want)
		}
		if !gatewayIDPattern.MatchString(got) || len(got) > maxIDLen {
			t.Errorf("gatewayIDFromHostname(%q) = %q is not a valid gateway id", tt.host, got)
		}
	}
}

func TestTokenHash(t *testing.T) {
	const want = "9fe5d82189377e108e4699136dfa2c67e10c354a87ac941329062334ef706efc"
	if got := TokenHash("example-dashboard-token"); got != want {
		t.Errorf("TokenHash = %s, want %s", got, want)
	}
}

func TestSlogLevel(t *testing.T) {
	for _, tt := range []struct {
		level string
		want  string
	}{{"debug", "DEBUG"}, {"info", "INFO"}, {"warn", "WARN"}, {"error", "ERROR"}, {"", "INFO"}} {
		if got := (Log{Level: tt.level}).SlogLevel().String(); got != tt.want {
			t.Errorf("SlogLevel(%q) = %s, want %s", tt.level, got, tt.want)
		}
	}
}

func TestDate(t *testing.T) {
	d := Date{Year: 2019, Month: time.May, Day: 4}
	if d.String() != "2019-05-04" || (Date{}).String() != "" || !(Date{}).IsZero() || d.IsZero() {
		t.Errorf("Date strings: %q %q", d, Date{})
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.In(berlin).UTC(); !got.Equal(time.Date(2019, 5, 3, 22, 0, 0, 0, time.UTC)) {
		t.Errorf("In(Berlin) = %v", got)
	}
}

func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	devs := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "  - {id: d%d, host: h%d, unit: %d}\n", i, i/247, i%247+1)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, gateway string
		devices       int
		want          int64
		wantErr       string
	}{
		{"default, 1 device", "", 1, 64<<20 + 32<<10, ""},
		{"default, 1000 devices", "", 1000, 64<<20 + 1000*32<<10, ""},
		{"explicit", "memoryLimitMB: 256", 1000, 256 << 20, ""},
		{"explicit 0 is the default", "memoryLimitMB: 0", 10, 64<<20 + 10*32<<10, ""},
		{"negative", "memoryLimitMB: -1", 1, 0, "gateway.memoryLimitMB: -1 is outside"},
		{"too small", "memoryLimitMB: 8", 1, 0, "gateway.memoryLimitMB: 8 MiB is too small"},
	} {
		src := "gateway: {" + tc.gateway + "}\nplants: [{id: p, name: P, timezone: UTC}]\ndevices:\n" + devs(tc.devices)
		c, err := parse("plantd.yaml", []byte(src), testHostname)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := c.MemoryLimit(); got != tc.want {
			t.Errorf("%s: MemoryLimit() = %d, want %d", tc.name, got, tc.want)
		}
	}
}
