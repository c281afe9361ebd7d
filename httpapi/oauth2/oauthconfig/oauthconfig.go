package oauthconfig

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"plantd/internal/confcheck"
)

// Client may get tokens from plantd's OAuth2 endpoints (oauthClients[]).
type Client struct {
	// ClientID is required and unique: printable ASCII without space and
	// the separators ( ) < > @ , ; : \ " / [ ] ? = { } % (CheckClientID).
	ClientID string `yaml:"clientId"`
	// SecretSHA256 is the hex SHA-256 of the client secret (64 hex digits,
	// either case).
	SecretSHA256 string `yaml:"secretSha256"`
	// Role of the tokens issued to the client: standard, installer or
	// gridoperator.
	Role string `yaml:"role"`
	// RedirectURIs the client may name in the authorization_code flow
	// (GET /oauth2/auth): absolute URLs without a fragment, compared
	// exactly. None = the client may not use that flow.
	RedirectURIs []string `yaml:"redirectUris"`
	// PreApproved clients need no approval by the gateway's owner: their
	// authorization requests and back-channel consents
	// (POST /oauth2/v2/bc-authorize) are accepted at once. Default false.
	PreApproved bool `yaml:"preApproved"`
}

// Validate checks the clients; c is at oauthClients.
func Validate(c confcheck.Checker, clients []Client) {
	ids := map[string]string{}
	for i, o := range clients {
		entry := fmt.Sprintf("[%d]", i)
		e := c.In(entry)
		if o.ClientID == "" {
			e.Add("clientId", "required")
		} else if err := CheckClientID(o.ClientID); err != nil {
			e.Add("clientId", "%v", err)
		}
		c.Unique(ids, o.ClientID, entry+".clientId", entry, "client id")
		e.SHA256("secretSha256", o.SecretSHA256)
		e.Role("role", o.Role)
		for j, u := range o.RedirectURIs {
			checkRedirectURI(e, fmt.Sprintf("redirectUris[%d]", j), u)
		}
	}
}

// clientIDSeparators are the characters a client id must not hold
// besides controls and space: HTTP's separators (RFC 9110 §5.6.2; ':'
// splits HTTP Basic's user and password, '"' ends a quoted string) and
// '%' (it would read as URL-encoding in HTTP Basic).
const clientIDSeparators = `()<>@,;:\"/[]?={}%`

// CheckClientID checks an OAuth2 client id: printable ASCII (RFC 6749's
// VSCHAR) without space, the separators ( ) < > @ , ; : \ " / [ ] ? = { }
// and %, so that it goes unencoded into HTTP Basic, URLs, log lines and a
// terminal. The error quotes the first character refused.
func CheckClientID(id string) error {
	if id == "" {
		return errors.New("a client id is required")
	}
	for _, r := range id {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune(clientIDSeparators, r) {
			return fmt.Errorf("client id %s: %s is not allowed (printable ASCII only, without space and ( ) < > @ , ; : \\ \" / [ ] ? = { } %%)",
				strconv.QuoteToASCII(id), strconv.QuoteRuneToASCII(r))
		}
	}
	return nil
}

// checkRedirectURI checks an OAuth2 redirection endpoint (RFC 6749
// §3.1.2): absolute, http or https, without a fragment.
func checkRedirectURI(c confcheck.Checker, field, s string) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		c.Add(field, "%q is not a URL: %v", s, err)
	case u.Scheme != "https" && u.Scheme != "http" || u.Host == "":
		c.Add(field, "%q: want an absolute http or https URL", s)
	case u.Fragment != "" || strings.Contains(s, "#"):
		c.Add(field, "%q: a redirect URI must not have a fragment", s)
	}
}
