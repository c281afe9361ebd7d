package termtext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Safe returns s with every control character, bidirectional formatting
// character and line or paragraph separator written as a Go escape
// (\x1b, \n, \u202e) and each byte of invalid UTF-8 as \xNN; see the
// package documentation.
func Safe(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case escaped(r):
			writeEscape(&b, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// needsEscape reports whether Safe changes s.
func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || escaped(r) {
			return true
		}
		i += n
	}
	return false
}

// escaped reports whether r is written as an escape.
func escaped(r rune) bool {
	switch {
	case unicode.IsControl(r): // C0, DEL, C1
		return true
	case r == 0x061C, r == 0x200E, r == 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional formatting
	case r == 0x2028, r == 0x2029:
		return true // line and paragraph separators
	}
	return false
}

// writeEscape writes r as strconv.QuoteRune escapes it: \a \b \f \n \r
// \t \v by name, \xNN below 0x80, \uNNNN above.
func writeEscape(b *strings.Builder, r rune) {
	switch r {
	case '\a':
		b.WriteString(`\a`)
	case '\b':
		b.WriteString(`\b`)
	case '\f':
		b.WriteString(`\f`)
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	case '\t':
		b.WriteString(`\t`)
	case '\v':
		b.WriteString(`\v`)
	default:
		if r < 0x80 {
			fmt.Fprintf(b, `\x%02x`, r)
		} else {
			fmt.Fprintf(b, `\u%04x`, r)
		}
	}
}
