package main

import (
	"encoding/base64"
	"testing"
)

// TestNewSecret: 6,400 secrets (about 100 would start with '-' if drawn
// plainly), none starts with a dash, each decodes to n random bytes.
func TestNewSecret(t *testing.T) {
	seen := map[string]bool{}
	for i := range 6400 {
		n := 24 + 8*(i%2)
		s, err := newSecret(n)
		if err != nil {
			t.Fatal(err)
		}
		if s[0] == '-' {
			t.Fatalf("secret %q starts with a dash", s)
		}
		raw, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(raw) != n {
			t.Fatalf("secret %q: %d bytes, %v; want %d", s, len(raw), err, n)
		}
		if seen[s] {
			t.Fatalf("secret %q drawn twice", s)
		}
		seen[s] = true
	}
}
