package main

import (
	"context"
	"fmt"
	"io"

	"plantd/config"
)

// runToken handles "plantd token add": it makes a new bearer token, adds
// its SHA-256 hash to the config file's tokens and prints the token once.
// The config never holds the token itself.
func runToken(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && isHelp(args[0]) {
		args = []string{"add", "-h"} // the one verb's usage, with its flags
	}
	if len(args) == 0 || args[0] != "add" {
		fmt.Fprintln(stderr, "usage: plantd token add --name NAME --role standard|installer|gridoperator [-c FILE] [--print-only]\n\nRun 'plantd token -h' for the flags.")
		return exitUsage
	}
	fs := newFlagSet("token add", "--name NAME --role standard|installer|gridoperator [-c FILE] [--print-only]", stderr)
	path := fs.String("c", defaultConfigPath, "config file to add the token's hash to")
	name := fs.String("name", "", "who or what uses the token (e.g. installer-laptop)")
	role := fs.String("role", config.RoleStandard, "standard (read), installer (+ logs, grid control), gridoperator (grid control)")
	printOnly := fs.Bool("print-only", false, "print the token and the config entry, change no file")
	pos, code, ok := parseArgs(fs, args[1:])
	if !ok {
		return code
	}
	if len(pos) != 0 || *name == "" {
		fs.Usage()
		return exitUsage
	}
	token, code, ok := newRoleSecret("token", *role, stderr)
	if !ok {
		return code
	}
	entry := config.Token{Name: *name, SHA256: config.TokenHash(token), Role: *role}
	if *printOnly {
		fmt.Fprintf(stdout, "token (shown once, keep it secret): %s\n\nadd to the config under tokens:\n  - name: %s\n    sha256: %s\n    role: %s\n",
			token, entry.Name, entry.SHA256, entry.Role)
		return exitOK
	}
	if err := config.AddToken(*path, entry); err != nil {
		fmt.Fprintf(stderr, "plantd token add: %v\n", err)
		return exitConfig
	}
	fmt.Fprintf(stdout, "added token %q (%s) to %s; reload plantd (systemctl reload plantd, or SIGHUP) to use it.\ntoken (shown once, keep it secret): %s\n",
		entry.Name, entry.Role, *path, token)
	return exitOK
}
