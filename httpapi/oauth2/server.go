package oauth2

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"plantd/config"
	"plantd/httpapi/oauth2/oauthconfig"
	"plantd/internal/logthrottle"
)

// Config configures the authorization server; the HTTP API fills in its
// defaults (config/defaults.go) before New.
type Config struct {
	// Tokens are the static bearer tokens (hashed).
	Tokens []config.Token
	// OAuthClients may get tokens from POST /oauth2/token.
	OAuthClients []oauthconfig.Client
	// TokenTTL of issued access tokens.
	TokenTTL time.Duration
	// RateLimit per credential.
	RateLimit config.RateLimit
	// FailedLogins limits failed logins per source address.
	FailedLogins FailedLogins
}

// Host is what the server needs from the HTTP API that mounts it: its
// answers outside OAuth2's own error JSON, and its failed-login counter.
type Host interface {
	// Problem answers with the API's problem document for status (400
	// bad body, 401, 403, 404, 409, 429), naming invalid fields if any.
	Problem(c *gin.Context, status int, detail string, invalid ...FieldError)
	// Internal logs err and answers 500.
	Internal(c *gin.Context, err error)
	// DecodeJSON reads a JSON request body strictly into v, as the API
	// reads every JSON body; false: it has answered.
	DecodeJSON(c *gin.Context, v any) bool
	// AuthFailure counts a failed login by reason (invalid_client,
	// invalid_token, rate_limited).
	AuthFailure(reason string)
}

// FieldError names one invalid field of a request body.
type FieldError struct {
	Field   string
	Message string
}

// Server is the authorization server: credentials, issued tokens, grants,
// consents and the login guard, with its routes.
type Server struct {
	cfg  Config
	log  *slog.Logger
	host Host
	auth *authenticator
	// anon rate-limits the lines of anonymous requests (an authorization
	// request waiting), per source and reason.
	anon *logthrottle.Limiter
}

// New checks the credentials of cfg and builds the server. now is the
// wall clock of token expiry and rate limits; log (nil: discarded) gets
// the grant, consent and failed-login lines.
func New(cfg Config, now func() time.Time, log *slog.Logger, host Host) (*Server, error) {
	if host == nil {
		return nil, errors.New("oauth2: a Host is required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a, err := newAuthenticator(cfg, now, log)
	if err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, log: log, host: host, auth: a, anon: logthrottle.New(log, "source", 0, 0)}, nil
}

// SetCredentials replaces the bearer tokens and OAuth2 clients (a config
// reload), checked as New checks them: on an error the old ones stay.
// Access tokens issued to a client that is gone or changed stop working;
// the others stay valid.
func (s *Server) SetCredentials(tokens []config.Token, clients []oauthconfig.Client) error {
	c, err := newCredentials(tokens, clients)
	if err != nil {
		return err
	}
	s.auth.setCredentials(c)
	return nil
}

// Run logs the failed logins' tails and the counts of anonymous requests
// not logged, and forgets idle sources, until ctx ends.
func (s *Server) Run(ctx context.Context) {
	stop := s.anon.Start()
	defer stop()
	s.auth.guard.run(ctx)
}

// Mount adds the routes: the OAuth2 endpoints that need no bearer token
// to open, the back-channel consent and the owner's consent routes
// (/gateway/v1/consents, installer) to authed, whose middleware is
// Authenticate.
func (s *Server) Mount(open gin.IRoutes, authed gin.IRouter) {
	open.POST("/oauth2/token", s.token)
	open.POST("/oauth2/revoke", s.revoke)
	open.GET("/oauth2/auth", s.authorize)
	open.GET("/oauth2/auth/:id", s.authorizeWait)

	authed.POST("/oauth2/v2/bc-authorize", s.bcAuthorize)
	authed.GET("/oauth2/v2/bc-authorize/:loginHint", s.bcPoll)
	cons := authed.Group("/gateway/v1/consents", s.Need(config.RoleInstaller), s.ownerOnly)
	cons.GET("", s.consentList)
	cons.POST("/:id/approve", s.consentDecide(true))
	cons.POST("/:id/reject", s.consentDecide(false))
}

// isTooLarge reports whether err comes from the API's body limit.
func isTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}
