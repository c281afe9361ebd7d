package oauth2

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"

	"plantd/config"
	"plantd/httpapi/oauth2/oauthconfig"
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
	r := role(config.RoleRank(s)) // the roles' one order
	if r == roleNone {
		return roleNone, fmt.Errorf("unknown role %q", s)
	}
	return r, nil
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
	// Via is how it signed in; Client is the OAuth2 client's id (viaClient,
	// viaCode).
	Via    via
	Client string
}

// via is how a principal signed in.
type via int

const (
	viaToken  via = iota // a configured bearer token (the owner's, plantd token add)
	viaClient            // an OAuth2 client's own grant (client_credentials)
	viaCode              // an interactive login: the authorization_code flow the owner approved, and its refreshes
	viaLocal             // in process (AsRole: the MQTT uplink)
)

// ownerAct reports whether p may act as the gateway's owner in the
// consent routes: a bearer token or an interactive login, never a
// client's own client_credentials grant nor an in-process caller.
func (p principal) ownerAct() bool { return p.Via == viaToken || p.Via == viaCode }

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
	// redirectURIs are the client's redirect URIs, one a line (a string,
	// so that a client stays comparable with ==).
	redirectURIs string
	preApproved  bool
}

// redirectURI reports whether u is one of the client's redirect URIs
// (compared exactly, RFC 6749 §3.1.2.3), and the only one when u is "".
func (c oauthClient) redirectURI(u string) (string, bool) {
	all := strings.Split(c.redirectURIs, "\n")
	if c.redirectURIs == "" {
		return "", false
	}
	if u == "" {
		return all[0], len(all) == 1
	}
	return u, slices.Contains(all, u)
}

// issued is an OAuth2 access token plantd gave out.
type issued struct {
	p       principal
	expires time.Time
	grant   string // the grant family of a code-flow token ("" none)
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

	grants *grants
	guard  *loginGuard

	mu     sync.Mutex
	issued map[[sha256.Size]byte]issued
	limits map[string]*rate.Limiter // per credential name
	swept  time.Time                // when issued was last swept of expired tokens
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

func newAuthenticator(cfg Config, now func() time.Time, log *slog.Logger) (*authenticator, error) {
	a := &authenticator{
		now:    now,
		grants: newGrants(now),
		guard:  newLoginGuard(cfg.FailedLogins, now, log),
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

func newCredentials(tokens []config.Token, clients []oauthconfig.Client) (*credentials, error) {
	c := &credentials{}
	for i, t := range tokens {
		h, r, err := hashAndRole(fmt.Sprintf("tokens[%d]", i), "sha256", t.SHA256, t.Role)
		if err != nil {
			return nil, err
		}
		c.tokens = append(c.tokens, staticToken{name: t.Name, hash: h, role: r})
	}
	for i, cl := range clients {
		h, r, err := hashAndRole(fmt.Sprintf("oauthClients[%d]", i), "secretSha256", cl.SecretSHA256, cl.Role)
		if err != nil {
			return nil, err
		}
		c.clients = append(c.clients, oauthClient{id: cl.ClientID, secret: h, role: r,
			redirectURIs: strings.Join(cl.RedirectURIs, "\n"), preApproved: cl.PreApproved})
	}
	return c, nil
}

// hashAndRole decodes the secret's hash (the entry's key hashKey) and the
// role of a config entry (path: "tokens[0]").
func hashAndRole(path, hashKey, hash, roleName string) ([sha256.Size]byte, role, error) {
	h, err := decodeHash(path+"."+hashKey, hash)
	if err != nil {
		return h, 0, err
	}
	r, err := parseRole(roleName)
	if err != nil {
		return h, 0, fmt.Errorf("httpapi: %s.role: %w", path, err)
	}
	return h, r, nil
}

// setCredentials replaces the tokens and clients. Access tokens issued to
// a client that is gone, or whose role or secret changed, stop working.
func (a *authenticator) setCredentials(c *credentials) {
	a.mu.Lock()
	defer a.mu.Unlock()
	unchanged := map[string]bool{} // principal names of clients kept as they were
	var kept []string
	for _, o := range a.creds.Load().clients {
		for _, n := range c.clients {
			if n == o {
				unchanged[oauthPrincipal(n.id)] = true
				kept = append(kept, n.id)
			}
		}
	}
	a.creds.Store(c)
	a.grants.keepClients(kept)
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
	if is.grant != "" && a.grants.isRevoked(is.grant) {
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

// revokeAccess drops an access token of the client; it reports whether
// the token was the client's.
func (a *authenticator) revokeAccess(tok, clientID string) bool {
	h := sha256.Sum256([]byte(tok))
	a.mu.Lock()
	defer a.mu.Unlock()
	is, ok := a.issued[h]
	if !ok || is.p.Name != oauthPrincipal(clientID) {
		return false
	}
	delete(a.issued, h)
	return true
}

// issueGrant gives a new access token to a client, of a grant family
// ("" for client_credentials) whose revocation ends it too.
func (a *authenticator) issueGrant(p principal, grant string) (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(raw[:])
	h := sha256.Sum256([]byte(tok))
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	// Drop expired ones, at most once a second: a sweep per grant would
	// make issuing quadratic (at 2,000 grants/s, 600,000 live tokens).
	if now.Sub(a.swept) >= time.Second || now.Before(a.swept) {
		a.swept = now
		for k, v := range a.issued {
			if !now.Before(v.expires) {
				delete(a.issued, k)
			}
		}
	}
	a.issued[h] = issued{p: p, expires: now.Add(a.ttl), grant: grant}
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

// clientByID returns a configured OAuth2 client.
func (a *authenticator) clientByID(id string) (oauthClient, bool) {
	for _, c := range a.creds.Load().clients {
		if c.id == id {
			return c, true
		}
	}
	return oauthClient{}, false
}

// dropGrant drops the access tokens of a revoked grant family (lookup
// refuses them anyway; this frees them).
func (a *authenticator) dropGrant(family string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, v := range a.issued {
		if v.grant == family {
			delete(a.issued, k)
		}
	}
}

// unauthorized answers 401 with a WWW-Authenticate challenge.
func (s *Server) unauthorized(c *gin.Context, errCode, detail string) {
	v := `Bearer realm="plantd"`
	if errCode != "" {
		v += `, error="` + errCode + `"`
	}
	c.Header("WWW-Authenticate", v)
	s.host.Problem(c, http.StatusUnauthorized, detail)
}

// localPrincipal is the context key of a principal that AsRole set: a
// request made in process, not over the network. Only this package can
// set it.
type localPrincipal struct{}

// AsRole returns a handler that serves every request with next as the
// credential name with role (standard, installer or gridoperator),
// without a bearer token, and otherwise exactly as over the network (same
// checks, rate limit and answers). It is for in-process callers, such as
// the MQTT uplink answering the cloud's schedules and commands; it must
// never be served on a listener.
func (s *Server) AsRole(name, roleName string, next http.Handler) (http.Handler, error) {
	r, err := parseRole(roleName)
	if err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	p := principal{Name: name, Role: r, Via: viaLocal}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		next.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), localPrincipal{}, p)))
	}), nil
}

