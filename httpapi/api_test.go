package httpapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"plantd/config"
	"plantd/gridcontrol"
	"plantd/internal/proctest"
	"plantd/plant"
	"plantd/sim"
	"plantd/sunspec"

	"plantd/httpapi/oauth2"
)

// readProblem checks a problem-JSON answer and returns it.
func readProblem(t *testing.T, resp *http.Response, status int) plant.Problem {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != contentTypeProblem {
		t.Errorf("content type %q, want %s", ct, contentTypeProblem)
	}
	var p plant.Problem
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("problem body %s: %v", b, err)
	}
	if p.Status != status || p.Title == "" || p.Type == "" || p.Code == "" || p.Message == "" || p.Instance == "" {
		t.Errorf("incomplete problem %+v", p)
	}
	if p.RequestID == "" || p.RequestID != resp.Header.Get("X-Request-Id") {
		t.Errorf("problem request id %q, header %q", p.RequestID, resp.Header.Get("X-Request-Id"))
	}
	return p
}

// TestErrors checks status, headers and problem body of every error case.
func TestErrors(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 2})
	big := `{"plantId":"` + strings.Repeat("x", maxBody) + `"}`
	tests := []struct {
		name, method, path, token, ctype, body string
		status                                 int
		header, headerWant                     string // a header that must contain headerWant
		field                                  string // errors[0].field
	}{
		{name: "unknown route", method: "GET", path: "/monitoring/v1/nothing", token: tokStandard, status: 404},
		{name: "unknown route without token", method: "GET", path: "/nothing", status: 404},
		{name: "wrong method", method: "PUT", path: "/monitoring/v1/plants", token: tokStandard, status: 405, header: "Allow", headerWant: "GET"},
		{name: "wrong method schedules", method: "DELETE", path: "/gridcontrol/v1/plants/demo/schedules", token: tokInstaller, status: 405, header: "Allow", headerWant: "POST"},
		{name: "unknown plant", method: "GET", path: "/monitoring/v1/plants/nope/installation", token: tokStandard, status: 404, field: "plantId"},
		{name: "unknown device", method: "GET", path: "/live/v1/devices/nope/measurement/sets/EnergyMix", token: tokStandard, status: 404, field: "deviceId"},
		{name: "unknown set type", method: "GET", path: "/monitoring/v1/devices/inv1/measurements/sets/Bogus", token: tokStandard, status: 404},
		{name: "bad period", method: "GET", path: "/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/Fortnight", token: tokStandard, status: 400, field: "period"},
		{name: "bad date", method: "GET", path: "/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/Day?Date=2025-6-1", token: tokStandard, status: 400, field: "Date"},
		{name: "month date for day", method: "GET", path: "/monitoring/v1/devices/inv1/measurements/sets/PowerAc/Day?Date=2025-06", token: tokStandard, status: 400, field: "Date"},
		{name: "date for recent", method: "GET", path: "/monitoring/v1/devices/inv1/measurements/sets/PowerAc?date=2025-06-21", token: tokStandard, status: 400, field: "Date"},
		{name: "bad WithTotal", method: "GET", path: "/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/Day?WithTotal=yes", token: tokStandard, status: 400, field: "WithTotal"},
		{name: "bad limit", method: "GET", path: "/monitoring/v1/plants/demo/logs?limit=abc", token: tokInstaller, status: 400, field: "limit"},
		{name: "bad From", method: "GET", path: "/monitoring/v1/devices/inv1/logs?From=yesterday", token: tokInstaller, status: 400, field: "From"},
		{name: "bad settings type", method: "GET", path: "/gridcontrol/v1/plants/demo/settings/foo", token: tokStandard, status: 400, field: "settingsType"},
		{name: "wrong content type", method: "POST", path: "/gridcontrol/v1/plants/eligibilityCheck", token: tokStandard, ctype: "text/plain", body: "{}", status: 415},
		{name: "no content type", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules", token: tokInstaller, body: "{}", status: 415},
		{name: "unknown field", method: "POST", path: "/gridcontrol/v1/plants/eligibilityCheck", token: tokStandard, ctype: "application/json", body: `{"plantId":"demo","commands":["opModMaxLimW"],"extra":true}`, status: 400, field: "extra"},
		{name: "duplicate key", method: "POST", path: "/gridcontrol/v1/plants/eligibilityCheck", token: tokStandard, ctype: "application/json", body: `{"plantId":"demo","plantId":"other","commands":["opModMaxLimW"]}`, status: 400, field: "plantId"},
		{name: "malformed json", method: "POST", path: "/gridcontrol/v1/plants/eligibilityCheck", token: tokStandard, ctype: "application/json", body: `{"plantId":`, status: 400},
		{name: "wrong json type", method: "POST", path: "/gridcontrol/v1/plants/eligibilityCheck", token: tokStandard, ctype: "application/json", body: `{"plantId":5}`, status: 400, field: "plantId"},
		{name: "unknown command", method: "POST", path: "/gridcontrol/v1/plants/eligibilityCheck", token: tokStandard, ctype: "application/json", body: `{"plantId":"demo","commands":["Boom"]}`, status: 400, field: "commands[0]"},
		{name: "bad schedule", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules", token: tokGridOperator, ctype: "application/json", body: `{"commands":[{"command":"opModMaxLimW","start":"2025-06-21T11:00:00Z","end":"2025-06-21T10:00:00Z"}]}`, status: 400, field: "commands[0].end"},
		{name: "body too large", method: "POST", path: "/gridcontrol/v1/plants/eligibilityCheck", token: tokStandard, ctype: "application/json", body: big, status: 413},
		{name: "no token", method: "GET", path: "/monitoring/v1/plants", status: 401, header: "WWW-Authenticate", headerWant: "Bearer"},
		{name: "bad token", method: "GET", path: "/live/v2/plants/demo/devices", token: "nope", status: 401, header: "WWW-Authenticate", headerWant: `error="invalid_token"`},
		{name: "basic auth", method: "GET", path: "/monitoring/v1/plants", token: "-basic", status: 401, header: "WWW-Authenticate", headerWant: "Bearer"},
		{name: "logs need installer", method: "GET", path: "/monitoring/v1/plants/demo/logs", token: tokStandard, status: 403},
		{name: "device logs need installer", method: "GET", path: "/monitoring/v1/devices/inv1/logs", token: tokStandard, status: 403},
		{name: "recurring, bad cron spec", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules?skipEligibilityCheck=true", token: tokGridOperator, ctype: "application/json",
			body: `{"commands":[{"command":"opModMaxLimW","repeat":"0 25 * * *","duration":"4h","value":60}]}`, status: 400, field: "commands[0].repeat"},
		{name: "recurring, duration beyond the period", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules?skipEligibilityCheck=true", token: tokGridOperator, ctype: "application/json",
			body: `{"commands":[{"command":"opModMaxLimW","repeat":"0 * * * *","duration":"90m","value":60}]}`, status: 400, field: "commands[0].duration"},
		{name: "recurring, zero duration", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules?skipEligibilityCheck=true", token: tokGridOperator, ctype: "application/json",
			body: `{"commands":[{"command":"opModMaxLimW","repeat":"0 11 * * *","duration":"0s","value":60}]}`, status: 400, field: "commands[0].duration"},
		{name: "schedules include other than finished", method: "GET", path: "/gridcontrol/v1/plants/demo/schedules?include=all", token: tokStandard, status: 400, field: "include"},
		{name: "cancel needs installer", method: "DELETE", path: "/gridcontrol/v1/plants/demo/schedules/abc", token: tokStandard, status: 403},
		{name: "cancel unknown schedule", method: "DELETE", path: "/gridcontrol/v1/plants/demo/schedules/abc", token: tokInstaller, status: 404},
		{name: "schedule write needs installer", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules", token: tokStandard, ctype: "application/json", body: `{}`, status: 403},
		{name: "schedule in the past", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules?skipEligibilityCheck=true", token: tokGridOperator, ctype: "application/json",
			body: `{"commands":[{"command":"opModMaxLimW","start":"2025-06-20T10:00:00Z","end":"2025-06-20T11:00:00Z","value":40}]}`, status: 400, field: "commands[0].end"},
		{name: "schedule value out of range", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules", token: tokGridOperator, ctype: "application/json",
			body: `{"commands":[{"command":"opModMaxLimW","start":"2025-06-21T16:00:00Z","end":"2025-06-21T17:00:00Z","value":4000}]}`, status: 400, field: "commands[0].value"},
		{name: "volt-var in volts without unit", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules", token: tokGridOperator, ctype: "application/json",
			body: `{"commands":[{"command":"opModVoltVar","start":"2025-06-21T16:00:00Z","end":"2025-06-21T17:00:00Z","curve":{"points":[{"x":207,"y":44},{"x":253,"y":-44}]}}]}`, status: 400, field: "commands[0].curve.points[0]"},
		{name: "power factor in %", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules", token: tokGridOperator, ctype: "application/json",
			body: `{"commands":[{"command":"opModFixedPFInjectW","start":"2025-06-21T16:00:00Z","end":"2025-06-21T17:00:00Z","value":95,"unit":"%"}]}`, status: 400, field: "commands[0].unit"},
		{name: "schedule duplicate key", method: "POST", path: "/gridcontrol/v1/plants/demo/schedules", token: tokGridOperator, ctype: "application/json",
			body: `{"commands":[{"command":"opModMaxLimW","start":"2025-06-21T16:00:00Z","end":"2025-06-21T17:00:00Z","value":40,"value":100}]}`, status: 400, field: "commands[0].value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			req, _ := http.NewRequest(tt.method, e.ts.URL+tt.path, body)
			switch tt.token {
			case "":
			case "-basic":
				req.SetBasicAuth("a", "b")
			default:
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if tt.header != "" && !strings.Contains(resp.Header.Get(tt.header), tt.headerWant) {
				t.Errorf("%s = %q, want it to contain %q", tt.header, resp.Header.Get(tt.header), tt.headerWant)
			}
			p := readProblem(t, resp, tt.status)
			if tt.field != "" && (len(p.Errors) == 0 || p.Errors[0].Field != tt.field) {
				t.Errorf("errors %+v, want field %q", p.Errors, tt.field)
			}
		})
	}
}

// TestPanicIs500 checks that a panicking handler answers a logged 500
// problem with the request id and that the server stays up.
func TestPanicIs500(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	var logBuf proctest.Buffer
	e.srv.log = slog.New(slog.NewTextHandler(&logBuf, nil))
	e.srv.engine.GET("/panic", func(*gin.Context) { panic("boom") })
	req, _ := http.NewRequest("GET", e.ts.URL+"/panic", nil)
	req.Header.Set("X-Request-Id", "req-123")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	p := readProblem(t, resp, 500)
	if p.RequestID != "req-123" || !strings.Contains(p.Detail, "req-123") {
		t.Errorf("problem %+v lacks the request id", p)
	}
	if l := logBuf.String(); !strings.Contains(l, "requestId=req-123") || !strings.Contains(l, "panic=boom") {
		t.Errorf("panic not logged with the request id: %q", l)
	}
	var v any
	e.getJSON("/monitoring/v1/plants", &v) // still up
}

// TestEligibility checks the eligibility rules on device lists built from
// the simulated plant's discovered devices.
func TestEligibility(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	all, err := e.live.Devices("demo")
	if err != nil {
		t.Fatal(err)
	}
	pick := func(ids ...string) []plant.DeviceLive {
		var out []plant.DeviceLive
		for _, d := range all {
			if slices.Contains(ids, d.Info.ID) {
				out = append(out, d)
			}
		}
		return out
	}
	deactivated := pick("inv1", "meter")
	deactivated[0].Info.DeactivatedAt = time.Now()
	undiscovered := pick("inv2")
	undiscovered[0].Discovered = nil
	tests := []struct {
		name, command string
		devs          []plant.DeviceLive
		eligible      bool
		reason        string
	}{
		{"limit on classic", "opModMaxLimW", pick("inv1"), true, ""},
		{"limit on der", "opModMaxLimW", pick("inv2"), true, ""},
		{"feed-in limit needs a meter", "FeedInLimit", pick("inv1", "inv2"), false, "NoGridMeter"},
		{"feed-in limit with meter", "FeedInLimit", pick("inv1", "meter"), true, ""},
		{"disconnect classic only", "OpModDisconnect", pick("inv2"), false, "NotOfferedOnNewerPlatform"},
		{"disconnect classic", "OpModDisconnect", pick("inv1"), true, ""},
		{"deactivated inverter", "opModMaxLimW", deactivated, false, "NoActiveInverter"},
		{"not discovered", "opModVoltVar", undiscovered, false, "DevicesNotDiscovered"},
		{"no inverter", "opModVoltWatt", pick("meter", "bat", "wx"), false, "NoActiveInverter"},
	}
	for _, tt := range tests {
		cmd, ok := gridcontrol.CommandByName(tt.command)
		if !ok {
			t.Fatalf("unknown command %s", tt.command)
		}
		got := gridcontrol.Eligible(cmd, tt.devs)
		if got.Eligible != tt.eligible || (tt.reason != "" && (len(got.Reasons) == 0 || got.Reasons[0].Code != tt.reason)) {
			t.Errorf("%s: %+v, want eligible=%v reason %s", tt.name, got, tt.eligible, tt.reason)
		}
	}
}

// TestRateLimit: a token's bucket empties, 429 with Retry-After, and the
// bucket of another token is unaffected.
func TestRateLimit(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1, rate: config.RateLimit{RequestsPerSecond: 1, Burst: 3}})
	for i := range 3 {
		resp := e.do("GET", "/live/v2/plants/demo/devices", tokStandard, "", "")
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	resp := e.do("GET", "/live/v2/plants/demo/devices", tokStandard, "", "")
	if ra := resp.Header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After %q, want 1", ra)
	}
	readProblem(t, resp, 429)
	resp = e.do("GET", "/live/v2/plants/demo/devices", tokInstaller, "", "")
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("other token: %d", resp.StatusCode)
	}
	e.clock.Add(time.Second) // one request refilled
	resp = e.do("GET", "/live/v2/plants/demo/devices", tokStandard, "", "")
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("after refill: %d", resp.StatusCode)
	}
}

