package main

import (
	"context"
	"fmt"
	"io"
	"syscall"

	"plantd/config"
	"plantd/store"
)

// runBackup handles "plantd backup FILE": a consistent copy of the
// database (the config's database.path, or --db) to FILE, taken with
// SQLite's online backup API while plantd runs. FILE is created 0600.
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("backup", "[-c FILE | --db PATH] DEST", stderr)
	path := fs.String("c", defaultConfigPath, "config file naming the database")
	db := fs.String("db", "", "the database to copy (instead of the config's database.path)")
	dest, code, ok := parseOneArg(fs, args)
	if !ok {
		return code
	}
	src := *db
	if src == "" {
		cfg, err := config.Load(*path)
		if err != nil {
			fmt.Fprintf(stderr, "plantd backup: %v\n", err)
			return exitConfig
		}
		src = cfg.Database.Path
	}
	// The copy holds what the database does (token hashes, consents,
	// the plant's history): readable by its owner only, from its first
	// byte (SQLite creates files 0644 less the umask).
	syscall.Umask(0o077)
	if err := store.Backup(ctx, src, dest); err != nil {
		fmt.Fprintf(stderr, "plantd backup: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "backed up %s to %s\n", src, dest)
	return exitOK
}
