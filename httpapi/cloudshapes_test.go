package httpapi

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"plantd/plant"
)

// TestCloudShapes compares plantd's answers with the shapes of the cloud
// API's answers that a public client's tests hold
// (testdata/cloudshapes, made by scripts/cloud-shapes.py: key paths and
// JSON types only). Every path of the cloud's answer must be in plantd's
// answer with one of the cloud's types there (or null: plantd writes null
// for a value it does not have, as the cloud does in other answers);
// paths plantd adds are allowed. The differences plantd makes on purpose
// are listed in the table with their reason (httpapi/README.md, "Shapes
// against the cloud").
func TestCloudShapes(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{devices: func(ds []plant.DeviceInfo) {
		// A deactivated device, so that deactivatedAt appears as in the
		// cloud's list with deactivated devices.
		for i := range ds {
			if ds[i].ID == "wx" {
				ds[i].DeactivatedAt = day.Add(-24 * time.Hour)
			}
		}
	}, modify: func(c *Config) {
		// The vendor's product id, a number as the cloud sends it.
		c.ProductIDs = map[string]int{"inv1": 9099}
	}})
	const date = "?Date=2025-06-21"
	for _, tc := range []struct {
		shapes, method, path string
		// differ lists the cloud's paths plantd leaves out on purpose,
		// with the reason.
		differ map[string]string
	}{
		{shapes: "plants-01", method: "GET", path: "/monitoring/v1/plants"},
		{shapes: "plant-01", method: "GET", path: "/monitoring/v1/plants/demo"},
		{shapes: "devices-02", method: "GET", path: "/monitoring/v1/plants/demo/devices/lean?WithDeactivatedDevices=true", differ: map[string]string{
			"devices[].generatorPowerDc": "plantd knows no DC generator power (SunSpec has no such point)",
		}},
		{shapes: "device-measurement-sets-inverter-01", method: "GET", path: "/monitoring/v1/devices/inv1/measurements/sets"},
		{shapes: "device-data-Day-PowerAc-01", method: "GET", path: "/monitoring/v1/devices/inv1/measurements/sets/PowerAc/Day" + date},
		{shapes: "device-data-Day-PowerDc-01", method: "GET", path: "/monitoring/v1/devices/inv1/measurements/sets/PowerDc/Day" + date},
		{shapes: "device-data-Day-EnergyAndPowerPv-ReturnEnergyValues-01", method: "GET",
			path: "/monitoring/v1/devices/inv1/measurements/sets/EnergyAndPowerPv/Day" + date + "&ReturnEnergyValues=true"},
		{shapes: "token-01", method: "POST", path: "/oauth2/token", differ: map[string]string{
			"refresh_token":      "client_credentials grants no refresh token (RFC 6749 §4.4.3); the code flow does",
			"refresh_expires_in": "as refresh_token",
			"not-before-policy":  "a Keycloak field plantd has no use for",
			"session_state":      "a Keycloak session id: plantd's grants have no sessions",
		}},
	} {
		t.Run(tc.shapes, func(t *testing.T) {
			want := readShapes(t, filepath.Join("testdata", "cloudshapes", tc.shapes+".txt"))
			var resp *http.Response
			if tc.method == "POST" {
				form := url.Values{"grant_type": {"client_credentials"}, "client_id": {oauthID}, "client_secret": {oauthSecret}}
				resp = e.do("POST", tc.path, "", "application/x-www-form-urlencoded", form.Encode())
			} else {
				resp = e.do("GET", tc.path, tokStandard, "", "")
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s %s: %d %s", tc.method, tc.path, resp.StatusCode, body)
			}
			var doc any
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			shapeOf(doc, "", got)
			matched := 0
			for path, types := range want {
				if reason := differReason(tc.differ, path); reason != "" {
					continue
				}
				have, ok := got[path]
				if !ok {
					t.Errorf("%s: no %s (the cloud has %s)", tc.path, path, strings.Join(types, "|"))
					continue
				}
				for _, h := range have {
					if h != "null" && !slices.Contains(types, h) {
						t.Errorf("%s: %s is %s, the cloud's is %s", tc.path, path, h, strings.Join(types, "|"))
					}
				}
				matched++
			}
			for path := range tc.differ {
				if _, ok := want[path]; !ok && !strings.HasSuffix(path, ".*") {
					t.Errorf("difference listed for %s, which the cloud's answer does not have", path)
				}
			}
			t.Logf("%s: %d of the cloud's %d key paths with their types", tc.path, matched, len(want))
		})
	}
}

// differReason returns why plantd leaves path out ("" when it does not):
// an entry for the path, or "prefix.*" for everything below prefix.
func differReason(differ map[string]string, path string) string {
	if r, ok := differ[path]; ok {
		return r
	}
	for p, r := range differ {
		if prefix, ok := strings.CutSuffix(p, ".*"); ok && strings.HasPrefix(path, prefix+".") {
			return r
		}
	}
	return ""
}

// readShapes reads a shapes file: path → JSON types.
func readShapes(t *testing.T, name string) map[string][]string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		path, types, ok := strings.Cut(l, " ")
		if !ok {
			t.Fatalf("%s: bad line %q", name, l)
		}
		out[path] = strings.Split(types, "|")
	}
	return out
}

// shapeOf records the JSON types of v and everything below it by key
// path, as scripts/cloud-shapes.py names them.
func shapeOf(v any, path string, out map[string][]string) {
	var typ string
	switch x := v.(type) {
	case map[string]any:
		typ = "object"
		for k, c := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			shapeOf(c, p, out)
		}
	case []any:
		typ = "array"
		for _, c := range x {
			shapeOf(c, path+"[]", out)
		}
	case string:
		typ = "string"
	case float64:
		typ = "number"
	case bool:
		typ = "boolean"
	case nil:
		typ = "null"
	}
	if path != "" && !slices.Contains(out[path], typ) {
		out[path] = append(out[path], typ)
	}
}
