package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestLiveDevice reads every device's live values: units, health,
// communication and SunSpec models, valid against the OpenAPI document;
// a migrated id redirects, an unknown one is 404, no token is 401.
func TestLiveDevice(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	// Polled up to 14:00: the inverters produce.
	e := newEnv(t, envOpts{})
	v := newValidator(t, e)
	for _, tc := range []struct {
		dev, value, unit string
		model            uint16
	}{
		{"inv1", "activePower", "W", 103},
		{"meter", "gridFrequency", "Hz", 203},
		{"bat", "batteryStateOfCharge", "%", 1},
		{"wx", "ambientTemperature", "°C", 1},
	} {
		req, _ := http.NewRequest("GET", e.ts.URL+"/live/v1/devices/"+tc.dev, nil)
		req.Header.Set("Authorization", "Bearer "+tokStandard)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Fatalf("%s: %d %s", tc.dev, resp.StatusCode, b)
		}
		body := v.check(req, resp)
		var got liveDeviceDetailJSON
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if got.Device.DeviceID != tc.dev || got.HealthStatus != "Ok" || got.Communication.Status != "Ok" || got.LastUpdateUtc == "" {
			t.Errorf("%s: %+v", tc.dev, got)
		}
		if !slices.Contains(got.SunSpecModels, tc.model) {
			t.Errorf("%s: models %v lack %d", tc.dev, got.SunSpecModels, tc.model)
		}
		i := slices.IndexFunc(got.Values, func(x liveDeviceValueJSON) bool { return x.Name == tc.value })
		if i < 0 || got.Values[i].Unit != tc.unit {
			t.Errorf("%s: %s with unit %s not in %+v", tc.dev, tc.value, tc.unit, got.Values)
		}
	}
	var inv liveDeviceDetailJSON
	e.getJSON("/live/v1/devices/inv1", &inv)
	if i := slices.IndexFunc(inv.Values, func(x liveDeviceValueJSON) bool { return x.Name == "dcPowerInput" }); i < 0 || inv.Values[i].Index != "A" {
		t.Errorf("inv1: indexed dcPowerInput without input label: %+v", inv.Values)
	}
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/live/v1/devices/old-inv1", tokStandard, 308},
		{"/live/v1/devices/nope", tokStandard, 404},
		{"/live/v1/devices/inv1", "", 401},
	} {
		resp := e.do("GET", c.path, c.token, "", "")
		resp.Body.Close()
		if resp.StatusCode != c.want || (c.want == 308 && !strings.HasSuffix(resp.Header.Get("Location"), "/live/v1/devices/inv1")) {
			t.Errorf("%s: %d (Location %q), want %d", c.path, resp.StatusCode, resp.Header.Get("Location"), c.want)
		}
	}
}
