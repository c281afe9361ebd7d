package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/sim"
	"plantd/sim/simtest"
	"plantd/store"
)

// TestSecondDaemonRefused starts the real binary twice on one database:
// the second must refuse, naming the first one's pid, while the first
// still runs (it does not wait for the lock), and not poll. The 30 s bound
// only ends a second plantd that waits.
func TestSecondDaemonRefused(t *testing.T) {
	t.Parallel() // its own files, processes and ports
	p := simtest.Start(t, sim.DefaultConfig())
	dir := t.TempDir()
	d := p.Devices()[0]
	host, port, _ := net.SplitHostPort(d.Addr())
	cfg := fmt.Sprintf(`http:
  listen: 127.0.0.1:0
database:
  path: %s
plants:
  - {id: p1, name: Lock, timezone: Europe/Berlin}
devices:
  - {id: %s, host: %s, port: %s, pollInterval: 250ms}
`, filepath.Join(dir, "plantd.db"), d.ID(), host, port)
	path := filepath.Join(dir, "plantd.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	first := startDaemon(t, path)
	defer first.Stop(os.Interrupt, 30*time.Second)
	first.waitAPI(30 * time.Second)
	second := proctest.Start(t, exec.Command(binPath, "run", "-c", path))
	err := second.Wait(30 * time.Second)
	var ee *exec.ExitError
	if errOut := strings.Join(second.Stderr(), "\n"); !errors.As(err, &ee) || !strings.Contains(errOut, fmt.Sprintf("pid %d", first.Cmd.Process.Pid)) {
		t.Errorf("second plantd: %v, stderr:\n%s\nwant a refusal naming pid %d", err, errOut, first.Cmd.Process.Pid)
	}
	select {
	case <-first.Exited():
		t.Fatalf("the first plantd ended before the second refused; its last lines:\n%s", first.Tail(20))
	default:
	}
}

// TestBackupCommand copies a running daemon's database with the real
// binary's backup command and opens the copy, which only its owner may
// read.
func TestBackupCommand(t *testing.T) {
	t.Parallel() // its own files, processes and ports
	dir := t.TempDir()
	src := filepath.Join(dir, "plantd.db")
	st := openStoreForTest(t, src)
	st.Close()
	dst := filepath.Join(dir, "copy.db")
	out, errOut, code := runBinary(t, "backup", "--db", src, dst)
	if code != 0 || !strings.Contains(out, "backed up") {
		t.Fatalf("backup: exit %d\n%s%s", code, out, errOut)
	}
	// The copy holds token hashes and the plant's history: its owner's
	// only, whatever the caller's umask.
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("backup copy: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	if _, errOut, code := runBinary(t, "backup", "--db", src, dst); code == 0 {
		t.Errorf("a backup onto an existing file succeeded: %s", errOut)
	}
	openStoreForTest(t, dst).Close()
}

func openStoreForTest(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), store.Config{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
