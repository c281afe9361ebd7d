package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"

	"plantd/config"
)

// role is a credential's role; higher is more.
type role int

// The roles, lowest first (DESIGN §5).
const (
	roleNone role = iota
	roleStandard
	roleInstaller
	roleGridOperator
)

func parseRole(s string) (role, error) {
	switch s {
	case config.RoleStandard:
		return roleStandard, nil
	case config.RoleInstaller:
		return roleInstaller, nil
	case config.RoleGridOperator:
		return roleGridOperator, nil
	}
	return roleNone, fmt.Errorf("unknown role %q", s)
}

func (r role) String() string {
	switch r {
	case roleStandard:
		return config.RoleStandard
	case roleInstaller:
		return config.RoleInstaller
	case roleGridOperator:
		return config.RoleGridOperator
	}
	return "none"
}

// principal is who made a request.
type principal struct {
	Name string // token name or "oauth:" + client id
	Role role
}

// staticToken is a configured bearer token.
type staticToken struct {
	name string
	hash [sha256.Size]byte
	role role
}

// oauthClient is a configured OAuth2 client.
type oauthClient struct {
	id     string
	secret [sha256.Size]byte
	role   role
}

// issued is an OAuth2 access token plantd gave out.
type issued struct {
	p       principal
	expires time.Time
}

// credentials are the configured tokens and clients; a reload swaps them
// as a whole.
type credentials struct {
	tokens  []staticToken
	clients []oauthClient
}

// authenticator checks credentials, issues OAuth2 tokens and rate-limits.
type authenticator struct {
	now   func() time.Time
	ttl   time.Duration
	creds atomic.Pointer[credentials]
	rate  float64
	burst float64

	mu     sync.Mutex
	issued map[[sha256.Size]byte]issued
	limits map[string]*rate.Limiter // per credential name
}

func decodeHash(field, s string) ([sha256.Size]byte, error) {
	var h [sha256.Size]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return h, fmt.Errorf("httpapi: %s: want 64 hex digits", field)
	}
	copy(h[:], b)
	return h, nil
}

func newAuthenticator(cfg Config, now func() time.Time) (*authenticator, error) {
	a := &authenticator{
		now:    now,
		ttl:    cfg.TokenTTL,
		rate:   cfg.RateLimit.RequestsPerSecond,
		burst:  float64(cfg.RateLimit.Burst),
		issued: map[[sha256.Size]byte]issued{},
		limits: map[string]*rate.Limiter{},
	}
	c, err := newCredentials(cfg.Tokens, cfg.OAuthClients)
	if err != nil {
		return nil, err
	}
	a.creds.Store(c)
	return a, nil
}

func newCredentials(tokens []config.Token, clients []config.OAuthClient) (*credentials, error) {
	c := &credentials{}
	for i, t := range tokens {
		h, err := decodeHash(fmt.Sprintf("tokens[%d].sha256", i), t.SHA256)
		if err != nil {
			return nil, err
		}
		r, err := parseRole(t.Role)
		if err != nil {
			return nil, fmt.Errorf("httpapi: tokens[%d].role: %w", i, err)
		}
		c.tokens = append(c.tokens, staticToken{name: t.Name, hash: h, role: r})
	}
	for i, cl := range clients {
		h, err := decodeHash(fmt.Sprintf("oauthClients[%d].secretSha256", i), cl.SecretSHA256)
		if err != nil {
			return nil, err
		}
		r, err := parseRole(cl.Role)
		if err != nil {
			return nil, fmt.Errorf("httpapi: oauthClients[%d].role: %w", i, err)
		}
		c.clients = append(c.clients, oauthClient{id: cl.ClientID, secret: h, role: r})
	}
	return c, nil
}

// setCredentials replaces the tokens and clients. Access tokens issued to
// a client that is gone, or whose role or secret changed, stop working.
func (a *authenticator) setCredentials(c *credentials) {
	a.mu.Lock()
	defer a.mu.Unlock()
	unchanged := map[string]bool{} // principal names of clients kept as they were
	for _, o := range a.creds.Load().clients {
		for _, n := range c.clients {
			if n == o {
				unchanged[oauthPrincipal(n.id)] = true
			}
		}
	}
	a.creds.Store(c)
	for k, v := range a.issued {
		if !unchanged[v.p.Name] {
			delete(a.issued, k)
		}
	}
}

func oauthPrincipal(clientID string) string { return "oauth:" + clientID }

