package oauth2_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"plantd/config"
	"plantd/httpapi/oauth2"
	"plantd/httpapi/oauth2/oauthconfig"
	"plantd/internal/proctest"
)

// The code-flow clients of the tests.
const (
	appID       = "app"
	appSecret   = "app-secret-0123456789abcdef0123456789abcdef"
	appRedirect = "https://app.example.com/cb?tenant=1"
	preID       = "trusted"
	preSecret   = "trusted-secret-0123456789abcdef0123456789abcd"
)

// codeEnv is an env with a code-flow client (standard role) and a
// pre-approved one (installer role).
func codeEnv(t testing.TB, o envOpts) *env {
	o.modify = func(c *oauth2.Config) {
		c.OAuthClients = append(c.OAuthClients,
			oauthconfig.Client{ClientID: appID, SecretSHA256: config.TokenHash(appSecret), Role: config.RoleStandard,
				RedirectURIs: []string{appRedirect, "http://127.0.0.1:9/cb"}},
			oauthconfig.Client{ClientID: preID, SecretSHA256: config.TokenHash(preSecret), Role: config.RoleInstaller,
				RedirectURIs: []string{"https://trusted.example.com/cb"}, PreApproved: true})
	}
	return newEnv(t, o)
}

func codeEnvB(b *testing.B) *env { return codeEnv(b, envOpts{}) }

// refreshTokenB runs the code flow to a refresh token.
func (e *env) refreshTokenB(t testing.TB) string {
	_, rt := wantToken(t, e.postForm(t, "/oauth2/token", codeForm(e.codeFor(t, nil)), appID, appSecret), "standard offline_access", true)
	return rt
}

// extract reads a string member of a JSON object.
func extract(body, key string) string {
	var m map[string]any
	_ = json.Unmarshal([]byte(body), &m)
	s, _ := m[key].(string)
	return s
}

// postForm posts a form to path, with HTTP Basic when user is not "".
func (e *env) postForm(t testing.TB, path string, form url.Values, user, pass string) answer {
	t.Helper()
	req, _ := http.NewRequest("POST", e.ts.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	return do(t, req)
}

// authorize starts an authorization request; it returns the answer (the
// waiting page or a redirect).
func (e *env) authorize(t testing.TB, q url.Values) answer {
	t.Helper()
	req, _ := http.NewRequest("GET", e.ts.URL+"/oauth2/auth?"+q.Encode(), nil)
	return do(t, req)
}

// redirected parses the Location of a 302 to the redirect URI.
func redirected(t testing.TB, a answer, want string) url.Values {
	t.Helper()
	if a.status != http.StatusFound {
		t.Fatalf("status %d, want 302: %s", a.status, a.body)
	}
	u, err := url.Parse(a.header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	base := *u
	q := u.Query()
	base.RawQuery = ""
	if w, _ := url.Parse(want); base.String() != (&url.URL{Scheme: w.Scheme, Host: w.Host, Path: w.Path}).String() {
		t.Fatalf("redirected to %s, want %s", u, want)
	}
	return q
}

// codeFor runs the code flow up to the code: authorization request, the
// owner's approval, the redirect.
func (e *env) codeFor(t testing.TB, extra url.Values) string {
	t.Helper()
	q := url.Values{"response_type": {"code"}, "client_id": {appID}, "redirect_uri": {appRedirect},
		"state": {"xyz"}, "scope": {"offline_access"}}
	for k, v := range extra {
		q[k] = v
	}
	a := e.authorize(t, q)
	if a.status != http.StatusOK || a.header.Get("X-Consent-Id") == "" {
		t.Fatalf("authorize: %d %s", a.status, a.body)
	}
	id := a.header.Get("X-Consent-Id")
	if again := e.call(t, "GET", "/oauth2/auth/"+id, "", nil); again.status != http.StatusOK {
		t.Fatalf("waiting page before approval: %d", again.status)
	}
	if d := e.call(t, "POST", "/gateway/v1/consents/"+id+"/approve", tokInstaller, nil); d.status != 200 || d.str("state") != oauth2.StateAccepted {
		t.Fatalf("approve: %d %s", d.status, d.body)
	}
	rq := redirected(t, e.call(t, "GET", "/oauth2/auth/"+id, "", nil), appRedirect)
	if rq.Get("state") != "xyz" || rq.Get("tenant") != "1" || rq.Get("code") == "" {
		t.Fatalf("redirect query %v", rq)
	}
	return rq.Get("code")
}

func codeForm(code string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {appRedirect}}
}

// wantOAuthError checks an RFC 6749 §5.2 error answer.
func wantOAuthError(t testing.TB, a answer, status int, code string) {
	t.Helper()
	if a.status != status || a.str("error") != code || a.str("error_description") == "" {
		t.Fatalf("got %d %s, want %d with error %s", a.status, a.body, status, code)
	}
	if !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") || a.header.Get("Cache-Control") != "no-store" {
		t.Errorf("headers %v", a.header)
	}
	if status == 401 && !strings.Contains(a.header.Get("WWW-Authenticate"), "Basic") {
		t.Errorf("401 without WWW-Authenticate Basic")
	}
}

