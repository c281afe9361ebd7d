package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"plantd/internal/proctest"
	"plantd/plant"
	"plantd/plant/kind"
)

// childEnv selects the child mode of TestChild; the parent tests re-run
// the test binary with it.
const childEnv = "PLANTD_STORE_TEST_CHILD"

// runChild starts this test binary as a child in mode with extra
// environment.
func runChild(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.count=1")
	cmd.Env = proctest.QuickExitEnv(append(append(os.Environ(), childEnv+"="+mode), env...))
	return cmd
}

// TestChild is the child process of the crash and file-size tests; it is
// skipped unless the parent set childEnv.
func TestChild(t *testing.T) {
	switch os.Getenv(childEnv) {
	case "":
		t.Skip("child process of TestCrash and TestDiskFull only")
	case "crash":
		crashChild(t)
	case "crash-cadence":
		crashCadenceChild(t)
	case "fsize":
		fsizeChild(t)
	case "readonly":
		readOnlyChild(t)
	default:
		t.Fatalf("unknown child mode %q", os.Getenv(childEnv))
	}
}

func TestMigrations(t *testing.T) {
	t.Parallel() // its own database files
	if got := len(migrations) - 1; got != SchemaVersion {
		t.Fatalf("SchemaVersion %d, but %d migrations", SchemaVersion, got)
	}
	s := openTest(t, Config{})
	v, err := userVersion(t.Context(), s.rdb.Load())
	if err != nil || v != SchemaVersion {
		t.Fatalf("user_version %d, %v", v, err)
	}
	var mode string
	if err := s.rdb.Load().QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q, %v", mode, err)
	}
	// Opening again is a no-op.
	path := s.cfg.Path
	s.Close()
	s2 := openTest(t, Config{Path: path})
	if v, _ := userVersion(t.Context(), s2.rdb.Load()); v != SchemaVersion {
		t.Errorf("user_version %d after reopening", v)
	}
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestNewerSchema(t *testing.T) {
	t.Parallel() // its own database files
	path := filepath.Join(t.TempDir(), "plantd.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`CREATE TABLE future (x)`, `INSERT INTO future VALUES (1)`, `PRAGMA user_version = 99`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	before := fileHash(t, path)
	_, err = Open(t.Context(), Config{Path: path}, testLogger(t))
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("open: %v, want ErrSchemaTooNew", err)
	}
	for _, want := range []string{"99", strconv.Itoa(SchemaVersion), "not modified"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if fileHash(t, path) != before {
		t.Error("the database file was modified")
	}
}

// canMount reports whether this process may mount (root with
// CAP_SYS_ADMIN); the tests that need a mount skip otherwise, but fail
// under CI=true, where the container must grant it (as the mbpoll test
// fails there without mbpoll).
func canMount(t *testing.T) bool {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot mount a tmpfs (%v): CI must run the store tests with CAP_SYS_ADMIN", err)
		}
		return false
	}
	syscall.Unmount(dir, 0)
	return true
}

// nobody is the user the read-only child runs as.
const nobodyID = 65534

