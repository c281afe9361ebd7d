package powercut

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Sizes of the images: the inner disk holds plantd's state directory (a
// database of a few MiB for the runs here), the outer one the inner image.
const (
	innerSize = 128 << 20
	outerSize = 256 << 20
)

// tools are the programs the disk needs (util-linux, e2fsprogs,
// coreutils).
var tools = []string{"losetup", "mount", "umount", "mkfs.ext4", "e2fsck", "fsfreeze", "cp", "sync"}

// Available says why a Disk cannot be made here (nil: it can): not
// root, a tool missing or no loop devices (a kernel without ext4 shows
// only when NewDisk mounts).
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("not root: loop devices, mount and fsfreeze need root")
	}
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("%s not found (util-linux, e2fsprogs): %w", t, err)
		}
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return fmt.Errorf("no loop devices: %w", err)
	}
	return nil
}

// run runs a command and wraps its output into the error.
func run(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// Disk is the disk plantd writes to during a run: inner.img, a file on
// an outer ext4 file system of its own (outer.img, loop-mounted), attached
// to a loop device with direct I/O and mounted ext4 with default options
// at Dir. What the inner loop device has completed is on the outer file
// system (in its page cache or on its disk); what the inner file system
// holds in its own page cache is not.
//
// [Disk.Cut] freezes the outer file system: the freeze writes the outer
// page cache back and then blocks every further write to it, so the
// inner loop device's writes stop where they are (a write in flight
// completes first, a later one waits, as a bio, until the thaw) while
// plantd and the inner file system go on in memory. A copy of inner.img
// taken then is what the inner disk held at that instant: every write the
// device had completed, nothing of the inner page cache (plantd's commits
// the kernel had not written back yet, the ext4 journal's open
// transaction), which is what a power cut loses. Freezing the outer file
// system does not sync the inner one (TestFreezeIsACut checks both).
//
// What it does not model: a disk's volatile write cache that drops or
// reorders writes completed but not yet flushed (the loop device
// completes a write when the outer file system has it, so every
// completed write survives, in order of completion), torn sectors, and
// flash that corrupts pages it was writing when power went. ext4's
// journal and SQLite's WAL rely on flushes (FUA, fsync) for those; a
// device that ignores flushes breaks both and no test here can help.
type Disk struct {
	work       string // the working directory holding outer.img
	outerImg   string
	outerLoop  string
	outerMount string
	innerImg   string
	innerLoop  string
	innerMount string
}

// NewDisk makes the outer and inner images in work (which must exist and
// be on a file system that holds a 256 MiB sparse file), attaches and
// mounts them. Close detaches them; on an error NewDisk undoes what it
// did.
func NewDisk(ctx context.Context, work string) (_ *Disk, err error) {
	d := &Disk{
		work:       work,
		outerImg:   filepath.Join(work, "outer.img"),
		outerMount: filepath.Join(work, "outer"),
		innerMount: filepath.Join(work, "disk"),
	}
	d.innerImg = filepath.Join(d.outerMount, "inner.img")
	defer func() {
		if err != nil {
			err = errors.Join(err, d.Close())
		}
	}()
	if err := makeImage(ctx, d.outerImg, outerSize); err != nil {
		return nil, err
	}
	if d.outerLoop, err = attach(ctx, d.outerImg, false); err != nil {
		return nil, err
	}
	if err := mount(ctx, d.outerLoop, d.outerMount); err != nil {
		return nil, err
	}
	if err := makeImage(ctx, d.innerImg, innerSize); err != nil {
		return nil, err
	}
	if d.innerLoop, err = attach(ctx, d.innerImg, true); err != nil {
		return nil, err
	}
	if err := mount(ctx, d.innerLoop, d.innerMount); err != nil {
		return nil, err
	}
	return d, nil
}

// Dir is the inner file system's mount point: plantd's state goes there.
func (d *Disk) Dir() string { return d.innerMount }

// Cut copies what the inner disk holds at this instant to dst (a file
// outside the disk): the outer file system is frozen for the copy (a few
// tens of milliseconds for the sizes here) and thawed again, so plantd
// goes on as if nothing had happened; the copy is the disk a power cut
// at the freeze leaves.
func (d *Disk) Cut(ctx context.Context, dst string) (err error) {
	if _, err := run(ctx, "fsfreeze", "-f", d.outerMount); err != nil {
		return fmt.Errorf("powercut: freeze: %w", err)
	}
	defer func() {
		// Thaw whatever happened, or plantd hangs at its next write back.
		if _, terr := run(context.WithoutCancel(ctx), "fsfreeze", "-u", d.outerMount); terr != nil {
			err = errors.Join(err, fmt.Errorf("powercut: thaw: %w", terr))
		}
	}()
	if _, err := run(ctx, "cp", "--sparse=always", d.innerImg, dst); err != nil {
		return fmt.Errorf("powercut: copy the inner image: %w", err)
	}
	return nil
}

// Close unmounts and detaches the inner and the outer image (what of
// them NewDisk made) and removes outer.img. A process still writing to
// Dir keeps it busy: stop plantd first.
func (d *Disk) Close() error {
	ctx := context.Background()
	var errs []error
	if d.outerLoop != "" {
		// A freeze left behind (a crash between freeze and thaw) would
		// hang the inner unmount.
		_, _ = run(ctx, "fsfreeze", "-u", d.outerMount)
	}
	if d.innerLoop != "" {
		errs = append(errs, unmount(ctx, d.innerMount), detach(ctx, d.innerLoop))
		d.innerLoop = ""
	}
	if d.outerLoop != "" {
		errs = append(errs, unmount(ctx, d.outerMount), detach(ctx, d.outerLoop))
		d.outerLoop = ""
	}
	if err := os.Remove(d.outerImg); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ErrUnmountable: a cut's image does not mount (a finding about the
// image, not a failure of the harness).
var ErrUnmountable = errors.New("powercut: the image does not mount")

// Image is a cut's copy of the disk, attached and mounted read-write (as
// the gateway's next boot would) at Dir.
type Image struct {
	loop, dir string
	// Fsck is e2fsck -fn's report after the mount replayed the journal,
	// empty when it found the file system clean.
	Fsck string
}

// Mount attaches img, mounts it at dir (the kernel replays ext4's
// journal, as at a boot after a power cut), unmounts it, checks it with
// e2fsck -fn (a full check that changes nothing; anything it reports is in
// Image.Fsck) and mounts it again for the database to be read.
func Mount(ctx context.Context, img, dir string) (_ *Image, err error) {
	im := &Image{dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, im.Close())
		}
	}()
	if im.loop, err = attach(ctx, img, false); err != nil {
		return nil, err
	}
	if err := mount(ctx, im.loop, dir); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnmountable, err)
	}
	if err := unmount(ctx, dir); err != nil {
		return nil, err
	}
	out, ferr := exec.CommandContext(ctx, "e2fsck", "-fn", im.loop).CombinedOutput()
	if ferr != nil {
		// Exit 4: errors left (none fixed, -n). Any report is a finding.
		im.Fsck = fmt.Sprintf("%v: %s", ferr, bytes.TrimSpace(out))
	}
	if err := mount(ctx, im.loop, dir); err != nil {
		return nil, fmt.Errorf("%w after e2fsck: %w", ErrUnmountable, err)
	}
	return im, nil
}

