package plant

import "net/http"

// Problem is the problem document of plantd's answers: RFC 9457 problem
// details plus the cloud API's own error members code and message. The
// HTTP API answers every error with it (application/problem+json), and
// the MQTT uplink puts it into the acks of refused commands; both build it
// with [NewProblem] and add what they know.
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

// FieldError names one invalid parameter or body field of a problem.
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

// The codes of plantd's problems (a problem's code and the last segment of
// its type), one list for the HTTP API and the MQTT command answers.
const (
	CodeNotFound         = "not-found"
	CodeMethodNotAllowed = "method-not-allowed"
	CodeBadParameter     = "bad-parameter"
	CodeBadBody          = "bad-body"
	CodeTooLarge         = "body-too-large"
	CodeUnsupportedMedia = "unsupported-media-type"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeRateLimited      = "rate-limited"
	CodeInternal         = "internal"
	CodeNotImplemented   = "not-implemented"
	CodeNotEligible      = "not-eligible"
	CodeUnavailable      = "unavailable"
	CodeConflict         = "conflict"
	// CodeHeldByInput: a window a grid operator's input holds while its
	// contacts demand it; only the input ends it.
	CodeHeldByInput = "held-by-input"
	// The version rules of schedule messages over MQTT.
	CodeBadVersion         = "bad-version"
	CodeVersionTooFarAhead = "version-too-far-ahead"
	CodeStaleVersion       = "stale-version"
	CodeSuperseded         = "superseded"
)

// ProblemTypeBase prefixes the type URIs of plantd's problems; the last
// segment is the problem's code ("not-found", "bad-parameter", ...).
const ProblemTypeBase = "https://plantd.dev/problems/"

// NewProblem is the problem of an HTTP status with a code and a detail
// (also its message) about the request or topic instance.
func NewProblem(status int, code, detail, instance string) Problem {
	return Problem{
		Type:     ProblemTypeBase + code,
		Title:    http.StatusText(status),
		Status:   status,
		Detail:   detail,
		Instance: instance,
		Code:     code,
		Message:  detail,
	}
}
