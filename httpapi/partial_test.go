package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// TestPartialCommandsOverHTTP: on the demo plant (inv1 classic 10 kW,
// inv2 DER 8 kW) OpModDisconnect reaches only inv1 and opModFixedPfAbsorbW
// only inv2. The eligibility answer and the POST answer say so per
// inverter, with the share of rated power; eligibility's devices stays the
// list of ids clients parse; requireAll=true asks all or nothing (422 on
// POST, not eligible in the check).
func TestPartialCommandsOverHTTP(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	now := e.clock.Now()
	win := func(cmd, extra string) string {
		return fmt.Sprintf(`{"commands":[{"command":%q,"start":%q,"end":%q%s}]}`, cmd,
			now.Add(time.Hour).UTC().Format(time.RFC3339), now.Add(2*time.Hour).UTC().Format(time.RFC3339), extra)
	}
	type inv struct {
		DeviceID string `json:"deviceId"`
		Acts     bool   `json:"acts"`
		Reason   *struct {
			Code, Message string
		} `json:"reason"`
		RatedPowerW float64 `json:"ratedPowerW"`
	}
	// verdicts renders inverters as "inv1:true inv2:false/Code".
	verdicts := func(list []inv) string {
		var out []string
		for _, i := range list {
			s := fmt.Sprintf("%s:%v", i.DeviceID, i.Acts)
			if i.Reason != nil {
				s += "/" + i.Reason.Code
			}
			if i.RatedPowerW <= 0 {
				s += "/norating"
			}
			out = append(out, s)
		}
		return strings.Join(out, " ")
	}
	cases := []struct {
		name, method, path, body string
		status                   int
		// eligibility: the result's devices, eligible, first reason
		devices   []string
		eligible  bool
		reason    string
		partial   bool
		coverage  float64 // 0: absent
		inverters string  // "": absent
		field     string  // 422: the problem's field
	}{
		{name: "check disconnect", method: "POST", path: "/gridcontrol/v1/plants/eligibilityCheck", body: `{"plantId":"demo","commands":["OpModDisconnect"]}`,
			status: 200, devices: []string{"inv1"}, eligible: true, partial: true, coverage: 0.556, inverters: "inv1:true inv2:false/NotOfferedOnNewerPlatform"},
		{name: "check absorbing PF", method: "POST", path: "/gridcontrol/v1/plants/eligibilityCheck", body: `{"plantId":"demo","commands":["opModFixedPfAbsorbW"]}`,
			status: 200, devices: []string{"inv2"}, eligible: true, partial: true, coverage: 0.444, inverters: "inv1:false/NotOfferedOnClassicPlatform inv2:true"},
		{name: "check limit", method: "POST", path: "/gridcontrol/v1/plants/eligibilityCheck", body: `{"plantId":"demo","commands":["opModMaxLimW"]}`,
			status: 200, devices: []string{"inv1", "inv2"}, eligible: true, coverage: 1, inverters: "inv1:true inv2:true"},
		{name: "check disconnect, all or nothing", method: "POST", path: "/gridcontrol/v1/plants/eligibilityCheck?requireAll=true", body: `{"plantId":"demo","commands":["OpModDisconnect"]}`,
			status: 200, devices: []string{"inv1"}, reason: "NotEveryInverter", coverage: 0.556, inverters: "inv1:true inv2:false/NotOfferedOnNewerPlatform"},
		{name: "post disconnect", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules", body: win("OpModDisconnect", ""),
			status: 201, partial: true, coverage: 0.556, inverters: "inv1:true inv2:false/NotOfferedOnNewerPlatform"},
		{name: "post absorbing PF, check skipped", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules?skipEligibilityCheck=true", body: win("opModFixedPfAbsorbW", `,"value":0.9`),
			status: 201, partial: true, coverage: 0.444, inverters: "inv1:false/NotOfferedOnClassicPlatform inv2:true"},
		{name: "post limit, all or nothing", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules?requireAll=true", body: win("opModMaxLimW", `,"value":50`),
			status: 201},
		{name: "post disconnect, all or nothing", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules?requireAll=true", body: win("OpModDisconnect", ""),
			status: 422, field: "commands[0].command"},
		{name: "post absorbing PF, all or nothing, check skipped", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules?requireAll=true&skipEligibilityCheck=true",
			body: win("opModFixedPfAbsorbW", `,"value":0.9`), status: 422, field: "commands[0].command"},
		{name: "requireAll not a boolean", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules?requireAll=yes", body: win("OpModDisconnect", ""),
			status: 400, field: "requireAll"},
	}
	for _, tc := range cases {
		resp := e.do(tc.method, tc.path, tokInstaller, "application/json", tc.body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, b, tc.status)
			continue
		}
		var got struct {
			// eligibilityCheck
			Results []struct {
				Devices   []string `json:"devices"`
				Eligible  bool     `json:"eligible"`
				Reasons   []struct{ Code string }
				Partial   bool     `json:"partial"`
				Coverage  *float64 `json:"coverage"`
				Inverters []inv    `json:"inverters"`
			} `json:"results"`
			// POST schedules
			Schedule struct {
				Commands []struct {
					Status    string   `json:"status"`
					Partial   bool     `json:"partial"`
					Coverage  *float64 `json:"coverage"`
					Inverters []inv    `json:"inverters"`
				} `json:"commands"`
			} `json:"schedule"`
			// problems
			Errors []struct{ Field, Message string } `json:"errors"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v: %s", tc.name, err, b)
		}
		var partial bool
		var coverage *float64
		var inverters []inv
		switch {
		case tc.status != 200 && tc.status != 201:
			if len(got.Errors) != 1 || got.Errors[0].Field != tc.field {
				t.Errorf("%s: errors %+v, want one naming %s", tc.name, got.Errors, tc.field)
			} else if tc.status == 422 && !strings.Contains(got.Errors[0].Message, "not every active inverter") {
				t.Errorf("%s: %q does not say that not every inverter acts", tc.name, got.Errors[0].Message)
			}
			continue
		case len(got.Results) == 1:
			r := got.Results[0]
			reason := ""
			if len(r.Reasons) > 0 {
				reason = r.Reasons[0].Code
			}
			if strings.Join(r.Devices, ",") != strings.Join(tc.devices, ",") || r.Eligible != tc.eligible || reason != tc.reason {
				t.Errorf("%s: devices %v eligible %v reason %q, want %v %v %q: %s", tc.name, r.Devices, r.Eligible, reason, tc.devices, tc.eligible, tc.reason, b)
			}
			partial, coverage, inverters = r.Partial, r.Coverage, r.Inverters
		case len(got.Schedule.Commands) == 1:
			c := got.Schedule.Commands[0]
			if c.Status != "pending" {
				t.Errorf("%s: status %q, want pending (partial is a flag beside the status)", tc.name, c.Status)
			}
			partial, coverage, inverters = c.Partial, c.Coverage, c.Inverters
		default:
			t.Errorf("%s: neither one result nor one command: %s", tc.name, b)
			continue
		}
		cov := 0.0
		if coverage != nil {
			cov = *coverage
		}
		if partial != tc.partial || cov != tc.coverage || verdicts(inverters) != tc.inverters {
			t.Errorf("%s: partial %v coverage %g inverters %q, want %v %g %q", tc.name, partial, cov, verdicts(inverters), tc.partial, tc.coverage, tc.inverters)
		}
	}
	// The list says it too.
	var list struct {
		Schedules []struct {
			Commands []struct {
				Command string `json:"command"`
				Partial bool   `json:"partial"`
			} `json:"commands"`
		} `json:"schedules"`
	}
	e.getJSON("/gridcontrol/v1/plants/demo/schedules", &list)
	partial := map[string]bool{}
	for _, s := range list.Schedules {
		for _, c := range s.Commands {
			partial[c.Command] = c.Partial
		}
	}
	if !partial["OpModDisconnect"] || !partial["opModFixedPfAbsorbW"] || partial["opModMaxLimW"] || len(partial) != 3 {
		t.Errorf("schedule list: partial per command %v, want OpModDisconnect and opModFixedPfAbsorbW partial, opModMaxLimW not", partial)
	}
}
