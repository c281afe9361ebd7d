package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"plantd/gridcontrol"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"plantd/httpapi/apitest"
)

var paramRE = regexp.MustCompile(`\{[^}]*\}|[:*][A-Za-z]+`)

// normPath replaces every path parameter by {} (Gin needs one parameter
// name per tree position; the spec names the settings path's id {id}).
func normPath(p string) string { return paramRE.ReplaceAllString(p, "{}") }

func loadDoc(t *testing.T, raw []byte) *openapi3.T {
	t.Helper()
	doc, err := apitest.LoadDocument(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestOpenAPICoversRoutes walks Gin's route table and fails on any route
// missing from the document, and on any documented operation Gin does not
// serve.
func TestOpenAPICoversRoutes(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	doc := loadDoc(t, e.srv.openapi)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+normPath(path)] = true
		}
	}
	served := map[string]bool{}
	for _, r := range e.srv.engine.Routes() {
		k := r.Method + " " + normPath(r.Path)
		served[k] = true
		if !documented[k] {
			t.Errorf("route %s %s is not in /openapi.json", r.Method, r.Path)
		}
	}
	for k := range documented {
		if !served[k] {
			t.Errorf("documented operation %s is not served", k)
		}
	}
	// The spec's paths, exactly as written.
	for _, p := range []string{
		"/monitoring/v1/plants", "/monitoring/v1/plants/{plantId}/installation", "/monitoring/v1/plants/{plantId}/configuration",
		"/monitoring/v1/plants/{plantId}/devices", "/monitoring/v1/plants/{plantId}/stakeholders", "/monitoring/v1/plants/{plantId}/logs",
		"/monitoring/v1/plants/{plantId}/communication", "/monitoring/v1/plants/{plantId}/measurements/sets/EnergyBalance",
		"/monitoring/v1/devices/{deviceId}/logs", "/monitoring/v1/devices/{deviceId}/measurements/sets",
		"/monitoring/v1/devices/{deviceId}/measurements/sets/PowerAc", "/monitoring/v1/devices/{deviceId}/measurements/sets/PowerDc",
		"/monitoring/v1/devices/{deviceId}/measurement/sets/EnergyMix/{period}",
		"/gridcontrol/v1/plants/{plantId}/schedules", "/gridcontrol/v1/plants/eligibilityCheck", "/gridcontrol/v1/plants/eligibleCommands",
		"/gridcontrol/v1/plants/{id}/settings/{settingsType}",
		"/live/v1/plants/{plantId}/measurements/sets/EnergyBalance", "/live/v1/devices/{deviceId}/measurement/sets/EnergyMix",
		"/live/v1/plants/{plantId}/devices", "/live/v2/plants/{plantId}/devices",
	} {
		if doc.Paths.Find(p) == nil {
			t.Errorf("spec path %s missing from the document", p)
		}
	}
}

// validator checks responses against the document.
type validator struct {
	t *testing.T
	v *apitest.Validator
}

func newValidator(t *testing.T, e *env) *validator {
	v, err := apitest.New(t.Context(), e.srv.openapi, e.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &validator{t: t, v: v}
}

// check validates one exchange; it returns the body.
func (v *validator) check(req *http.Request, resp *http.Response) []byte {
	v.t.Helper()
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		v.t.Fatal(err)
	}
	if err := v.v.Check(context.Background(), req, resp.StatusCode, resp.Header, body); err != nil {
		v.t.Errorf("%v\nbody: %.600s", err, body)
	}
	return body
}

