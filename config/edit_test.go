package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAddTokenSplices: the new token is the only change to the file's
// text, wherever the list is and however it is written; a flow list over
// several lines is re-encoded (and still gets the token).
func TestAddTokenSplices(t *testing.T) {
	const plants = "plants:\n  - {id: p, name: P, timezone: UTC}   # the plant\n"
	hash := strings.Repeat("ab", 32)
	entry := func(indent string) string {
		return indent + "- name: new\n" + indent + "  sha256: " + strings.Repeat("cd", 32) + "\n" + indent + "  role: standard\n"
	}
	old := func(indent string) string {
		return indent + "- name: old\n" + indent + "  sha256: " + hash + "\n" + indent + "  role: standard\n"
	}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"block list, then a section", plants + "tokens:\n" + old("  ") + "    #comment: kept with old\n\n# http\nhttp:\n  #listen: x\n",
			plants + "tokens:\n" + old("  ") + "    #comment: kept with old\n" + entry("  ") + "\n# http\nhttp:\n  #listen: x\n"},
		{"zero-indented list", plants + "tokens:\n" + old("") + "# next\nhttp:\n  listen: 127.0.0.1:0\n",
			plants + "tokens:\n" + old("") + entry("") + "# next\nhttp:\n  listen: 127.0.0.1:0\n"},
		{"last, no newline at the end", plants + "tokens:\n" + strings.TrimSuffix(old("  "), "\n"),
			plants + "tokens:\n" + old("  ") + entry("  ")},
		{"empty flow list between sections", "gateway:\n  #id: gw\ntokens: []  # none yet\nmqtt:\n  #broker: tcp://b:1883\n" + plants,
			"gateway:\n  #id: gw\ntokens:\n" + entry("  ") + "mqtt:\n  #broker: tcp://b:1883\n" + plants},
		{"key without value", "tokens:\n\n# the plants\n" + plants,
			"tokens:\n" + entry("  ") + "\n# the plants\n" + plants},
		{"no key", plants, plants + "tokens:\n" + entry("  ")},
		{"flow list over two lines", plants + "tokens: [{name: old, sha256: " + hash + ",\n  role: standard}]\n",
			plants + "tokens:\n" + old("  ") + entry("  ")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plantd.yaml")
			write(t, path, []byte(tc.in))
			if err := AddToken(path, Token{Name: "new", SHA256: strings.Repeat("cd", 32), Role: "standard"}); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "flow list over two lines" {
				// Re-encoded: the plant's comment moves, the entries are right.
				if !strings.Contains(string(got), "tokens:\n"+old("  ")+entry("  ")) {
					t.Errorf("got\n%s", got)
				}
				return
			}
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
