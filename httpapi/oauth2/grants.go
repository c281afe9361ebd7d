package oauth2

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"time"
)

// Lifetimes of the OAuth2 grants (all on the wall clock).
const (
	CodeTTL    = 60 * time.Second    // an authorization code (RFC 6749 §4.1.2: short)
	refreshTTL = 30 * 24 * time.Hour // a refresh token, renewed by every rotation
	ConsentTTL = 5 * time.Minute     // a consent request waiting for the owner
	lapsedTTL  = time.Minute         // an undecided authorization request after it lapsed, for its page's access_denied
	decidedTTL = 24 * time.Hour      // a decided authorization request, for the list
	// MaxPending bounds the pending back-channel consent requests of
	// one client. Only the client's own token opens them, so no one
	// else can use up its budget.
	MaxPending = 100
	// MaxPendingAuthorize bounds the pending authorization requests
	// (GET /oauth2/auth, which needs no credential) over all clients and
	// sources: their own pool, apart from the back-channel ones. A new
	// request beyond it pushes out the oldest request of the source
	// holding most in the network (pendingNet) holding most, so a flood
	// pushes out its own requests and never a user's.
	MaxPendingAuthorize = 1000
	// MaxPendingPerSource bounds the pending authorization requests from
	// one source (sourceKey: an IPv4 address or an IPv6 /64), over all
	// clients: a source beyond it is told to retry.
	MaxPendingPerSource = 10
)

// Consent kinds and states (the states are the cloud's words).
const (
	KindAuthorize   = "authorization_code"
	KindBackChannel = "bc-authorize"

	StatePending  = "Pending"
	StateAccepted = "Accepted"
	StateRejected = "Rejected"
)

// Errors of the grant store, mapped to RFC 6749 codes by the handlers.
var (
	errNoConsent     = errors.New("no such consent request")
	errDecided       = errors.New("the consent request is decided already")
	errOwnRequest    = errors.New("a client never decides its own consent request")
	errTooManyWaits  = errors.New("too many consent requests of this client wait for the owner")
	errTooManyFrom   = errors.New("too many authorization requests from this address wait for the owner; retry when one is answered or has lapsed (5 min)")
	errInvalidGrant  = errors.New("invalid grant")
	errGrantReplayed = errors.New("grant used twice; every token of it is revoked")
	errScopeRefused  = errors.New("scope refused")
)

// Consent is a request for the owner's approval: an authorization request
// (GET /oauth2/auth) or a back-channel consent (POST
// /oauth2/v2/bc-authorize). It is what GET /gateway/v1/consents lists.
type Consent struct {
	ID          string     `json:"id"`
	Kind        string     `json:"kind"`
	ClientID    string     `json:"clientId"`
	LoginHint   string     `json:"loginHint,omitempty"`
	RedirectURI string     `json:"redirectUri,omitempty"`
	Scope       string     `json:"scope"`
	State       string     `json:"state"`
	RequestedAt time.Time  `json:"requestedAt"`
	DecidedAt   *time.Time `json:"decidedAt,omitempty"`
	// ExpiresAt is when a pending request lapses unanswered.
	ExpiresAt time.Time `json:"expiresAt"`
}

// consent is a Consent with what the code flow needs after approval.
type consent struct {
	Consent
	role      role
	offline   bool
	state     string // the client's state parameter
	challenge string // PKCE S256 code challenge ("" none)
	redirect  bool   // the authorization request named redirect_uri
	done      bool   // its code (or error) went to the client
	source    string // sourceKey of who asked (an authorization request; "" none)
	seq       uint64 // order of the requests (RequestedAt may repeat)
}

// authCode is an authorization code, kept by hash until it expires so a
// second use is recognised.
type authCode struct {
	client, redirectURI, challenge, grant string
	role                                  role
	offline                               bool
	expires                               time.Time
	used                                  bool
}

// refreshToken is a refresh token, kept by hash; a rotated one stays
// (used) until it expires so its replay is recognised.
type refreshToken struct {
	client, grant string
	role          role
	expires       time.Time
	used          bool
}

// grants hold consents, codes and refresh tokens: in memory, so a restart
// forgets them (clients authorize again; DESIGN §5 does not ask them to
// survive). Secrets are kept only as SHA-256 hashes.
type grants struct {
	now func() time.Time

	mu       sync.Mutex
	seq      uint64              // of the last consent request
	consents map[string]*consent // by id
	codes    map[[sha256.Size]byte]*authCode
	refresh  map[[sha256.Size]byte]*refreshToken
	revoked  map[string]time.Time // grant families revoked, until their last refresh token would expire
}

