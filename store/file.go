package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
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
		if _, err = tx.ExecContext(ctx, `INSERT INTO device (id, name, plant, kind, measures) VALUES (?, ?, ?, ?, ?)`,
			d.id, d.name, d.plant, string(d.kind), d.measures); err != nil {
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

// checkFile compares the file the path names with the database file the
// store writes to, and reports a deleted or replaced file through Health
// (ErrFileGone) with what to do. It checks only while the store writes
// (not on read-only storage, where reopening checks; not on a corrupt
// file, which the log asks to move aside). A stat that fails otherwise
// (permissions, I/O) tells nothing and changes nothing.
func (s *Store) checkFile() {
	if s.closed.Load() || s.corrupt.Load() || s.wdb.Load() == nil {
		return
	}
	want := s.fileIdentity()
	if want == (fileID{}) {
		return
	}
	path := s.cfg.Path
	cur, _, err := statID(path)
	var gone error
	switch {
	case err == nil && cur == want:
	case errors.Is(err, fs.ErrNotExist):
		gone = fmt.Errorf("%w: %s was deleted while plantd runs: plantd records into the deleted file, "+
			"which is lost if plantd is killed or the power fails; restart plantd now (systemctl restart plantd): "+
			"a clean stop writes the data back to %s", ErrFileGone, path, path)
	case err == nil:
		gone = fmt.Errorf("%w: %s now names another file than the one plantd opened and records into: "+
			"a clean stop leaves that file as it is and writes plantd's data beside it, to %s.recovered-<time>; "+
			"stop plantd and keep the one you want at %s", ErrFileGone, path, path, path)
	default:
		return
	}
	s.setSlot(slotFile, gone)
}

// writeBack runs at a clean stop (Close), while the writer is still open:
// when the database file was deleted or replaced under the store, it
// copies the database the store wrote to (VACUUM INTO, a consistent and
// complete file, WAL included) back to the path, or beside the other file
// that is there now, and logs an Error saying so. A failure is logged as
// data lost.
func (s *Store) writeBack() {
	db := s.wdb.Load()
	want := s.fileIdentity()
	if db == nil || s.corrupt.Load() || want == (fileID{}) {
		return
	}
	path := s.cfg.Path
	cur, _, err := statID(path)
	switch {
	case err == nil && cur == want:
		return
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		s.log.Error("cannot tell whether the database file is still the one plantd wrote to; not writing it back", "path", path, "err", err)
		return
	}
	s.fileMu.Lock()
	mode := s.fileMode
	s.fileMu.Unlock()
	recovered := path + ".recovered-" + time.Now().UTC().Format("20060102T150405Z")
	dst := path
	if err == nil {
		dst = recovered
	}
	dst, err = copyDB(db, dst, recovered, mode)
	switch {
	case err != nil:
		s.log.Error("the database file was deleted or replaced while plantd ran, and writing its data back failed: "+
			"what plantd stored is lost; put back a copy made with plantd backup", "path", path, "err", err)
	case dst == path:
		s.log.Error("the database file was deleted while plantd ran: plantd wrote its data back to the path at this stop, "+
			"and the next start continues on it; find out what deleted it", "path", path)
	default:
		s.log.Error("the database file was replaced while plantd ran: the file there is left as it is and plantd's data "+
			"is written beside it; to keep plantd's data, put the copy in place of the database while plantd is stopped "+
			"(removing any -wal and -shm files there)", "path", path, "copy", dst)
	}
}

// copyDB writes the database of db to a new file dst (the database's path
// or a recovery name), or to alt when a file appeared at dst meanwhile:
// VACUUM INTO a temporary file beside it, synced, then linked to its name
// without replacing anything. It returns the name written.
func copyDB(db *sql.DB, dst, alt string, mode fs.FileMode) (string, error) {
	dir := filepath.Dir(dst)
	f, err := os.CreateTemp(dir, "."+filepath.Base(dst)+".writeback-*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	f.Close()
	defer os.Remove(tmp)
	// VACUUM INTO takes an empty file. At a stop: bounded by the unit's
	// stop timeout, not by a context of ours.
	if _, err := db.ExecContext(context.Background(), `VACUUM INTO ?`, tmp); err != nil {
		return "", classify(err)
	}
	if mode != 0 {
		if err := os.Chmod(tmp, mode); err != nil {
			return "", err
		}
	}
	if err := syncFile(tmp); err != nil {
		return "", err
	}
	if dst != alt {
		// A -wal or -shm file left at the path belongs to the deleted
		// database (or to nothing): SQLite would apply it to the copy.
		for _, side := range []string{dst + "-wal", dst + "-shm"} {
			if err := os.Remove(side); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
		}
	}
	err = os.Link(tmp, dst)
	if errors.Is(err, fs.ErrExist) && dst != alt {
		dst = alt
		err = os.Link(tmp, dst)
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		// A file system without hard links.
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		return "", err
	}
	return dst, syncFile(dir)
}

// syncFile fsyncs a file or directory.
func syncFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