// TestMigrated checks 308 with an empty body and Location keeping the
// query, for plant and device ids, and the body correction of
// eligibilityCheck.
func TestMigrated(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	tests := []struct{ path, loc string }{
		{"/monitoring/v1/plants/7190000/measurements/sets/EnergyBalance/Day?Date=2025-06-21&WithTotal=true",
			"/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/Day?Date=2025-06-21&WithTotal=true"},
		{"/monitoring/v1/devices/old-inv1/measurements/sets/PowerAc?x=%20y", "/monitoring/v1/devices/inv1/measurements/sets/PowerAc?x=%20y"},
		{"/live/v1/plants/7190000/devices", "/live/v1/plants/demo/devices"},
		{"/gridcontrol/v1/plants/7190000/schedules", "/gridcontrol/v1/plants/demo/schedules"},
	}
	for _, tt := range tests {
		resp := e.do("GET", tt.path, tokInstaller, "", "")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 308 || len(b) != 0 || resp.Header.Get("Location") != tt.loc {
			t.Errorf("%s: %d %q body %q, want 308 %q", tt.path, resp.StatusCode, resp.Header.Get("Location"), b, tt.loc)
		}
	}
	// A client that follows the redirect gets the data.
	req, _ := http.NewRequest("GET", e.ts.URL+"/live/v2/plants/7190000/devices", nil)
	req.Header.Set("Authorization", "Bearer "+tokStandard)
	fr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Plant struct{ PlantID string } }
	_ = json.NewDecoder(fr.Body).Decode(&v)
	fr.Body.Close()
	if fr.StatusCode != 200 || v.Plant.PlantID != "demo" {
		t.Errorf("followed redirect: %d plant %q", fr.StatusCode, v.Plant.PlantID)
	}
	resp := e.do("POST", "/gridcontrol/v1/plants/eligibilityCheck", tokStandard, "application/json", `{"plantId":"7190000","commands":["opModMaxLimW"]}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"plantId":"demo"`) || !strings.Contains(string(b), `"eligible":true`) {
		t.Errorf("eligibilityCheck on a migrated id: %d %s", resp.StatusCode, b)
	}
}

