package oauth2_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"plantd/config"
	"plantd/httpapi/oauth2"
	"plantd/httpapi/oauth2/oauthconfig"
)

// The tests of the server's HTTP behaviour (the grants, the consent
// flows, the pools, the failed-login guard) run it as the HTTP API runs
// it: mounted on a gin engine with Authenticate in front of the routes
// that need a credential, served on a loopback port; testHost stands for
// the API's side of the seam. How the API mounts it (its OpenAPI
// document, /metrics, the page) is tested in package httpapi.

// The secrets of the test credentials; the config holds their hashes.
const (
	tokStandard  = "standard-token"
	tokInstaller = "installer-token"
	oauthID      = "cloud"
	oauthSecret  = "cloud-secret"
	// readPath is a route any credential may read (the API's plant list
	// in package httpapi).
	readPath = "/monitoring/v1/plants"
)

// clock is a settable clock: token expiry, grants, rate limits and the
// login guard run on it.
type clock struct{ ns atomic.Int64 }

func (c *clock) Now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) Add(d time.Duration) { c.ns.Add(int64(d)) }

// testHost is the API's side of the seam (oauth2.Host): a problem
// document of the status and detail, strict JSON bodies, and the failed
// logins counted by reason.
type testHost struct {
	mu       sync.Mutex
	failures map[string]int
}

func (h *testHost) Problem(c *gin.Context, status int, detail string, invalid ...oauth2.FieldError) {
	c.Header("Content-Type", "application/problem+json")
	c.AbortWithStatusJSON(status, gin.H{"status": status, "detail": detail, "invalidParams": invalid})
}

func (h *testHost) Internal(c *gin.Context, err error) {
	c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"status": 500, "detail": err.Error()})
}

func (h *testHost) DecodeJSON(c *gin.Context, v any) bool {
	dec := json.NewDecoder(c.Request.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		h.Problem(c, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}

func (h *testHost) AuthFailure(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failures[reason]++
}

// failures returns the failed logins counted so far, by reason.
func (h *testHost) failuresByReason() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.failures))
	for k, v := range h.failures {
		out[k] = v
	}
	return out
}

// env is an authorization server mounted on a gin engine, served on a
// loopback port.
type env struct {
	clock   *clock
	host    *testHost
	srv     *oauth2.Server
	handler http.Handler
	ts      *httptest.Server
}

// envOpts tunes newEnv.
type envOpts struct {
	// modify edits the server's config (clients, failed logins) before New.
	modify func(*oauth2.Config)
	// logger receives the server's log (nil: discarded).
	logger *slog.Logger
}

// newEnv starts a server with three bearer tokens (standard, installer,
// gridoperator) and one client_credentials client (oauthID, standard),
// no rate limit in the way, access tokens for 300 s, and the failed-login
// guard's defaults.
func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	cfg := oauth2.Config{
		Tokens: []config.Token{
			{Name: "std", SHA256: config.TokenHash(tokStandard), Role: config.RoleStandard},
			{Name: "inst", SHA256: strings.ToUpper(config.TokenHash(tokInstaller)), Role: config.RoleInstaller},
			{Name: "grid", SHA256: config.TokenHash("gridoperator-token"), Role: config.RoleGridOperator},
		},
		OAuthClients: []oauthconfig.Client{{ClientID: oauthID, SecretSHA256: config.TokenHash(oauthSecret), Role: config.RoleStandard}},
		TokenTTL:     300 * time.Second,
		RateLimit:    config.RateLimit{RequestsPerSecond: 1e6, Burst: 1e6},
	}
	if o.modify != nil {
		o.modify(&cfg)
	}
	e := &env{clock: &clock{}, host: &testHost{failures: map[string]int{}}}
	e.clock.ns.Store(time.Date(2025, 6, 21, 10, 0, 0, 0, time.UTC).UnixNano())
	srv, err := oauth2.New(cfg, e.clock.Now, o.logger, e.host)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	engine := gin.New()
	authed := engine.Group("", srv.Authenticate)
	srv.Mount(engine, authed)
	authed.GET(readPath, func(c *gin.Context) {
		name, role := oauth2.Caller(c)
		c.JSON(http.StatusOK, gin.H{"caller": name, "role": role})
	})
	e.handler = engine
	e.ts = httptest.NewServer(engine)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Run(ctx) }()
	t.Cleanup(func() {
		e.ts.Close()
		cancel()
		<-done
	})
	return e
}

// clientFrom is an HTTP client whose connections come from the loopback
// address ip (Linux answers on all of 127.0.0.0/8).
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}}}
}

// noRedirect is a client that does not follow redirects.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// answer is an HTTP exchange's outcome.
type answer struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

func (a answer) str(k string) string { s, _ := a.json[k].(string); return s }

func do(t testing.TB, req *http.Request) answer {
	t.Helper()
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: b}
	_ = json.Unmarshal(b, &a.json)
	return a
}

// call makes a request with a bearer token and an optional JSON body.
func (e *env) call(t testing.TB, method, path, token string, body any) answer {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.ts.URL+path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}
