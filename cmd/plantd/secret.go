package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"

	"plantd/config"
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

// newRoleSecret checks the --role of "plantd VERB add" (standard,
// installer or gridoperator) and makes the new credential's secret. On a
// wrong role or a failure it says why on stderr and returns the exit code
// and false.
func newRoleSecret(verb, role string, stderr io.Writer) (string, int, bool) {
	switch role {
	case config.RoleStandard, config.RoleInstaller, config.RoleGridOperator:
	default:
		fmt.Fprintf(stderr, "plantd %s add: --role %q: want standard, installer or gridoperator\n", verb, role)
		return "", exitUsage, false
	}
	secret, err := newSecret(32)
	if err != nil {
		fmt.Fprintf(stderr, "plantd %s add: %v\n", verb, err)
		return "", exitFailure, false
	}
	return secret, exitOK, true
}
