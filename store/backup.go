package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"

	"github.com/mattn/go-sqlite3"
)

// Backup copies the database at src to a new file dst with SQLite's online
// backup API: a consistent snapshot (main file and WAL together) taken
// beside a running plantd, without its lock and without stopping it. dst
// must not exist. The copy is a complete database: Open it, or put it in
// place of plantd.db while plantd is stopped (removing any plantd.db-wal
// and plantd.db-shm there).
func Backup(ctx context.Context, src, dst string) error {
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("store: backup: %s: %w", dst, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: backup: %w", err)
	}
	rp := url.Values{}
	rp.Set("mode", "ro")
	rp.Set("_busy_timeout", "5000")
	from := sql.OpenDB(connector{drv: &sqlite3.SQLiteDriver{}, dsn: dsn(src, rp)})
	defer from.Close()
	wp := url.Values{}
	wp.Set("mode", "rwc")
	to := sql.OpenDB(connector{drv: &sqlite3.SQLiteDriver{}, dsn: dsn(dst, wp)})
	defer to.Close()
	fc, err := from.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: backup: open %s: %w", src, classify(err))
	}
	defer fc.Close()
	tc, err := to.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: backup: create %s: %w", dst, classify(err))
	}
	defer tc.Close()
	err = tc.Raw(func(td any) error {
		return fc.Raw(func(fd any) error {
			b, err := td.(*sqlite3.SQLiteConn).Backup("main", fd.(*sqlite3.SQLiteConn), "main")
			if err != nil {
				return err
			}
			for {
				if err := ctx.Err(); err != nil {
					b.Finish()
					return err
				}
				// All pages in one step: a snapshot that a writer
				// cannot restart midway.
				done, err := b.Step(-1)
				if err != nil {
					b.Finish()
					return err
				}
				if done {
					return b.Finish()
				}
			}
		})
	})
	if err != nil {
		os.Remove(dst)
		return fmt.Errorf("store: backup %s to %s: %w", src, dst, classify(err))
	}
	return nil
}
