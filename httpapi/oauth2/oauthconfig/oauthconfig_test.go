package oauthconfig

import (
	"strconv"
	"strings"
	"testing"
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