// readOnlyAsNobody seeds a day into a database in a directory nobody can
// read but not write, and runs checkDegraded on it in a child process
// running as nobody.
func readOnlyAsNobody(t *testing.T, day time.Time) {
	dir, err := os.MkdirTemp("", "plantd-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "plantd.db")
	seedDay(t, path, day)
	for _, p := range []string{dir, path} {
		mode := os.FileMode(0o444)
		if p == dir {
			mode = 0o555
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, side := range []string{path + "-wal", path + "-shm"} {
		os.Chmod(side, 0o444)
	}
	// The test binary must be reachable by nobody too: a copy beside.
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	binDir, err := os.MkdirTemp("", "plantd-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(binDir) })
	if err := os.Chmod(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(binDir, "store.test")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := runChild(t, "readonly", "STORE_TEST_PATH="+path, "STORE_TEST_DAY="+day.Format(time.RFC3339))
	cmd.Path, cmd.Args[0] = exe, exe
	cmd.Dir = binDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyID, Gid: nobodyID}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child as nobody: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("PASS")) {
		t.Fatalf("child as nobody did not pass:\n%s", out)
	}
}

// readOnlyChild is the child of readOnlyAsNobody.
func readOnlyChild(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Fatal("the read-only child runs as root")
	}
	day, err := time.Parse(time.RFC3339, os.Getenv("STORE_TEST_DAY"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), Config{Path: os.Getenv("STORE_TEST_PATH"), Plants: []PlantInfo{{ID: "p1", Location: day.Location()}}}, testLogger(t))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	checkDegraded(t, s, day)
}

// mountTmpfs mounts a tmpfs of size bytes at a new directory until the
// test ends.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

func remount(t *testing.T, dir string, ro bool) {
	t.Helper()
	flags := uintptr(syscall.MS_REMOUNT)
	if ro {
		flags |= syscall.MS_RDONLY
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", flags, ""); err != nil {
		t.Fatalf("remount %s (ro %v): %v", dir, ro, err)
	}
}

// seedDay records a day of the synthetic plant into a fresh store at path
// and closes it.
func seedDay(t *testing.T, path string, day time.Time) {
	t.Helper()
	s := openTest(t, Config{Path: path})
	stop := runStore(t, s)
	sy := &synth{loc: day.Location()}
	for x := day; x.Before(day.AddDate(0, 0, 1)); x = x.Add(5 * time.Minute) {
		for _, m := range sy.step(x) {
			record(t, s, m)
		}
	}
	stop()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkDegraded checks a store opened on read-only storage holding the
// seeded day.
func checkDegraded(t *testing.T, s *Store, day time.Time) {
	t.Helper()
	if err := s.Health(); !errors.Is(err, ErrReadOnly) {
		t.Errorf("health %v, want ErrReadOnly", err)
	}
	res, err := s.QuerySet(t.Context(), plant.SetQuery{PlantID: "p1", SetType: plant.SetEnergyBalance, Period: plant.PeriodDay, Date: day})
	if err != nil || len(res.Rows) != 288 {
		t.Errorf("query on read-only storage: %d rows, %v", len(res.Rows), err)
	}
	if s.Record(Measurement{PlantID: "p1", DeviceID: "inv", Time: day, Readings: []plant.Reading{{Channel: plant.ActivePower, Value: 1}}}) {
		t.Error("Record accepted on read-only storage")
	}
	if s.Log(plant.LogEntry{PlantID: "p1", Message: "x"}) {
		t.Error("Log accepted on read-only storage")
	}
	if err := s.PutSchedule(t.Context(), plant.Schedule{ScheduleID: "s", PlantID: "p1"}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("PutSchedule: %v, want ErrReadOnly", err)
	}
	if st := s.Stats(); st.Dropped != 2 || !strings.Contains(st.LastError, "read-only") {
		t.Errorf("stats %+v", st)
	}
	// Run waits for the storage to become writable and ends cleanly.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Errorf("run: %v", err)
	}
}

func TestReadOnly(t *testing.T) {
	t.Parallel() // its own database files
	loc := mustZone(t, "Europe/Berlin")
	day := time.Date(2026, 7, 1, 0, 0, 0, 0, loc)
	t.Run("file", func(t *testing.T) {
		if os.Geteuid() == 0 {
			// Root writes read-only files: the check runs in a child
			// process as nobody, so it needs no capability beyond root's.
			readOnlyAsNobody(t, day)
			return
		}
		path := filepath.Join(t.TempDir(), "plantd.db")
		seedDay(t, path, day)
		if err := os.Chmod(path, 0o444); err != nil {
			t.Fatal(err)
		}
		s := openTest(t, Config{Path: path})
		checkDegraded(t, s, day)
	})

	t.Run("mount", func(t *testing.T) {
		if !canMount(t) {
			t.Skip("cannot mount here (needs CAP_SYS_ADMIN)")
		}
		dir := mountTmpfs(t, 64<<20)
		path := filepath.Join(dir, "plantd.db")
		seedDay(t, path, day)
		remount(t, dir, true)
		s := openTest(t, Config{Path: path})
		checkDegraded(t, s, day)
		s.Close()

		// A new database in a read-only directory: a clear error.
		_, err := Open(t.Context(), Config{Path: filepath.Join(dir, "new.db")}, testLogger(t))
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("open new database on read-only storage: %v, want ErrReadOnly", err)
		}
	})

	t.Run("becomes writable", func(t *testing.T) {
		if !canMount(t) {
			t.Skip("cannot mount here (needs CAP_SYS_ADMIN)")
		}
		dir := mountTmpfs(t, 64<<20)
		path := filepath.Join(dir, "plantd.db")
		seedDay(t, path, day)
		remount(t, dir, true)
		s := openTest(t, Config{Path: path})
		s.retryRO = 10 * time.Millisecond
		if s.Health() == nil {
			t.Fatal("healthy on read-only storage")
		}
		runStore(t, s)
		remount(t, dir, false)
		deadline := time.After(10 * time.Second)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for s.Health() != nil {
			select {
			case <-deadline:
				t.Fatalf("still failing 10 s after the storage became writable: %v", s.Health())
			case <-tick.C:
			}
		}
		m := Measurement{PlantID: "p1", DeviceID: "inv", Time: day.AddDate(0, 0, 1),
			Readings: []plant.Reading{{Channel: plant.ActivePower, Value: 1}}}
		if !s.Record(m) {
			t.Fatal("Record refused after recovery")
		}
		if err := s.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.Written != 1 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestDiskFull(t *testing.T) {
	t.Run("tmpfs", func(t *testing.T) {
		if !canMount(t) {
			t.Skip("cannot mount here (needs CAP_SYS_ADMIN)")
		}
		dir := mountTmpfs(t, 1<<20)
		filler := filepath.Join(dir, "filler")
		// Full before the database exists: Open says so.
		if err := os.WriteFile(filler, make([]byte, 2<<20), 0o644); err == nil {
			t.Fatal("filled more than the tmpfs holds")
		}
		_, err := Open(t.Context(), Config{Path: filepath.Join(dir, "plantd.db")}, testLogger(t))
		if !errors.Is(err, ErrDiskFull) {
			t.Errorf("open on a full disk: %v, want ErrDiskFull", err)
		}
		os.Remove(filler)
		os.Remove(filepath.Join(dir, "plantd.db"))

		// Full while running: Health says so, nothing panics, and the
		// store recovers when space is freed.
		s := openTest(t, Config{Path: filepath.Join(dir, "plantd.db")})
		runStore(t, s)
		os.WriteFile(filler, make([]byte, 2<<20), 0o644) // fills what is left
		loc := mustZone(t, "Europe/Berlin")
		sy := &synth{loc: loc}
		x := time.Date(2026, 7, 1, 0, 0, 0, 0, loc)
		for i := 0; s.Health() == nil; i++ {
			if i > 100000 {
				t.Fatal("the disk never filled")
			}
			for _, m := range sy.step(x) {
				s.Record(m)
			}
			x = x.Add(5 * time.Second)
			if i%100 == 0 {
				s.Flush(t.Context())
			}
		}
		if err := s.Health(); !errors.Is(err, ErrDiskFull) {
			t.Errorf("health %v, want ErrDiskFull", err)
		}
		t.Logf("health: %v; stats %+v", s.Health(), s.Stats())
		os.Remove(filler)
		for _, m := range sy.step(x.Add(time.Minute)) {
			s.Record(m)
		}
		if err := s.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := s.Health(); err != nil {
			t.Errorf("health after freeing space: %v", err)
		}
	})

	t.Run("file size limit", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "plantd.db")
		cmd := runChild(t, "fsize", "STORE_TEST_PATH="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		if !bytes.Contains(out, []byte("health: store: disk full")) {
			t.Errorf("child output does not report a full disk:\n%s", out)
		}
	})
}

// fsizeChild writes until the 512 KiB file size limit stops it and prints
// what Health says.
func fsizeChild(t *testing.T) {
	signal.Ignore(syscall.SIGXFSZ) // write(2) then fails with EFBIG
	lim := &syscall.Rlimit{Cur: 512 << 10, Max: 512 << 10}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, lim); err != nil {
		t.Fatalf("setrlimit: %v", err)
	}
	s, err := Open(t.Context(), Config{Path: os.Getenv("STORE_TEST_PATH"), Plants: []PlantInfo{{ID: "p1"}}}, testLogger(t))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	sy := &synth{loc: time.UTC}
	x := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; s.Health() == nil && i < 200000; i++ {
		for _, m := range sy.step(x) {
			s.Record(m)
		}
		x = x.Add(5 * time.Second)
		if i%100 == 0 {
			s.Flush(ctx)
		}
	}
	fmt.Printf("health: %v\nstats: %+v\n", s.Health(), s.Stats())
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}

// Crash test: the child records at full rate and prints "committed N"
// after each Flush (everything up to measurement N is committed); the
// parent SIGKILLs it at random moments.

const (
	crashDevices = 4
	crashStepMs  = 5000
)

var crashT0 = time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// crashMeasurement is measurement n: device n%4 polled every 5 s.
func crashMeasurement(n int64) Measurement {
	dev := n % crashDevices
	tick := n / crashDevices
	return Measurement{
		PlantID:  "p1",
		DeviceID: "d" + strconv.FormatInt(dev, 10),
		Kind:     kind.Inverter,
		Time:     time.UnixMilli(crashT0 + tick*crashStepMs),
		Readings: []plant.Reading{
			{Channel: plant.ActivePower, Value: float64(n % 10007)},
			{Channel: plant.PVGeneration, Value: float64(n % 10007)},
			{Channel: plant.PVGenerationTotal, Value: float64(tick * 7)},
			{Channel: plant.VoltagePhaseA, Value: 230 + float64(n%7)/10},
		},
	}
}

// crashResume is where a restarted child continues: a crash loses each
// device's samples since its last chunk written, so each device goes on
// after its own last stored sample. from is the first measurement to
// record, skip tells the measurements stored already, and stored is how
// many are.
type crashResume struct {
	from, stored int64
	next         map[string]int64 // device → its first tick not stored
}

func (r crashResume) skip(n int64) bool {
	return n/crashDevices < r.next["d"+strconv.FormatInt(n%crashDevices, 10)]
}

// crashStored reads per device the samples stored and the tick of its
// newest one.
func crashStored(t *testing.T, db *sql.DB) map[string][2]int64 {
	rows, err := db.Query(`SELECT d.name, sum(c.n), max(c.tn) FROM raw_chunk c JOIN device d ON d.id = c.device GROUP BY d.name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][2]int64{}
	for rows.Next() {
		var name string
		var n, tn int64
		if err := rows.Scan(&name, &n, &tn); err != nil {
			t.Fatal(err)
		}
		out[name] = [2]int64{n, (tn - crashT0) / crashStepMs}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func crashNext(t *testing.T, s *Store) crashResume {
	r := crashResume{next: map[string]int64{}}
	first := int64(math.MaxInt64)
	for d := range int64(crashDevices) {
		name := "d" + strconv.FormatInt(d, 10)
		st, ok := crashStored(t, s.rdb.Load())[name]
		next := int64(0)
		if ok {
			next = st[1] + 1
			r.stored += st[0]
		}
		r.next[name] = next
		first = min(first, next)
	}
	r.from = first * crashDevices
	return r
}

func crashChild(t *testing.T) {
	s, err := Open(t.Context(), Config{Path: os.Getenv("STORE_TEST_PATH"), Plants: []PlantInfo{{ID: "p1"}}}, testLogger(t))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	resume := crashNext(t, s)
	ctx := t.Context()
	go s.Run(ctx)
	var last int64 = -1
	committed := make(chan int64, 1)
	go func() {
		for n := range committed {
			if err := s.Flush(ctx); err == nil {
				fmt.Printf("committed %d\n", n)
			}
		}
	}()
	for n := resume.from; ; n++ {
		if resume.skip(n) {
			continue
		}
		for !s.Record(crashMeasurement(n)) {
			s.Flush(ctx)
		}
		last = n
		select {
		case committed <- last:
		default:
		}
	}
}

// crashCadenceChild records at a poller's pace (4 measurements every
// 20 ms) and leaves the commits to the BatchInterval timer (200 ms): it
// prints "committed N" when Stats.Written shows that a timed commit
// stored N+1 measurements in all.
func crashCadenceChild(t *testing.T) {
	s, err := Open(t.Context(), Config{Path: os.Getenv("STORE_TEST_PATH"), BatchInterval: 200 * time.Millisecond,
		Plants: []PlantInfo{{ID: "p1"}}}, testLogger(t))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	resume := crashNext(t, s)
	go s.Run(t.Context())
	go func() {
		var shown uint64
		for {
			if st := s.Stats(); st.Written > shown && st.Dropped == 0 && st.Failed == 0 {
				shown = st.Written
				fmt.Printf("committed %d\n", resume.stored+int64(shown)-1)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	for n := resume.from; ; n++ {
		if resume.skip(n) {
			continue
		}
		if !s.Record(crashMeasurement(n)) {
			t.Errorf("measurement %d refused", n)
		}
		if n%crashDevices == crashDevices-1 {
			time.Sleep(20 * time.Millisecond) // a poller's pace, not an assertion
		}
	}
}

// TestCrash kills a child that commits by Flush and by BatchRows at
// random moments; TestCrashCadence one whose commits come from the
// BatchInterval timer (the daemon's database.commitInterval).
func TestCrash(t *testing.T)        { crashTest(t, "crash") }
func TestCrashCadence(t *testing.T) { crashTest(t, "crash-cadence") }

func crashTest(t *testing.T, mode string) {
	t.Parallel() // independent database files
	kills := 12
	if testing.Short() {
		kills = 5
	}
	path := filepath.Join(t.TempDir(), "plantd.db")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5))
	lastCommitted := int64(-1)
	for i := range kills {
		cmd := runChild(t, mode, "STORE_TEST_PATH="+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan int64)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if n, ok := strings.CutPrefix(sc.Text(), "committed "); ok {
					v, _ := strconv.ParseInt(n, 10, 64)
					lines <- v
				}
			}
		}()
		// Kill at a random moment after the first commit of this run.
		var killed <-chan time.Time
		deadline := time.After(30 * time.Second)
		committedThisRun := int64(-1)
	wait:
		for {
			select {
			case n, ok := <-lines:
				if !ok {
					break wait
				}
				committedThisRun = max(committedThisRun, n)
				if killed == nil {
					killed = time.After(time.Duration(rng.IntN(300)) * time.Millisecond)
				}
			case <-killed:
				cmd.Process.Signal(syscall.SIGKILL)
				killed = nil
			case <-deadline:
				cmd.Process.Kill()
				t.Fatalf("run %d: no commit within 30 s; stderr:\n%s", i, stderr.String())
			}
		}
		werr := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("run %d: child ended with %v, not SIGKILL; stderr:\n%s", i, werr, stderr.String())
		}
		lastCommitted = max(lastCommitted, committedThisRun)
		checkAfterCrash(t, path, lastCommitted)
	}
	t.Logf("%d kills, %d measurements committed", kills, lastCommitted+1)
}

// checkAfterCrash checks the database a killed child left: integrity,
// every committed measurement present and none of a device missing
// before its newest, and
// after a restart rollups that agree with the raw samples.
func checkAfterCrash(t *testing.T, path string, committed int64) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	var ok string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check: %q, %v", ok, err)
	}
	var n int64
	for dev, st := range crashStored(t, db) {
		n += st[0]
		if st[0] != st[1]+1 {
			t.Fatalf("device %s: %d measurements stored up to tick %d: some are missing", dev, st[0], st[1])
		}
	}
	db.Close()
	if n < committed+1 {
		t.Fatalf("%d measurements stored, but %d were committed", n, committed+1)
	}

	// Restart: the rollups the crash interrupted are completed, and agree
	// with the raw samples.
	s, err := Open(t.Context(), Config{Path: path, Plants: []PlantInfo{{ID: "p1"}}}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stop := runStore(t, s)
	stop()
	checkRollupsAgree(t, s)
}

// checkRollupsAgree recomputes every device's 5-minute counts and means of
// activePower from the raw rows, the energy from the counter, and the
// hourly and daily counts from the 5-minute rows, and compares them with
// the stored rollups.
func checkRollupsAgree(t *testing.T, s *Store) {
	t.Helper()
	db := s.rdb.Load()
	type key struct{ dev, t int64 }
	type sums struct {
		n        int64
		sum, e   float64
		first    float64
		last     float64
		firstSet bool
	}
	raw := map[key]*sums{}
	energy := map[int64]*sums{}
	for _, smp := range storedSamples(t, s) {
		dev, ts, vals := smp.dev, smp.t, smp.vals
		k := key{dev, floorDiv(ts, bucketMs)}
		x := raw[k]
		if x == nil {
			x = &sums{}
			raw[k] = x
		}
		x.n++
		for _, cv := range vals {
			switch cv.k.ch {
			case plant.ActivePower:
				x.sum += cv.v
			case plant.PVGenerationTotal:
				e := energy[dev]
				if e == nil {
					e = &sums{}
					energy[dev] = e
				}
				if !e.firstSet || cv.v < e.first {
					e.first, e.firstSet = cv.v, true
				}
				e.last = max(e.last, cv.v)
			}
		}
	}
	type rk struct {
		table    string
		src, day int64
	}
	counts := map[rk]int64{}
	got := map[key]*sums{}
	gotE := map[int64]float64{}
	for _, table := range []string{"r5m", "r1h", "r1d"} {
		rows, err := db.Query(`SELECT r.src, r.t, r.v FROM ` + table + ` r JOIN device d ON d.id = r.src WHERE d.kind != 'plant'`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var src, ts int64
			var v []byte
			rows.Scan(&src, &ts, &v)
			var mean float64
			var meanN int64
			var e float64
			n, err := decodeAggs(v, s.cat, func(sid int64, a agg) {
				switch s.cat.seriesByID(sid).ch {
				case plant.ActivePower:
					mean, meanN = a.mean(), a.n
				case plant.PVGeneration:
					e = a.e
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if meanN != n {
				t.Fatalf("%s %d/%d: activePower in %d of %d samples", table, src, ts, meanN, n)
			}
			d0, _ := dayBounds(ts, time.UTC)
			counts[rk{table, src, d0}] += n
			if table == "r5m" {
				got[key{src, ts}] = &sums{n: n, sum: mean * float64(n)}
				gotE[src] += e
			}
		}
		rows.Close()
	}
	for k, w := range raw {
		g := got[k]
		if g == nil || g.n != w.n || math.Abs(g.sum-w.sum) > 0.01*float64(w.n) {
			t.Fatalf("device %d at %v: rollup %+v, raw %+v", k.dev, time.UnixMilli(k.t).UTC(), g, w)
		}
	}
	if len(got) != len(raw) {
		t.Fatalf("%d 5-minute rows, %d intervals with raw samples", len(got), len(raw))
	}
	for k, n := range counts {
		if k.table == "r5m" {
			if counts[rk{"r1h", k.src, k.day}] != n || counts[rk{"r1d", k.src, k.day}] != n {
				t.Fatalf("device %d day %v: %d samples in 5-minute rows, %d in hourly, %d in daily", k.src,
					time.UnixMilli(k.day).UTC(), n, counts[rk{"r1h", k.src, k.day}], counts[rk{"r1d", k.src, k.day}])
			}
		}
	}
	for dev, e := range energy {
		if want := e.last - e.first; math.Abs(gotE[dev]-want) > 0.01 {
			t.Fatalf("device %d: energy %v in the rollups, counter says %v", dev, gotE[dev], want)
		}
	}
}

var _ = sqlite3.ErrFull

// TestLocked: a database another connection holds locked (an open write
// transaction on plantd's WAL database, or an exclusive lock on a
// rollback-journal one) fails Open with ErrLocked while the lock is held,
// having waited lockWait (the error says so), not the writer's busy
// timeout (5 s, the only bound on the wall clock: what Open must not
// wait).
func TestLocked(t *testing.T) {
	t.Parallel() // its own database files
	for _, tt := range []struct {
		name, mode string
		hold       []string
	}{
		{"wal write transaction", "WAL", []string{`BEGIN IMMEDIATE`, `INSERT INTO meta VALUES ('lock-test', 1)`}},
		{"exclusive lock", "DELETE", []string{`BEGIN EXCLUSIVE`, `INSERT INTO meta VALUES ('lock-test', 1)`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // its own database files
			path := filepath.Join(t.TempDir(), "plantd.db")
			openTest(t, Config{Path: path}).Close()
			db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode="+tt.mode)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			conn, err := db.Conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, q := range tt.hold {
				if _, err := conn.ExecContext(t.Context(), q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			start := time.Now()
			s, err := Open(t.Context(), Config{Path: path}, testLogger(t))
			took := time.Since(start)
			if err == nil {
				s.Close()
				t.Fatal("open of a locked database succeeded")
			}
			if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("(waited %v)", lockWait)) {
				t.Errorf("open: %v, want ErrLocked after waiting %v", err, lockWait)
			}
			if took >= 5*time.Second {
				t.Errorf("open failed after %v: it waited as long as the writer's busy timeout, want %v", took, lockWait)
			}
			t.Logf("after %v: %v", took.Round(time.Millisecond), err)
			if _, err := conn.ExecContext(t.Context(), `ROLLBACK`); err != nil {
				t.Fatal(err)
			}
			openTest(t, Config{Path: path})
		})
	}
}

// TestCorruptFile: a file that is not a database fails Open with
// ErrCorrupt at once.
func TestCorruptFile(t *testing.T) {
	t.Parallel() // its own database files
	path := filepath.Join(t.TempDir(), "plantd.db")
	if err := os.WriteFile(path, bytes.Repeat([]byte("not a database "), 512), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(t.Context(), Config{Path: path}, testLogger(t))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open: %v, want ErrCorrupt", err)
	}
}
