package powercut

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// DBName is the database's file name in plantd's state directory on the
// disk.
const DBName = "plantd.db"

// CacheWindow is how long a commit can stay in the page cache before
// the disk holds it, with the kernel's and ext4's defaults: a dirty page
// is written back once it is 30 s old (vm.dirty_expire_centisecs) by the
// flusher, which runs every 5 s (vm.dirty_writeback_centisecs), and the
// size of a file that grew is committed with ext4's journal, every 5 s
// (commit=5). README's power-cut window is this plus a device's last
// minute and the commit interval.
const CacheWindow = 40 * time.Second

// Options is one run: plantd on a fresh Disk, cut Cuts times.
type Options struct {
	// Plantd is the binary to run ("plantd run -c").
	Plantd string
	// Work is a directory for the images and configs; it must not be on
	// a file system that is itself cut.
	Work string
	// Config is plantd's config, given the database path on the disk.
	Config func(dbPath string) string
	// ReopenConfig, when set, is the config plantd is started with on
	// each cut's image (given the image's database path): it must open
	// the database and answer /healthz with the storage Ok.
	ReopenConfig func(dbPath string) string
	// Cuts is how many cuts; Gap gives the time from plantd's start or
	// the last cut to the next one.
	Cuts int
	Gap  func() time.Duration
	// Sync, when set and true for cut n, syncs the disk's file system
	// (syncfs) after plantd's state is read and before the cut: the
	// image must then hold all of that state (a check of the harness
	// and of what plantd's files say once written back).
	Sync func(n int) bool
	// Sample is how often plantd's live database is read (the commits'
	// timeline the cuts are compared with); default 500 ms.
	Sample time.Duration
	// Stderr receives plantd's log (nil: discarded).
	Stderr io.Writer
	// OnCut is called with each cut's result as it is known.
	OnCut func(Cut)
	// Broker, when set (HOST:PORT), is the broker plantd publishes to: a
	// Watcher records the seqs published, and each image is checked not
	// to let the next start number a published seq again (Cut.Reused).
	Broker string
}

// Cut is one cut's result.
type Cut struct {
	N int
	// At is the cut's time since plantd started; T the cut's time.
	At time.Duration
	T  time.Time
	// Fsck is e2fsck's report on the image after the journal replay
	// (empty: clean).
	Fsck string
	// Image is the database the image holds; Live plantd's committed
	// state read just before the cut.
	Image, Live State
	// NewestAge is how long before the cut the image's newest raw sample
	// was taken (-1: the image holds none).
	NewestAge time.Duration
	// Lost bounds the commits the image lacks: all that plantd had
	// committed more than Lost before the cut is in the image (0: it
	// holds every commit seen before the cut). It is measured on the
	// live timeline, so it may exceed the true loss by one Sample.
	Lost     time.Duration
	LostWhat []string
	// Ahead is what the image holds that plantd's state read right
	// after the cut does not: must be empty (the image is a past
	// state of plantd's database, nothing else).
	Ahead []string
	// Synced: the file system was synced just before the cut
	// (Options.Sync).
	Synced bool
	// Published is, with Options.Broker, per stream the highest seq the
	// broker had delivered to the Watcher before the cut; Reused the
	// streams where the image lets plantd's next start (after a reboot)
	// hand out such a seq again (State.Reused): must be empty.
	Published map[string]uint64
	Reused    []string
	// Reopen is the error of plantd started on the image (nil: it
	// opened the database and answered with the storage Ok).
	Reopen error
}

// OK says whether the image passed the checks that hold at any cut:
// file system clean, database intact (or not yet on the disk), outbox
// streams contiguous, nothing the live state lacks, plantd opens it, no
// published seq numbered again.
func (c Cut) OK() bool {
	if c.Fsck != "" || len(c.Ahead) > 0 || c.Reopen != nil || len(c.Reused) > 0 {
		return false
	}
	if c.Image.Missing {
		return true
	}
	if c.Image.Integrity != "ok" {
		return false
	}
	for _, s := range c.Image.Outbox {
		if !s.Contiguous() {
			return false
		}
	}
	return true
}

