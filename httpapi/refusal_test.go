package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"

	"plantd/plant"
	"plantd/plant/kind"
)

// TestScheduleRefusalRetryable: a schedule refused by the eligibility
// check names each refused command's reason code, and says retryable
// only when every refusal is of devices not reachable or not discovered
// yet (the MQTT uplink keeps such a schedule and runs it again when they
// answer).
func TestScheduleRefusalRetryable(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	const window = `"start":"2025-06-21T10:00:00Z","end":"2025-06-21T11:00:00Z"`
	offline := func(kinds ...kind.Kind) func() {
		return func() {
			for _, d := range e.devs {
				if slices.Contains(kinds, d.dev.Kind()) {
					e.live.Apply(plant.Sample{Device: d.id, Time: e.clock.Now(), Err: errors.New("connection refused"), State: plant.StateOffline})
				}
			}
		}
	}
	for _, tc := range []struct {
		name      string
		before    func()
		body      string
		status    int
		codes     []string
		retryable bool
	}{
		{"eligible", nil, `{"commands":[{"command":"opModMaxLimW",` + window + `,"value":50}]}`, 201, nil, false},
		{"value refused", nil, `{"commands":[{"command":"opModMaxLimW",` + window + `,"value":5000000,"unit":"W"}]}`, 422, nil, false},
		{"meter offline", offline(kind.Meter), `{"commands":[{"command":"FeedInLimit",` + window + `,"value":50}]}`, 422, []string{"NoGridMeter"}, false},
		{"inverters offline", offline(kind.Inverter), `{"commands":[{"command":"opModMaxLimW",` + window + `,"value":50}]}`, 422, []string{"DevicesOffline"}, true},
		{"inverters offline, two commands", nil, `{"commands":[{"command":"opModMaxLimW",` + window + `,"value":50},{"command":"opModFixedPFInjectW",` + window + `,"value":0.95}]}`, 422, []string{"DevicesOffline", "DevicesOffline"}, true},
	} {
		if tc.before != nil {
			tc.before()
		}
		resp := e.do("POST", "/gridcontrol/v1/plants/demo/schedules", tokInstaller, "application/json", tc.body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var p plant.Problem
		_ = json.Unmarshal(b, &p)
		var codes []string
		for _, r := range p.Reasons {
			codes = append(codes, r.Code)
		}
		if resp.StatusCode != tc.status || !slices.Equal(codes, tc.codes) || p.Retryable != tc.retryable {
			t.Errorf("%s: %d reasons %v retryable %v, want %d %v %v\n%s", tc.name, resp.StatusCode, codes, p.Retryable, tc.status, tc.codes, tc.retryable, b)
		}
		if resp.StatusCode != http.StatusCreated {
			t.Logf("%s: %s", tc.name, b)
		}
	}
}
