package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"plantd/config"
)

// TestTokenAddKeepsFile: plantd token add on a config that is a symlink
// to a root:plantd 0640 file (here uid 4242, gid 4343 when the test runs
// as root) must edit the target through the link and keep its owner,
// group and mode, so that the service user can still read it.
func TestTokenAddKeepsFile(t *testing.T) {
	t.Parallel() // its own files, processes and ports
	example, err := os.ReadFile(filepath.Join("..", "..", "packaging", "plantd.yaml.example"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	target := filepath.Join(dir, "real", "plantd.yaml")
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, example, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(target, 0o640); err != nil { // whatever the umask
		t.Fatal(err)
	}
	uid, gid := os.Getuid(), os.Getgid()
	if os.Getuid() == 0 {
		uid, gid = 4242, 4343
		if err := os.Chown(target, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "plantd.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runBinary(t, "token", "add", "--name", "laptop", "--role", "installer", "-c", link)
	if code != 0 {
		t.Fatalf("token add: exit %d %s", code, errOut)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced by a file (%v)", err)
	}
	fi, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != 0o640 || int(st.Uid) != uid || int(st.Gid) != gid {
		t.Errorf("target now %v %d:%d, want 0640 %d:%d", fi.Mode().Perm(), st.Uid, st.Gid, uid, gid)
	}
	cfg, err := config.Load(target)
	if err != nil || len(cfg.Tokens) == 0 || !strings.Contains(cfg.Tokens[len(cfg.Tokens)-1].Name, "laptop") {
		t.Errorf("the target does not hold the token: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(target))
	if len(entries) != 1 {
		t.Errorf("files left beside the config: %v", entries)
	}
	// The file itself, no link.
	if _, errOut, code := runBinary(t, "token", "add", "--name", "scada", "--role", "standard", "-c", target); code != 0 {
		t.Fatalf("token add on the file: exit %d %s", code, errOut)
	}
	fi, err = os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	st = fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != 0o640 || int(st.Uid) != uid || int(st.Gid) != gid {
		t.Errorf("after editing the file itself: %v %d:%d, want 0640 %d:%d", fi.Mode().Perm(), st.Uid, st.Gid, uid, gid)
	}
}
