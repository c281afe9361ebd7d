package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plantd/config"
)

// TestDemoTariffs: plantd demo --tariffs FILE reads a tariffs: section
// (for the demo plant unless it names one), the demo plant's battery:
// over its defaults and more tokens:, strictly; the demo's config with it
// validates as plantd.yaml would.
func TestDemoTariffs(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		wantErr    string // part of readDemoExtra's error; "" none
		invalid    string // part of cfg.Validate's error; "" valid
	}{
		{name: "time of use, grid charging, a grid operator", file: `tariffs:
  import: {fixed: ["0.30", "00:00-06:00 0.18"]}
  feedIn: {fixed: 0.08}
battery: {gridCharge: true}
tokens:
  - {name: dso, sha256: ` + config.TokenHash("dso") + `, role: gridoperator}
`},
		{name: "no tariffs", file: "battery: {gridCharge: true}\n", wantErr: "no tariffs: section"},
		{name: "an unknown key", file: "tariffs:\n  import: {fixed: [\"0.3\"]}\n  feedIn: {fixed: 0.08}\nbatery: {}\n", wantErr: "batery"},
		{name: "an unknown plant", file: "tariffs:\n  plant: p9\n  import: {fixed: [\"0.3\"]}\n  feedIn: {fixed: 0.08}\n", invalid: "unknown plant"},
		{name: "a bad window", file: "tariffs:\n  import: {fixed: [\"0.3\", \"Mon 25:00-26:00 0.1\"]}\n  feedIn: {fixed: 0.08}\n", invalid: "import.fixed[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tariffs.yaml")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			x, err := readDemoExtra(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("readDemoExtra: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg := config.Default()
			pl := config.NewPlant()
			pl.ID, pl.Name, pl.Timezone = "demo", "demo", "Europe/Berlin"
			cfg.Plants = []config.Plant{pl}
			cfg.Tokens = []config.Token{{Name: "demo", SHA256: config.TokenHash("demo"), Role: config.RoleInstaller}}
			x.apply(cfg)
			err = cfg.Validate()
			if tc.invalid != "" {
				if err == nil || !strings.Contains(err.Error(), tc.invalid) {
					t.Fatalf("Validate: %v, want a problem with %q", err, tc.invalid)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b := cfg.Plants[0].Battery
			if cfg.Tariffs == nil || cfg.Tariffs.Plant != "demo" || !b.GridCharge || b.ReserveSoc != config.NewPlant().Battery.ReserveSoc ||
				len(cfg.Tokens) != 2 || cfg.Tokens[1].Role != config.RoleGridOperator {
				t.Errorf("config: tariffs %+v, battery %+v, tokens %+v", cfg.Tariffs, b, cfg.Tokens)
			}
		})
	}
}
