package httpapi

import (
	"strings"
	"testing"
	"time"

	"plantd/config"
)

// TestSettingsFromConfig: every setting of Config that an installer may
// want has a config key: CORS origins, open /healthz and /metrics, the
// OAuth2 token lifetime, trusted proxies and the stakeholders of a plant.
func TestSettingsFromConfig(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	c, err := config.Parse("settings.yaml", []byte(`
http:
  corsOrigins: [https://portal.example.com]
  openOps: true
  tokenTTL: 10m
  trustedProxies: [10.0.0.0/8]
plants:
  - id: p1
    name: P
    timezone: Europe/Berlin
    stakeholders:
      - {role: owner, name: Anna Example, email: anna@example.com}
      - {role: installer, name: Solar GmbH, phone: "+49 89 123"}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := ConfigFrom(c)
	if len(cfg.CORSOrigins) != 1 || cfg.CORSOrigins[0] != "https://portal.example.com" || !cfg.OpenOps ||
		cfg.TokenTTL != 10*time.Minute || len(cfg.TrustedProxies) != 1 {
		t.Errorf("http settings: %+v", cfg)
	}
	sh := cfg.Stakeholders["p1"]
	if len(sh) != 2 || sh[0] != (Stakeholder{Role: "owner", Name: "Anna Example", Email: "anna@example.com"}) || sh[1].Phone != "+49 89 123" {
		t.Errorf("stakeholders: %+v", cfg.Stakeholders)
	}
	for _, bad := range []string{
		"http: {tokenTTL: 1s}\nplants: [{id: p1, name: P, timezone: UTC}]",
		"http: {corsOrigins: ['not a url']}\nplants: [{id: p1, name: P, timezone: UTC}]",
		"plants: [{id: p1, name: P, timezone: UTC, stakeholders: [{role: boss, name: X}]}]",
		"plants: [{id: p1, name: P, timezone: UTC, stakeholders: [{role: owner}]}]",
	} {
		if _, err := config.Parse("bad.yaml", []byte(bad)); err == nil {
			t.Errorf("accepted:\n%s", bad)
		}
	}
}

// TestSettingsNameTheFunction: with the demo's reactive functions off,
// reactivePowerGridSettings answers ReactivePowerGridDeactivatedSetting
// twice, and function tells the two apart (fixed power factor,
// volt-var); in every settings type each configuration names a function
// of its own.
func TestSettingsNameTheFunction(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{})
	type answer struct {
		Configurations []struct {
			Type     string  `json:"type"`
			Function *string `json:"function"`
			Active   bool    `json:"active"`
		} `json:"configurations"`
	}
	for _, tt := range []struct {
		settingsType string
		want         []string // type/function of each configuration, when fixed
	}{
		{"reactivePowerGridSettings", []string{"ReactivePowerGridDeactivatedSetting/FixedPowerFactorSetting",
			"ReactivePowerGridDeactivatedSetting/VoltVarCurveSetting"}},
		{"activePowerGridSettings", nil},
		{"frequencyFaultRideThroughSettings", nil},
		{"voltageFaultRideThroughSettings", nil},
	} {
		t.Run(tt.settingsType, func(t *testing.T) {
			var a answer
			e.getJSON("/gridcontrol/v1/plants/demo/settings/"+tt.settingsType, &a)
			var got []string
			seen := map[string]bool{}
			for _, c := range a.Configurations {
				if c.Function == nil || *c.Function == "" {
					t.Fatalf("configuration %s without function", c.Type)
				}
				if seen[*c.Function] {
					t.Errorf("function %s twice", *c.Function)
				}
				seen[*c.Function] = true
				if c.Active && c.Type != *c.Function {
					t.Errorf("active configuration %s is function %s", c.Type, *c.Function)
				}
				got = append(got, c.Type+"/"+*c.Function)
			}
			if len(a.Configurations) == 0 {
				t.Fatal("no configurations")
			}
			if tt.want != nil && strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("configurations %v, want %v", got, tt.want)
			}
		})
	}
}