// TestOAuth gets a token with client_credentials (form and Basic), uses
// it, and checks that it expires.
func TestOAuth(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	for _, basic := range []bool{false, true} {
		body := "grant_type=client_credentials&client_id=" + oauthID + "&client_secret=" + oauthSecret
		req, _ := http.NewRequest("POST", e.ts.URL+"/oauth2/token", nil)
		if basic {
			body = "grant_type=client_credentials"
			req.SetBasicAuth(oauthID, oauthSecret)
		}
		req.Body = io.NopCloser(strings.NewReader(body))
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var tok oauth2.TokenResponse
		_ = json.NewDecoder(resp.Body).Decode(&tok)
		resp.Body.Close()
		if resp.StatusCode != 200 || tok.TokenType != "Bearer" || tok.ExpiresIn != 300 || tok.AccessToken == "" || tok.Scope != "standard" {
			t.Fatalf("token: %d %+v", resp.StatusCode, tok)
		}
		r := e.do("GET", "/monitoring/v1/plants", tok.AccessToken, "", "")
		r.Body.Close()
		if r.StatusCode != 200 {
			t.Errorf("issued token: %d", r.StatusCode)
		}
		r = e.do("GET", "/monitoring/v1/plants/demo/logs", tok.AccessToken, "", "")
		readProblem(t, r, 403) // standard role
		e.clock.Add(301 * time.Second)
		r = e.do("GET", "/monitoring/v1/plants", tok.AccessToken, "", "")
		readProblem(t, r, 401)
	}
}