type sample struct {
	at time.Time
	st State
}

// timeline is plantd's live database read every Sample.
type timeline struct {
	path string
	mu   sync.Mutex
	db   *sql.DB
	s    []sample
}

// read reads the live state now and records it; false when the
// database does not exist yet.
func (tl *timeline) read(ctx context.Context) (State, bool, error) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.db == nil {
		if _, err := os.Stat(tl.path); err != nil {
			return State{}, false, nil
		}
		db, err := Open(tl.path, true)
		if err != nil {
			return State{}, false, err
		}
		tl.db = db
	}
	at := time.Now()
	st, err := Read(ctx, tl.db)
	if err != nil {
		return State{}, false, err
	}
	tl.s = append(tl.s, sample{at, st})
	return st, true, nil
}

// lost is how long before t the oldest commit the image lacks was seen
// at the latest: the time from the last sample the image is not behind
// (or from start) to t, and what the next one had that the image lacks.
func (tl *timeline) lost(img State, start, t time.Time) (time.Duration, []string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	prev := start
	for _, s := range tl.s {
		if s.at.After(t) {
			break
		}
		if d := img.Behind(s.st); len(d) > 0 {
			return t.Sub(prev), d
		}
		prev = s.at
	}
	return 0, nil
}

// Run runs plantd on a fresh Disk and cuts it o.Cuts times, checking each
// image; it returns the cuts' results (also given to OnCut). An error is
// the harness failing (or plantd exiting), not a finding about an image.
func Run(ctx context.Context, o Options) (cuts []Cut, err error) {
	if o.Sample == 0 {
		o.Sample = 500 * time.Millisecond
	}
	var watch *Watcher
	if o.Broker != "" {
		if watch, err = Watch(ctx, o.Broker); err != nil {
			return nil, err
		}
		defer watch.Close()
	}
	disk, err := NewDisk(ctx, o.Work)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, disk.Close()) }()
	dbPath := filepath.Join(disk.Dir(), DBName)
	cfg := filepath.Join(o.Work, "plantd.yaml")
	if err := os.WriteFile(cfg, []byte(o.Config(dbPath)), 0o600); err != nil {
		return nil, fmt.Errorf("powercut: %w", err)
	}
	stderr := o.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	cmd := exec.Command(o.Plantd, "run", "-c", cfg)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("powercut: start plantd: %w", err)
	}
	start := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tl := &timeline{path: dbPath}
	defer func() {
		// Stop plantd before the disk is unmounted (Close above runs
		// after this).
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if tl.db != nil {
			tl.db.Close()
		}
	}()

	sctx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan error, 1)
	go func() {
		tick := time.NewTicker(o.Sample)
		defer tick.Stop()
		for {
			if _, _, err := tl.read(sctx); err != nil && sctx.Err() == nil {
				sampled <- err
				return
			}
			select {
			case <-sctx.Done():
				sampled <- nil
				return
			case <-tick.C:
			}
		}
	}()
	defer func() {
		stopSampling()
		if serr := <-sampled; serr != nil {
			err = errors.Join(err, fmt.Errorf("powercut: read plantd's live database: %w", serr))
		}
	}()

	img := filepath.Join(o.Work, "cut.img")
	for n := 1; n <= o.Cuts; n++ {
		timer := time.NewTimer(o.Gap())
		select {
		case <-ctx.Done():
			timer.Stop()
			return cuts, ctx.Err()
		case err := <-exited:
			timer.Stop()
			exited <- err
			return cuts, fmt.Errorf("powercut: plantd exited before cut %d: %v", n, err)
		case <-timer.C:
		}
		live, _, err := tl.read(ctx)
		if err != nil {
			return cuts, fmt.Errorf("powercut: read plantd's live database: %w", err)
		}
		synced := o.Sync != nil && o.Sync(n)
		if synced {
			if _, err := run(ctx, "sync", "-f", disk.Dir()); err != nil {
				return cuts, fmt.Errorf("powercut: %w", err)
			}
		}
		t := time.Now()
		if err := disk.Cut(ctx, img); err != nil {
			return cuts, err
		}
		after, _, err := tl.read(ctx)
		if err != nil {
			return cuts, fmt.Errorf("powercut: read plantd's live database: %w", err)
		}
		c, err := check(ctx, o, img, n, start, t, live, after, tl)
		if err != nil {
			return cuts, err
		}
		c.Synced = synced
		if watch != nil {
			c.Published = watch.Before(t)
			if !c.Image.Missing {
				c.Reused = c.Image.Reused(c.Published)
			} else if len(c.Published) > 0 {
				c.Reused = []string{"no database on the disk, seqs published"}
			}
		}
		cuts = append(cuts, c)
		if o.OnCut != nil {
			o.OnCut(c)
		}
	}
	return cuts, nil
}

