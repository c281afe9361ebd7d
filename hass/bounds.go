package hass

import (
	"strings"
	"unicode/utf8"
)

// Bounds of what a command may carry and of what its log lines quote.
const (
	// MaxCommandPayload is the largest command payload handled: a
	// larger one is refused before it is parsed or copied (Home
	// Assistant's commands are a number or a word).
	MaxCommandPayload = 64 << 10
	// excerptLen bounds the bytes of a payload a log line quotes;
	// topicExcerptLen those of a topic or an id.
	excerptLen      = 64
	topicExcerptLen = 128
	// maxLeftLogged bounds the objects whose left configs are logged
	// apart (a reload removes a few devices; more share one line).
	maxLeftLogged = 32
)

// excerpt is at most n bytes of b as a string for a log line: cut at a
// rune boundary, invalid UTF-8 as U+FFFD, and "…" when cut. The log
// handler quotes and escapes it.
func excerpt(b []byte, n int) string {
	cut := len(b) > n
	if cut {
		b = b[:n]
		// Drop a rune the cut split.
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if cut {
		s += "…"
	}
	return s
}