// TestMeasurementSetShapes checks plant-local times, periods in any case,
// resolutions, totals, omitted fields and the device heading.
func TestMeasurementSetShapes(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{})
	type set struct {
		Plant      struct{ PlantID, Timezone string }
		Device     *struct{ DeviceID string }
		SetType    string
		Resolution string
		Set        []map[string]any
		Total      map[string]any
	}
	tests := []struct {
		path, res string
		first     string // time of the first row: the end of a sub-day interval, the date of a longer one
		total     bool
		field     string
	}{
		{"/monitoring/v1/devices/inv1/measurements/sets/PowerAc/dAY?Date=2025-06-21&WithTotal=true", "FiveMinutes", "2025-06-21T00:05:00", true, "activePower"},
		{"/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/Week?date=2025-06-21&WithTotal=TRUE", "OneHour", "2025-06-21T01:00:00", true, "pvGeneration"},
		{"/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/Week?Date=2025-06-21", "FifteenMinutes", "2025-06-21T00:15:00", false, "pvGeneration"},
		{"/monitoring/v1/devices/bat/measurements/sets/EnergyAndPowerBattery/month?Date=2025-06", "OneDay", "2025-06-21T00:00:00", false, "batteryStateOfCharge"},
		{"/monitoring/v1/devices/wx/measurements/sets/Sensor/Year?Date=2025", "OneMonth", "2025-06-01T00:00:00", false, "externalInsolation"},
		{"/monitoring/v1/devices/inv1/measurements/sets/PowerDc/total", "OneYear", "2025-01-01T00:00:00", false, "dcPowerInput"},
		{"/monitoring/v1/devices/inv1/measurement/sets/EnergyMix/Day?Date=2025-06-21", "FiveMinutes", "2025-06-21T00:05:00", false, "totalConsumption"},
	}
	for _, tt := range tests {
		var s set
		e.getJSON(tt.path, &s)
		if s.Plant.PlantID != "demo" || s.Plant.Timezone != "Europe/Berlin" || s.Resolution != tt.res || len(s.Set) == 0 {
			t.Errorf("%s: plant %+v resolution %s rows %d", tt.path, s.Plant, s.Resolution, len(s.Set))
			continue
		}
		if strings.Contains(tt.path, "/devices/") && s.Device == nil {
			t.Errorf("%s: no device heading", tt.path)
		}
		if s.Set[0]["time"] != tt.first {
			t.Errorf("%s: first time %v, want %s (plant-local, no offset)", tt.path, s.Set[0]["time"], tt.first)
		}
		if _, ok := s.Set[len(s.Set)-1][tt.field]; !ok {
			t.Errorf("%s: last row lacks %s: %v", tt.path, tt.field, s.Set[len(s.Set)-1])
		}
		if (s.Total != nil) != tt.total {
			t.Errorf("%s: total %v, want present=%v", tt.path, s.Total, tt.total)
		}
		for _, r := range s.Set {
			for k, v := range r {
				if v == nil {
					t.Errorf("%s: %s is null", tt.path, k)
				}
			}
			if tm, _ := r["time"].(string); strings.ContainsAny(tm[10:], "Z+") {
				t.Errorf("%s: time %q has an offset", tt.path, tm)
			}
		}
	}
	// The last poll (14:00 Berlin) falls in the interval 14:00..14:05,
	// labelled with its end, local time.
	var s set
	e.getJSON("/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/Day?Date=2025-06-21", &s)
	if got := s.Set[len(s.Set)-1]["time"]; got != "2025-06-21T14:05:00" {
		t.Errorf("last Day row at %v, want 2025-06-21T14:05:00", got)
	}
	// Recent is one row of the newest values, whatever the case of the
	// set type and period.
	for _, p := range []string{
		"/monitoring/v1/devices/bat/measurements/sets/EnergyAndPowerBattery/Recent",
		"/monitoring/v1/devices/bat/measurements/sets/energyandpowerbattery/recent",
		"/monitoring/v1/devices/bat/measurements/sets/ENERGYANDPOWERBATTERY",
	} {
		e.getJSON(p, &s)
		if len(s.Set) != 1 || s.SetType != "EnergyAndPowerBattery" {
			t.Errorf("%s: %d rows of %s, want 1 of EnergyAndPowerBattery", p, len(s.Set), s.SetType)
			continue
		}
		if _, ok := s.Set[0]["batteryStateOfCharge"]; !ok {
			t.Errorf("%s: set[0] lacks batteryStateOfCharge: %v", p, s.Set[0])
		}
	}
	// A plant-local day: the day before holds nothing.
	e.getJSON("/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/Day?Date=2025-06-20", &s)
	if len(s.Set) != 0 {
		t.Errorf("2025-06-20 has %d rows", len(s.Set))
	}
}

