package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// fileID names a file: the device and inode a path led to. The store
// takes it when it opens the database, and compares it with what the path
// names later (doc.go, Failures): a database file deleted or replaced
// under a running plantd is not the file it writes to.
type fileID struct{ dev, ino uint64 }

// statID returns the identity and permission bits of the file at path.
func statID(path string) (fileID, fs.FileMode, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, 0, fmt.Errorf("stat %s: no device and inode", path)
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, fi.Mode().Perm(), nil
}

// layDown writes the catalogue (every device and balance source, every
// series, with their ids) into a database that has the schema but no rows:
// a file created anew under a running store, whose catalogue the writer
// keeps using. Without it every batch fails on the foreign keys.
func (c *catalog) layDown(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("lay down the device catalogue: %w", err)
	}
	c.mu.RLock()
	for _, d := range c.byID {
		if _, err = tx.ExecContext(ctx, `INSERT INTO device (id, name, plant, kind) VALUES (?, ?, ?, ?)`,
			d.id, d.name, d.plant, string(d.kind)); err != nil {
			break
		}
	}
	if err == nil {
		for _, s := range c.seriesIDs {
			if _, err = tx.ExecContext(ctx, `INSERT INTO series (id, device, channel, idx) VALUES (?, ?, ?, ?)`,
				s.id, s.dev.id, s.name, s.idx); err != nil {
				break
			}
		}
	}
	c.mu.RUnlock()
	if err == nil {
		err = tx.Commit()
	} else {
		tx.Rollback()
	}
	if err != nil {
		return fmt.Errorf("lay down the device catalogue: %w", err)
	}
	return nil
}

// errNotOurs says that the path names another file than the database the
// store opened.
var errNotOurs = errors.New("not the database file plantd opened")
