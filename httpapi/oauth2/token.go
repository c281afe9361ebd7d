package oauth2

import (
	"errors"
	"fmt"
	"html"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"plantd/httpapi/oauth2/oauthconfig"
)

// The OAuth2 endpoints, as the cloud's auth server serves them (DESIGN
// §5): the token endpoint with the client_credentials, authorization_code
// (PKCE S256 accepted) and refresh_token grants (rotated on use), the
// authorization endpoint whose requests the gateway's owner approves
// (plantd consent, or GET/POST /gateway/v1/consents), revocation
// (RFC 7009) and the back-channel consent. Every error of /oauth2/token,
// /oauth2/revoke and /oauth2/auth is RFC 6749 §5.2 JSON.

// codeFlowScope is the scope that asks for a refresh token.
const codeFlowScope = "offline_access"

// TokenResponse is the OAuth2 access-token response (RFC 6749 §5.1).
type TokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	Scope        string `json:"scope"`
	RefreshToken string `json:"refresh_token,omitempty"`
}

// oauthError answers an OAuth2 error (RFC 6749 §5.2): application/json
// with error and error_description, never cached; 401 names the Basic
// scheme (the client may retry with it). X-Request-Id is the API's
// middleware's, set on every answer before this runs.
func oauthError(c *gin.Context, status int, errCode, detail string) {
	if status == http.StatusUnauthorized {
		c.Header("WWW-Authenticate", `Basic realm="plantd"`)
	}
	c.Header("Cache-Control", "no-store")
	c.Header("Pragma", "no-cache")
	c.AbortWithStatusJSON(status, oauthErrorJSON{Error: errCode, Description: detail})
}