// TestLiveAndPartial: the live balance has error null while every device
// answers; with the newer-platform (DER) devices offline (inverter and
// battery) the balance names them, the device lists show their health and
// the plant list is partial for the newer platform (the classic devices
// still answer).
func TestLiveAndPartial(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 3})
	type live struct {
		Set   []map[string]any
		Error *struct {
			Code    string
			Devices []struct{ DeviceID, Reason string }
		}
	}
	var l live
	e.getJSON("/live/v1/plants/demo/measurements/sets/EnergyBalance", &l)
	if l.Error != nil || len(l.Set) != 1 || l.Set[0]["pvGeneration"] == nil {
		t.Fatalf("live balance %+v", l)
	}
	var pl struct{ Partial *partialJSON }
	e.getJSON("/monitoring/v1/plants", &pl)
	if pl.Partial != nil {
		t.Errorf("partial %+v with every device up", pl.Partial)
	}
	for _, d := range e.devs {
		if d.info.Platform == sunspec.PlatformDER { // inv2 and bat
			d.dev.SetFault(sim.Fault{Kind: sim.FaultOffline})
		}
	}
	for range 3 {
		e.clock.Add(time.Minute)
		e.pollAll()
	}
	e.getJSON("/live/v1/plants/demo/measurements/sets/EnergyBalance", &l)
	if l.Error == nil || len(l.Error.Devices) != 2 || l.Error.Devices[0].DeviceID != "inv2" || l.Error.Devices[1].DeviceID != "bat" {
		t.Errorf("live balance error %+v, want inv2 and bat named", l.Error)
	}
	e.getJSON("/monitoring/v1/plants", &pl)
	if pl.Partial == nil || len(pl.Partial.Missing) != 1 || pl.Partial.Missing[0] != "newer" {
		t.Errorf("partial %+v, want newer missing", pl.Partial)
	}
	var v2, v1 struct{ Devices []liveDeviceJSON }
	e.getJSON("/live/v2/plants/demo/devices", &v2)
	e.getJSON("/live/v1/plants/demo/devices", &v1)
	for i, d := range v2.Devices {
		if d.DeviceID == "inv2" && (d.HealthStatus == "Ok" || v1.Devices[i].HealthStatus != "Inactive") {
			t.Errorf("offline inv2: v2 %s v1 %s", d.HealthStatus, v1.Devices[i].HealthStatus)
		}
		if d.HealthStatus == "" {
			t.Errorf("%s: empty v2 health", d.DeviceID)
		}
	}
	var comm struct{ Devices []commJSON }
	e.getJSON("/monitoring/v1/plants/demo/communication", &comm)
	for _, d := range comm.Devices {
		if d.DeviceID == "inv2" && (d.Status == "Ok" || d.LastError == "") {
			t.Errorf("inv2 communication %+v", d)
		}
	}
	// The failed polls are in the device's log.
	resp := e.do("GET", "/monitoring/v1/devices/inv2/logs?limit=1", tokInstaller, "", "")
	var lg struct {
		Logs []logJSON
		Next string
	}
	_ = json.NewDecoder(resp.Body).Decode(&lg)
	resp.Body.Close()
	if len(lg.Logs) != 1 || lg.Logs[0].Code != "PollFailed" || lg.Next == "" {
		t.Errorf("device logs %+v", lg)
	}
	// /healthz: Degraded, still 200, with two unreachable; /readyz: every
	// device has answered once, so ready.
	resp = e.do("GET", "/healthz", "", "", "")
	var h struct {
		Status  string
		Devices struct{ Unreachable int }
	}
	_ = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if resp.StatusCode != 200 || h.Status != "Degraded" || h.Devices.Unreachable != 2 {
		t.Errorf("healthz %d %+v, want 200 Degraded with 2 unreachable", resp.StatusCode, h)
	}
	resp = e.do("GET", "/readyz", "", "", "")
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("readyz %d, want 200", resp.StatusCode)
	}
}