func newGrants(now func() time.Time) *grants {
	return &grants{now: now, consents: map[string]*consent{}, codes: map[[sha256.Size]byte]*authCode{},
		refresh: map[[sha256.Size]byte]*refreshToken{}, revoked: map[string]time.Time{}}
}

// randomString returns n random bytes, base64url.
func randomString(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// randomID returns 128 random bits as 32 hex digits.
func randomID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// sweepLocked drops what has expired; the caller holds g.mu.
func (g *grants) sweepLocked(now time.Time) {
	for id, c := range g.consents {
		if c.State == StatePending && !now.Before(c.ExpiresAt) && c.Kind == KindBackChannel {
			delete(g.consents, id)
		}
		if c.Kind == KindAuthorize && c.State == StatePending && !now.Before(c.ExpiresAt.Add(lapsedTTL)) {
			delete(g.consents, id)
		}
		if c.Kind == KindAuthorize && !now.Before(c.ExpiresAt.Add(decidedTTL)) {
			delete(g.consents, id)
		}
	}
	for h, c := range g.codes {
		if !now.Before(c.expires) {
			delete(g.codes, h)
		}
	}
	for h, r := range g.refresh {
		if !now.Before(r.expires) {
			delete(g.refresh, h)
		}
	}
	for f, until := range g.revoked {
		if !now.Before(until) {
			delete(g.revoked, f)
		}
	}
}

// request adds a pending consent request (decided at once when accepted
// is true: a pre-approved client). The two kinds have their own pools:
// a back-channel request (its client authenticated) is refused when its
// client has MaxPending back-channel requests waiting; an authorization
// request (c.source set, anonymous) is refused when its source has
// MaxPendingPerSource waiting, and when MaxPendingAuthorize wait in all
// it takes the place of a flooder's oldest (evictLocked), so a new
// user's request is always taken and a waiting one stays.
func (g *grants) request(c *consent, accepted bool) error {
	id, err := randomID()
	if err != nil {
		return err
	}
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sweepLocked(now)
	ofClient, fromSource, anonymous := 0, 0, 0
	for _, o := range g.consents {
		if o.State != StatePending || !now.Before(o.ExpiresAt) {
			continue
		}
		switch {
		case o.Kind == KindBackChannel && o.ClientID == c.ClientID:
			ofClient++
		case o.Kind == KindAuthorize:
			anonymous++
			if o.source == c.source {
				fromSource++
			}
		}
	}
	switch {
	case accepted:
	case c.Kind == KindBackChannel && ofClient >= MaxPending:
		return errTooManyWaits
	case c.Kind == KindAuthorize && fromSource >= MaxPendingPerSource:
		return errTooManyFrom
	case c.Kind == KindAuthorize && anonymous >= MaxPendingAuthorize:
		g.evictLocked(now)
	}
	if c.Kind == KindBackChannel { // a new request replaces the client's older ones for the hint
		for oid, o := range g.consents {
			if o.Kind == KindBackChannel && o.ClientID == c.ClientID && o.LoginHint == c.LoginHint {
				delete(g.consents, oid)
			}
		}
	}
	g.seq++
	c.ID, c.RequestedAt, c.ExpiresAt, c.State, c.seq = id, now, now.Add(ConsentTTL), StatePending, g.seq
	if accepted {
		c.State, c.DecidedAt = StateAccepted, &now
	}
	g.consents[id] = c
	return nil
}

// evictLocked drops one pending authorization request: in the network
// (pendingNet) holding most of them, the oldest of the source there
// holding most. A flood holds more per network and per source than a
// user, so it loses its own requests; a user loses one only to a flood
// spread over more networks than it has requests in each. The caller
// holds g.mu.
func (g *grants) evictLocked(now time.Time) {
	perNet, perSource := map[string]int{}, map[string]int{}
	var pending []*consent
	for _, o := range g.consents {
		if o.Kind == KindAuthorize && o.State == StatePending && now.Before(o.ExpiresAt) {
			pending = append(pending, o)
			perNet[pendingNet(o.source)]++
			perSource[o.source]++
		}
	}
	var victim *consent
	worse := func(o *consent) bool { // o goes before victim
		if victim == nil {
			return true
		}
		on, vn := perNet[pendingNet(o.source)], perNet[pendingNet(victim.source)]
		if on != vn {
			return on > vn
		}
		if os, vs := perSource[o.source], perSource[victim.source]; os != vs {
			return os > vs
		}
		return o.seq < victim.seq
	}
	for _, o := range pending {
		if worse(o) {
			victim = o
		}
	}
	if victim != nil {
		delete(g.consents, victim.ID)
	}
}

// pendingNet is the network of a source (sourceKey) for evictLocked: an
// IPv4 /24, an IPv6 /48 (a site's usual allocation), the source itself
// when it is no address.
func pendingNet(source string) string {
	bits := 48
	ip, err := netip.ParseAddr(source)
	if err == nil {
		bits = 24
	} else if p, perr := netip.ParsePrefix(source); perr == nil {
		ip = p.Addr()
	} else {
		return source
	}
	if ip.Is6() {
		bits = 48
	}
	p, err := ip.Prefix(bits)
	if err != nil {
		return source
	}
	return p.String()
}

// list returns the consent requests, pending first, newest first.
func (g *grants) list() []Consent {
	now := g.now()
	g.mu.Lock()
	g.sweepLocked(now)
	out := make([]Consent, 0, len(g.consents))
	for _, c := range g.consents {
		v := c.Consent
		if v.State == StatePending && !now.Before(v.ExpiresAt) {
			continue // lapsed
		}
		out = append(out, v)
	}
	g.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		pi, pj := out[i].State == StatePending, out[j].State == StatePending
		if pi != pj {
			return pi
		}
		return out[i].RequestedAt.After(out[j].RequestedAt)
	})
	return out
}