// oauthErrorJSON is an error of the OAuth2 endpoints (RFC 6749 §5.2).
type oauthErrorJSON struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// retryAfter sets Retry-After to wait in whole seconds, at least 1.
func retryAfter(c *gin.Context, wait time.Duration) {
	c.Header("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
}

// loginBlocked answers 429 when src has used up its failed logins; its
// credentials are then not even checked.
func (s *Server) loginBlocked(c *gin.Context, src string, oauth bool) bool {
	blocked, wait := s.auth.guard.blocked(src)
	if !blocked {
		return false
	}
	s.host.AuthFailure("rate_limited")
	retryAfter(c, wait)
	const msg = "too many failed logins from this address; retry later"
	if oauth {
		oauthError(c, http.StatusTooManyRequests, "slow_down", msg)
	} else {
		s.host.Problem(c, http.StatusTooManyRequests, msg)
	}
	return true
}

// grantScope returns the role a token request's scope asks for: the
// client's own role without a scope; the highest role named when every
// role named is within the client's. offline_access (a refresh token) is
// honoured where offline is true (the code flow) and refused elsewhere. A
// scope the client may not have, or one plantd does not know, is refused
// (RFC 6749 §3.3: never silently ignored).
func grantScope(scope string, client role) (role, string, bool) {
	r, _, why, ok := parseScope(scope, client, false)
	return r, why, ok
}

func parseScope(scope string, client role, offlineOK bool) (granted role, offline bool, why string, ok bool) {
	granted = roleNone
	for _, s := range strings.Fields(scope) {
		if s == codeFlowScope && offlineOK {
			offline = true
			continue
		}
		r, err := parseRole(s)
		if err != nil {
			may := scopesUpTo(client)
			if offlineOK {
				may += ", " + codeFlowScope
			}
			return roleNone, false, "unknown scope " + strconv.Quote(s) + "; this client may ask for " + may, false
		}
		if r > client {
			return roleNone, false, "scope " + s + " exceeds the client's role; it may ask for " + scopesUpTo(client), false
		}
		granted = max(granted, r)
	}
	if granted == roleNone {
		granted = client
	}
	return granted, offline, "", true
}

// scopeString is the scope a token answers with.
func scopeString(r role, offline bool) string {
	if offline {
		return r.String() + " " + codeFlowScope
	}
	return r.String()
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

// oauthForm parses the form body of /oauth2/token and /oauth2/revoke.
func oauthForm(c *gin.Context) (url.Values, bool) {
	mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		oauthError(c, http.StatusUnsupportedMediaType, "invalid_request", "content type must be application/x-www-form-urlencoded")
		return nil, false
	}
	if err := c.Request.ParseForm(); err != nil {
		if isTooLarge(err) {
			oauthError(c, http.StatusRequestEntityTooLarge, "invalid_request", "request body too large")
			return nil, false
		}
		oauthError(c, http.StatusBadRequest, "invalid_request", "malformed form body")
		return nil, false
	}
	f := c.Request.PostForm
	for k, vs := range f {
		if len(vs) > 1 { // RFC 6749 §3.2: parameters must not repeat
			oauthError(c, http.StatusBadRequest, "invalid_request", "parameter "+k+" given more than once")
			return nil, false
		}
	}
	return f, true
}

// badClientID answers a client_id no client can have (oauthconfig.CheckClientID:
// control characters, space, separators); the id is not echoed.
const badClientID = "client_id holds a character no client id has (printable ASCII only, without space and ( ) < > @ , ; : \\ \" / [ ] ? = { } %)"

// clientAuth authenticates the client of a token or revocation request:
// HTTP Basic or client_id and client_secret in the form, never both
// (RFC 6749 §2.3). A failure counts against the source address.
func (s *Server) clientAuth(c *gin.Context, f url.Values, src string) (oauthClient, bool) {
	id, secret := f.Get("client_id"), f.Get("client_secret")
	if u, p, ok := c.Request.BasicAuth(); ok {
		if f.Has("client_secret") || (id != "" && id != u) {
			oauthError(c, http.StatusBadRequest, "invalid_request", "more than one client authentication method (HTTP Basic and the form)")
			return oauthClient{}, false
		}
		id, secret = u, p
		// RFC 6749 §2.3.1: Basic credentials are form-urlencoded first;
		// many clients skip that, so the raw pair is tried first. A
		// decoded id no client can have is not tried (an id with '+'
		// would decode to one with a space and escape the failed-login
		// count).
		du, err1 := url.QueryUnescape(u)
		dp, err2 := url.QueryUnescape(p)
		if err1 == nil && err2 == nil && (du != u || dp != p) && oauthconfig.CheckClientID(du) == nil {
			if _, ok := s.auth.client(u, p); !ok {
				id, secret = du, dp
			}
		}
	} else if c.GetHeader("Authorization") != "" {
		oauthError(c, http.StatusUnauthorized, "invalid_client", "unsupported Authorization scheme; use HTTP Basic or client_secret in the form")
		return oauthClient{}, false
	}
	if id == "" {
		oauthError(c, http.StatusUnauthorized, "invalid_client", "client_id is required")
		return oauthClient{}, false
	}
	if oauthconfig.CheckClientID(id) != nil {
		oauthError(c, http.StatusBadRequest, "invalid_request", badClientID)
		return oauthClient{}, false
	}
	cl, ok := s.auth.client(id, secret)
	if !ok {
		s.auth.guard.failed(src)
		s.host.AuthFailure("invalid_client")
		oauthError(c, http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret")
		return oauthClient{}, false
	}
	return cl, true
}

// clientForm opens a client's form request (token, revoke): its source,
// refused when the failed-login guard blocks it, and its form; ok false
// when the request was answered.
func (s *Server) clientForm(c *gin.Context) (src string, f url.Values, ok bool) {
	src = sourceAddr(c.Request)
	if s.loginBlocked(c, src, true) {
		return "", nil, false
	}
	f, ok = oauthForm(c)
	return src, f, ok
}

// token is POST /oauth2/token. Every error answers as RFC 6749 §5.2 says.
func (s *Server) token(c *gin.Context) {
	src, f, ok := s.clientForm(c)
	if !ok {
		return
	}
	gt := f.Get("grant_type")
	switch gt {
	case "client_credentials", "authorization_code", "refresh_token":
	case "":
		oauthError(c, http.StatusBadRequest, "invalid_request", "grant_type is required")
		return
	default:
		oauthError(c, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be client_credentials, authorization_code or refresh_token")
		return
	}
	cl, ok := s.clientAuth(c, f, src)
	if !ok {
		return
	}
	name := oauthPrincipal(cl.id)
	if ok, wait := s.auth.allow(name); !ok {
		retryAfter(c, wait)
		oauthError(c, http.StatusTooManyRequests, "slow_down", "too many requests for this client")
		return
	}
	var resp TokenResponse
	var err error
	switch gt {
	case "client_credentials":
		r, why, ok := grantScope(f.Get("scope"), cl.role)
		if !ok {
			oauthError(c, http.StatusBadRequest, "invalid_scope", why)
			return
		}
		resp, err = s.grant(principal{Name: name, Role: r, Via: viaClient, Client: cl.id}, "", false, "")
	case "authorization_code":
		resp, ok = s.codeGrant(c, f, cl)
		if !ok {
			return
		}
	case "refresh_token":
		resp, ok = s.refreshGrant(c, f, cl)
		if !ok {
			return
		}
	}
	if err != nil {
		s.host.Internal(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Header("Pragma", "no-cache")
	c.JSON(http.StatusOK, resp)
}

// grant issues an access token (and a refresh token of family when
// offline).
func (s *Server) grant(p principal, family string, offline bool, clientID string) (TokenResponse, error) {
	tok, err := s.auth.issueGrant(p, family)
	if err != nil {
		return TokenResponse{}, err
	}
	resp := TokenResponse{AccessToken: tok, TokenType: "Bearer", ExpiresIn: int(s.cfg.TokenTTL / time.Second), Scope: scopeString(p.Role, offline)}
	if offline {
		resp.RefreshToken, err = s.auth.grants.newRefresh(clientID, family, p.Role)
	}
	return resp, err
}

// grantError answers an error of the grant store.
func (s *Server) grantError(c *gin.Context, err error, client string) {
	if errors.Is(err, errInvalidGrant) {
		if errors.Is(err, errGrantReplayed) {
			s.log.Warn("oauth2 grant replayed; its tokens are revoked", "client", client, "error", err.Error())
		}
		oauthError(c, http.StatusBadRequest, "invalid_grant", strings.TrimPrefix(err.Error(), errInvalidGrant.Error()+": "))
		return
	}
	s.host.Internal(c, err)
}

// codeGrant exchanges an authorization code (RFC 6749 §4.1.3, RFC 7636
// §4.6).
func (s *Server) codeGrant(c *gin.Context, f url.Values, cl oauthClient) (TokenResponse, bool) {
	code := f.Get("code")
	if code == "" {
		oauthError(c, http.StatusBadRequest, "invalid_request", "code is required")
		return TokenResponse{}, false
	}
	ac, err := s.auth.grants.redeem(code, cl.id, f.Get("redirect_uri"), f.Get("code_verifier"), f.Has("code_verifier"))
	if err != nil {
		s.grantError(c, err, cl.id)
		return TokenResponse{}, false
	}
	if f.Has("scope") && !sameScope(f.Get("scope"), scopeString(ac.role, ac.offline)) {
		oauthError(c, http.StatusBadRequest, "invalid_scope", "the scope was granted by the authorization request: "+scopeString(ac.role, ac.offline))
		return TokenResponse{}, false
	}
	resp, err := s.grant(principal{Name: oauthPrincipal(cl.id), Role: ac.role, Via: viaCode, Client: cl.id}, ac.grant, ac.offline, cl.id)
	if err != nil {
		s.grantError(c, err, cl.id)
		return TokenResponse{}, false
	}
	return resp, true
}

// sameScope compares two scopes as sets.
func sameScope(a, b string) bool {
	fa, fb := strings.Fields(a), strings.Fields(b)
	seen := map[string]bool{}
	for _, x := range fa {
		seen[x] = true
	}
	for _, x := range fb {
		if !seen[x] {
			return false
		}
		delete(seen, x)
	}
	return len(seen) == 0
}

// refreshGrant rotates a refresh token (RFC 6749 §6): the old one is
// spent, the answer carries its successor; a narrower scope applies to
// the access token only.
func (s *Server) refreshGrant(c *gin.Context, f url.Values, cl oauthClient) (TokenResponse, bool) {
	tok := f.Get("refresh_token")
	if tok == "" {
		oauthError(c, http.StatusBadRequest, "invalid_request", "refresh_token is required")
		return TokenResponse{}, false
	}
	var narrowed role
	scopeErr := ""
	old, err := s.auth.grants.rotate(tok, cl.id, func(granted role) bool {
		r, _, why, ok := parseScope(f.Get("scope"), granted, true)
		narrowed, scopeErr = r, why
		return ok
	})
	if errors.Is(err, errScopeRefused) {
		oauthError(c, http.StatusBadRequest, "invalid_scope", scopeErr)
		return TokenResponse{}, false
	}
	if err != nil {
		s.grantError(c, err, cl.id)
		return TokenResponse{}, false
	}
	access, err := s.auth.issueGrant(principal{Name: oauthPrincipal(cl.id), Role: narrowed, Via: viaCode, Client: cl.id}, old.grant)
	if err != nil {
		s.host.Internal(c, err)
		return TokenResponse{}, false
	}
	next, err := s.auth.grants.newRefresh(cl.id, old.grant, old.role)
	if err != nil {
		s.grantError(c, err, cl.id)
		return TokenResponse{}, false
	}
	return TokenResponse{AccessToken: access, TokenType: "Bearer", ExpiresIn: int(s.cfg.TokenTTL / time.Second),
		Scope: scopeString(narrowed, true), RefreshToken: next}, true
}

// revoke is POST /oauth2/revoke (RFC 7009): the client revokes one of its
// refresh tokens (and with it its grant: every access and refresh token
// of it) or access tokens. An unknown token, or one of another client, is
// answered 200 as well and left alone (nothing about it leaks).
func (s *Server) revoke(c *gin.Context) {
	src, f, ok := s.clientForm(c)
	if !ok {
		return
	}
	cl, ok := s.clientAuth(c, f, src)
	if !ok {
		return
	}
	tok := f.Get("token")
	if tok == "" {
		oauthError(c, http.StatusBadRequest, "invalid_request", "token is required")
		return
	}
	switch hint := f.Get("token_type_hint"); hint {
	case "", "access_token", "refresh_token":
	default:
		// RFC 7009 §2.2.1: a type plantd cannot revoke.
		oauthError(c, http.StatusBadRequest, "unsupported_token_type", "token_type_hint must be access_token or refresh_token")
		return
	}
	if fam := s.auth.grants.revokeRefresh(tok, cl.id); fam != "" {
		s.auth.dropGrant(fam)
		s.log.Info("oauth2 refresh token revoked with its grant", "client", cl.id)
	} else if s.auth.revokeAccess(tok, cl.id) {
		s.log.Info("oauth2 access token revoked", "client", cl.id)
	}
	c.Header("Cache-Control", "no-store")
	c.Header("Pragma", "no-cache")
	c.Status(http.StatusOK)
}

// pkceChallenge checks a PKCE code challenge: 43 to 128 characters of
// the unreserved set (RFC 7636 §4.2); an S256 one is 43.
func pkceChallenge(s string) bool {
	if len(s) < 43 || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~", r)) {
			return false
		}
	}
	return true
}

// authorize is GET /oauth2/auth, the authorization endpoint (RFC 6749
// §4.1.1). Errors about the client or its redirect URI are answered here
// (never redirected, §4.1.2.1); the others go to the redirect URI. A
// valid request waits for the owner's approval on the gateway (plantd
// consent approve) unless the client is pre-approved; the browser's page
// reloads until it is decided, then goes to the redirect URI with the
// code or access_denied.
func (s *Server) authorize(c *gin.Context) {
	q := c.Request.URL.Query()
	for k, vs := range q {
		if len(vs) > 1 {
			oauthError(c, http.StatusBadRequest, "invalid_request", "parameter "+k+" given more than once")
			return
		}
	}
	if q.Has("client_id") && oauthconfig.CheckClientID(q.Get("client_id")) != nil {
		oauthError(c, http.StatusBadRequest, "invalid_request", badClientID)
		return
	}
	cl, ok := s.auth.clientByID(q.Get("client_id"))
	if !ok {
		oauthError(c, http.StatusBadRequest, "invalid_request", "unknown client_id")
		return
	}
	redirect, ok := cl.redirectURI(q.Get("redirect_uri"))
	if !ok {
		if cl.redirectURIs == "" {
			oauthError(c, http.StatusBadRequest, "unauthorized_client", "this client has no redirect URI configured (oauthClients[].redirectUris)")
			return
		}
		oauthError(c, http.StatusBadRequest, "invalid_request", "redirect_uri missing or not one of the client's")
		return
	}
	state := q.Get("state")
	toClient := func(code, detail string) {
		redirectTo(c, redirect, url.Values{"error": {code}, "error_description": {detail}}, state)
	}
	if rt := q.Get("response_type"); rt != "code" {
		toClient("unsupported_response_type", "response_type must be code")
		return
	}
	r, offline, why, ok := parseScope(q.Get("scope"), cl.role, true)
	if !ok {
		toClient("invalid_scope", why)
		return
	}
	challenge, method := q.Get("code_challenge"), q.Get("code_challenge_method")
	switch {
	case challenge == "" && method != "":
		toClient("invalid_request", "code_challenge_method without code_challenge")
		return
	case challenge != "" && method != "S256":
		// RFC 7636 §4.3: no method means plain, which plantd does not take.
		toClient("invalid_request", "code_challenge_method must be S256")
		return
	case challenge != "" && !pkceChallenge(challenge):
		toClient("invalid_request", "code_challenge must be 43 to 128 unreserved characters")
		return
	}
	p := &consent{Consent: Consent{Kind: KindAuthorize, ClientID: cl.id, RedirectURI: redirect, Scope: scopeString(r, offline)},
		role: r, offline: offline, state: state, challenge: challenge, redirect: q.Has("redirect_uri"), source: sourceKey(sourceAddr(c.Request))}
	if err := s.auth.grants.request(p, cl.preApproved); err != nil {
		if errors.Is(err, errTooManyWaits) || errors.Is(err, errTooManyFrom) {
			toClient("temporarily_unavailable", err.Error())
			return
		}
		s.host.Internal(c, err)
		return
	}
	if !cl.preApproved {
		// Anyone can ask: one line per source a minute, with counts.
		s.anon.Log(slog.LevelInfo, p.source, "authorize", "oauth2 authorization request waits for the owner's approval (plantd consent)",
			"consent", p.ID, "client", cl.id, "scope", p.Scope)
	}
	s.authorizeAnswer(c, p.ID)
}

// authorizeWait is GET /oauth2/auth/{id}: the page of a waiting
// authorization request, reloaded by the browser until it is decided.
func (s *Server) authorizeWait(c *gin.Context) { s.authorizeAnswer(c, c.Param("id")) }

func (s *Server) authorizeAnswer(c *gin.Context, id string) {
	code, p, err := s.auth.grants.finish(id)
	if errors.Is(err, errNoConsent) {
		oauthError(c, http.StatusBadRequest, "invalid_request", "unknown or already answered authorization request")
		return
	}
	if err != nil {
		s.host.Internal(c, err)
		return
	}
	switch {
	case code != "":
		redirectTo(c, p.RedirectURI, url.Values{"code": {code}}, p.state)
	case p.State == StatePending && !p.done:
		waitingPage(c, p)
	default:
		detail := "the gateway's owner refused the request"
		if p.State == StatePending {
			detail = "the gateway's owner did not answer in time"
		}
		redirectTo(c, p.RedirectURI, url.Values{"error": {"access_denied"}, "error_description": {detail}}, p.state)
	}
}

// redirectTo sends the browser to the client's redirect URI with params
// (and state), keeping the URI's own query (RFC 6749 §3.1.2).
func redirectTo(c *gin.Context, redirect string, params url.Values, state string) {
	u, err := url.Parse(redirect)
	if err != nil { // validated by config; cannot happen
		oauthError(c, http.StatusInternalServerError, "server_error", "bad redirect URI")
		return
	}
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	if state != "" {
		q.Set("state", state)
	}
	u.RawQuery = q.Encode()
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusFound, u.String())
	c.Abort()
}

// waitingPage is the page the browser shows while the owner decides.
func waitingPage(c *gin.Context, p consent) {
	next := "/oauth2/auth/" + url.PathEscape(p.ID)
	body := fmt.Sprintf(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="3;url=%[1]s">
<title>Waiting for approval</title></head>
<body><h1>Waiting for the gateway's owner</h1>
<p>The application <b>%[2]s</b> asks for access (%[3]s) to this plant gateway.
The gateway's owner approves it on the gateway: <code>plantd consent approve %[4]s</code>.</p>
<p>This page reloads by itself; <a href="%[1]s">reload now</a>. The request lapses at %[5]s.</p>
</body></html>
`, html.EscapeString(next), html.EscapeString(p.ClientID), html.EscapeString(p.Scope), html.EscapeString(p.ID),
		p.ExpiresAt.UTC().Format(time.RFC3339))
	c.Header("Cache-Control", "no-store")
	c.Header("Content-Security-Policy", "default-src 'none'")
	c.Header("X-Consent-Id", p.ID)
	c.Data(http.StatusOK, "text/html; charset=utf-8", []byte(body))
}

// bcConsent is the answer of the back-channel consent routes.
type bcConsent struct {
	LoginHint   string     `json:"loginHint"`
	State       string     `json:"state"`
	ClientID    string     `json:"clientId"`
	RequestedAt time.Time  `json:"requestedAt"`
	DecidedAt   *time.Time `json:"decidedAt,omitempty"`
	ExpiresAt   *time.Time `json:"expiresAt,omitempty"`
}

func toBC(c Consent) bcConsent {
	b := bcConsent{LoginHint: c.LoginHint, State: c.State, ClientID: c.ClientID, RequestedAt: c.RequestedAt, DecidedAt: c.DecidedAt}
	if c.State == StatePending {
		e := c.ExpiresAt
		b.ExpiresAt = &e
	}
	return b
}

// bcClient returns the OAuth2 client a request's token was issued to.
func (s *Server) bcClient(c *gin.Context) (oauthClient, bool) {
	p := principalOf(c)
	id, ok := strings.CutPrefix(p.Name, "oauth:")
	if ok {
		if cl, found := s.auth.clientByID(id); found {
			return cl, true
		}
	}
	s.host.Problem(c, http.StatusForbidden, "back-channel consent is for OAuth2 clients: use a token from POST /oauth2/token")
	return oauthClient{}, false
}

// bcAuthorize is POST /oauth2/v2/bc-authorize {"loginHint"}: the client
// asks the owner named by loginHint for consent. It answers the client's
// current request for that hint when one is pending or accepted, else a
// new one (accepted at once for a pre-approved client).
func (s *Server) bcAuthorize(c *gin.Context) {
	cl, ok := s.bcClient(c)
	if !ok {
		return
	}
	var body struct {
		LoginHint string `json:"loginHint"`
	}
	if !s.host.DecodeJSON(c, &body) {
		return
	}
	hint := strings.TrimSpace(body.LoginHint)
	if hint == "" || len(hint) > 254 {
		s.host.Problem(c, http.StatusBadRequest, "loginHint is required (at most 254 characters)", FieldError{Field: "loginHint", Message: "required"})
		return
	}
	if cur, ok := s.auth.grants.backChannel(cl.id, hint); ok && cur.State != StateRejected {
		c.JSON(http.StatusOK, toBC(cur))
		return
	}
	p := &consent{Consent: Consent{Kind: KindBackChannel, ClientID: cl.id, LoginHint: hint, Scope: cl.role.String()}, role: cl.role}
	if err := s.auth.grants.request(p, cl.preApproved); err != nil {
		if errors.Is(err, errTooManyWaits) {
			retryAfter(c, time.Minute)
			s.host.Problem(c, http.StatusTooManyRequests, err.Error())
			return
		}
		s.host.Internal(c, err)
		return
	}
	if !cl.preApproved {
		s.log.Info("back-channel consent waits for the owner's approval (plantd consent)", "consent", p.ID, "client", cl.id, "loginHint", hint)
	}
	c.JSON(http.StatusOK, toBC(p.Consent))
}

// bcPoll is GET /oauth2/v2/bc-authorize/{loginHint}.
func (s *Server) bcPoll(c *gin.Context) {
	cl, ok := s.bcClient(c)
	if !ok {
		return
	}
	cur, ok := s.auth.grants.backChannel(cl.id, c.Param("loginHint"))
	if !ok {
		s.host.Problem(c, http.StatusNotFound, "no consent request of this client for that loginHint")
		return
	}
	c.JSON(http.StatusOK, toBC(cur))
}

// ownerOnly guards the consent routes: consent is the owner's act, so
// only a bearer token (plantd token add) or an interactive login (a token
// of the authorization_code flow the owner approved) may list and decide
// consent requests; a client's own client_credentials grant may not (it
// would approve itself), nor an in-process caller (the MQTT uplink speaks
// for the cloud, not the owner).
func (s *Server) ownerOnly(c *gin.Context) {
	p := principalOf(c)
	if !p.ownerAct() {
		s.host.Problem(c, http.StatusForbidden, "consent is the owner's act: use a bearer token of the installer role (plantd token add) "+
			"or an interactive login (the authorization_code flow), not a client's client_credentials token")
		return
	}
	c.Next()
}

// consentList is GET /gateway/v1/consents (installer, ownerOnly): the
// consent requests, pending first.
func (s *Server) consentList(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, gin.H{"consents": s.auth.grants.list()})
}

// consentDecide is POST /gateway/v1/consents/{id}/approve and /reject
// (installer, ownerOnly); an interactive login never decides its own
// client's request.
func (s *Server) consentDecide(accept bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		p := principalOf(c)
		got, err := s.auth.grants.decide(c.Param("id"), accept, p.Client)
		switch {
		case errors.Is(err, errOwnRequest):
			s.log.Warn("consent refused: a client tried to decide its own request", "consent", c.Param("id"), "client", p.Client)
			s.host.Problem(c, http.StatusForbidden, "a client never decides its own consent request: the gateway's owner does")
			return
		case errors.Is(err, errNoConsent):
			s.host.Problem(c, http.StatusNotFound, "no pending consent request "+strconv.Quote(c.Param("id"))+" (it may have lapsed)")
			return
		case errors.Is(err, errDecided):
			s.host.Problem(c, http.StatusConflict, "the consent request is "+got.State+" already")
			return
		case err != nil:
			s.host.Internal(c, err)
			return
		}
		s.log.Info("consent decided", "consent", got.ID, "kind", got.Kind, "client", got.ClientID, "state", got.State, "by", p.Name)
		c.JSON(http.StatusOK, got)
	}
}
