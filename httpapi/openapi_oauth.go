package httpapi

import "plantd/httpapi/oauth2"

// oauthRoutes documents the OAuth2 endpoints and the consent routes.
func oauthRoutes() []route {
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
	return []route{
		{method: "post", path: "/oauth2/token", summary: "OAuth2 token: client_credentials, authorization_code (PKCE S256), refresh_token (rotated)",
			response: "TokenResponse", open: true, body: "TokenRequest", bodyType: form, form: tokenForm,
			oauthErrs: true, oauthAuth: true, errs: []string{"400", "413", "415"}},
		{method: "post", path: "/oauth2/revoke", summary: "OAuth2 token revocation (RFC 7009): a refresh token with its grant, or an access token; 200 for an unknown one too",
			open: true, body: "RevokeRequest", bodyType: form, form: revokeForm, oauthErrs: true, oauthAuth: true, errs: []string{"400", "413", "415"},
			extra: obj{"200": obj{"description": "revoked, or not a token of this client"}}},
		{method: "get", path: "/oauth2/auth", summary: "OAuth2 authorization endpoint (code flow): waits for the owner's approval on the gateway (5 min) unless the client is pre-approved; at most 10 pending requests per source address (IPv6: per /64), else temporarily_unavailable",
			open: true, oauthErrs: true, errs: []string{"400"}, params: []obj{
				param("response_type", "query", "code", enum("code"), true),
				param("client_id", "query", "a configured client with redirectUris", str(), true),
				param("redirect_uri", "query", "one of the client's redirectUris (optional when it has one)", str(), false),
				param("state", "query", "returned with the code", str(), false),
				param("scope", "query", "offline_access for a refresh token, and roles up to the client's", str(), false),
				param("code_challenge", "query", "PKCE (RFC 7636)", str(), false),
				param("code_challenge_method", "query", "S256 only", enum("S256"), false)},
			extra: obj{"200": waiting, "302": redirect}},
		{method: "get", path: "/oauth2/auth/{id}", summary: "The waiting page of an authorization request: 302 to the redirect URI once decided",
			open: true, oauthErrs: true, errs: []string{"400"}, params: []obj{idParam}, extra: obj{"200": waiting, "302": redirect}},
		{method: "post", path: "/oauth2/v2/bc-authorize", summary: "Back-channel consent: ask the owner named by loginHint (an OAuth2 client's token); Accepted at once for a pre-approved client",
			response: "BackChannelConsent", body: "BackChannelRequest", bodyType: "application/json", errs: []string{"400", "403", "413", "415"}},
		{method: "get", path: "/oauth2/v2/bc-authorize/{loginHint}", summary: "Poll a back-channel consent: Pending, Accepted or Rejected",
			response: "BackChannelConsent", params: []obj{param("loginHint", "path", "as posted", str(), true)}, errs: []string{"403"}},
		{method: "get", path: "/gateway/v1/consents", summary: "Consent requests waiting for the owner, then decided ones (installer: a bearer token or an interactive login, never a client_credentials token; plantd consent list)",
			response: "Consents", errs: []string{"403"}},
		{method: "post", path: "/gateway/v1/consents/{id}/approve", summary: "Approve a pending consent request (installer: a bearer token or an interactive login, never a client_credentials token nor the requesting client; plantd consent approve)",
			response: "Consent", params: []obj{idParam}, errs: []string{"403", "409"}},
		{method: "post", path: "/gateway/v1/consents/{id}/reject", summary: "Reject a pending consent request (installer: a bearer token or an interactive login, never a client_credentials token nor the requesting client; plantd consent reject)",
			response: "Consent", params: []obj{idParam}, errs: []string{"403", "409"}},
	}
}

// withOAuthSchemas adds the schemas of the consent routes.
func withOAuthSchemas(s obj) obj {
	ts := obj{"type": "string", "format": "date-time"}
	s["BackChannelRequest"] = object(obj{"loginHint": describe(str(), "who is asked (the plant owner's login); 1 to 254 characters")}, "loginHint")
	s["BackChannelConsent"] = object(obj{"loginHint": str(), "state": enum(oauth2.StatePending, oauth2.StateAccepted, oauth2.StateRejected), "clientId": str(),
		"requestedAt": ts, "decidedAt": ts, "expiresAt": describe(obj{"type": "string", "format": "date-time"}, "when a pending request lapses (5 min)")},
		"loginHint", "state", "clientId", "requestedAt")
	s["Consent"] = object(obj{"id": str(), "kind": enum(oauth2.KindAuthorize, oauth2.KindBackChannel), "clientId": str(), "loginHint": str(),
		"redirectUri": str(), "scope": str(), "state": enum(oauth2.StatePending, oauth2.StateAccepted, oauth2.StateRejected),
		"requestedAt": ts, "decidedAt": ts, "expiresAt": ts}, "id", "kind", "clientId", "scope", "state", "requestedAt", "expiresAt")
	s["Consents"] = object(obj{"consents": arr(ref("Consent"))}, "consents")
	return s
}