func wantToken(t testing.TB, a answer, scope string, refresh bool) (access, rt string) {
	t.Helper()
	if a.status != 200 || a.str("access_token") == "" || a.str("token_type") != "Bearer" || a.str("scope") != scope ||
		(a.str("refresh_token") != "") != refresh || a.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("token answer %d %s, want scope %q refresh %v", a.status, a.body, scope, refresh)
	}
	return a.str("access_token"), a.str("refresh_token")
}

// canRead reports whether an access token reads a route behind
// Authenticate.
func (e *env) canRead(t testing.TB, tok string) bool {
	t.Helper()
	return e.call(t, "GET", readPath, tok, nil).status == 200
}

// TestOAuthCodeFlow: the RFC 6749 cases of the authorization_code and
// refresh_token grants and of revocation (RFC 7009), each with the RFC's
// status and error code; PKCE (RFC 7636) S256.
func TestOAuthCodeFlow(t *testing.T) {
	t.Parallel() // its own server
	t.Run("code flow, refresh rotation, reuse revokes", func(t *testing.T) {
		e := codeEnv(t, envOpts{})
		code := e.codeFor(t, nil)
		acc, rt := wantToken(t, e.postForm(t, "/oauth2/token", codeForm(code), appID, appSecret), "standard offline_access", true)
		if !e.canRead(t, acc) {
			t.Fatal("the code flow's access token does not read")
		}
		// Refresh: a new pair; the old refresh token is spent.
		acc2, rt2 := wantToken(t, e.postForm(t, "/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, appID, appSecret),
			"standard offline_access", true)
		if rt2 == rt || acc2 == acc || !e.canRead(t, acc2) {
			t.Fatal("refresh did not rotate")
		}
		// Refresh after rotation: the spent token is refused and its
		// whole grant revoked (RFC 9700 §4.14.2).
		wantOAuthError(t, e.postForm(t, "/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, appID, appSecret), 400, "invalid_grant")
		wantOAuthError(t, e.postForm(t, "/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt2}}, appID, appSecret), 400, "invalid_grant")
		if e.canRead(t, acc2) || e.canRead(t, acc) {
			t.Error("access tokens of a replayed grant still read")
		}
	})
	t.Run("reused code", func(t *testing.T) {
		e := codeEnv(t, envOpts{})
		code := e.codeFor(t, nil)
		acc, _ := wantToken(t, e.postForm(t, "/oauth2/token", codeForm(code), appID, appSecret), "standard offline_access", true)
		wantOAuthError(t, e.postForm(t, "/oauth2/token", codeForm(code), appID, appSecret), 400, "invalid_grant")
		if e.canRead(t, acc) {
			t.Error("RFC 6749 §4.1.2: the tokens of a reused code should be revoked")
		}
	})
	t.Run("expired code", func(t *testing.T) {
		e := codeEnv(t, envOpts{})
		code := e.codeFor(t, nil)
		e.clock.Add(oauth2.CodeTTL + time.Second)
		wantOAuthError(t, e.postForm(t, "/oauth2/token", codeForm(code), appID, appSecret), 400, "invalid_grant")
	})
	t.Run("wrong redirect_uri", func(t *testing.T) {
		e := codeEnv(t, envOpts{})
		code := e.codeFor(t, nil)
		f := codeForm(code)
		f.Set("redirect_uri", "http://127.0.0.1:9/cb")
		wantOAuthError(t, e.postForm(t, "/oauth2/token", f, appID, appSecret), 400, "invalid_grant")
		f.Del("redirect_uri")
		wantOAuthError(t, e.postForm(t, "/oauth2/token", f, appID, appSecret), 400, "invalid_grant")
	})
	t.Run("wrong secret", func(t *testing.T) {
		e := codeEnv(t, envOpts{})
		code := e.codeFor(t, nil)
		wantOAuthError(t, e.postForm(t, "/oauth2/token", codeForm(code), appID, "wrong"), 401, "invalid_client")
		wantOAuthError(t, e.postForm(t, "/oauth2/token", codeForm(code), oauthID, oauthSecret), 400, "invalid_grant") // another client's code
		wantToken(t, e.postForm(t, "/oauth2/token", codeForm(code), appID, appSecret), "standard offline_access", true)
	})
	t.Run("PKCE", func(t *testing.T) {
		e := codeEnv(t, envOpts{})
		verifier := strings.Repeat("v3rifier-", 6)
		sum := sha256.Sum256([]byte(verifier))
		pkce := url.Values{"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
		for _, tt := range []struct {
			name, verifier string
			ok             bool
		}{{"mismatch", verifier + "x", false}, {"missing", "", false}, {"match", verifier, true}} {
			f := codeForm(e.codeFor(t, pkce))
			if tt.verifier != "" {
				f.Set("code_verifier", tt.verifier)
			}
			a := e.postForm(t, "/oauth2/token", f, appID, appSecret)
			if tt.ok {
				wantToken(t, a, "standard offline_access", true)
			} else {
				wantOAuthError(t, a, 400, "invalid_grant")
			}
		}
		// A verifier without a challenge is refused too.
		f := codeForm(e.codeFor(t, nil))
		f.Set("code_verifier", verifier)
		wantOAuthError(t, e.postForm(t, "/oauth2/token", f, appID, appSecret), 400, "invalid_grant")
		// plain is not taken (the method defaults to plain when absent).
		q := url.Values{"response_type": {"code"}, "client_id": {appID}, "state": {"s"}, "redirect_uri": {appRedirect},
			"code_challenge": pkce["code_challenge"]}
		if rq := redirected(t, e.authorize(t, q), appRedirect); rq.Get("error") != "invalid_request" || rq.Get("state") != "s" {
			t.Errorf("challenge without S256: %v", rq)
		}
	})
	t.Run("revoked refresh token", func(t *testing.T) {
		e := codeEnv(t, envOpts{})
		acc, rt := wantToken(t, e.postForm(t, "/oauth2/token", codeForm(e.codeFor(t, nil)), appID, appSecret), "standard offline_access", true)
		wantOAuthError(t, e.postForm(t, "/oauth2/revoke", url.Values{"token": {rt}}, appID, "wrong"), 401, "invalid_client")
		wantOAuthError(t, e.postForm(t, "/oauth2/revoke", url.Values{}, appID, appSecret), 400, "invalid_request")
		wantOAuthError(t, e.postForm(t, "/oauth2/revoke", url.Values{"token": {rt}, "token_type_hint": {"id_token"}}, appID, appSecret), 400, "unsupported_token_type")
		// Another client cannot revoke it (answered 200 as an unknown token).
		if a := e.postForm(t, "/oauth2/revoke", url.Values{"token": {rt}}, oauthID, oauthSecret); a.status != 200 {
			t.Fatalf("revoke by another client: %d %s", a.status, a.body)
		}
		if a := e.postForm(t, "/oauth2/revoke", url.Values{"token": {rt}, "token_type_hint": {"refresh_token"}}, appID, appSecret); a.status != 200 {
			t.Fatalf("revoke: %d %s", a.status, a.body)
		}
		wantOAuthError(t, e.postForm(t, "/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, appID, appSecret), 400, "invalid_grant")
		if e.canRead(t, acc) {
			t.Error("an access token of a revoked grant still reads")
		}
		// Unknown tokens: 200 (RFC 7009 §2.2). An access token alone.
		if a := e.postForm(t, "/oauth2/revoke", url.Values{"token": {"nonsense"}}, appID, appSecret); a.status != 200 {
			t.Fatalf("revoke unknown: %d", a.status)
		}
		cc, _ := wantToken(t, e.postForm(t, "/oauth2/token", url.Values{"grant_type": {"client_credentials"}}, appID, appSecret), "standard", false)
		e.postForm(t, "/oauth2/revoke", url.Values{"token": {cc}, "token_type_hint": {"access_token"}}, appID, appSecret)
		if e.canRead(t, cc) {
			t.Error("a revoked access token still reads")
		}
	})
	t.Run("refresh scope and client", func(t *testing.T) {
		e := codeEnv(t, envOpts{})
		_, rt := wantToken(t, e.postForm(t, "/oauth2/token", codeForm(e.codeFor(t, nil)), appID, appSecret), "standard offline_access", true)
		refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}
		wantOAuthError(t, e.postForm(t, "/oauth2/token", refresh, oauthID, oauthSecret), 400, "invalid_grant") // not its token
		refresh.Set("scope", "installer")
		wantOAuthError(t, e.postForm(t, "/oauth2/token", refresh, appID, appSecret), 400, "invalid_scope")
		refresh.Set("scope", "standard")
		// The refused requests did not spend it.
		wantToken(t, e.postForm(t, "/oauth2/token", refresh, appID, appSecret), "standard offline_access", true)
		refresh.Del("scope")
		wantOAuthError(t, e.postForm(t, "/oauth2/token", refresh, appID, appSecret), 400, "invalid_grant")
		wantOAuthError(t, e.postForm(t, "/oauth2/token", url.Values{"grant_type": {"refresh_token"}}, appID, appSecret), 400, "invalid_request")
		wantOAuthError(t, e.postForm(t, "/oauth2/token", url.Values{"grant_type": {"authorization_code"}}, appID, appSecret), 400, "invalid_request")
	})
	t.Run("authorization errors", func(t *testing.T) {
		e := codeEnv(t, envOpts{})
		base := func() url.Values {
			return url.Values{"response_type": {"code"}, "client_id": {appID}, "redirect_uri": {appRedirect}, "state": {"st"}}
		}
		// Errors about the client or redirect URI are not redirected.
		q := base()
		q.Set("client_id", "nobody")
		wantOAuthError(t, e.authorize(t, q), 400, "invalid_request")
		q = base()
		q.Set("redirect_uri", "https://evil.example.com/cb")
		wantOAuthError(t, e.authorize(t, q), 400, "invalid_request")
		q = base()
		q.Del("redirect_uri") // two registered: it must be named
		wantOAuthError(t, e.authorize(t, q), 400, "invalid_request")
		for _, bad := range []string{"app\x1b[2J", "a:b", `a"b`, "a\r\nb"} { // no client can have it: refused, not echoed
			q = base()
			q.Set("client_id", bad)
			a := e.authorize(t, q)
			wantOAuthError(t, a, 400, "invalid_request")
			if strings.Contains(string(a.body), "\\u001b") || !strings.Contains(a.str("error_description"), "no client id has") {
				t.Errorf("client_id %q: %s", bad, a.body)
			}
		}
		q = base()
		q.Set("client_id", oauthID) // no redirect URIs configured
		wantOAuthError(t, e.authorize(t, q), 400, "unauthorized_client")
		// The others go to the client.
		for _, tt := range []struct{ key, val, err string }{
			{"response_type", "token", "unsupported_response_type"},
			{"scope", "installer", "invalid_scope"},
			{"scope", "openid", "invalid_scope"},
			{"code_challenge_method", "S256", "invalid_request"},
		} {
			q = base()
			q.Set(tt.key, tt.val)
			if rq := redirected(t, e.authorize(t, q), appRedirect); rq.Get("error") != tt.err || rq.Get("state") != "st" {
				t.Errorf("%s=%s: redirect %v, want error %s", tt.key, tt.val, rq, tt.err)
			}
		}
		// The owner rejects: access_denied.
		a := e.authorize(t, base())
		id := a.header.Get("X-Consent-Id")
		if d := e.call(t, "POST", "/gateway/v1/consents/"+id+"/reject", tokInstaller, nil); d.status != 200 || d.str("state") != oauth2.StateRejected {
			t.Fatalf("reject: %d %s", d.status, d.body)
		}
		if d := e.call(t, "POST", "/gateway/v1/consents/"+id+"/approve", tokInstaller, nil); d.status != 409 {
			t.Fatalf("approve after reject: %d %s", d.status, d.body)
		}
		if rq := redirected(t, e.call(t, "GET", "/oauth2/auth/"+id, "", nil), appRedirect); rq.Get("error") != "access_denied" || rq.Get("state") != "st" {
			t.Errorf("rejected: %v", rq)
		}
		wantOAuthError(t, e.call(t, "GET", "/oauth2/auth/"+id, "", nil), 400, "invalid_request") // answered once
		// Unanswered in time: access_denied too.
		id = e.authorize(t, base()).header.Get("X-Consent-Id")
		e.clock.Add(oauth2.ConsentTTL + time.Second)
		if rq := redirected(t, e.call(t, "GET", "/oauth2/auth/"+id, "", nil), appRedirect); rq.Get("error") != "access_denied" {
			t.Errorf("lapsed: %v", rq)
		}
		// Approving needs the installer role.
		id = e.authorize(t, base()).header.Get("X-Consent-Id")
		if d := e.call(t, "POST", "/gateway/v1/consents/"+id+"/approve", tokStandard, nil); d.status != 403 {
			t.Errorf("approve with a standard token: %d", d.status)
		}
		if d := e.call(t, "POST", "/gateway/v1/consents/nope/approve", tokInstaller, nil); d.status != 404 {
			t.Errorf("approve unknown: %d", d.status)
		}
	})
	t.Run("pre-approved client", func(t *testing.T) {
		e := codeEnv(t, envOpts{})
		q := url.Values{"response_type": {"code"}, "client_id": {preID}, "scope": {"offline_access installer"}}
		rq := redirected(t, e.authorize(t, q), "https://trusted.example.com/cb")
		// No redirect_uri in the request: none needed at the exchange.
		f := url.Values{"grant_type": {"authorization_code"}, "code": {rq.Get("code")}, "client_id": {preID}, "client_secret": {preSecret}}
		wantToken(t, e.postForm(t, "/oauth2/token", f, "", ""), "installer offline_access", true)
	})
}

// TestBackChannelConsent: POST /oauth2/v2/bc-authorize is Pending until
// the owner approves or rejects it on the gateway; a pre-approved client
// is Accepted at once; only OAuth2 clients may ask.
func TestBackChannelConsent(t *testing.T) {
	t.Parallel() // its own server
	e := codeEnv(t, envOpts{})
	tokenOf := func(id, secret string) string {
		acc, _ := wantToken(t, e.postForm(t, "/oauth2/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}, "", ""),
			map[string]string{appID: "standard", preID: "installer"}[id], false)
		return acc
	}
	app := tokenOf(appID, appSecret)
	call := func(method, path, tok string, body any) answer {
		var r io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			r = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, e.ts.URL+path, r)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		a := answer{status: resp.StatusCode, header: resp.Header}
		a.body, _ = io.ReadAll(resp.Body)
		_ = json.Unmarshal(a.body, &a.json)
		return a
	}
	state := func(a answer) string { t.Helper(); return a.str("state") }
	if a := call("POST", "/oauth2/v2/bc-authorize", app, map[string]string{"loginHint": "owner@example.com"}); a.status != 200 || state(a) != oauth2.StatePending {
		t.Fatalf("bc-authorize: %d %s", a.status, a.body)
	}
	if a := call("GET", "/oauth2/v2/bc-authorize/owner@example.com", app, nil); state(a) != oauth2.StatePending {
		t.Fatalf("poll: %s", a.body)
	}
	// Asking again answers the same request.
	call("POST", "/oauth2/v2/bc-authorize", app, map[string]string{"loginHint": "owner@example.com"})
	list := call("GET", "/gateway/v1/consents", tokInstaller, nil)
	var cs struct{ Consents []oauth2.Consent }
	_ = json.Unmarshal(list.body, &cs)
	if len(cs.Consents) != 1 || cs.Consents[0].Kind != oauth2.KindBackChannel || cs.Consents[0].LoginHint != "owner@example.com" {
		t.Fatalf("consents %s", list.body)
	}
	call("POST", "/gateway/v1/consents/"+cs.Consents[0].ID+"/approve", tokInstaller, nil)
	if a := call("GET", "/oauth2/v2/bc-authorize/owner@example.com", app, nil); state(a) != oauth2.StateAccepted || a.json["decidedAt"] == nil {
		t.Fatalf("after approve: %s", a.body)
	}
	// Another hint, rejected; asking again after a rejection is a new
	// request.
	call("POST", "/oauth2/v2/bc-authorize", app, map[string]string{"loginHint": "other"})
	_ = json.Unmarshal(call("GET", "/gateway/v1/consents", tokInstaller, nil).body, &cs)
	if cs.Consents[0].State != oauth2.StatePending || cs.Consents[0].LoginHint != "other" {
		t.Fatalf("pending first: %+v", cs.Consents)
	}
	call("POST", "/gateway/v1/consents/"+cs.Consents[0].ID+"/reject", tokInstaller, nil)
	if a := call("GET", "/oauth2/v2/bc-authorize/other", app, nil); state(a) != oauth2.StateRejected {
		t.Fatalf("after reject: %s", a.body)
	}
	if a := call("POST", "/oauth2/v2/bc-authorize", app, map[string]string{"loginHint": "other"}); state(a) != oauth2.StatePending {
		t.Fatalf("asked again after rejection: %s", a.body)
	}
	// Pre-approved: Accepted at once.
	if a := call("POST", "/oauth2/v2/bc-authorize", tokenOf(preID, preSecret), map[string]string{"loginHint": "owner@example.com"}); state(a) != oauth2.StateAccepted {
		t.Fatalf("pre-approved: %s", a.body)
	}
	// Errors.
	if a := call("POST", "/oauth2/v2/bc-authorize", tokInstaller, map[string]string{"loginHint": "x"}); a.status != 403 {
		t.Errorf("static token: %d", a.status)
	}
	if a := call("POST", "/oauth2/v2/bc-authorize", app, map[string]string{"loginHint": ""}); a.status != 400 {
		t.Errorf("empty hint: %d", a.status)
	}
	if a := call("GET", "/oauth2/v2/bc-authorize/nobody", app, nil); a.status != 404 {
		t.Errorf("unknown hint: %d", a.status)
	}
	if a := call("GET", "/gateway/v1/consents", app, nil); a.status != 403 {
		t.Errorf("consents with a standard client token: %d", a.status)
	}
	// Polling lapses a pending request after oauth2.ConsentTTL (404 then).
	e.clock.Add(oauth2.ConsentTTL + time.Second)
	if a := call("GET", "/oauth2/v2/bc-authorize/other", tokenOf(appID, appSecret), nil); a.status != 404 {
		t.Errorf("lapsed: %d %s", a.status, a.body)
	}
}

// TestConsentOnlyByOwner: consent is the owner's act. An installer
// client's own client_credentials token may neither list nor decide
// consent requests (its own back-channel and code-flow requests above
// all); an interactive login (a token of the code flow the owner
// approved) may decide other clients' requests but never its own
// client's; the owner's bearer token decides any. A refused decision
// leaves the request pending, without a code.
func TestConsentOnlyByOwner(t *testing.T) {
	t.Parallel() // its own server
	const (
		instID       = "inst-app"
		instSecret   = "inst-secret-0123456789abcdef0123456789abcdef"
		instRedirect = "https://inst.example.com/cb"
	)
	e := newEnv(t, envOpts{modify: func(c *oauth2.Config) {
		c.OAuthClients = append(c.OAuthClients,
			oauthconfig.Client{ClientID: appID, SecretSHA256: config.TokenHash(appSecret), Role: config.RoleStandard, RedirectURIs: []string{appRedirect}},
			oauthconfig.Client{ClientID: instID, SecretSHA256: config.TokenHash(instSecret), Role: config.RoleInstaller, RedirectURIs: []string{instRedirect}})
	}})
	authorizeReq := func(client, redirect, scope string) string {
		t.Helper()
		a := e.authorize(t, url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect}, "scope": {scope}})
		if a.status != 200 || a.header.Get("X-Consent-Id") == "" {
			t.Fatalf("authorize %s: %d %s", client, a.status, a.body)
		}
		return a.header.Get("X-Consent-Id")
	}
	instCC, _ := wantToken(t, e.postForm(t, "/oauth2/token", url.Values{"grant_type": {"client_credentials"}}, instID, instSecret), "installer", false)
	hints := 0
	bcReq := func() string { // a back-channel request of inst-app, by its own token
		t.Helper()
		hints++
		hint := fmt.Sprintf("owner-%d@example.com", hints)
		if a := e.call(t, "POST", "/oauth2/v2/bc-authorize", instCC, map[string]string{"loginHint": hint}); a.status != 200 || a.str("state") != oauth2.StatePending {
			t.Fatalf("bc-authorize: %d %s", a.status, a.body)
		}
		for _, c := range e.consents(t) {
			if c.LoginHint == hint {
				return c.ID
			}
		}
		t.Fatalf("back-channel request for %s not listed", hint)
		return ""
	}
	// An interactive login of inst-app: its code request, approved by the owner.
	id := authorizeReq(instID, instRedirect, "installer offline_access")
	if d := e.call(t, "POST", "/gateway/v1/consents/"+id+"/approve", tokInstaller, nil); d.status != 200 {
		t.Fatalf("owner approves: %d %s", d.status, d.body)
	}
	rq := redirected(t, e.call(t, "GET", "/oauth2/auth/"+id, "", nil), instRedirect)
	instLogin, _ := wantToken(t, e.postForm(t, "/oauth2/token", url.Values{"grant_type": {"authorization_code"}, "code": {rq.Get("code")},
		"redirect_uri": {instRedirect}}, instID, instSecret), "installer offline_access", true)

	ownCode := func() string { return authorizeReq(instID, instRedirect, "installer offline_access") }
	otherCode := func() string { return authorizeReq(appID, appRedirect, "offline_access") }
	for _, tt := range []struct {
		name    string
		tok     string
		request func() string
		verb    string
		want    int
	}{
		{"client_credentials approves its own back-channel request", instCC, bcReq, "approve", 403},
		{"client_credentials approves its own code request", instCC, ownCode, "approve", 403},
		{"client_credentials approves another client's request", instCC, otherCode, "approve", 403},
		{"client_credentials rejects another client's request", instCC, otherCode, "reject", 403},
		{"interactive login approves its own client's code request", instLogin, ownCode, "approve", 403},
		{"interactive login approves its own client's back-channel request", instLogin, bcReq, "approve", 403},
		{"interactive login rejects its own client's request", instLogin, ownCode, "reject", 403},
		{"interactive login approves another client's request", instLogin, otherCode, "approve", 200},
		{"the owner's token approves the client's code request", tokInstaller, ownCode, "approve", 200},
		{"the owner's token approves the client's back-channel request", tokInstaller, bcReq, "approve", 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := tt.request()
			d := e.call(t, "POST", "/gateway/v1/consents/"+id+"/"+tt.verb, tt.tok, nil)
			if d.status != tt.want {
				t.Fatalf("%s: %d %s, want %d", tt.verb, d.status, d.body, tt.want)
			}
			var state string
			for _, c := range e.consents(t) {
				if c.ID == id {
					state = c.State
				}
			}
			if want := map[int]string{403: oauth2.StatePending, 200: map[string]string{"approve": oauth2.StateAccepted, "reject": oauth2.StateRejected}[tt.verb]}[tt.want]; state != want {
				t.Errorf("request %s after the %s: %s, want %s", id, tt.verb, state, want)
			}
		})
	}
	for _, tt := range []struct {
		name string
		tok  string
		want int
	}{
		{"client_credentials lists", instCC, 403},
		{"interactive login lists", instLogin, 200},
		{"the owner's token lists", tokInstaller, 200},
	} {
		if a := e.call(t, "GET", "/gateway/v1/consents", tt.tok, nil); a.status != tt.want {
			t.Errorf("%s: %d %s, want %d", tt.name, a.status, a.body, tt.want)
		}
	}
}

// consents lists the consent requests with the owner's token.
func (e *env) consents(t testing.TB) []oauth2.Consent {
	t.Helper()
	a := e.call(t, "GET", "/gateway/v1/consents", tokInstaller, nil)
	var cs struct{ Consents []oauth2.Consent }
	if err := json.Unmarshal(a.body, &cs); a.status != 200 || err != nil {
		t.Fatalf("consents: %d %s", a.status, a.body)
	}
	return cs.Consents
}

// TestAuthorizeFlood: /oauth2/auth needs no credential, so its pending
// requests are bounded per source address. One address that floods a
// client gets oauth2.MaxPendingPerSource requests, the rest
// temporarily_unavailable; other addresses are taken; a real user's
// request from another address is still taken, approved and answered
// with a code. Requests lapse after 5 minutes (the clock the grants run
// on). TestAuthorizeFloodManyAddresses fills the anonymous pool.
func TestAuthorizeFlood(t *testing.T) {
	t.Parallel() // its own server
	e := codeEnv(t, envOpts{})
	from := func(ip string) *http.Client {
		c := clientFrom(ip)
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		return c
	}
	ask := func(c *http.Client, state string) answer {
		t.Helper()
		q := url.Values{"response_type": {"code"}, "client_id": {appID}, "redirect_uri": {appRedirect}, "state": {state}}
		req, _ := http.NewRequest("GET", e.ts.URL+"/oauth2/auth?"+q.Encode(), nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{status: resp.StatusCode, header: resp.Header, body: b}
	}
	pendingOf := func(client string) int {
		n := 0
		for _, c := range e.consents(t) {
			if c.ClientID == client && c.State == oauth2.StatePending {
				n++
			}
		}
		return n
	}
	// One address: oauth2.MaxPendingPerSource wait, the rest are told to retry.
	flooder := from("127.0.0.1")
	for i := range 300 {
		a := ask(flooder, "flood")
		switch {
		case i < oauth2.MaxPendingPerSource && a.status == 200:
		case i >= oauth2.MaxPendingPerSource && a.status == 302:
			if rq := redirected(t, a, appRedirect); rq.Get("error") != "temporarily_unavailable" || rq.Get("state") != "flood" {
				t.Fatalf("request %d from the flooding address: %v, want temporarily_unavailable", i+1, rq)
			}
		default:
			t.Fatalf("request %d from the flooding address: %d %s", i+1, a.status, a.body)
		}
	}
	// Other addresses: each request is taken.
	for s := 2; s <= 13; s++ {
		c := from(fmt.Sprintf("127.0.0.%d", s))
		for i := range oauth2.MaxPendingPerSource {
			if a := ask(c, "many"); a.status != 200 {
				t.Fatalf("127.0.0.%d request %d: %d %s", s, i+1, a.status, a.body)
			}
		}
	}
	if n, want := pendingOf(appID), 13*oauth2.MaxPendingPerSource; n != want {
		t.Fatalf("%d pending requests of %s, want %d", n, appID, want)
	}
	// A real user: taken, approved by the owner, answered with a code.
	user := from("127.0.0.200")
	a := ask(user, "user")
	id := a.header.Get("X-Consent-Id")
	if a.status != 200 || id == "" {
		t.Fatalf("the real user's request: %d %s", a.status, a.body)
	}
	if d := e.call(t, "POST", "/gateway/v1/consents/"+id+"/approve", tokInstaller, nil); d.status != 200 {
		t.Fatalf("owner approves the user's request: %d %s", d.status, d.body)
	}
	req, _ := http.NewRequest("GET", e.ts.URL+"/oauth2/auth/"+id, nil)
	resp, err := user.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != 302 || loc.Query().Get("code") == "" || loc.Query().Get("state") != "user" {
		t.Fatalf("the user's page after approval: %d %s", resp.StatusCode, loc)
	}
	wantToken(t, e.postForm(t, "/oauth2/token", codeForm(loc.Query().Get("code")), appID, appSecret), "standard", false)
	// Another user's request, left unanswered.
	late := ask(from("127.0.0.201"), "late").header.Get("X-Consent-Id")
	if late == "" {
		t.Fatal("a second user's request was not taken")
	}
	// After 5 minutes the flood has lapsed: the flooding address may ask
	// again, and a lapsed request's page says access_denied.
	e.clock.Add(5 * time.Minute)
	if n := pendingOf(appID); n != 0 {
		t.Errorf("%d requests still pending after 5 min", n)
	}
	if a := ask(flooder, "again"); a.status != 200 {
		t.Errorf("the flooding address after 5 min: %d %s", a.status, a.body)
	}
	if rq := redirected(t, e.call(t, "GET", "/oauth2/auth/"+late, "", nil), appRedirect); rq.Get("error") != "access_denied" {
		t.Errorf("lapsed request's page: %v, want access_denied", rq)
	}
}

// TestAuthorizeFloodManyAddresses is the flood of issue 41: 1,000
// anonymous authorization requests from 100 loopback addresses, round
// robin, fill the anonymous pool (oauth2.MaxPendingAuthorize) while a
// user's request waits. The flood pushes out its own requests: the
// waiting user's request and a new user's after the flood are approved
// and answered with a code; the client's back-channel request (its own
// pool) is taken and approved; the log has at most one line per source
// (logthrottle), not one per request.
func TestAuthorizeFloodManyAddresses(t *testing.T) {
	t.Parallel() // its own server
	var logs proctest.Buffer
	e := codeEnv(t, envOpts{logger: slog.New(slog.NewTextHandler(&logs, nil))})
	from := func(ip string) *http.Client {
		c := clientFrom(ip)
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		return c
	}
	ask := func(c *http.Client, path, state string) answer {
		t.Helper()
		if path == "" {
			q := url.Values{"response_type": {"code"}, "client_id": {appID}, "redirect_uri": {appRedirect}, "state": {state}}
			path = "/oauth2/auth?" + q.Encode()
		}
		req, _ := http.NewRequest("GET", e.ts.URL+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{status: resp.StatusCode, header: resp.Header, body: b}
	}
	// codeOf has the owner approve a waiting request and the user's
	// browser take its code to the client, which gets a token.
	codeOf := func(user *http.Client, id, state string) {
		t.Helper()
		if d := e.call(t, "POST", "/gateway/v1/consents/"+id+"/approve", tokInstaller, nil); d.status != 200 {
			t.Fatalf("owner approves %s's request: %d %s", state, d.status, d.body)
		}
		rq := redirected(t, ask(user, "/oauth2/auth/"+id, ""), appRedirect)
		if rq.Get("code") == "" || rq.Get("state") != state {
			t.Fatalf("%s's page after approval: %v", state, rq)
		}
		wantToken(t, e.postForm(t, "/oauth2/token", codeForm(rq.Get("code")), appID, appSecret), "standard", false)
	}

	waiting := from("127.0.0.200")
	w := ask(waiting, "", "waiting")
	if w.status != 200 || w.header.Get("X-Consent-Id") == "" {
		t.Fatalf("the waiting user's request: %d %s", w.status, w.body)
	}
	const sources, each = 100, 10
	flood := make([]*http.Client, sources)
	for i := range flood {
		flood[i] = from(fmt.Sprintf("127.0.0.%d", i+1))
	}
	for round := range each {
		for i, c := range flood {
			if a := ask(c, "", "flood"); a.status != 200 {
				t.Fatalf("flood request %d from 127.0.0.%d: %d %s", round+1, i+1, a.status, a.body)
			}
		}
	}
	// The pool is full (its last request pushed out the oldest of
	// 127.0.0.1): a flooding address holding its bound is told to retry,
	// a new user is taken.
	if rq := redirected(t, ask(flood[sources-1], "", "more"), appRedirect); rq.Get("error") != "temporarily_unavailable" {
		t.Fatalf("an 11th request of a flooding address: %v, want temporarily_unavailable", rq)
	}
	late := from("127.0.1.7")
	l := ask(late, "", "late")
	if l.status != 200 || l.header.Get("X-Consent-Id") == "" {
		t.Fatalf("a new user's request after the flood: %d %s", l.status, l.body)
	}
	pending := 0
	for _, c := range e.consents(t) {
		if c.State == oauth2.StatePending {
			pending++
		}
	}
	if pending != oauth2.MaxPendingAuthorize {
		t.Errorf("%d pending authorization requests, want the pool's bound %d", pending, oauth2.MaxPendingAuthorize)
	}
	codeOf(waiting, w.header.Get("X-Consent-Id"), "waiting")
	codeOf(late, l.header.Get("X-Consent-Id"), "late")

	// The client's back-channel request has its own pool.
	acc, _ := wantToken(t, e.postForm(t, "/oauth2/token", url.Values{"grant_type": {"client_credentials"}}, appID, appSecret), "standard", false)
	bc := e.call(t, "POST", "/oauth2/v2/bc-authorize", acc, map[string]string{"loginHint": "owner@example.com"})
	if bc.status != 200 || bc.str("state") != oauth2.StatePending {
		t.Fatalf("bc-authorize after the flood: %d %s", bc.status, bc.body)
	}
	id := ""
	for _, c := range e.consents(t) {
		if c.Kind == oauth2.KindBackChannel {
			id = c.ID
		}
	}
	if d := e.call(t, "POST", "/gateway/v1/consents/"+id+"/approve", tokInstaller, nil); d.status != 200 {
		t.Fatalf("owner approves the back-channel request: %d %s", d.status, d.body)
	}
	if p := e.call(t, "GET", "/oauth2/v2/bc-authorize/owner@example.com", acc, nil); p.str("state") != oauth2.StateAccepted {
		t.Fatalf("bc-authorize poll after approval: %d %s", p.status, p.body)
	}
	// One line per source: 100 flooding addresses and 2 users.
	if n := strings.Count(logs.String(), "authorization request waits"); n > sources+2 {
		t.Errorf("%d log lines of waiting authorization requests for %d sources", n, sources+2)
	}
}