// check mounts a cut's image and compares its database with plantd's.
func check(ctx context.Context, o Options, img string, n int, start, t time.Time, live, after State, tl *timeline) (Cut, error) {
	defer os.Remove(img)
	c := Cut{N: n, At: t.Sub(start), T: t, Live: live, NewestAge: -1}
	im, err := Mount(ctx, img, filepath.Join(o.Work, "image"))
	if err != nil {
		if !errors.Is(err, ErrUnmountable) {
			return c, err
		}
		// An image that does not mount is a finding, like one e2fsck
		// faults.
		c.Fsck = err.Error()
		c.Image.Integrity = "not read: the file system does not mount"
		return c, nil
	}
	defer im.Close()
	c.Fsck = im.Fsck
	path := filepath.Join(im.Dir(), DBName)
	if c.Image, err = ReadImage(ctx, path); err != nil {
		// A database that does not open is a finding, not a harness
		// failure.
		c.Image.Integrity = err.Error()
		return c, nil
	}
	if !c.Image.NewestRaw.IsZero() {
		c.NewestAge = t.Sub(c.Image.NewestRaw)
	}
	c.Lost, c.LostWhat = tl.lost(c.Image, start, t)
	c.Ahead = after.Behind(c.Image)
	if o.ReopenConfig != nil && !c.Image.Missing {
		c.Reopen = reopen(ctx, o, path)
	}
	return c, nil
}

var listenRE = regexp.MustCompile(`http api listening.* addr=(\S+)`)

// reopen starts plantd on an image's database, as the gateway's next
// boot would, and waits for /healthz to report the storage Ok.
func reopen(ctx context.Context, o Options, dbPath string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cfg := filepath.Join(o.Work, "reopen.yaml")
	if err := os.WriteFile(cfg, []byte(o.ReopenConfig(dbPath)), 0o600); err != nil {
		return fmt.Errorf("powercut: %w", err)
	}
	cmd := exec.CommandContext(ctx, o.Plantd, "run", "-c", cfg)
	pr, err := cmd.StderrPipe()
	if err != nil {
		return fmt.Errorf("powercut: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("powercut: start plantd on the image: %w", err)
	}
	var log []string
	addr := ""
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		log = append(log, sc.Text())
		if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	go io.Copy(io.Discard, pr) //nolint:errcheck // drain the rest of the log
	herr := healthy(ctx, addr)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	werr := cmd.Wait()
	if addr == "" {
		return fmt.Errorf("plantd on the image never listened (exit %v): %q", werr, tail(log, 5))
	}
	if herr != nil {
		return herr
	}
	if werr != nil {
		return fmt.Errorf("plantd on the image: stop: %w", werr)
	}
	return nil
}

// healthy asks /healthz for the storage's status.
func healthy(ctx context.Context, addr string) error {
	if addr == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return fmt.Errorf("powercut: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("plantd on the image: /healthz: %w", err)
	}
	defer resp.Body.Close()
	var h struct {
		Storage struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		} `json:"storage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return fmt.Errorf("plantd on the image: /healthz: %w", err)
	}
	if h.Storage.Status != "Ok" {
		return fmt.Errorf("plantd on the image: storage %s: %s", h.Storage.Status, h.Storage.Error)
	}
	return nil
}

func tail(l []string, n int) []string {
	if len(l) > n {
		return l[len(l)-n:]
	}
	return l
}