// decide accepts or rejects a pending request; by is the OAuth2 client
// deciding ("" for the owner's token), which may not be the requester.
func (g *grants) decide(id string, accept bool, by string) (Consent, error) {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.consents[id]
	if c == nil || (c.State == StatePending && !now.Before(c.ExpiresAt)) {
		return Consent{}, errNoConsent
	}
	if by != "" && by == c.ClientID {
		return Consent{}, errOwnRequest
	}
	if c.State != StatePending {
		return c.Consent, errDecided
	}
	c.State, c.DecidedAt = StateRejected, &now
	if accept {
		c.State = StateAccepted
	}
	return c.Consent, nil
}

// backChannel returns the client's newest consent for loginHint.
func (g *grants) backChannel(client, hint string) (Consent, bool) {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	var best *consent
	for _, c := range g.consents {
		if c.Kind != KindBackChannel || c.ClientID != client || c.LoginHint != hint {
			continue
		}
		if c.State == StatePending && !now.Before(c.ExpiresAt) {
			continue
		}
		if best == nil || c.RequestedAt.After(best.RequestedAt) {
			best = c
		}
	}
	if best == nil {
		return Consent{}, false
	}
	return best.Consent, true
}

// finish marks an authorization request answered (its code or error sent)
// and, when it was accepted, issues its code; a request is answered once.
func (g *grants) finish(id string) (code string, c consent, err error) {
	code, err = randomString(32)
	if err != nil {
		return "", consent{}, err
	}
	family, err := randomID()
	if err != nil {
		return "", consent{}, err
	}
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.consents[id]
	if p == nil || p.Kind != KindAuthorize || p.done {
		return "", consent{}, errNoConsent
	}
	if p.State == StatePending && now.Before(p.ExpiresAt) {
		return "", *p, nil
	}
	p.done = true
	if p.State != StateAccepted {
		return "", *p, nil
	}
	redirect := ""
	if p.redirect {
		redirect = p.RedirectURI
	}
	g.codes[sha256.Sum256([]byte(code))] = &authCode{client: p.ClientID, redirectURI: redirect, challenge: p.challenge,
		grant: family, role: p.role, offline: p.offline, expires: now.Add(CodeTTL)}
	return code, *p, nil
}