// lookup finds the principal of a bearer token. Every static token is
// compared (in constant time) so the time taken does not depend on which
// matched.
func (a *authenticator) lookup(token string) (principal, bool) {
	h := sha256.Sum256([]byte(token))
	var found principal
	ok := false
	for _, t := range a.creds.Load().tokens {
		if subtle.ConstantTimeCompare(h[:], t.hash[:]) == 1 {
			found, ok = principal{Name: t.name, Role: t.role}, true
		}
	}
	if ok {
		return found, true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	is, ok := a.issued[h]
	if !ok {
		return principal{}, false
	}
	if !a.now().Before(is.expires) {
		delete(a.issued, h)
		return principal{}, false
	}
	return is.p, true
}

// allow takes one request from the credential's token bucket; when it is
// empty it returns how long until the next request is allowed.
func (a *authenticator) allow(name string) (bool, time.Duration) {
	now := a.now()
	a.mu.Lock()
	l := a.limits[name]
	if l == nil {
		l = rate.NewLimiter(rate.Limit(a.rate), int(a.burst))
		a.limits[name] = l
	}
	a.mu.Unlock()
	r := l.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// issue gives a new access token to a client.
func (a *authenticator) issue(p principal) (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(raw[:])
	h := sha256.Sum256([]byte(tok))
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, v := range a.issued { // drop expired ones
		if !now.Before(v.expires) {
			delete(a.issued, k)
		}
	}
	a.issued[h] = issued{p: p, expires: now.Add(a.ttl)}
	return tok, nil
}

// client checks OAuth2 client credentials (constant time over all clients).
func (a *authenticator) client(id, secret string) (oauthClient, bool) {
	h := sha256.Sum256([]byte(secret))
	var found oauthClient
	ok := false
	for _, c := range a.creds.Load().clients {
		idOK := subtle.ConstantTimeCompare([]byte(id), []byte(c.id))
		secOK := subtle.ConstantTimeCompare(h[:], c.secret[:])
		if idOK&secOK == 1 {
			found, ok = c, true
		}
	}
	return found, ok
}

// unauthorized answers 401 with a WWW-Authenticate challenge.
func unauthorized(c *gin.Context, errCode, detail string) {
	v := `Bearer realm="plantd"`
	if errCode != "" {
		v += `, error="` + errCode + `"`
	}
	c.Header("WWW-Authenticate", v)
	fail(c, http.StatusUnauthorized, codeUnauthorized, detail)
}

// localPrincipal is the context key of a principal that AsRole set: a
// request made in process, not over the network. Only this package can
// set it.
type localPrincipal struct{}

// AsRole returns a handler that serves every request as the credential
// name with role (standard, installer or gridoperator), without a bearer
// token, and otherwise exactly as Handler does (same routes, checks,
// rate limit and problem-JSON). It is for in-process callers, such as the
// MQTT uplink answering the cloud's schedules and commands; it must never
// be served on a listener.
func (s *Server) AsRole(name, roleName string) (http.Handler, error) {
	r, err := parseRole(roleName)
	if err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	p := principal{Name: name, Role: r}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.engine.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), localPrincipal{}, p)))
	}), nil
}

// authenticate requires a valid bearer token (or a principal set by
// AsRole) and rate-limits its holder.
func (s *Server) authenticate(c *gin.Context) {
	if p, ok := c.Request.Context().Value(localPrincipal{}).(principal); ok {
		s.admit(c, p)
		return
	}
	h := c.GetHeader("Authorization")
	scheme, tok, found := strings.Cut(h, " ")
	if h == "" {
		unauthorized(c, "", "missing bearer token")
		return
	}
	tok = strings.TrimSpace(tok)
	if !found || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		unauthorized(c, "invalid_request", "authorization must be a bearer token")
		return
	}
	p, ok := s.auth.lookup(tok)
	if !ok {
		unauthorized(c, "invalid_token", "invalid or expired token")
		return
	}
	s.admit(c, p)
}

// admit rate-limits an authenticated principal and passes the request on.
func (s *Server) admit(c *gin.Context, p principal) {
	if ok, wait := s.auth.allow(p.Name); !ok {
		secs := int(math.Ceil(wait.Seconds()))
		if secs < 1 {
			secs = 1
		}
		c.Header("Retry-After", strconv.Itoa(secs))
		fail(c, http.StatusTooManyRequests, codeRateLimited, "too many requests for this credential")
		return
	}
	c.Set(ctxPrincipal, p)
	c.Next()
}

// need requires at least role r.
func need(r role) gin.HandlerFunc {
	return func(c *gin.Context) {
		v, _ := c.Get(ctxPrincipal)
		p, _ := v.(principal)
		if p.Role < r {
			fail(c, http.StatusForbidden, codeForbidden, fmt.Sprintf("role %s required, token has %s", r, p.Role))
			return
		}
		c.Next()
	}
}

// tokenResponse is the OAuth2 access-token response (RFC 6749 §5.1).
type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int    `json:"expires_in"`
	Scope       string `json:"scope"`
}

