package httpapi

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestOpenAPIVersionsAndDeprecation: /openapi.json gives each of the
// spec's interfaces its description version (spec §9: Monitoring 1.16.0,
// Grid control 1.9.0, Live 1.14.0) as a tag every one of its operations
// carries, marks exactly the spec's obsolete routes deprecated (§4.2
// eligibleCommands, obsolete since Grid control 1.8.0 of 2023-03-07;
// §4.3 the live device list v1, since Live 1.10.0 of 2022-06-28), and
// those routes answer the Deprecation header of RFC 9745 with a Link to
// their successor; a current route answers neither.
func TestOpenAPIVersionsAndDeprecation(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{})
	resp := e.do("GET", "/openapi.json", "", "", "")
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var doc struct {
		Info struct{ Version string }
		Tags []struct {
			Name    string
			Version string `json:"x-version"`
		}
		Paths map[string]map[string]struct {
			Tags       []string
			Deprecated bool
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	spec := map[string]string{"Monitoring": "1.16.0", "Grid control": "1.9.0", "Live": "1.14.0"}
	prefix := map[string]string{"/monitoring/": "Monitoring", "/gridcontrol/": "Grid control", "/live/": "Live"}
	got := map[string]string{}
	for _, tag := range doc.Tags {
		got[tag.Name] = tag.Version
	}
	for name, v := range spec {
		if got[name] != v {
			t.Errorf("tag %s: version %q, want %q", name, got[name], v)
		}
		if !strings.Contains(doc.Info.Version, name+" "+v) {
			t.Errorf("info.version %q lacks %s %s", doc.Info.Version, name, v)
		}
	}
	var deprecated []string
	for path, ops := range doc.Paths {
		for method, op := range ops {
			want := "Gateway"
			for p, name := range prefix {
				if strings.HasPrefix(path, p) {
					want = name
				}
			}
			if len(op.Tags) != 1 || op.Tags[0] != want {
				t.Errorf("%s %s: tags %v, want %s", method, path, op.Tags, want)
			}
			if op.Deprecated {
				deprecated = append(deprecated, method+" "+path)
			}
		}
	}
	slices.Sort(deprecated)
	if strings.Join(deprecated, "; ") != "get /live/v1/plants/{plantId}/devices; post /gridcontrol/v1/plants/eligibleCommands" {
		t.Errorf("deprecated operations: %v", deprecated)
	}

	for _, tt := range []struct {
		method, path, ctype, body string
		deprecation, link         string
	}{
		{"POST", "/gridcontrol/v1/plants/eligibleCommands", "application/json", `{"serialNumber":"SIM-inv1"}`,
			"@1678147200", `</gridcontrol/v1/plants/eligibilityCheck>; rel="successor-version"`},
		{"GET", "/live/v1/plants/demo/devices", "", "", "@1656374400", `</live/v2/plants/demo/devices>; rel="successor-version"`},
		{"GET", "/live/v2/plants/demo/devices", "", "", "", ""},
		{"GET", "/gridcontrol/v1/plants/demo/schedules", "", "", "", ""},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp := e.do(tt.method, tt.path, tokStandard, tt.ctype, tt.body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if d, l := resp.Header.Get("Deprecation"), resp.Header.Get("Link"); d != tt.deprecation || l != tt.link {
				t.Errorf("Deprecation %q, Link %q; want %q, %q", d, l, tt.deprecation, tt.link)
			}
		})
	}
}
