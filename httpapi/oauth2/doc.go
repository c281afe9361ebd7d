// Package oauth2 is plantd's authorization server (DESIGN §5): the
// credentials (configured bearer tokens and OAuth2 clients, hashed), the
// access tokens it issues, the token endpoint with the client_credentials,
// authorization_code (PKCE S256) and refresh_token grants (rotated on
// use), revocation (RFC 7009), the authorization endpoint whose requests
// the gateway's owner approves, back-channel consent, the owner's consent
// routes (/gateway/v1/consents), roles, the per-credential rate limit and
// the failed-login guard per source address.
//
// Pending consent requests live in two pools, so that no one without a
// credential can fill a client's: a client's back-channel requests (its
// token opens them; MaxPending per client) and the anonymous
// authorization requests (GET /oauth2/auth; MaxPendingPerSource per
// source, an IPv4 address or an IPv6 /64, then temporarily_unavailable;
// MaxPendingAuthorize in all, beyond which a new request pushes out the
// oldest of the source holding most in the network, an IPv4 /24 or IPv6
// /48, holding most: a flood pushes out its own). Lines that anonymous
// requests cause are rate-limited per source (internal/logthrottle).
//
// Usage: the HTTP API builds a Server with New(Config, clock, logger,
// Host), mounts its routes with Mount, puts Authenticate in front of every
// route that needs a credential (Need for a role; Caller names who asked;
// Admitted is its check for a request the API serves without Gin),
// runs Run for the login guard's log, and calls SetCredentials on a
// reload. Host is the API's side of the seam: its problem documents, its
// 500 answer, its JSON body rules and its failed-login counter. Errors of
// /oauth2/token, /oauth2/revoke and /oauth2/auth are RFC 6749 §5.2 JSON,
// written here; the others go through Host.
//
// Files: server.go the Server, Host and Mount; authn.go roles, principals,
// credentials, issued tokens, Authenticate and AsRole; token.go the OAuth2
// and consent handlers; grants.go consents, codes and refresh tokens;
// loginguard.go the failed-login guard; openapi.go its routes and schemas
// for the API's OpenAPI document (Routes, AddSchemas), built with
// httpapi/apidoc's blocks. Grants live in memory: a restart forgets them.
//
// Import boundary: oauth2 imports config (bearer tokens, rate limit,
// roles), httpapi/oauth2/oauthconfig (the clients' config section, a
// leaf that config imports),
// httpapi/apidoc (the OpenAPI blocks), internal/logthrottle, gin,
// golang.org/x/time/rate and the standard library; only httpapi (which
// mounts it) and cmd/plantd (the consent CLI's Consent type) import it.
// It never imports httpapi: what it needs from it is Host.
//
// Imports: plantd/config, plantd/httpapi/apidoc, plantd/internal/logthrottle, plantd/httpapi/oauth2/oauthconfig
package oauth2
