package oauth2

import "plantd/httpapi/apidoc"

// The server's part of the API's OpenAPI 3.1 document: its routes, in the
// API's route description (the API builds the operations, with its
// problem responses), and its schemas.

// Routes documents the server's routes (Mount) for the API's OpenAPI
// document.
func Routes() []apidoc.Route {
	const form = "application/x-www-form-urlencoded"
	clientAuth := apidoc.Obj{"client_id": apidoc.Describe(apidoc.Str(), "with client_secret; or HTTP Basic instead (never both)"), "client_secret": apidoc.Str()}
	with := func(props apidoc.Obj) apidoc.Obj {
		o := apidoc.Obj{}
		for k, v := range clientAuth {
			o[k] = v
		}
		for k, v := range props {
			o[k] = v
		}
		return o
	}
	tokenForm := apidoc.Object(with(apidoc.Obj{
		"grant_type": apidoc.Enum("client_credentials", "authorization_code", "refresh_token"),
		"scope": apidoc.Describe(apidoc.Str(), "client_credentials: space-separated roles up to the client's (standard, installer, gridoperator), default the client's role; "+
			"refresh_token: a narrower scope for the new access token; authorization_code: only the one granted; any other is refused with invalid_scope"),
		"code":          apidoc.Describe(apidoc.Str(), "authorization_code: the code from the redirect (single use, 60 s)"),
		"redirect_uri":  apidoc.Describe(apidoc.Str(), "authorization_code: the same as in the authorization request, if it named one"),
		"code_verifier": apidoc.Describe(apidoc.Str(), "authorization_code: the PKCE verifier when the request had a code_challenge (S256)"),
		"refresh_token": apidoc.Describe(apidoc.Str(), "refresh_token: the latest refresh token (spent by its use; a spent one revokes the grant)"),
	}), "grant_type")
	tokenForm["additionalProperties"] = true
	revokeForm := apidoc.Object(with(apidoc.Obj{"token": apidoc.Str(), "token_type_hint": apidoc.Enum("access_token", "refresh_token")}), "token")
	revokeForm["additionalProperties"] = true
	redirect := apidoc.Obj{"description": "to the client's redirect_uri with code and state, or with error (access_denied, invalid_scope, invalid_request, unsupported_response_type, temporarily_unavailable) and state",
		"headers": apidoc.Obj{"Location": apidoc.Obj{"schema": apidoc.Str(), "required": true}}}
	waiting := apidoc.Obj{"description": "a page that waits for the owner's approval and reloads itself (X-Consent-Id names the request)",
		"headers": apidoc.Obj{"X-Consent-Id": apidoc.Obj{"schema": apidoc.Str()}}, "content": apidoc.Obj{"text/html": apidoc.Obj{"schema": apidoc.Str()}}}
	idParam := apidoc.Param("id", "path", "consent request id", apidoc.Str(), true)
	return []apidoc.Route{
		{Method: "post", Path: "/oauth2/token", Summary: "OAuth2 token: client_credentials, authorization_code (PKCE S256), refresh_token (rotated)",
			Response: "TokenResponse", Open: true, Body: "TokenRequest", BodyType: form, Form: tokenForm,
			OAuthErrors: true, ClientAuth: true, Errs: []string{"400", "413", "415"}},
		{Method: "post", Path: "/oauth2/revoke", Summary: "OAuth2 token revocation (RFC 7009): a refresh token with its grant, or an access token; 200 for an unknown one too",
			Open: true, Body: "RevokeRequest", BodyType: form, Form: revokeForm, OAuthErrors: true, ClientAuth: true, Errs: []string{"400", "413", "415"},
			Extra: apidoc.Obj{"200": apidoc.Obj{"description": "revoked, or not a token of this client"}}},
		{Method: "get", Path: "/oauth2/auth", Summary: "OAuth2 authorization endpoint (code flow): waits for the owner's approval on the gateway (5 min) unless the client is pre-approved; at most 10 pending requests per source address (IPv6: per /64), else temporarily_unavailable",
			Open: true, OAuthErrors: true, Errs: []string{"400"}, Params: []apidoc.Obj{
				apidoc.Param("response_type", "query", "code", apidoc.Enum("code"), true),
				apidoc.Param("client_id", "query", "a configured client with redirectUris", apidoc.Str(), true),
				apidoc.Param("redirect_uri", "query", "one of the client's redirectUris (optional when it has one)", apidoc.Str(), false),
				apidoc.Param("state", "query", "returned with the code", apidoc.Str(), false),
				apidoc.Param("scope", "query", "offline_access for a refresh token, and roles up to the client's", apidoc.Str(), false),
				apidoc.Param("code_challenge", "query", "PKCE (RFC 7636)", apidoc.Str(), false),
				apidoc.Param("code_challenge_method", "query", "S256 only", apidoc.Enum("S256"), false)},
			Extra: apidoc.Obj{"200": waiting, "302": redirect}},
		{Method: "get", Path: "/oauth2/auth/{id}", Summary: "The waiting page of an authorization request: 302 to the redirect URI once decided",
			Open: true, OAuthErrors: true, Errs: []string{"400"}, Params: []apidoc.Obj{idParam}, Extra: apidoc.Obj{"200": waiting, "302": redirect}},
		{Method: "post", Path: "/oauth2/v2/bc-authorize", Summary: "Back-channel consent: ask the owner named by loginHint (an OAuth2 client's token); Accepted at once for a pre-approved client",
			Response: "BackChannelConsent", Body: "BackChannelRequest", BodyType: "application/json", Errs: []string{"400", "403", "413", "415"}},
		{Method: "get", Path: "/oauth2/v2/bc-authorize/{loginHint}", Summary: "Poll a back-channel consent: Pending, Accepted or Rejected",
			Response: "BackChannelConsent", Params: []apidoc.Obj{apidoc.Param("loginHint", "path", "as posted", apidoc.Str(), true)}, Errs: []string{"403"}},
		{Method: "get", Path: "/gateway/v1/consents", Summary: "Consent requests waiting for the owner, then decided ones (installer: a bearer token or an interactive login, never a client_credentials token; plantd consent list)",
			Response: "Consents", Errs: []string{"403"}},
		{Method: "post", Path: "/gateway/v1/consents/{id}/approve", Summary: "Approve a pending consent request (installer: a bearer token or an interactive login, never a client_credentials token nor the requesting client; plantd consent approve)",
			Response: "Consent", Params: []apidoc.Obj{idParam}, Errs: []string{"403", "409"}},
		{Method: "post", Path: "/gateway/v1/consents/{id}/reject", Summary: "Reject a pending consent request (installer: a bearer token or an interactive login, never a client_credentials token nor the requesting client; plantd consent reject)",
			Response: "Consent", Params: []apidoc.Obj{idParam}, Errs: []string{"403", "409"}},
	}
}

