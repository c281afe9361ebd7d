package store

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// Usage is what the store costs the storage medium: the process's writes
// and the database's size. An installer reads the wear rate of an SD card
// from it (at /metrics and /healthz).
type Usage struct {
	// BytesWritten is the whole plantd process's writes to the block
	// layer since it started (write_bytes of /proc/self/io): the
	// database, its WAL and anything else plantd writes. BytesWrittenOK is
	// false where the kernel does not count it (no /proc, or a kernel
	// without task I/O accounting).
	BytesWritten   uint64
	BytesWrittenOK bool
	// FileBytes and WALBytes are the sizes of the database file and of
	// its -wal file (0 when absent).
	FileBytes, WALBytes int64
}

// Usage reads the process's I/O counter and the database's size.
func (s *Store) Usage() Usage {
	var u Usage
	u.BytesWritten, u.BytesWrittenOK = processWriteBytes("/proc/self/io")
	if fi, err := os.Stat(s.cfg.Path); err == nil {
		u.FileBytes = fi.Size()
	}
	if fi, err := os.Stat(s.cfg.Path + "-wal"); err == nil {
		u.WALBytes = fi.Size()
	}
	return u
}

// processWriteBytes reads write_bytes from a /proc/PID/io file.
func processWriteBytes(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := parseWriteBytes(b)
	return v, err == nil
}

// parseWriteBytes finds the write_bytes line of /proc/PID/io.
func parseWriteBytes(b []byte) (uint64, error) {
	for line := range bytes.Lines(b) {
		k, v, ok := bytes.Cut(bytes.TrimSpace(line), []byte(":"))
		if !ok || string(k) != "write_bytes" {
			continue
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("store: write_bytes: %w", err)
		}
		return n, nil
	}
	return 0, fmt.Errorf("store: no write_bytes in the process's io file")
}
