package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockDB takes the exclusive lock of a database: flock on the file
// path+".lock" beside it, holding the locker's pid. Another holder makes
// it fail at once with ErrLocked and that pid. On storage where the lock
// file cannot be created (read-only), it returns nil, nil: such a store
// cannot write, so two of them do no harm.
func lockDB(path string) (*os.File, error) {
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return nil, nil
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			b := make([]byte, 32)
			n, _ := f.ReadAt(b, 0)
			holder := strings.TrimSpace(string(b[:n]))
			if _, perr := strconv.Atoi(holder); perr != nil {
				holder = "unknown"
			}
			return nil, fmt.Errorf("%w by pid %s (lock %s): stop that plantd first", ErrLocked, holder, name)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
