package httpapi

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"plantd/config"
	"plantd/httpapi/oauth2"
	"plantd/httpapi/oauth2/oauthconfig"
	"plantd/plant"
)

// authServer is the authorization server (package oauth2) as the API
// uses it: a middleware that turns a request's credential into a
// principal (and Caller names it), role checks, its routes (/oauth2/*,
// /gateway/v1/consents) and the credentials a reload replaces.
type authServer interface {
	Authenticate(c *gin.Context)
	// Admitted is Authenticate's check for a request served without Gin
	// (livefast.go): true takes a request from the rate limit, false
	// records nothing.
	Admitted(r *http.Request) bool
	Need(roleName string) gin.HandlerFunc
	Mount(open gin.IRoutes, authed gin.IRouter)
	AsRole(name, roleName string, next http.Handler) (http.Handler, error)
	SetCredentials(tokens []config.Token, clients []oauthconfig.Client) error
	Run(ctx context.Context)
}

// FailedLogins limits failed logins per source address (oauth2.FailedLogins).
type FailedLogins = oauth2.FailedLogins

// authHost is the API as the authorization server needs it (oauth2.Host):
// its problem documents, 500 answer, JSON bodies and failure counter.
type authHost struct{ s *Server }

// authProblemCodes are the problem codes of the statuses the
// authorization server answers with a problem document.
var authProblemCodes = map[int]string{
	http.StatusBadRequest:      plant.CodeBadBody,
	http.StatusUnauthorized:    plant.CodeUnauthorized,
	http.StatusForbidden:       plant.CodeForbidden,
	http.StatusNotFound:        plant.CodeNotFound,
	http.StatusConflict:        plant.CodeConflict,
	http.StatusTooManyRequests: plant.CodeRateLimited,
}

func (h authHost) Problem(c *gin.Context, status int, detail string, invalid ...oauth2.FieldError) {
	code, ok := authProblemCodes[status]
	if !ok {
		code = plant.CodeInternal
	}
	var errs []FieldError
	for _, f := range invalid {
		errs = append(errs, FieldError{Field: f.Field, Message: f.Message})
	}
	fail(c, status, code, detail, errs...)
}

func (h authHost) Internal(c *gin.Context, err error)    { h.s.internal(c, err) }
func (h authHost) DecodeJSON(c *gin.Context, v any) bool { return decodeJSON(c, v) }
func (h authHost) AuthFailure(reason string)             { h.s.metrics.authFailures.Inc(reason) }

// AsRole returns a handler that serves every request as the credential
// name with role (standard, installer or gridoperator), without a bearer
// token, and otherwise exactly as Handler does (same routes, checks,
// rate limit and problem-JSON). It is for in-process callers, such as the
// MQTT uplink answering the cloud's schedules and commands; it must never
// be served on a listener.
func (s *Server) AsRole(name, roleName string) (http.Handler, error) {
	return s.auth.AsRole(name, roleName, s.engine)
}
