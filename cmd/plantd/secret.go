package main

import (
	"crypto/rand"
	"encoding/base64"
)

// newSecret returns n random bytes as unpadded base64url: the demo token,
// API tokens and OAuth2 client secrets. It never starts with '-': a secret
// is pasted after a command-line flag (--client-secret SECRET), where a
// leading dash reads as another flag (Python's argparse and Node's
// parseArgs refuse it), and one in 64 would start so.
func newSecret(n int) (string, error) {
	raw := make([]byte, n)
	for {
		if _, err := rand.Read(raw); err != nil {
			return "", err
		}
		if s := base64.RawURLEncoding.EncodeToString(raw); s[0] != '-' {
			return s, nil
		}
	}
}
