package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"plantd/config"
	"plantd/httpapi/oauth2/oauthconfig"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// runClient handles "plantd client add": it generates an OAuth2 client
// secret (256 random bits, so a fast hash of it stays safe; DESIGN §5),
// adds the client with the secret's SHA-256 to the config file's
// oauthClients and prints the secret once.
func runClient(_ context.Context, args []string, stdout, stderr io.Writer) int {
	const synopsis = "--id ID --role ROLE [--redirect-uri URI]... [--pre-approved] [-c FILE] [--print-only]"
	if len(args) > 0 && isHelp(args[0]) {
		args = []string{"add", "-h"} // the one verb's usage, with its flags
	}
	if len(args) == 0 || args[0] != "add" {
		fmt.Fprintln(stderr, "usage: plantd client add "+synopsis+"\n\nRun 'plantd client -h' for the flags.")
		return exitUsage
	}
	fs := newFlagSet("client add", synopsis, stderr)
	path := fs.String("c", defaultConfigPath, "config file to add the client to")
	id := fs.String("id", "", "the client_id (e.g. energy-portal)")
	role := fs.String("role", config.RoleStandard, "role of its tokens: standard, installer or gridoperator")
	var redirects stringList
	fs.Var(&redirects, "redirect-uri", "a redirect URI of the authorization_code flow (repeatable)")
	pre := fs.Bool("pre-approved", false, "its authorization requests and back-channel consents need no approval by the owner")
	printOnly := fs.Bool("print-only", false, "print the secret and the config entry, change no file")
	pos, code, ok := parseArgs(fs, args[1:])
	if !ok {
		return code
	}
	if len(pos) != 0 || *id == "" {
		fs.Usage()
		return exitUsage
	}
	if err := oauthconfig.CheckClientID(*id); err != nil {
		fmt.Fprintf(stderr, "plantd client add: --id: %v\n", err)
		return exitUsage
	}
	secret, code, ok := newRoleSecret("client", *role, stderr)
	if !ok {
		return code
	}
	cl := oauthconfig.Client{ClientID: *id, SecretSHA256: config.TokenHash(secret), Role: *role, RedirectURIs: redirects, PreApproved: *pre}
	if *printOnly {
		var b strings.Builder
		fmt.Fprintf(&b, "client_secret (shown once, keep it secret): %s\n\nadd to the config under oauthClients:\n  - clientId: %s\n    secretSha256: %s\n    role: %s\n",
			secret, cl.ClientID, cl.SecretSHA256, cl.Role)
		if len(redirects) > 0 {
			b.WriteString("    redirectUris:\n")
			for _, u := range redirects {
				fmt.Fprintf(&b, "      - %s\n", u)
			}
		}
		if *pre {
			b.WriteString("    preApproved: true\n")
		}
		fmt.Fprint(stdout, b.String())
		return exitOK
	}
	if err := config.AddOAuthClient(*path, cl); err != nil {
		fmt.Fprintf(stderr, "plantd client add: %v\n", err)
		return exitConfig
	}
	fmt.Fprintf(stdout, "added OAuth2 client %q (%s) to %s; reload plantd (systemctl reload plantd, or SIGHUP) to use it.\nclient_secret (shown once, keep it secret): %s\n",
		cl.ClientID, cl.Role, *path, secret)
	return exitOK
}
