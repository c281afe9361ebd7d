package main

import (
	"context"
	"fmt"
	"io"

	"plantd/config"
	"plantd/store"
)

// runBackup handles "plantd backup FILE": a consistent copy of the
// database (the config's database.path, or --db) to FILE, taken with
// SQLite's online backup API while plantd runs.
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("backup", "[-c FILE | --db PATH] DEST", stderr)
	path := fs.String("c", defaultConfigPath, "config file naming the database")
	db := fs.String("db", "", "the database to copy (instead of the config's database.path)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
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
	if err := store.Backup(ctx, src, pos[0]); err != nil {
		fmt.Fprintf(stderr, "plantd backup: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "backed up %s to %s\n", src, pos[0])
	return exitOK
}
