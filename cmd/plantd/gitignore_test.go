package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestDemoFilesIgnored: the files "plantd demo" leaves in the working
// tree (its database, WAL, shared memory and lock) are ignored by git.
func TestDemoFilesIgnored(t *testing.T) {
	t.Parallel() // git only
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skip("not a git work tree")
	}
	for _, f := range []string{"plantd.db", "plantd.db-wal", "plantd.db-shm", "plantd.db.lock"} {
		c := exec.Command(git, "check-ignore", "-q", "--no-index", f)
		c.Dir = root
		if err := c.Run(); err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == 1 {
				t.Errorf("%s is not ignored by .gitignore", f)
			} else {
				t.Errorf("git check-ignore %s: %v", f, err)
			}
		}
	}
}