// AddSchemas adds the schemas of the server's requests and answers to s,
// the document's components.schemas, and returns s.
func AddSchemas(s map[string]any) map[string]any {
	ts := apidoc.Obj{"type": "string", "format": "date-time"}
	s["BackChannelRequest"] = apidoc.Object(apidoc.Obj{"loginHint": apidoc.Describe(apidoc.Str(), "who is asked (the plant owner's login); 1 to 254 characters")}, "loginHint")
	s["BackChannelConsent"] = apidoc.Object(apidoc.Obj{"loginHint": apidoc.Str(), "state": apidoc.Enum(StatePending, StateAccepted, StateRejected), "clientId": apidoc.Str(),
		"requestedAt": ts, "decidedAt": ts, "expiresAt": apidoc.Describe(apidoc.Obj{"type": "string", "format": "date-time"}, "when a pending request lapses (5 min)")},
		"loginHint", "state", "clientId", "requestedAt")
	s["Consent"] = apidoc.Object(apidoc.Obj{"id": apidoc.Str(), "kind": apidoc.Enum(KindAuthorize, KindBackChannel), "clientId": apidoc.Str(), "loginHint": apidoc.Str(),
		"redirectUri": apidoc.Str(), "scope": apidoc.Str(), "state": apidoc.Enum(StatePending, StateAccepted, StateRejected),
		"requestedAt": ts, "decidedAt": ts, "expiresAt": ts}, "id", "kind", "clientId", "scope", "state", "requestedAt", "expiresAt")
	s["Consents"] = apidoc.Object(apidoc.Obj{"consents": apidoc.Arr(apidoc.Ref("Consent"))}, "consents")
	s["OAuthError"] = apidoc.Describe(apidoc.Object(apidoc.Obj{"error": apidoc.Enum("invalid_request", "invalid_client", "invalid_grant", "unauthorized_client",
		"unsupported_grant_type", "invalid_scope", "unsupported_token_type", "server_error", "slow_down"), "error_description": apidoc.Str()}, "error"),
		"an error of the OAuth2 endpoints (RFC 6749 §5.2, RFC 7009 §2.2.1); slow_down (RFC 8628) with 429 and Retry-After: "+
			"too many requests of the client, or too many failed logins from the source address")
	s["TokenResponse"] = apidoc.Object(apidoc.Obj{"access_token": apidoc.Str(), "token_type": apidoc.Enum("Bearer"), "expires_in": apidoc.Obj{"type": "integer"},
		"scope":         apidoc.Describe(apidoc.Str(), "the role granted; with offline_access when a refresh token comes with it"),
		"refresh_token": apidoc.Describe(apidoc.Str(), "authorization_code with scope offline_access, and refresh_token (its successor: a refresh token is spent by its use)")},
		"access_token", "token_type", "expires_in", "scope")
	return s
}
