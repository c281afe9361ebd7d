package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"plantd/plant"
	"plantd/plant/kind"
)

// TestListedSetNothingStored: a set the API lists for a device answers
// even when the history holds nothing of the device (ErrNotFound): an
// empty set, not a 404; a device never discovered and unknown to the
// history lists no sets, and a set of it is a 404.
func TestListedSetNothingStored(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	e.hist.mu.Lock()
	delete(e.hist.dev, "inv1")
	e.hist.mu.Unlock()
	ds, err := e.live.DeviceStatuses("demo")
	if err != nil {
		t.Fatal(err)
	}
	var infos []plant.DeviceInfo
	for _, d := range ds {
		infos = append(infos, d.Info)
	}
	e.live.SetDevices(append(infos, plant.DeviceInfo{ID: "ghost", PlantID: "demo", Name: "never polled", Kind: kind.Inverter}))

	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/monitoring/v1/devices/inv1/measurements/sets/PowerAc/Day?Date=2025-06-21", http.StatusOK, `"set":[]`},
		{"/monitoring/v1/devices/inv1/measurements/sets/PowerAc", http.StatusOK, `"set":[]`},
		{"/monitoring/v1/devices/ghost/measurements/sets", http.StatusOK, `"sets":[]`},
		{"/monitoring/v1/devices/ghost/measurements/sets/PowerAc", http.StatusNotFound, "has no measurement set PowerAc"},
	} {
		resp := e.do("GET", tc.path, tokStandard, "", "")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("GET %s: %d %s; want %d with %s", tc.path, resp.StatusCode, b, tc.status, tc.want)
		}
	}
}