// Authenticate is the middleware of every route that needs a credential:
// it requires a valid bearer token (or a principal set by AsRole) and
// rate-limits its holder; Caller then names who it is.
func (s *Server) Authenticate(c *gin.Context) {
	if p, ok := c.Request.Context().Value(localPrincipal{}).(principal); ok {
		s.admit(c, p)
		return
	}
	h := c.GetHeader("Authorization")
	if h == "" {
		s.unauthorized(c, "", "missing bearer token")
		return
	}
	tok, ok := bearerToken(h)
	if !ok {
		s.unauthorized(c, "invalid_request", "authorization must be a bearer token")
		return
	}
	src := sourceAddr(c.Request)
	if s.loginBlocked(c, src, false) {
		return
	}
	p, ok := s.auth.lookup(tok)
	if !ok {
		s.auth.guard.failed(src)
		s.host.AuthFailure("invalid_token")
		s.unauthorized(c, "invalid_token", "invalid or expired token")
		return
	}
	s.admit(c, p)
}

// Admitted reports whether r may be served without Authenticate: it
// carries a valid bearer token (never a principal set by AsRole), its
// source has failed logins left, and the token's holder has a request
// left in its rate limit, which it then takes. When it answers false it
// has recorded nothing (no failed login, no metric, no rate taken): the
// caller serves r through Authenticate, which answers the refusal. It is
// for the API's fast path of its live answers, which any role may read.
func (s *Server) Admitted(r *http.Request) bool {
	if r.Context().Value(localPrincipal{}) != nil {
		return false
	}
	tok, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return false
	}
	if s.auth.guard.tracking(sourceAddr(r)) {
		return false
	}
	p, ok := s.auth.lookup(tok)
	if !ok {
		return false
	}
	ok, _ = s.auth.allow(p.Name)
	return ok
}

// bearerToken returns the token of an Authorization header value of the
// Bearer scheme (RFC 6750; the scheme's name in any case), false when the
// value is no such header or the token is empty.
func bearerToken(h string) (string, bool) {
	scheme, tok, found := strings.Cut(h, " ")
	tok = strings.TrimSpace(tok)
	return tok, found && strings.EqualFold(scheme, "Bearer") && tok != ""
}

// admit rate-limits an authenticated principal and passes the request on.
func (s *Server) admit(c *gin.Context, p principal) {
	if ok, wait := s.auth.allow(p.Name); !ok {
		secs := int(math.Ceil(wait.Seconds()))
		if secs < 1 {
			secs = 1
		}
		c.Header("Retry-After", strconv.Itoa(secs))
		s.host.Problem(c, http.StatusTooManyRequests, "too many requests for this credential")
		return
	}
	c.Set(ctxPrincipal, p)
	c.Next()
}

// Need is the middleware of a route that requires at least the role
// named (config.RoleStandard, RoleInstaller or RoleGridOperator), after
// Authenticate. It panics on another name: a programming error.
func (s *Server) Need(roleName string) gin.HandlerFunc {
	r, err := parseRole(roleName)
	if err != nil {
		panic("oauth2: Need: " + err.Error())
	}
	return func(c *gin.Context) {
		p := principalOf(c)
		if p.Role < r {
			s.host.Problem(c, http.StatusForbidden, fmt.Sprintf("role %s required, token has %s", r, p.Role))
			return
		}
		c.Next()
	}
}

// ctxPrincipal is the gin context key of the principal Authenticate sets.
const ctxPrincipal = "plantd.principal"

// principalOf returns the principal Authenticate set (the zero one, role
// none, on a route without it).
func principalOf(c *gin.Context) principal {
	v, _ := c.Get(ctxPrincipal)
	p, _ := v.(principal)
	return p
}

// Caller names who made an authenticated request: the credential's name
// (a token's name, or "oauth:" and the client id) and its role.
func Caller(c *gin.Context) (name, role string) {
	p := principalOf(c)
	return p.Name, p.Role.String()
}