// get does GET path with token on e, wants status want, validates the
// exchange against the document and returns the body.
func (v *validator) get(e *env, path, token string, want int) []byte {
	v.t.Helper()
	resp := e.do("GET", path, token, "", "")
	if resp.StatusCode != want {
		v.t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
	}
	req, _ := http.NewRequest("GET", e.ts.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return v.check(req, resp)
}

// TestEveryRouteAgainstOpenAPI calls every route (and its error cases)
// on a server fed by the simulated plant and validates each response
// against /openapi.json with kin-openapi.
func TestEveryRouteAgainstOpenAPI(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{})
	v := newValidator(t, e)
	// /openapi.json itself is served and parses.
	resp := e.do("GET", "/openapi.json", "", "", "")
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !bytes.Equal(b, e.srv.openapi) {
		t.Errorf("/openapi.json: %d", resp.StatusCode)
	}
	resp.Body.Close()

	type tc struct {
		method, path, token, ctype, body string
		want                             int
	}
	var cases []tc
	get := func(path string, want int) { cases = append(cases, tc{"GET", path, tokInstaller, "", "", want}) }
	for _, p := range []string{"", "/installation", "/configuration", "/devices", "/stakeholders", "/logs", "/communication",
		"/measurements/sets/EnergyBalance"} {
		get("/monitoring/v1/plants"+strings.TrimSuffix("/demo"+p, "/demo"), 200)
	}
	get("/monitoring/v1/plants/demo/logs?limit=2", 200)
	for _, per := range []string{"Recent", "Day?Date=2025-06-21&WithTotal=true", "week?Date=2025-06-16&WithTotal=true",
		"MONTH?Date=2025-06&ReturnEnergyValues=true", "Year?Date=2025", "Total?WithTotal=true"} {
		get("/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/"+per, 200)
	}
	// The routes real clients call besides the spec's.
	get("/monitoring/v1/plants/demo", 200)
	get("/monitoring/v1/plants/demo/devices/lean", 200)
	get("/monitoring/v1/plants/demo/devices/lean?WithDeactivatedDevices=true", 200)
	get("/monitoring/v1/plants/demo/devices/lean?WithDeactivatedDevices=maybe", 400)
	get("/monitoring/v1/devices/bat", 200)
	get("/monitoring/v1/plants/demo/measurements/sets/energybalance", 200)
	get("/monitoring/v1/plants/demo/measurements/sets/ENERGYBALANCE/day?Date=2025-06-21", 200)
	get("/monitoring/v1/plants/demo/measurements/sets/PowerAc/Day", 404)
	get("/monitoring/v2/plants/demo/measurements/sets/EnergyBalance/Day?Date=2025-06-21&WithTotal=true", 200)
	get("/monitoring/v2/plants/demo/measurements/sets/energyBalance/Total?WithTotal=true", 200)
	get("/monitoring/v2/plants/7190000/measurements/sets/EnergyBalance/Recent", 308)
	get("/monitoring/v1/devices/inv1/measurements/sets/poweraC/day?Date=2025-06-21", 200)
	get("/monitoring/v1/devices/inv1/measurements/sets/pOwErDc", 200)
	get("/monitoring/v1/devices/inv1/measurements/sets/Nonsense/Day", 404)
	get("/monitoring/v1/devices/nope", 404)
	get("/monitoring/v1/plants/7190000", 308)
	get("/monitoring/v1/devices/inv1/logs", 200)
	get("/monitoring/v1/devices/inv1/measurements/sets", 200)
	get("/monitoring/v1/devices/wx/measurements/sets", 200)
	// Every set each device lists.
	for _, dev := range []string{"inv1", "inv2", "meter", "bat", "wx"} {
		var list struct{ Sets []string }
		e.getJSON("/monitoring/v1/devices/"+dev+"/measurements/sets", &list)
		if len(list.Sets) == 0 {
			t.Errorf("%s lists no sets", dev)
		}
		for _, st := range list.Sets {
			get("/monitoring/v1/devices/"+dev+"/measurements/sets/"+st, 200)
			get("/monitoring/v1/devices/"+dev+"/measurements/sets/"+st+"/Day?Date=2025-06-21&WithTotal=true", 200)
		}
	}
	get("/monitoring/v1/devices/inv1/measurements/sets/EnergyAndPowerPv/Day?Date=2025-06-21&ReturnEnergyValues=true", 200)
	get("/monitoring/v1/devices/inv1/measurement/sets/EnergyMix/Day?Date=2025-06-21", 200)
	get("/monitoring/v1/devices/wx/measurements/sets/PowerAc", 404)
	get("/gridcontrol/v1/plants/demo/schedules", 200)
	for _, st := range gridcontrol.SettingsTypes {
		get("/gridcontrol/v1/plants/demo/settings/"+st, 200)
	}
	get("/gridcontrol/v1/plants/demo/settings/bogus", 400)
	get("/live/v1/plants/demo/measurements/sets/EnergyBalance", 200)
	get("/live/v1/devices/inv1/measurement/sets/EnergyMix", 200)
	get("/live/v1/plants/demo/devices", 200)
	get("/live/v2/plants/demo/devices", 200)
	get("/healthz", 200)
	get("/readyz", 200)
	get("/metrics", 200)
	// Migrated ids.
	get("/monitoring/v1/plants/7190000/devices", 308)
	get("/live/v1/devices/old-inv1/measurement/sets/EnergyMix", 308)
	get("/gridcontrol/v1/plants/7190000/settings/activePowerGridSettings", 308)
	// Errors.
	get("/monitoring/v1/plants/nope/devices", 404)
	get("/monitoring/v1/devices/nope/logs", 404)
	get("/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/Decade", 400)
	get("/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/Day?Date=21.06.2025", 400)
	get("/monitoring/v1/plants/demo/logs?limit=0", 400)
	cases = append(cases,
		tc{"GET", "/monitoring/v1/plants/demo/logs", tokStandard, "", "", 403},
		tc{"GET", "/monitoring/v1/plants", "", "", "", 401},
		tc{"GET", "/monitoring/v1/plants", "wrong", "", "", 401},
		tc{"POST", "/gridcontrol/v1/plants/eligibilityCheck", tokStandard, "application/json",
			`{"plantId":"demo","commands":["FeedInLimit","OpModDisconnect","opModVoltVar","opModHfrtMustTrip"]}`, 200},
		tc{"POST", "/gridcontrol/v1/plants/eligibilityCheck", tokStandard, "application/json", `{"plantId":"7190000","commands":["opModMaxLimW"]}`, 200},
		tc{"POST", "/gridcontrol/v1/plants/eligibilityCheck", tokStandard, "text/plain", `{}`, 415},
		tc{"POST", "/gridcontrol/v1/plants/eligibilityCheck", tokStandard, "application/json", `{"plantId":"demo","bogus":1}`, 400},
		tc{"POST", "/gridcontrol/v1/plants/eligibleCommands", tokStandard, "application/json", `{"serialNumber":"SIM-inv1"}`, 200},
		tc{"POST", "/gridcontrol/v1/plants/eligibleCommands", tokStandard, "application/json", `{"plantId":"nope"}`, 404},
		tc{"POST", "/gridcontrol/v1/plants/demo/schedules", tokInstaller, "application/json",
			`{"commands":[{"command":"opModMaxLimW","start":"2025-06-21T16:00:00Z","end":"2025-06-21T17:00:00Z","value":5000,"unit":"W"}]}`, 201},
		tc{"POST", "/gridcontrol/v1/plants/demo/schedules", tokInstaller, "application/json",
			`{"commands":[{"command":"OpModDisconnect","start":"2025-06-21T16:00:00Z","end":"2025-06-21T17:00:00Z"}]}`, 201},
		tc{"POST", "/gridcontrol/v1/plants/demo/schedules", tokInstaller, "application/json",
			`{"commands":[{"command":"opModMaxLimW","start":"+1h","end":"+1h30m","value":50}]}`, 201},
		tc{"POST", "/gridcontrol/v1/plants/demo/schedules?requireAll=true", tokInstaller, "application/json",
			`{"commands":[{"command":"OpModDisconnect","start":"2025-06-21T16:00:00Z","end":"2025-06-21T17:00:00Z"}]}`, 422},
		tc{"POST", "/gridcontrol/v1/plants/eligibilityCheck?requireAll=true", tokStandard, "application/json",
			`{"plantId":"demo","commands":["OpModDisconnect","opModMaxLimW"]}`, 200},
		tc{"POST", "/gridcontrol/v1/plants/demo/schedules", tokGridOperator, "application/json",
			`{"commands":[{"command":"opModMaxLimW","repeat":"CRON_TZ=Europe/Berlin 0 11 * * *","duration":"4h","until":"2025-07-01T00:00:00Z","value":60}]}`, 201},
		tc{"POST", "/gridcontrol/v1/plants/demo/schedules", tokInstaller, "application/json",
			`{"commands":[{"command":"opModMaxLimW","repeat":"0 0 11 * * *","duration":"4h","value":60}]}`, 400},
		tc{"GET", "/gridcontrol/v1/plants/demo/schedules", tokStandard, "", "", 200},
		tc{"GET", "/gridcontrol/v1/plants/demo/schedules?include=finished", tokStandard, "", "", 200},
		tc{"GET", "/gridcontrol/v1/plants/demo/schedules?include=everything", tokStandard, "", "", 400},
		tc{"DELETE", "/gridcontrol/v1/plants/demo/schedules/nope", tokInstaller, "", "", 404},
		tc{"POST", "/gridcontrol/v1/plants/demo/schedules", tokInstaller, "application/json",
			`{"commands":[{"command":"opModMaxLimW","start":"2025-06-21T16:00:00Z","end":"2025-06-21T17:00:00Z","value":5000000,"unit":"W"}]}`, 422},
		tc{"POST", "/gridcontrol/v1/plants/demo/schedules", tokInstaller, "application/json", `{"commands":[]}`, 400},
		tc{"POST", "/gridcontrol/v1/plants/demo/schedules", tokStandard, "application/json", `{"commands":[]}`, 403},
		tc{"DELETE", "/gridcontrol/v1/plants/demo/schedules", tokInstaller, "", "", 405},
		tc{"POST", "/oauth2/token", "", "application/x-www-form-urlencoded", "grant_type=client_credentials&client_id=cloud&client_secret=cloud-secret", 200},
		tc{"POST", "/oauth2/token", "", "application/x-www-form-urlencoded", "grant_type=client_credentials&client_id=cloud&client_secret=nope", 401},
		tc{"POST", "/oauth2/token", "", "application/x-www-form-urlencoded", "grant_type=password", 400},
		tc{"POST", "/oauth2/token", "", "application/json", "{}", 415},
	)
	for _, c := range cases {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		req, _ := http.NewRequest(c.method, e.ts.URL+c.path, body)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != c.want {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Errorf("%s %s: status %d, want %d: %.400s", c.method, c.path, resp.StatusCode, c.want, b)
			continue
		}
		if c.want == http.StatusMethodNotAllowed { // no operation to validate against
			resp.Body.Close()
			continue
		}
		// Validation needs a body that can be re-read.
		if c.body != "" {
			req.Body = io.NopCloser(strings.NewReader(c.body))
		}
		v.check(req, resp)
	}
}

