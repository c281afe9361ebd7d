package powercut

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// NeedDisk skips the test when a Disk cannot be made here (not root, no
// loop devices), saying why; under CI=true (.ci/run runs as root on a
// Debian VM with loop devices) it fails instead, so that the power-cut
// tests cannot silently stop running there.
func needDisk(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("power-cut disk unavailable under CI: %v", err)
		}
		t.Skipf("power-cut disk unavailable: %v", err)
	}
}

// TestFreezeIsACut checks the harness itself: a cut's image holds what
// was synced to the inner disk before it and not what was only in the
// inner page cache (so freezing the outer file system neither syncs the
// inner one nor lets its writes through), a sync issued while the outer
// file system is frozen returns only after the thaw, and every image
// passes e2fsck after the journal replay.
func TestFreezeIsACut(t *testing.T) {
	needDisk(t)
	ctx := t.Context()
	work := t.TempDir()
	d, err := NewDisk(ctx, work)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	write := func(name string, sync bool) {
		t.Helper()
		f, err := os.Create(filepath.Join(d.Dir(), name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(name); err != nil {
			t.Fatal(err)
		}
		if sync {
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			// The directory entry too (a new file's name is in the
			// journal's running transaction until it commits).
			dir, err := os.Open(d.Dir())
			if err != nil {
				t.Fatal(err)
			}
			defer dir.Close()
			if err := dir.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// has mounts a cut's image and says which files it holds whole.
	has := func(img string, names ...string) map[string]bool {
		t.Helper()
		im, err := Mount(ctx, img, filepath.Join(work, "image"))
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := im.Close(); err != nil {
				t.Error(err)
			}
		}()
		if im.Fsck != "" {
			t.Errorf("e2fsck on the image: %s", im.Fsck)
		}
		got := map[string]bool{}
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join(im.Dir(), n))
			got[n] = err == nil && string(b) == n
		}
		return got
	}

	write("synced", true)
	write("cached", false)
	img := filepath.Join(work, "cut1.img")
	if err := d.Cut(ctx, img); err != nil {
		t.Fatal(err)
	}
	if got := has(img, "synced", "cached"); !got["synced"] || got["cached"] {
		t.Errorf("image holds %v, want the synced file and not the cached one", got)
	}

	// A sync during the freeze waits for the thaw; the image copied in
	// between lacks what it was writing. (Were the inner writes not
	// blocked, the sync of these few bytes would return at once, long
	// before the thaw.)
	write("during", false)
	if _, err := run(ctx, "fsfreeze", "-f", d.outerMount); err != nil {
		t.Fatal(err)
	}
	thawed := false
	t.Cleanup(func() {
		if !thawed {
			_, _ = run(context.Background(), "fsfreeze", "-u", d.outerMount)
		}
	})
	synced := make(chan time.Time, 1)
	syncing := make(chan struct{})
	go func() {
		f, err := os.Open(filepath.Join(d.Dir(), "during"))
		if err == nil {
			close(syncing)
			err = errors.Join(f.Sync(), f.Close())
		} else {
			close(syncing)
		}
		if err != nil {
			t.Error(err)
		}
		synced <- time.Now()
	}()
	<-syncing
	img2 := filepath.Join(work, "cut2.img")
	if _, err := run(ctx, "cp", "--sparse=always", d.innerImg, img2); err != nil {
		t.Fatal(err)
	}
	beforeThaw := time.Now()
	_, err = run(ctx, "fsfreeze", "-u", d.outerMount)
	thawed = err == nil
	if err != nil {
		t.Fatal(err)
	}
	if at := <-synced; at.Before(beforeThaw) {
		t.Errorf("fsync on the inner file system returned %v before the outer one was thawed", beforeThaw.Sub(at))
	}
	if got := has(img2, "synced", "during"); !got["synced"] || got["during"] {
		t.Errorf("image taken during the freeze holds %v, want the first synced file only", got)
	}
	// After the thaw the sync has reached the disk: the next cut holds
	// it, and still not the file only cached.
	img3 := filepath.Join(work, "cut3.img")
	if err := d.Cut(ctx, img3); err != nil {
		t.Fatal(err)
	}
	if got := has(img3, "synced", "during"); !got["synced"] || !got["during"] {
		t.Errorf("image after the thaw holds %v, want both synced files", got)
	}
}
