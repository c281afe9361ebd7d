package oauth2

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"plantd/config"
)

// The HTTP behaviour of the server (every route, status, JSON shape and
// log line) is tested on a server mounted as the API mounts it
// (env_test.go; flow_test.go, token_test.go, loginguard_test.go, in
// package oauth2_test); these tests check the package's own rules and
// its seam. How package httpapi mounts it is tested there.

func TestSourceKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7":              "192.0.2.7",
		"::ffff:192.0.2.7":       "192.0.2.7",
		"2001:db8:1:2:3:4:5:6":   "2001:db8:1:2::/64",
		"fe80::1%eth0":           "fe80::/64",
		"not an address":         "not an address",
		"2001:db8:1:2:ffff::abc": "2001:db8:1:2::/64",
	} {
		if got := sourceKey(in); got != want {
			t.Errorf("sourceKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseScope(t *testing.T) {
	for _, tt := range []struct {
		scope     string
		offlineOK bool
		role      role
		offline   bool
		ok        bool
	}{
		{"", false, roleInstaller, false, true},
		{"standard", false, roleStandard, false, true},
		{"standard installer", false, roleInstaller, false, true},
		{"gridoperator", false, roleNone, false, false},
		{"offline_access", false, roleNone, false, false},
		{"offline_access standard", true, roleStandard, true, true},
		{"admin", true, roleNone, false, false},
	} {
		r, offline, why, ok := parseScope(tt.scope, roleInstaller, tt.offlineOK)
		if r != tt.role || offline != tt.offline || ok != tt.ok || ok != (why == "") {
			t.Errorf("parseScope(%q, installer, %v) = %v %v %q %v", tt.scope, tt.offlineOK, r, offline, why, ok)
		}
	}
}

// TestCodeReplayRevokesGrant: a code is good once; its second use
// revokes the grant, so no refresh token of it is issued any more.
func TestCodeReplayRevokesGrant(t *testing.T) {
	now := time.Date(2025, 6, 21, 10, 0, 0, 0, time.UTC)
	g := newGrants(func() time.Time { return now })
	c := &consent{Consent: Consent{Kind: KindAuthorize, ClientID: "app", RedirectURI: "https://app/cb", Scope: "standard"}, role: roleStandard}
	if err := g.request(c, true); err != nil {
		t.Fatal(err)
	}
	code, _, err := g.finish(c.ID)
	if err != nil || code == "" {
		t.Fatalf("finish: %q %v", code, err)
	}
	if _, err := g.redeem(code, "other", "", "", false); !errors.Is(err, errInvalidGrant) {
		t.Fatalf("another client's redeem: %v", err)
	}
	ac, err := g.redeem(code, "app", "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.redeem(code, "app", "", "", false); !errors.Is(err, errGrantReplayed) {
		t.Fatalf("second redeem: %v, want a replay", err)
	}
	if !g.isRevoked(ac.grant) {
		t.Fatal("grant not revoked after the replay")
	}
	if _, err := g.newRefresh("app", ac.grant, roleStandard); !errors.Is(err, errInvalidGrant) {
		t.Fatalf("refresh token of a revoked grant: %v", err)
	}
}

// host records what the server asked the API to answer.
type host struct {
	status   int
	detail   string
	failures []string
}

func (h *host) Problem(c *gin.Context, status int, detail string, _ ...FieldError) {
	h.status, h.detail = status, detail
	c.AbortWithStatus(status)
}
func (h *host) Internal(c *gin.Context, err error) {
	h.Problem(c, http.StatusInternalServerError, err.Error())
}
func (h *host) DecodeJSON(c *gin.Context, v any) bool { return c.ShouldBindJSON(v) == nil }
func (h *host) AuthFailure(reason string)             { h.failures = append(h.failures, reason) }

// TestAuthenticateThroughHost: Authenticate answers through the Host
// (its problem document, its failure counter) and names the caller.
func TestAuthenticateThroughHost(t *testing.T) {
	h := &host{}
	// sha256("secret-token")
	tok := config.Token{Name: "owner", SHA256: "930bbdc51b6aed5c2a5678fd6e28dee7a05e8a4b643cfc0b4427c3efb86c0d94", Role: config.RoleInstaller}
	s, err := New(Config{Tokens: []config.Token{tok}, TokenTTL: time.Minute, RateLimit: config.RateLimit{RequestsPerSecond: 10, Burst: 10}},
		time.Now, nil, h)
	if err != nil {
		t.Fatal(err)
	}
	e := gin.New()
	e.GET("/x", s.Authenticate, s.Need(config.RoleStandard), func(c *gin.Context) {
		name, role := Caller(c)
		c.String(http.StatusOK, name+" "+role)
	})
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))
	if h.status != http.StatusUnauthorized || h.detail != "missing bearer token" || rec.Header().Get("WWW-Authenticate") != `Bearer realm="plantd"` {
		t.Fatalf("no token: host got %d %q, WWW-Authenticate %q", h.status, h.detail, rec.Header().Get("WWW-Authenticate"))
	}
	req := httptest.NewRequest("GET", "/x", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	e.ServeHTTP(httptest.NewRecorder(), req)
	if h.status != http.StatusUnauthorized || len(h.failures) != 1 || h.failures[0] != "invalid_token" {
		t.Fatalf("wrong token: %d, failures %v", h.status, h.failures)
	}
	req = httptest.NewRequest("GET", "/x", nil)
	req.Header.Set("Authorization", "Bearer secret-token")
	rec = httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Body.String() != "owner installer" {
		t.Fatalf("good token: %d %q", rec.Code, rec.Body.String())
	}
}

func TestPendingNet(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7":         "192.0.2.0/24",
		"2001:db8:1:2::/64": "2001:db8:1::/48",
		"fe80::/64":         "fe80::/48",
		"not an address":    "not an address",
	} {
		if got := pendingNet(in); got != want {
			t.Errorf("pendingNet(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAuthorizeFloodOneEach: a flood of one request from each of many
// IPv6 /64s of one site (a /48) fills the anonymous pool; it pushes out
// its own requests, not the waiting user's from another network, though
// every source holds one request as the user's does.
func TestAuthorizeFloodOneEach(t *testing.T) {
	now := time.Date(2025, 6, 21, 12, 0, 0, 0, time.UTC)
	g := newGrants(func() time.Time { return now })
	ask := func(source string) *consent {
		t.Helper()
		c := &consent{Consent: Consent{Kind: KindAuthorize, ClientID: "app"}, source: source}
		if err := g.request(c, false); err != nil {
			t.Fatalf("request from %s: %v", source, err)
		}
		return c
	}
	user := ask("2001:db8:2:1::/64")
	for i := range MaxPendingAuthorize + 500 {
		ask(fmt.Sprintf("2001:db8:1:%x::/64", i))
	}
	pending := 0
	for _, c := range g.list() {
		if c.State == StatePending {
			pending++
		}
	}
	if pending != MaxPendingAuthorize {
		t.Errorf("%d pending, want the bound %d", pending, MaxPendingAuthorize)
	}
	if _, ok := g.consents[user.ID]; !ok {
		t.Error("the waiting user's request was pushed out by the flood")
	}
}

// TestAdmitted: the fast path's check admits a known static or issued
// token while its rate limit lasts, refuses the rest, and records nothing
// when it refuses (no failed login, no failure counted).
func TestAdmitted(t *testing.T) {
	h := &host{}
	now := time.Date(2025, 6, 21, 10, 0, 0, 0, time.UTC)
	// sha256("secret-token")
	tok := config.Token{Name: "owner", SHA256: "930bbdc51b6aed5c2a5678fd6e28dee7a05e8a4b643cfc0b4427c3efb86c0d94", Role: config.RoleStandard}
	s, err := New(Config{Tokens: []config.Token{tok}, TokenTTL: time.Minute, RateLimit: config.RateLimit{RequestsPerSecond: 1e-3, Burst: 2},
		FailedLogins: FailedLogins{Burst: 1, Every: time.Hour}}, func() time.Time { return now }, nil, h)
	if err != nil {
		t.Fatal(err)
	}
	issued, err := s.auth.issueGrant(principal{Name: oauthPrincipal("app"), Role: roleStandard, Via: viaClient}, "")
	if err != nil {
		t.Fatal(err)
	}
	local, err := s.AsRole("uplink", config.RoleStandard, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		if s.Admitted(r) {
			t.Error("a request as a role (no token) admitted")
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	local.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/x", nil))
	req := func(auth string) *http.Request {
		r := httptest.NewRequest("GET", "/x", nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		return r
	}
	for _, tc := range []struct {
		name, auth string
		want       bool
	}{
		{"no header", "", false},
		{"basic", "Basic b3duZXI6cHc=", false},
		{"empty bearer", "Bearer  ", false},
		{"unknown token", "Bearer wrong", false},
		{"static token", "Bearer secret-token", true},
		{"scheme in any case", "bearer  secret-token ", true},
		{"issued token", "Bearer " + issued, true},
		{"static token, rate limit used up", "Bearer secret-token", false},
	} {
		if got := s.Admitted(req(tc.auth)); got != tc.want {
			t.Errorf("%s: Admitted %v, want %v", tc.name, got, tc.want)
		}
	}
	if len(h.failures) > 0 || h.status != 0 {
		t.Errorf("refusals recorded: failures %v, problem %d", h.failures, h.status)
	}
	now = now.Add(time.Minute)
	if s.Admitted(req("Bearer " + issued)) {
		t.Error("an expired issued token admitted")
	}
	// One failed login through Authenticate blocks the source: its valid
	// tokens are then left to Authenticate too (429 there). The client's
	// rate limit has a request left.
	again, err := s.auth.issueGrant(principal{Name: oauthPrincipal("app"), Role: roleStandard, Via: viaClient}, "")
	if err != nil {
		t.Fatal(err)
	}
	e := gin.New()
	e.GET("/x", s.Authenticate, func(c *gin.Context) { c.Status(http.StatusOK) })
	e.ServeHTTP(httptest.NewRecorder(), req("Bearer wrong"))
	if s.Admitted(req("Bearer " + again)) {
		t.Error("a blocked source's token admitted")
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req("Bearer "+again))
	if rec.Code != http.StatusTooManyRequests {
		t.Errorf("the blocked source through Authenticate: %d, want 429", rec.Code)
	}
}
