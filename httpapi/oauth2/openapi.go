package oauth2

// The server's part of the API's OpenAPI 3.1 document: its routes, in the
// API's route description (the API builds the operations, with its
// problem responses), and its schemas.

// Route documents one route: as the API's document builder takes it.
type Route struct {
	Method, Path, Summary, Response string
	Params                          []map[string]any
	// Errs lists the error statuses besides 401/404/405/429/500.
	Errs []string
	// Body names the request body schema and its media type; Form is
	// the schema of a form-encoded one.
	Body, BodyType string
	Form           map[string]any
	Open           bool // no bearer token
	Extra          map[string]any
	// OAuthErrors: the route's errors are RFC 6749 §5.2 JSON
	// (OAuthError), not problem-JSON; ClientAuth: it authenticates the
	// client (401, and 429 for a source with too many failed logins).
	OAuthErrors, ClientAuth bool
}

type obj = map[string]any

func ref(name string) obj          { return obj{"$ref": "#/components/schemas/" + name} }
func str() obj                     { return obj{"type": "string"} }
func arr(items obj) obj            { return obj{"type": "array", "items": items} }
func enum(v ...string) obj         { return obj{"type": "string", "enum": v} }
func describe(o obj, d string) obj { o["description"] = d; return o }

// object is a closed object schema with the given properties.
func object(props obj, required ...string) obj {
	o := obj{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func param(name, in, desc string, schema obj, required bool) obj {
	return obj{"name": name, "in": in, "description": desc, "schema": schema, "required": required}
}

// Routes documents the server's routes (Mount) for the API's OpenAPI
// document.
func Routes() []Route {
	const form = "application/x-www-form-urlencoded"
	clientAuth := obj{"client_id": describe(str(), "with client_secret; or HTTP Basic instead (never both)"), "client_secret": str()}
	with := func(props obj) obj {
		o := obj{}
		for k, v := range clientAuth {
			o[k] = v
		}
		for k, v := range props {
			o[k] = v
		}
		return o
	}
	tokenForm := object(with(obj{
		"grant_type": enum("client_credentials", "authorization_code", "refresh_token"),
		"scope": describe(str(), "client_credentials: space-separated roles up to the client's (standard, installer, gridoperator), default the client's role; "+
			"refresh_token: a narrower scope for the new access token; authorization_code: only the one granted; any other is refused with invalid_scope"),
		"code":          describe(str(), "authorization_code: the code from the redirect (single use, 60 s)"),
		"redirect_uri":  describe(str(), "authorization_code: the same as in the authorization request, if it named one"),
		"code_verifier": describe(str(), "authorization_code: the PKCE verifier when the request had a code_challenge (S256)"),
		"refresh_token": describe(str(), "refresh_token: the latest refresh token (spent by its use; a spent one revokes the grant)"),
	}), "grant_type")
	tokenForm["additionalProperties"] = true
	revokeForm := object(with(obj{"token": str(), "token_type_hint": enum("access_token", "refresh_token")}), "token")
	revokeForm["additionalProperties"] = true
	redirect := obj{"description": "to the client's redirect_uri with code and state, or with error (access_denied, invalid_scope, invalid_request, unsupported_response_type, temporarily_unavailable) and state",
		"headers": obj{"Location": obj{"schema": str(), "required": true}}}
	waiting := obj{"description": "a page that waits for the owner's approval and reloads itself (X-Consent-Id names the request)",
		"headers": obj{"X-Consent-Id": obj{"schema": str()}}, "content": obj{"text/html": obj{"schema": str()}}}
	idParam := param("id", "path", "consent request id", str(), true)
	return []Route{
		{Method: "post", Path: "/oauth2/token", Summary: "OAuth2 token: client_credentials, authorization_code (PKCE S256), refresh_token (rotated)",
			Response: "TokenResponse", Open: true, Body: "TokenRequest", BodyType: form, Form: tokenForm,
			OAuthErrors: true, ClientAuth: true, Errs: []string{"400", "413", "415"}},
		{Method: "post", Path: "/oauth2/revoke", Summary: "OAuth2 token revocation (RFC 7009): a refresh token with its grant, or an access token; 200 for an unknown one too",
			Open: true, Body: "RevokeRequest", BodyType: form, Form: revokeForm, OAuthErrors: true, ClientAuth: true, Errs: []string{"400", "413", "415"},
			Extra: obj{"200": obj{"description": "revoked, or not a token of this client"}}},
		{Method: "get", Path: "/oauth2/auth", Summary: "OAuth2 authorization endpoint (code flow): waits for the owner's approval on the gateway (5 min) unless the client is pre-approved; at most 10 pending requests per source address (IPv6: per /64), else temporarily_unavailable",
			Open: true, OAuthErrors: true, Errs: []string{"400"}, Params: []obj{
				param("response_type", "query", "code", enum("code"), true),
				param("client_id", "query", "a configured client with redirectUris", str(), true),
				param("redirect_uri", "query", "one of the client's redirectUris (optional when it has one)", str(), false),
				param("state", "query", "returned with the code", str(), false),
				param("scope", "query", "offline_access for a refresh token, and roles up to the client's", str(), false),
				param("code_challenge", "query", "PKCE (RFC 7636)", str(), false),
				param("code_challenge_method", "query", "S256 only", enum("S256"), false)},
			Extra: obj{"200": waiting, "302": redirect}},
		{Method: "get", Path: "/oauth2/auth/{id}", Summary: "The waiting page of an authorization request: 302 to the redirect URI once decided",
			Open: true, OAuthErrors: true, Errs: []string{"400"}, Params: []obj{idParam}, Extra: obj{"200": waiting, "302": redirect}},
		{Method: "post", Path: "/oauth2/v2/bc-authorize", Summary: "Back-channel consent: ask the owner named by loginHint (an OAuth2 client's token); Accepted at once for a pre-approved client",
			Response: "BackChannelConsent", Body: "BackChannelRequest", BodyType: "application/json", Errs: []string{"400", "403", "413", "415"}},
		{Method: "get", Path: "/oauth2/v2/bc-authorize/{loginHint}", Summary: "Poll a back-channel consent: Pending, Accepted or Rejected",
			Response: "BackChannelConsent", Params: []obj{param("loginHint", "path", "as posted", str(), true)}, Errs: []string{"403"}},
		{Method: "get", Path: "/gateway/v1/consents", Summary: "Consent requests waiting for the owner, then decided ones (installer: a bearer token or an interactive login, never a client_credentials token; plantd consent list)",
			Response: "Consents", Errs: []string{"403"}},
		{Method: "post", Path: "/gateway/v1/consents/{id}/approve", Summary: "Approve a pending consent request (installer: a bearer token or an interactive login, never a client_credentials token nor the requesting client; plantd consent approve)",
			Response: "Consent", Params: []obj{idParam}, Errs: []string{"403", "409"}},
		{Method: "post", Path: "/gateway/v1/consents/{id}/reject", Summary: "Reject a pending consent request (installer: a bearer token or an interactive login, never a client_credentials token nor the requesting client; plantd consent reject)",
			Response: "Consent", Params: []obj{idParam}, Errs: []string{"403", "409"}},
	}
}

// AddSchemas adds the schemas of the server's requests and answers to s,
// the document's components.schemas, and returns s.
func AddSchemas(s map[string]any) map[string]any {
	ts := obj{"type": "string", "format": "date-time"}
	s["BackChannelRequest"] = object(obj{"loginHint": describe(str(), "who is asked (the plant owner's login); 1 to 254 characters")}, "loginHint")
	s["BackChannelConsent"] = object(obj{"loginHint": str(), "state": enum(StatePending, StateAccepted, StateRejected), "clientId": str(),
		"requestedAt": ts, "decidedAt": ts, "expiresAt": describe(obj{"type": "string", "format": "date-time"}, "when a pending request lapses (5 min)")},
		"loginHint", "state", "clientId", "requestedAt")
	s["Consent"] = object(obj{"id": str(), "kind": enum(KindAuthorize, KindBackChannel), "clientId": str(), "loginHint": str(),
		"redirectUri": str(), "scope": str(), "state": enum(StatePending, StateAccepted, StateRejected),
		"requestedAt": ts, "decidedAt": ts, "expiresAt": ts}, "id", "kind", "clientId", "scope", "state", "requestedAt", "expiresAt")
	s["Consents"] = object(obj{"consents": arr(ref("Consent"))}, "consents")
	s["OAuthError"] = describe(object(obj{"error": enum("invalid_request", "invalid_client", "invalid_grant", "unauthorized_client",
		"unsupported_grant_type", "invalid_scope", "unsupported_token_type", "server_error", "slow_down"), "error_description": str()}, "error"),
		"an error of the OAuth2 endpoints (RFC 6749 §5.2, RFC 7009 §2.2.1); slow_down (RFC 8628) with 429 and Retry-After: "+
			"too many requests of the client, or too many failed logins from the source address")
	s["TokenResponse"] = object(obj{"access_token": str(), "token_type": enum("Bearer"), "expires_in": obj{"type": "integer"},
		"scope":         describe(str(), "the role granted; with offline_access when a refresh token comes with it"),
		"refresh_token": describe(str(), "authorization_code with scope offline_access, and refresh_token (its successor: a refresh token is spent by its use)")},
		"access_token", "token_type", "expires_in", "scope")
	return s
}