// redeem takes an authorization code for the client: the grant it starts.
// A used code is refused and every token of its grant revoked (RFC 6749
// §4.1.2).
func (g *grants) redeem(code, client, redirectURI, verifier string, hasVerifier bool) (authCode, error) {
	now := g.now()
	h := sha256.Sum256([]byte(code))
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.codes[h]
	switch {
	case c == nil || !now.Before(c.expires):
		return authCode{}, fmt.Errorf("%w: unknown or expired code", errInvalidGrant)
	case c.client != client:
		return authCode{}, fmt.Errorf("%w: the code was issued to another client", errInvalidGrant)
	case c.used:
		g.revokeLocked(c.grant, now)
		return authCode{}, fmt.Errorf("%w: %w", errInvalidGrant, errGrantReplayed)
	case c.redirectURI != "" && c.redirectURI != redirectURI:
		return authCode{}, fmt.Errorf("%w: redirect_uri differs from the authorization request's", errInvalidGrant)
	case c.challenge == "" && hasVerifier:
		return authCode{}, fmt.Errorf("%w: code_verifier given, but the authorization request had no code_challenge", errInvalidGrant)
	case c.challenge != "" && !hasVerifier:
		return authCode{}, fmt.Errorf("%w: code_verifier required (the authorization request had a code_challenge)", errInvalidGrant)
	case c.challenge != "" && subtle.ConstantTimeCompare([]byte(s256(verifier)), []byte(c.challenge)) != 1:
		return authCode{}, fmt.Errorf("%w: code_verifier does not match the code_challenge (PKCE S256)", errInvalidGrant)
	}
	c.used = true
	return *c, nil
}

// s256 is PKCE's S256 transform (RFC 7636 §4.2).
func s256(verifier string) string {
	h := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// newRefresh issues a refresh token of a grant family.
func (g *grants) newRefresh(client, family string, r role) (string, error) {
	tok, err := randomString(32)
	if err != nil {
		return "", err
	}
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, gone := g.revoked[family]; gone {
		return "", fmt.Errorf("%w: the grant was revoked", errInvalidGrant)
	}
	g.refresh[sha256.Sum256([]byte(tok))] = &refreshToken{client: client, grant: family, role: r, expires: now.Add(refreshTTL)}
	return tok, nil
}

// rotate takes a refresh token for the client and retires it; the caller
// issues its successor. Replaying a retired one revokes its whole grant
// family (RFC 9700 §4.14.2).
// scopeOK checks the request's scope against the grant's role before the
// token is spent.
func (g *grants) rotate(tok, client string, scopeOK func(granted role) bool) (refreshToken, error) {
	now := g.now()
	h := sha256.Sum256([]byte(tok))
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.refresh[h]
	switch {
	case r == nil || !now.Before(r.expires):
		return refreshToken{}, fmt.Errorf("%w: unknown, expired or revoked refresh token", errInvalidGrant)
	case r.client != client:
		return refreshToken{}, fmt.Errorf("%w: the refresh token was issued to another client", errInvalidGrant)
	case r.used:
		g.revokeLocked(r.grant, now)
		return refreshToken{}, fmt.Errorf("%w: refresh token used before (rotated); %w", errInvalidGrant, errGrantReplayed)
	}
	if _, gone := g.revoked[r.grant]; gone {
		return refreshToken{}, fmt.Errorf("%w: the grant was revoked", errInvalidGrant)
	}
	if !scopeOK(r.role) {
		return refreshToken{}, errScopeRefused
	}
	r.used = true
	return *r, nil
}

// revokeRefresh revokes the grant family of a refresh token of the
// client; it reports the family ("" when the token is not the client's
// refresh token).
func (g *grants) revokeRefresh(tok, client string) string {
	now := g.now()
	h := sha256.Sum256([]byte(tok))
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.refresh[h]
	if r == nil || r.client != client {
		return ""
	}
	g.revokeLocked(r.grant, now)
	return r.grant
}

// revokeLocked ends a grant family: its refresh tokens and codes go; the
// caller drops its access tokens. The caller holds g.mu.
func (g *grants) revokeLocked(family string, now time.Time) {
	g.revoked[family] = now.Add(refreshTTL)
	for h, r := range g.refresh {
		if r.grant == family {
			delete(g.refresh, h)
		}
	}
	for _, c := range g.codes {
		if c.grant == family {
			c.used = true
		}
	}
}

// isRevoked reports whether a grant family was revoked.
func (g *grants) isRevoked(family string) bool {
	if family == "" {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	_, gone := g.revoked[family]
	return gone
}

// keepClients drops the codes, refresh tokens and consents of clients not
// in keep (a reload removed or changed them).
func (g *grants) keepClients(keep []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for h, c := range g.codes {
		if !slices.Contains(keep, c.client) {
			delete(g.codes, h)
		}
	}
	for h, r := range g.refresh {
		if !slices.Contains(keep, r.client) {
			delete(g.refresh, h)
		}
	}
	for id, c := range g.consents {
		if !slices.Contains(keep, c.ClientID) {
			delete(g.consents, id)
		}
	}
}