// TestValidatorIsStrict makes sure the validation above can fail: a null
// field, an unknown member and a time with an offset are rejected.
func TestValidatorIsStrict(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	v, err := apitest.New(t.Context(), e.srv.openapi, e.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	plantObj := `"plant":{"plantId":"demo","name":"x","timezone":"Europe/Berlin"}`
	for _, tt := range []struct{ path, body string }{
		{"/live/v2/plants/demo/devices", `{` + plantObj + `,"devices":[{"deviceId":"a","name":"a","type":"Energy Meter","healthStatus":null}]}`},
		{"/live/v2/plants/demo/devices", `{` + plantObj + `,"devices":[],"extra":1}`},
		{"/live/v1/plants/demo/devices", `{` + plantObj + `,"devices":[{"deviceId":"a","name":"a","type":"Energy Meter","healthStatus":"Ok"}]}`},
		{"/monitoring/v1/plants/demo/measurements/sets/EnergyBalance", `{` + plantObj + `,"setType":"EnergyBalance","resolution":"OneMinute","set":[{"time":"2025-06-21T10:00:00+02:00"}]}`},
		{"/monitoring/v1/plants/demo/measurements/sets/EnergyBalance", `{` + plantObj + `,"setType":"EnergyBalance","resolution":"OneMinute","set":[{"time":"2025-06-21T10:00:00","pvGeneration":null}]}`},
	} {
		req, _ := http.NewRequest("GET", e.ts.URL+tt.path, nil)
		err := v.Check(t.Context(), req, 200, http.Header{"Content-Type": {"application/json"}}, []byte(tt.body))
		if err == nil {
			t.Errorf("%s: accepted %s", tt.path, tt.body)
		}
	}
}

// TestScheduleExamplesParse: every example of ScheduleRequest in
// /openapi.json is a schedule plantd accepts (units and ranges included).
func TestScheduleExamplesParse(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	raw, err := buildOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Examples []json.RawMessage `json:"examples"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	exs := doc.Components.Schemas["ScheduleRequest"].Examples
	if len(exs) == 0 {
		t.Fatal("ScheduleRequest has no examples")
	}
	before := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC) // the examples are dated 2026-11-24
	for i, ex := range exs {
		if _, err := gridcontrol.ParseSchedule(ex, before); err != nil {
			t.Errorf("example %d %s: %v", i, ex, err)
		}
	}
}
