package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"plantd/config"
	"plantd/httpapi/oauth2"
	"plantd/httpapi/oauth2/oauthconfig"
)

// The authorization server's behaviour (grants, consent flows, pools, the
// failed-login guard) is tested in package oauth2, on a server of its
// own. These tests check how the API mounts it: its answers against the
// API's OpenAPI document, and its failed logins in /metrics.

// TestOAuthAgainstOpenAPI validates the answers of the OAuth2 endpoints,
// the back-channel consent and the owner's consent routes (success and
// errors) against /openapi.json.
func TestOAuthAgainstOpenAPI(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	const (
		appID       = "app"
		appSecret   = "app-secret-0123456789abcdef0123456789abcdef"
		appRedirect = "https://app.example.com/cb"
	)
	e := newEnv(t, envOpts{polls: 1, modify: func(c *Config) {
		c.OAuthClients = append(c.OAuthClients, oauthconfig.Client{ClientID: appID, SecretSHA256: config.TokenHash(appSecret),
			Role: config.RoleStandard, RedirectURIs: []string{appRedirect}})
	}})
	v := newValidator(t, e)
	type answer struct {
		status int
		header http.Header
		json   map[string]any
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(req *http.Request) answer {
		t.Helper()
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		a := answer{status: resp.StatusCode, header: resp.Header}
		_ = json.Unmarshal(v.check(req, resp), &a.json)
		return a
	}
	str := func(a answer, k string) string { s, _ := a.json[k].(string); return s }
	formReq := func(path string, f url.Values, user, pass string) *http.Request {
		req, _ := http.NewRequest("POST", e.ts.URL+path, strings.NewReader(f.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		return req
	}
	authed := func(method, path, tok, body string) *http.Request {
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, e.ts.URL+path, r)
		req.Header.Set("Authorization", "Bearer "+tok)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		return req
	}
	get := func(path string) *http.Request { r, _ := http.NewRequest("GET", e.ts.URL+path, nil); return r }

	// The code flow and the token and revocation endpoints. (kin-openapi
	// cannot decode the waiting page's text/html.)
	q := url.Values{"response_type": {"code"}, "client_id": {appID}, "redirect_uri": {appRedirect}, "state": {"s"}, "scope": {"offline_access"}}
	resp, err := noRedirect.Get(e.ts.URL + "/oauth2/auth?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("X-Consent-Id")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("authorize: %d", resp.StatusCode)
	}
	send(get("/oauth2/auth?client_id=nobody"))
	if a := send(authed("GET", "/gateway/v1/consents", tokInstaller, "")); a.status != 200 {
		t.Fatalf("consents: %d", a.status)
	}
	send(authed("POST", "/gateway/v1/consents/"+id+"/approve", tokStandard, "")) // 403
	send(authed("POST", "/gateway/v1/consents/nope/approve", tokInstaller, ""))  // 404
	if a := send(authed("POST", "/gateway/v1/consents/"+id+"/approve", tokInstaller, "")); a.status != 200 {
		t.Fatalf("approve: %d", a.status)
	}
	send(authed("POST", "/gateway/v1/consents/"+id+"/reject", tokInstaller, "")) // 409
	red := send(get("/oauth2/auth/" + id))
	loc, _ := url.Parse(red.header.Get("Location"))
	code := loc.Query().Get("code")
	if red.status != http.StatusFound || code == "" {
		t.Fatalf("redirect after approval: %d %s", red.status, loc)
	}
	send(get("/oauth2/auth/" + id))
	codeForm := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {appRedirect}}
	tok := send(formReq("/oauth2/token", codeForm, appID, appSecret))
	send(formReq("/oauth2/token", codeForm, appID, appSecret))
	send(formReq("/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {str(tok, "refresh_token")}}, appID, "x"))
	send(formReq("/oauth2/revoke", url.Values{"token": {str(tok, "refresh_token")}}, appID, appSecret))
	send(formReq("/oauth2/revoke", url.Values{"token": {"x"}, "token_type_hint": {"x"}}, appID, appSecret))

	// The back-channel consent.
	cc := send(formReq("/oauth2/token", url.Values{"grant_type": {"client_credentials"}}, appID, appSecret))
	acc := str(cc, "access_token")
	if a := send(authed("POST", "/oauth2/v2/bc-authorize", acc, `{"loginHint":"owner@example.com"}`)); str(a, "state") != oauth2.StatePending {
		t.Fatalf("bc-authorize: %d %v", a.status, a.json)
	}
	send(authed("GET", "/oauth2/v2/bc-authorize/owner@example.com", acc, ""))
	send(authed("POST", "/oauth2/v2/bc-authorize", acc, `{"loginHint":""}`))           // 400
	send(authed("GET", "/oauth2/v2/bc-authorize/nobody", acc, ""))                     // 404
	send(authed("POST", "/oauth2/v2/bc-authorize", tokInstaller, `{"loginHint":"x"}`)) // 403
}

// TestAuthFailuresInMetrics: the failed logins the authorization server
// reports (oauth2.Host.AuthFailure) are the API's
// plantd_auth_failures_total, by reason.
func TestAuthFailuresInMetrics(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1, modify: func(c *Config) {
		c.FailedLogins = FailedLogins{Burst: 1, Every: time.Hour}
	}})
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}}}
	}
	wrong := url.Values{"grant_type": {"client_credentials"}, "client_id": {oauthID}, "client_secret": {"wrong"}}.Encode()
	for i, want := range []int{401, 429, 429} { // invalid_client, then rate_limited twice
		resp, err := from("127.0.0.1").Post(e.ts.URL+"/oauth2/token", "application/x-www-form-urlencoded", strings.NewReader(wrong))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("wrong secret %d: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
	req, _ := http.NewRequest("GET", e.ts.URL+"/monitoring/v1/plants", nil)
	req.Header.Set("Authorization", "Bearer no-such-token")
	resp, err := from("127.0.0.2").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("unknown bearer token: %d", resp.StatusCode)
	}
	resp, err = http.Get(e.ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`plantd_auth_failures_total{reason="invalid_client"} 1`,
		`plantd_auth_failures_total{reason="rate_limited"} 2`, `plantd_auth_failures_total{reason="invalid_token"} 1`} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
}
