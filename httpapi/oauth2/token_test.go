package oauth2_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"plantd/httpapi/oauth2"
)

// TestOAuthErrors: every error of the token endpoint is RFC 6749 §5.2
// (application/json, error and error_description, no-store); two client
// authentication methods at once are refused; a requested scope is
// honoured or refused, never ignored.
func TestOAuthErrors(t *testing.T) {
	t.Parallel() // its own server
	e := newEnv(t, envOpts{})
	const form = "application/x-www-form-urlencoded"
	cred := "&client_id=" + oauthID + "&client_secret=" + oauthSecret
	for _, tt := range []struct {
		name, ctype, body string
		basic             bool
		status            int
		errCode           string // "" = success
		scope             string // of a success
	}{
		{name: "wrong secret", ctype: form, body: "grant_type=client_credentials&client_id=cloud&client_secret=x", status: 401, errCode: "invalid_client"},
		{name: "unknown client", ctype: form, body: "grant_type=client_credentials&client_id=nobody&client_secret=x", status: 401, errCode: "invalid_client"},
		{name: "no client", ctype: form, body: "grant_type=client_credentials", status: 401, errCode: "invalid_client"},
		// A client_id no client can have (control characters, separators).
		{name: "client id with ESC", ctype: form, body: "grant_type=client_credentials&client_id=x%1B%5B2J&client_secret=x", status: 400, errCode: "invalid_request"},
		{name: "client id with CR LF", ctype: form, body: "grant_type=client_credentials&client_id=x%0D%0Ay&client_secret=x", status: 400, errCode: "invalid_request"},
		{name: "client id with a colon", ctype: form, body: "grant_type=client_credentials&client_id=a%3Ab&client_secret=x", status: 400, errCode: "invalid_request"},
		{name: "client id with a quote", ctype: form, body: "grant_type=client_credentials&client_id=a%22b&client_secret=x", status: 400, errCode: "invalid_request"},
		{name: "password grant", ctype: form, body: "grant_type=password&username=a" + cred, status: 400, errCode: "unsupported_grant_type"},
		{name: "no grant type", ctype: form, body: "client_id=cloud", status: 400, errCode: "invalid_request"},
		{name: "repeated parameter", ctype: form, body: "grant_type=client_credentials&grant_type=client_credentials" + cred, status: 400, errCode: "invalid_request"},
		{name: "basic and form secret", ctype: form, body: "grant_type=client_credentials" + cred, basic: true, status: 400, errCode: "invalid_request"},
		{name: "wrong content type", ctype: "application/json", body: "{}", status: 415, errCode: "invalid_request"},
		{name: "scope above the role", ctype: form, body: "grant_type=client_credentials&scope=installer" + cred, status: 400, errCode: "invalid_scope"},
		{name: "unknown scope", ctype: form, body: "grant_type=client_credentials&scope=offline_access" + cred, status: 400, errCode: "invalid_scope"},
		{name: "scope honoured", ctype: form, body: "grant_type=client_credentials&scope=standard" + cred, status: 200, scope: "standard"},
		{name: "no scope: the client's role", ctype: form, body: "grant_type=client_credentials" + cred, status: 200, scope: "standard"},
		{name: "basic alone", ctype: form, body: "grant_type=client_credentials&client_id=" + oauthID, basic: true, status: 200, scope: "standard"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", e.ts.URL+"/oauth2/token", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", tt.ctype)
			if tt.basic {
				req.SetBasicAuth(oauthID, oauthSecret)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, b)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("content type %q", ct)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q", cc)
			}
			if tt.errCode == "" {
				var tok oauth2.TokenResponse
				if err := json.Unmarshal(b, &tok); err != nil || tok.Scope != tt.scope || tok.AccessToken == "" {
					t.Errorf("token %s, want scope %q", b, tt.scope)
				}
				return
			}
			var oe map[string]string
			dec := json.NewDecoder(bytes.NewReader(b))
			if err := dec.Decode(&oe); err != nil {
				t.Fatalf("body %s: %v", b, err)
			}
			if oe["error"] != tt.errCode || oe["error_description"] == "" || len(oe) != 2 {
				t.Errorf("body %s, want error %s with a description and nothing else", b, tt.errCode)
			}
			if tt.status == 401 && !strings.Contains(resp.Header.Get("WWW-Authenticate"), "Basic") {
				t.Errorf("401 without WWW-Authenticate Basic")
			}
		})
	}
}
