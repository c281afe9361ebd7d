package termtext

import "testing"

func TestSafe(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"owner@example.com", "owner@example.com"},
		{"Grüße, 日本, emoji 🙂", "Grüße, 日本, emoji 🙂"},
		{"admin\u202Etxt.exe", `admin\u202etxt.exe`},
		{"\u202A\u202B\u202C\u202D\u202E", `\u202a\u202b\u202c\u202d\u202e`},
		{"\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
		{"a\u200Eb\u200Fc\u061Cd", `a\u200eb\u200fc\u061cd`},
		{"line\u2028sep\u2029", `line\u2028sep\u2029`},
		{"\x1b[2J\x07", `\x1b[2J\a`},
		{"a\tb\nc\rd\x00", `a\tb\nc\rd\x00`},
		{"del\x7f", `del\x7f`},
		{"c1\u0085\u009b", `c1\u0085\u009b`},
		{"bad\xff\xfeutf8", `bad\xff\xfeutf8`},
		{"\uFFFD kept", "\uFFFD kept"}, // a real U+FFFD is text
		{"", ""},
	} {
		if got := Safe(tt.in); got != tt.want {
			t.Errorf("Safe(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
