package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
)

// contentTypeProblem is the media type of RFC 9457 problem details.
const contentTypeProblem = "application/problem+json"

// FieldError names one invalid parameter or body field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ProblemReason is the eligibility reason of one refused command.
type ProblemReason struct {
	Command string `json:"command"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Problem is an RFC 9457 problem document plus the cloud API's own error
// members code and message.
type Problem struct {
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Status    int          `json:"status"`
	Detail    string       `json:"detail,omitempty"`
	Instance  string       `json:"instance,omitempty"`
	Code      string       `json:"code"`
	Message   string       `json:"message"`
	RequestID string       `json:"requestId,omitempty"`
	Errors    []FieldError `json:"errors,omitempty"`
	// Reasons are the eligibility reasons of the commands a schedule was
	// refused for (422 not-eligible); Retryable says every refusal is
	// one of devices not reachable or not discovered yet
	// (DevicesOffline, DevicesNotDiscovered): the same request may pass
	// once they answer.
	Reasons   []ProblemReason `json:"reasons,omitempty"`
	Retryable bool            `json:"retryable,omitempty"`
	// Error is the OAuth2 error code (RFC 6749 §5.2) on the token endpoint.
	Error string `json:"error,omitempty"`
}

// problemTypeBase prefixes the type URIs of plantd's problems.
const problemTypeBase = "https://plantd.dev/problems/"

// The problem codes (the last segment of type, and code).
const (
	codeNotFound         = "not-found"
	codeMethodNotAllowed = "method-not-allowed"
	codeBadParameter     = "bad-parameter"
	codeBadBody          = "bad-body"
	codeTooLarge         = "body-too-large"
	codeUnsupportedMedia = "unsupported-media-type"
	codeUnauthorized     = "unauthorized"
	codeForbidden        = "forbidden"
	codeRateLimited      = "rate-limited"
	codeInternal         = "internal"
	codeNotImplemented   = "not-implemented"
	codeNotEligible      = "not-eligible"
	codeUnavailable      = "unavailable"
	codeConflict         = "conflict"
)

// problem builds a Problem for the request.
func problem(c *gin.Context, status int, code, detail string, errs ...FieldError) Problem {
	return Problem{
		Type:      problemTypeBase + code,
		Title:     http.StatusText(status),
		Status:    status,
		Detail:    detail,
		Instance:  c.Request.URL.RequestURI(),
		Code:      code,
		Message:   detail,
		RequestID: c.GetString(ctxRequestID),
		Errors:    errs,
	}
}

// writeProblem writes p and aborts the request.
func writeProblem(c *gin.Context, p Problem) {
	b, err := json.Marshal(p)
	if err != nil { // cannot happen for these types
		b = []byte(`{"type":"about:blank","title":"Internal Server Error","status":500}`)
	}
	c.Header("Content-Length", strconv.Itoa(len(b)))
	c.Header("Cache-Control", "no-store")
	c.Data(p.Status, contentTypeProblem, b)
	c.Abort()
}

// fail answers with a problem.
func fail(c *gin.Context, status int, code, detail string, errs ...FieldError) {
	writeProblem(c, problem(c, status, code, detail, errs...))
}

// badParam answers 400 naming the parameter.
func badParam(c *gin.Context, name, msg string) {
	fail(c, http.StatusBadRequest, codeBadParameter, "invalid parameter "+name+": "+msg, FieldError{Field: name, Message: msg})
}