// TestCachingAndGzip: ETag/304 on monitoring sets; gzip for large ones.
func TestCachingAndGzip(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 97, step: 5 * time.Minute})
	path := "/monitoring/v1/devices/meter/measurements/sets/PowerAc/Day?Date=2025-06-21"
	req, _ := http.NewRequest("GET", e.ts.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+tokStandard)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("Content-Encoding %q for %d bytes", resp.Header.Get("Content-Encoding"), len(raw))
	} else {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.NewDecoder(zr).Decode(&v); err != nil || v["setType"] != "PowerAc" {
			t.Errorf("gzipped body: %v %v", err, v["setType"])
		}
	}
	tag := resp.Header.Get("ETag")
	if tag == "" {
		t.Fatal("no ETag")
	}
	req.Header.Set("If-None-Match", tag)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", resp.StatusCode)
	}
}

// TestOpsLoopbackOnly: /healthz and /metrics answer loopback clients only.
func TestOpsLoopbackOnly(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		rec := newRecorder(e, "GET", p, "10.0.0.7:5555")
		if rec.Code != 403 {
			t.Errorf("%s from 10.0.0.7: %d", p, rec.Code)
		}
		rec = newRecorder(e, "GET", p, "127.0.0.1:5555")
		if rec.Code != 200 {
			t.Errorf("%s from loopback: %d", p, rec.Code)
		}
	}
	// /metrics counts requests by route template.
	resp := e.do("GET", "/metrics", "", "", "")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `plantd_http_requests_total{method="GET",route="/healthz",status="200"}`) {
		t.Errorf("metrics lack the healthz count:\n%.2000s", b)
	}
	e.hist.mu.Lock()
	e.hist.healthErr = io.ErrUnexpectedEOF
	e.hist.mu.Unlock()
	if rec := newRecorder(e, "GET", "/healthz", "127.0.0.1:1"); rec.Code != 503 {
		t.Errorf("unhealthy storage: %d", rec.Code)
	}
	if rec := newRecorder(e, "GET", "/readyz", "127.0.0.1:1"); rec.Code != 503 || !strings.Contains(rec.Body.String(), "storage") {
		t.Errorf("readyz with unhealthy storage: %d %s", rec.Code, rec.Body)
	}
}