// Dir is where the image is mounted.
func (im *Image) Dir() string { return im.dir }

// Close unmounts and detaches the image (the image file stays).
func (im *Image) Close() error {
	if im.loop == "" {
		return nil
	}
	ctx := context.Background()
	err := errors.Join(unmount(ctx, im.dir), detach(ctx, im.loop))
	im.loop = ""
	return err
}

// makeImage makes a sparse file of size bytes holding an empty ext4.
func makeImage(ctx context.Context, path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("powercut: %w", err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("powercut: %w", err)
	}
	if _, err := run(ctx, "mkfs.ext4", "-q", "-F", path); err != nil {
		return fmt.Errorf("powercut: %w", err)
	}
	return nil
}

// attach attaches path to a free loop device (losetup -f picks and
// attaches in one step, so parallel callers do not race for a device).
func attach(ctx context.Context, path string, directIO bool) (string, error) {
	args := []string{"-f", "--show", path}
	if directIO {
		args = append([]string{"--direct-io=on"}, args...)
	}
	out, err := run(ctx, "losetup", args...)
	if err != nil {
		return "", fmt.Errorf("powercut: attach %s: %w", filepath.Base(path), err)
	}
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "/dev/") {
			return l, nil
		}
	}
	return "", fmt.Errorf("powercut: losetup named no device: %q", out)
}

func detach(ctx context.Context, dev string) error {
	if _, err := run(ctx, "losetup", "-d", dev); err != nil {
		return fmt.Errorf("powercut: %w", err)
	}
	return nil
}

func mount(ctx context.Context, dev, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("powercut: %w", err)
	}
	if _, err := run(ctx, "mount", "-t", "ext4", dev, dir); err != nil {
		return fmt.Errorf("powercut: %w", err)
	}
	return nil
}

func unmount(ctx context.Context, dir string) error {
	if _, err := run(ctx, "umount", dir); err != nil {
		return fmt.Errorf("powercut: %w", err)
	}
	return nil
}
