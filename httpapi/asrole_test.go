package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAsRole: a request served through AsRole answers like the same
// request over the network with a token of that role (byte for byte but
// for the schedule's id, creation time and credential, which name the
// request), and the role is enforced; network requests cannot borrow it.
func TestAsRole(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	const body = `{"commands":[{"command":"opModMaxLimW","start":"2025-06-21T10:00:00Z","end":"2025-06-21T11:00:00Z","value":50}]}`
	for _, tc := range []struct {
		role, token string
		status      int
	}{
		{"installer", tokInstaller, 0},
		{"standard", tokStandard, http.StatusForbidden},
	} {
		h, err := e.srv.AsRole("cloud", tc.role)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("POST", "/gridcontrol/v1/plants/demo/schedules", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", "r-1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		hreq, _ := http.NewRequest("POST", e.ts.URL+"/gridcontrol/v1/plants/demo/schedules", strings.NewReader(body))
		hreq.Header.Set("Content-Type", "application/json")
		hreq.Header.Set("X-Request-Id", "r-1")
		hreq.Header.Set("Authorization", "Bearer "+tc.token)
		resp, err := http.DefaultClient.Do(hreq)
		if err != nil {
			t.Fatal(err)
		}
		hb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rec.Code != resp.StatusCode || requestNeutral(t, rec.Body.Bytes()) != requestNeutral(t, hb) {
			t.Errorf("role %s: in process %d %s, over HTTP %d %s", tc.role, rec.Code, rec.Body, resp.StatusCode, hb)
		}
		var ans struct{ Schedule struct{ CreatedBy string } }
		if err := json.Unmarshal(rec.Body.Bytes(), &ans); err == nil && rec.Code == http.StatusCreated && ans.Schedule.CreatedBy != "cloud ("+tc.role+")" {
			t.Errorf("role %s: createdBy %q", tc.role, ans.Schedule.CreatedBy)
		}
		if tc.status != 0 && rec.Code != tc.status {
			t.Errorf("role %s: status %d, want %d", tc.role, rec.Code, tc.status)
		}
		t.Logf("role %s: %d %s", tc.role, rec.Code, rec.Body)
	}
	if _, err := e.srv.AsRole("cloud", "root"); err == nil {
		t.Error("unknown role accepted")
	}
	// Without a token the network still gets 401.
	if resp := e.do("POST", "/gridcontrol/v1/plants/demo/schedules", "", "application/json", body); resp.StatusCode != 401 {
		t.Errorf("no token: %d", resp.StatusCode)
	}
}

// requestNeutral is an answer as canonical JSON without the fields that
// differ between two submissions of one schedule.
func requestNeutral(t *testing.T, body []byte) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("answer %s: %v", body, err)
	}
	if sc, ok := v["schedule"].(map[string]any); ok {
		delete(sc, "scheduleId")
		delete(sc, "createdAt")
		delete(sc, "createdBy")
	}
	b, _ := json.Marshal(v)
	return string(b)
}