// TestRunShutdown serves on a real listener and shuts down gracefully.
func TestRunShutdown(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, ln) }()
	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/live/v1/plants/demo/measurements/sets/EnergyBalance", nil)
	req.Header.Set("Authorization", "Bearer "+tokStandard)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("status %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second): // only ends a Serve that hangs
		t.Fatal("no shutdown")
	}
}

// TestNewValidates rejects bad configs and missing deps.
func TestNewValidates(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	good := Deps{Live: e.live, History: e.hist}
	tests := []struct {
		name string
		cfg  func(*Config)
		deps Deps
	}{
		{"no live", nil, Deps{History: e.hist}},
		{"no history", nil, Deps{Live: e.live}},
		{"bad hash", func(c *Config) { c.Tokens[0].SHA256 = "abc" }, good},
		{"bad role", func(c *Config) { c.Tokens[0].Role = "admin" }, good},
		{"cert without key", func(c *Config) { c.TLSCert = "x.pem" }, good},
	}
	for _, tt := range tests {
		cfg := testConfig(config.RateLimit{})
		if tt.cfg != nil {
			tt.cfg(&cfg)
		}
		if _, err := New(cfg, tt.deps, nil); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

// TestSetCredentials replaces tokens and clients on a running server (a
// config reload): a removed token and the access tokens of a removed
// client stop working at once, a new token works, a bad list is refused
// and the old credentials stay.
func TestSetCredentials(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	get := func(tok string) int {
		r := e.do("GET", "/monitoring/v1/plants", tok, "", "")
		r.Body.Close()
		return r.StatusCode
	}
	body := "grant_type=client_credentials&client_id=" + oauthID + "&client_secret=" + oauthSecret
	r := e.do("POST", "/oauth2/token", "", "application/x-www-form-urlencoded", body)
	var tok oauth2.TokenResponse
	_ = json.NewDecoder(r.Body).Decode(&tok)
	r.Body.Close()
	if r.StatusCode != 200 || get(tok.AccessToken) != 200 {
		t.Fatalf("token: %d %+v", r.StatusCode, tok)
	}

	if err := e.srv.SetCredentials([]config.Token{{Name: "x", SHA256: "not hex", Role: config.RoleStandard}}, nil); err == nil {
		t.Fatal("SetCredentials took a bad hash")
	}
	if get(tokStandard) != 200 || get(tok.AccessToken) != 200 {
		t.Fatal("a refused SetCredentials changed the credentials")
	}

	const newTok = "a-new-token-of-the-reloaded-config"
	if err := e.srv.SetCredentials([]config.Token{{Name: "new", SHA256: config.TokenHash(newTok), Role: config.RoleStandard}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, tok string
		want      int
	}{{"removed token", tokStandard, 401}, {"access token of a removed client", tok.AccessToken, 401}, {"added token", newTok, 200}} {
		if got := get(c.tok); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// TestRecurringSchedule: a recurring command over the API: the 201 and
// the list carry its spec, its current window and the next ones; the
// audit appears with include=finished only; DELETE cancels it (204, the
// window listed cancelled, no next one), an installer may not cancel a
// grid operator's (403).
func TestRecurringSchedule(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	post := func(token string) string {
		t.Helper()
		resp := e.do("POST", "/gridcontrol/v1/plants/demo/schedules?skipEligibilityCheck=true", token, "application/json",
			`{"commands":[{"command":"opModMaxLimW","repeat":"0 11 * * *","duration":"4h","value":60}]}`)
		defer resp.Body.Close()
		var out struct{ Schedule gridcontrol.Schedule }
		if resp.StatusCode != 201 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("POST: %d %s", resp.StatusCode, b)
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		c := out.Schedule.Commands[0]
		if c.Repeat != "0 11 * * *" || c.Duration != "4h" || c.End.Sub(c.Start) != 4*time.Hour || c.Start.UTC().Hour() != 11 || len(c.Next) != 3 {
			t.Fatalf("201 command: %+v", c)
		}
		return out.Schedule.ScheduleID
	}
	list := func(query string) map[string]map[string]json.RawMessage {
		t.Helper()
		var out struct {
			Schedules []struct {
				ScheduleID string                       `json:"scheduleId"`
				Commands   []map[string]json.RawMessage `json:"commands"`
			}
		}
		e.getJSON("/gridcontrol/v1/plants/demo/schedules"+query, &out)
		m := map[string]map[string]json.RawMessage{}
		for _, s := range out.Schedules {
			m[s.ScheduleID] = s.Commands[0]
		}
		return m
	}
	inst := post(tokInstaller)
	op := post(tokGridOperator)
	for _, q := range []string{"", "?include=finished"} {
		c := list(q)[inst]
		if string(c["repeat"]) != `"0 11 * * *"` || c["next"] == nil || c["status"] == nil {
			t.Fatalf("list%s: %v", q, c)
		}
	}
	if resp := e.do("DELETE", "/gridcontrol/v1/plants/demo/schedules/"+op, tokInstaller, "", ""); resp.StatusCode != 403 {
		t.Fatalf("installer cancels the grid operator's: %d", resp.StatusCode)
	}
	if resp := e.do("DELETE", "/gridcontrol/v1/plants/demo/schedules/"+inst, tokInstaller, "", ""); resp.StatusCode != 204 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	c := list("")[inst]
	if string(c["cancelled"]) != "true" || c["next"] != nil {
		t.Fatalf("after DELETE: %v", c)
	}
	if c := list("")[op]; c["cancelled"] != nil {
		t.Fatalf("the grid operator's schedule was cancelled too: %v", c)
	}
}