// oauthError answers an OAuth2 error as problem-JSON with the RFC 6749
// error member.
func oauthError(c *gin.Context, status int, errCode, detail string) {
	// RFC 6749 §5.2: application/json with error and error_description,
	// never cached; 401 names the Basic scheme (the client may retry with
	// it).
	if status == http.StatusUnauthorized {
		c.Header("WWW-Authenticate", `Basic realm="plantd"`)
	}
	c.Header("Cache-Control", "no-store")
	c.Header("Pragma", "no-cache")
	c.Header("X-Request-Id", c.GetString(ctxRequestID))
	c.AbortWithStatusJSON(status, oauthErrorJSON{Error: errCode, Description: detail})
}

// oauthErrorJSON is an error of the token endpoint (RFC 6749 §5.2).
type oauthErrorJSON struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// grantScope returns the role a token request's scope asks for: the
// client's own role without a scope; the highest role named when every
// role named is within the client's. A scope the client may not have, or
// one plantd does not know, is refused (RFC 6749 §3.3: never silently
// ignored).
func grantScope(scope string, client role) (role, string, bool) {
	if strings.TrimSpace(scope) == "" {
		return client, "", true
	}
	granted := roleNone
	for _, s := range strings.Fields(scope) {
		r, err := parseRole(s)
		if err != nil {
			return roleNone, "unknown scope " + strconv.Quote(s) + "; this client may ask for " + scopesUpTo(client), false
		}
		if r > client {
			return roleNone, "scope " + s + " exceeds the client's role; it may ask for " + scopesUpTo(client), false
		}
		granted = max(granted, r)
	}
	return granted, "", true
}

// scopesUpTo lists the scopes a client of role r may ask for.
func scopesUpTo(r role) string {
	var out []string
	for _, x := range []role{roleStandard, roleInstaller, roleGridOperator} {
		if x <= r {
			out = append(out, x.String())
		}
	}
	return strings.Join(out, ", ")
}

// token is POST /oauth2/token (client_credentials grant). Every error
// answers as RFC 6749 §5.2 says.
func (s *Server) token(c *gin.Context) {
	mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		oauthError(c, http.StatusUnsupportedMediaType, "invalid_request", "content type must be application/x-www-form-urlencoded")
		return
	}
	if err := c.Request.ParseForm(); err != nil {
		if isTooLarge(err) {
			oauthError(c, http.StatusRequestEntityTooLarge, "invalid_request", "request body too large")
			return
		}
		oauthError(c, http.StatusBadRequest, "invalid_request", "malformed form body")
		return
	}
	f := c.Request.PostForm
	for k, vs := range f {
		if len(vs) > 1 { // RFC 6749 §3.2: parameters must not repeat
			oauthError(c, http.StatusBadRequest, "invalid_request", "parameter "+k+" given more than once")
			return
		}
	}
	if gt := f.Get("grant_type"); gt != "client_credentials" {
		if gt == "" {
			oauthError(c, http.StatusBadRequest, "invalid_request", "grant_type is required")
			return
		}
		oauthError(c, http.StatusBadRequest, "unsupported_grant_type", "only grant_type client_credentials is supported")
		return
	}
	id, secret := f.Get("client_id"), f.Get("client_secret")
	if u, p, ok := c.Request.BasicAuth(); ok {
		// RFC 6749 §2.3: one authentication method per request.
		if f.Has("client_secret") || (id != "" && id != u) {
			oauthError(c, http.StatusBadRequest, "invalid_request", "more than one client authentication method (HTTP Basic and the form)")
			return
		}
		id, secret = u, p
	} else if c.GetHeader("Authorization") != "" {
		oauthError(c, http.StatusUnauthorized, "invalid_client", "unsupported Authorization scheme; use HTTP Basic or client_secret in the form")
		return
	}
	if id == "" {
		oauthError(c, http.StatusUnauthorized, "invalid_client", "client_id is required")
		return
	}
	cl, ok := s.auth.client(id, secret)
	if !ok {
		oauthError(c, http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret")
		return
	}
	r, why, ok := grantScope(f.Get("scope"), cl.role)
	if !ok {
		oauthError(c, http.StatusBadRequest, "invalid_scope", why)
		return
	}
	p := principal{Name: oauthPrincipal(cl.id), Role: r}
	if ok, wait := s.auth.allow(p.Name); !ok {
		c.Header("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
		oauthError(c, http.StatusTooManyRequests, "slow_down", "too many requests for this client")
		return
	}
	tok, err := s.auth.issue(p)
	if err != nil {
		s.internal(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Header("Pragma", "no-cache")
	c.JSON(http.StatusOK, tokenResponse{AccessToken: tok, TokenType: "Bearer",
		ExpiresIn: int(s.cfg.TokenTTL / time.Second), Scope: r.String()})
}
