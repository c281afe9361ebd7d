package httpapi

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"
	"time"

	"plantd/plant"
)

// localRE is a time written without offset (Java's LocalDateTime).
var localRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$`)

// TestClientRoutes: the routes real cloud clients call besides the spec's
// answer with the shapes those clients parse.
func TestClientRoutes(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 2, modify: func(c *Config) { c.ProductIDs = map[string]int{"inv1": 9099} }})

	// The bare plant object: exactly its four members.
	var bare map[string]any
	e.getJSON("/monitoring/v1/plants/demo", &bare)
	keys := make([]string, 0, len(bare))
	for k := range bare {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"description", "name", "plantId", "timezone"}) || bare["timezone"] != "Europe/Berlin" {
		t.Errorf("bare plant %v", bare)
	}

	// devices/lean: no plant wrapper; productId a number when configured.
	var lean map[string]json.RawMessage
	e.getJSON("/monitoring/v1/plants/demo/devices/lean", &lean)
	if _, ok := lean["plant"]; ok || lean["devices"] == nil {
		t.Errorf("devices/lean members %v", lean)
	}
	var devs []map[string]any
	if err := json.Unmarshal(lean["devices"], &devs); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range devs {
		if d["deviceId"] == "inv1" {
			found = true
			if d["productId"] != float64(9099) {
				t.Errorf("inv1 productId %#v, want the number 9099", d["productId"])
			}
		} else if _, ok := d["productId"]; ok {
			t.Errorf("%v has a productId it was not configured with", d["deviceId"])
		}
	}
	if !found {
		t.Errorf("devices/lean lacks inv1: %v", devs)
	}

	// The device object: {plant, details}.
	var one struct {
		Plant   map[string]any
		Details map[string]any
	}
	e.getJSON("/monitoring/v1/devices/bat", &one)
	if one.Plant["plantId"] != "demo" || one.Details["deviceId"] != "bat" || one.Details["type"] != "Battery Inverter" {
		t.Errorf("device object %+v", one)
	}

	// startUpUtc without offset, as the cloud writes it.
	var list struct {
		Plants []struct{ Installation map[string]any }
	}
	e.getJSON("/monitoring/v1/plants", &list)
	if su := list.Plants[0].Installation["startUpUtc"]; su != "2024-04-01T00:00:00" {
		t.Errorf("startUpUtc %v, want 2024-04-01T00:00:00", su)
	}
}

// TestDeactivatedDevices: devices/lean lists a deactivated device only
// with WithDeactivatedDevices=true, and its deactivatedAt is plant-local
// without offset.
func TestDeactivatedDevices(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1, devices: func(ds []plant.DeviceInfo) {
		for i := range ds {
			if ds[i].ID == "wx" {
				ds[i].DeactivatedAt = time.Date(2025, 6, 1, 10, 30, 2, 0, time.UTC)
			}
		}
	}})
	ids := func(path string) map[string]map[string]any {
		var v struct{ Devices []map[string]any }
		e.getJSON(path, &v)
		out := map[string]map[string]any{}
		for _, d := range v.Devices {
			out[d["deviceId"].(string)] = d
		}
		return out
	}
	if _, ok := ids("/monitoring/v1/plants/demo/devices/lean")["wx"]; ok {
		t.Error("devices/lean lists the deactivated wx without WithDeactivatedDevices")
	}
	wx, ok := ids("/monitoring/v1/plants/demo/devices/lean?WithDeactivatedDevices=true")["wx"]
	if !ok {
		t.Fatal("devices/lean?WithDeactivatedDevices=true lacks wx")
	}
	// 10:30:02 UTC is 12:30:02 in Berlin (CEST).
	if wx["deactivatedAt"] != "2025-06-01T12:30:02" || wx["isActive"] != false {
		t.Errorf("wx deactivatedAt %v isActive %v, want 2025-06-01T12:30:02 false", wx["deactivatedAt"], wx["isActive"])
	}
	resp := e.do("GET", "/monitoring/v1/plants/demo/devices/lean?WithDeactivatedDevices=sometimes", tokStandard, "", "")
	p := readProblem(t, resp, 400)
	if len(p.Errors) == 0 || p.Errors[0].Field != "WithDeactivatedDevices" {
		t.Errorf("problem %+v", p)
	}
	if !localRE.MatchString(wx["deactivatedAt"].(string)) {
		t.Errorf("deactivatedAt %v is not a LocalDateTime", wx["deactivatedAt"])
	}
}
