package oauthconfig

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"plantd/internal/confcheck"
)

// TestCheckClientID: a client id is printable ASCII without space, the
// HTTP separators and %; anything else is refused with the character
// quoted.
func TestCheckClientID(t *testing.T) {
	for _, tt := range []struct {
		id   string
		want string // "" = accepted; else the quoted character named
	}{
		{"energy-portal", ""},
		{"A.b_c~d!e#f$g&h'i*j+k^l`m|n-0123456789", ""},
		{"", "required"},
		{"esc\x1b[31m", `'\x1b'`},
		{"cr\rlf", `'\r'`},
		{"tab\tid", `'\t'`},
		{"del\x7f", `'\x7f'`},
		{"c1\u0085", `'\u0085'`},
		{"bad\xffutf8", `'\ufffd'`},
		{"sp ace", `' '`},
		{"port\u00e4l", `'\u00e4'`},
	} {
		err := CheckClientID(tt.id)
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckClientID(%q) = %v, want %q", tt.id, err, tt.want)
		}
	}
	for _, r := range clientIDSeparators {
		if err := CheckClientID("a" + string(r) + "b"); err == nil || !strings.Contains(err.Error(), strconv.QuoteRune(r)) {
			t.Errorf("separator %q: %v", r, err)
		}
	}
}

func TestValidate(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	var l confcheck.List
	Validate(confcheck.New(&l, "oauthClients"), []Client{
		{ClientID: "app", SecretSHA256: sum, Role: "standard", RedirectURIs: []string{"https://app.example.com/cb"}},
		{ClientID: "app", SecretSHA256: "x", Role: "owner", RedirectURIs: []string{"app.example.com/cb", "https://a/#f"}},
		{SecretSHA256: sum, Role: "installer"},
	})
	want := []string{
		`oauthClients[1].clientId: duplicate client id "app" (first in oauthClients[0])`,
		`oauthClients[1].secretSha256: "x" is not a hex SHA-256 (64 hex digits)`,
		`oauthClients[1].role: "owner" is not a role (standard, installer or gridoperator)`,
		`oauthClients[1].redirectUris[0]: "app.example.com/cb": want an absolute http or https URL`,
		`oauthClients[1].redirectUris[1]: "https://a/#f": a redirect URI must not have a fragment`,
		"oauthClients[2].clientId: required",
	}
	if !slices.Equal(l.Problems, want) {
		t.Errorf("problems\n%q\nwant\n%q", l.Problems, want)
	}
}
