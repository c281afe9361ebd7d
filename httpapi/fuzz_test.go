package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequest sends arbitrary paths, queries, bodies and content types
// through the whole handler (auth, routing, id resolution, parameter and
// body parsing, rendering): nothing may panic or answer 5xx; every error
// is problem-JSON, those of the token endpoint RFC 6749 §5.2 JSON.
func FuzzRequest(f *testing.F) {
	seeds := []struct {
		method      uint8
		path, query string
		ctype, body string
	}{
		{0, "/monitoring/v1/plants", "", "", ""},
		{0, "/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/Day", "Date=2025-06-21&WithTotal=true", "", ""},
		{0, "/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/week", "date=2025-06-16&ReturnEnergyValues=TRUE", "", ""},
		{0, "/monitoring/v1/devices/inv1/measurements/sets/PowerAc/Month", "Date=2025-06", "", ""},
		{0, "/monitoring/v1/devices/inv1/measurement/sets/EnergyMix/Year", "Date=2025", "", ""},
		{0, "/monitoring/v1/devices/old-inv1/measurements/sets/PowerDc/total", "x=%zz", "", ""},
		{0, "/monitoring/v1/plants/demo/logs", "From=2025-06-21T00:00:00Z&To=2025-06-22T00:00:00Z&limit=5&cursor=2", "", ""},
		{0, "/gridcontrol/v1/plants/7190000/settings/activePowerGridSettings", "", "", ""},
		{0, "/live/v2/plants/demo/devices", "", "", ""},
		{1, "/gridcontrol/v1/plants/eligibilityCheck", "", "application/json", `{"plantId":"demo","commands":["FeedInLimit"]}`},
		{1, "/gridcontrol/v1/plants/eligibleCommands", "", "application/json", `{"serialNumber":"SIM-inv2"}`},
		{1, "/gridcontrol/v1/plants/demo/schedules", "skipEligibilityCheck=false", "application/json",
			`{"commands":[{"command":"opModMaxLimW","start":"2025-06-21T10:00:00Z","end":"2025-06-21T11:00:00Z","value":1}]}`},
		{1, "/oauth2/token", "", "application/x-www-form-urlencoded", "grant_type=client_credentials&client_id=cloud&client_secret=cloud-secret"},
		{2, "/monitoring/v1/plants/demo", "", "text/plain", "\x00\xff"},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.query, s.ctype, s.body)
	}
	e := newEnv(f, envOpts{polls: 5})
	h := e.srv.Handler()
	methods := []string{"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"}
	f.Fuzz(func(t *testing.T, method uint8, path, query, ctype, body string) {
		m := methods[int(method)%len(methods)]
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		target := path
		if query != "" {
			target += "?" + query
		}
		req, err := http.NewRequest(m, "http://plantd"+target, strings.NewReader(body))
		if err != nil {
			return
		}
		req.RemoteAddr = "127.0.0.1:40000"
		req.Header.Set("Authorization", "Bearer "+tokGridOperator)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		route := req.URL.Path
		if rec.Code >= 500 && !(rec.Code == http.StatusServiceUnavailable && (route == "/healthz" || route == "/readyz")) {
			t.Fatalf("%s %s: %d %s", m, target, rec.Code, rec.Body.String())
		}
		if rec.Code >= 400 && route == "/oauth2/token" && m == "POST" {
			// RFC 6749 §5.2 errors.
			var oe struct{ Error string }
			if !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") || json.Unmarshal(rec.Body.Bytes(), &oe) != nil || oe.Error == "" {
				t.Fatalf("%s %s: %d %q %s", m, target, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
			}
		} else if rec.Code >= 400 && rec.Header().Get("Content-Type") != contentTypeProblem {
			t.Fatalf("%s %s: %d with content type %q", m, target, rec.Code, rec.Header().Get("Content-Type"))
		}
	})
}
