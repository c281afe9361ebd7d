package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"plantd/config"
)

// TestTokenAddBlockEntries adds two tokens with the real binary to configs
// whose tokens list is empty in each way a file may say so: every token
// becomes its own block entry ("- name: ..."), the "none yet" comment of
// an empty list goes, the other comments stay.
func TestTokenAddBlockEntries(t *testing.T) {
	t.Parallel() // its own files
	const head = "# my plant\nplants:\n  - {id: p1, name: Test, timezone: Europe/Berlin}   # the plant\n"
	for _, tc := range []struct {
		name, tokens string
	}{
		{"empty flow list with comment", "tokens: []   # none yet: add one with plantd token add\n"},
		{"empty flow list", "tokens: []\n"},
		{"key without value", "tokens:   # none yet\n"},
		{"no key", ""},
		{"flow entry", "tokens: [{name: old, sha256: " + strings.Repeat("ab", 32) + ", role: standard}]\n"},
		{"block entry", "tokens:\n  - name: old   # the old one\n    sha256: " + strings.Repeat("ab", 32) + "\n    role: standard\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plantd.yaml")
			writeConfig(t, path, head+tc.tokens+"# the end\n")
			for _, name := range []string{"laptop", "scada"} {
				if _, errOut, code := runBinary(t, "token", "add", "--name", name, "--role", "installer", "-c", path); code != 0 {
					t.Fatalf("token add %s: exit %d %s", name, code, errOut)
				}
			}
			raw, _ := os.ReadFile(path)
			text := string(raw)
			for _, name := range []string{"laptop", "scada"} {
				if !regexp.MustCompile(`(?m)^  - name: ` + name + `\n    sha256: [0-9a-f]{64}\n    role: installer$`).MatchString(text) {
					t.Errorf("no block entry for %s:\n%s", name, text)
				}
			}
			if strings.Contains(text, "none yet") || regexp.MustCompile(`(?m)^tokens: *\[`).MatchString(text) {
				t.Errorf("the empty list's flow form or comment stayed:\n%s", text)
			}
			for _, c := range []string{"# my plant", "# the plant", "# the end"} {
				if !strings.Contains(text, c) {
					t.Errorf("comment %q lost:\n%s", c, text)
				}
			}
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(cfg.Tokens); n != 2 && n != 3 {
				t.Errorf("%d tokens after two added", n)
			}
		})
	}
}
