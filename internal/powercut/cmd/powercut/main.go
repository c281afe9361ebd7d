package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"plantd/internal/powercut"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "powercut:", err)
		os.Exit(1)
	}
}

func run() error {
	plantd := flag.String("plantd", "", "the plantd binary")
	cuts := flag.Int("cuts", 30, "cuts")
	devices := flag.Int("devices", 20, "simulated devices (plantd sim --devices)")
	poll := flag.Duration("poll", time.Second, "poll interval")
	commit := flag.Duration("commit", 10*time.Second, "database.commitInterval")
	gapMin := flag.Duration("gap-min", 5*time.Second, "shortest time between cuts")
	gapMax := flag.Duration("gap-max", 40*time.Second, "longest time between cuts")
	brokerFlag := flag.String("broker", "", "a running MQTT broker's HOST:PORT for the uplink (default: one that is down, so the outbox queues)")
	work := flag.String("work", "", "working directory (default: a new temporary one, removed at the end)")
	flag.Parse()
	if *plantd == "" {
		return fmt.Errorf("-plantd is required")
	}
	if err := powercut.Available(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *work == "" {
		d, err := os.MkdirTemp("", "powercut")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		*work = d
	}

	sim := exec.CommandContext(ctx, *plantd, "sim", "--devices", fmt.Sprint(*devices), "--listen", "127.0.0.1")
	out, err := sim.StdoutPipe()
	if err != nil {
		return err
	}
	simLog, err := os.Create(filepath.Join(*work, "sim.log"))
	if err != nil {
		return err
	}
	defer simLog.Close()
	sim.Stderr = simLog
	if err := sim.Start(); err != nil {
		return fmt.Errorf("start the simulator: %w", err)
	}
	defer func() { _ = sim.Process.Signal(syscall.SIGTERM); _ = sim.Wait() }()
	var devs []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && strings.Contains(f[2], ":") && f[3] != "unit" {
			host, port, _ := strings.Cut(f[2], ":")
			devs = append(devs, fmt.Sprintf("  - {id: %s, host: %s, port: %s, unit: %s, pollInterval: %s}\n", f[0], host, port, f[3], *poll))
		}
		if strings.HasPrefix(sc.Text(), "try:") {
			break
		}
	}
	if len(devs) == 0 {
		return fmt.Errorf("the simulator named no devices (log in %s)", simLog.Name())
	}
	broker := *brokerFlag
	if broker == "" {
		dead, closeBroker, err := deadAddr()
		if err != nil {
			return err
		}
		defer closeBroker()
		broker = dead + " (down)"
	}

	const plants = "plants:\n  - {id: pc, name: Power cut, timezone: Europe/Berlin}\n"
	plantdLog, err := os.Create(filepath.Join(*work, "plantd.log"))
	if err != nil {
		return err
	}
	defer plantdLog.Close()
	window := time.Minute + *commit + powercut.CacheWindow
	fmt.Printf("# %d devices polled every %s, commitInterval %s, MQTT broker %s; %d cuts %s-%s apart; load %s\n",
		*devices, *poll, *commit, broker, *cuts, *gapMin, *gapMax, loadavg())
	fmt.Printf("# README's window: raw samples %s (the last minute, the commit interval, %s of page cache), other commits %s\n", window, powercut.CacheWindow, powercut.CacheWindow)
	fmt.Printf("%4s %8s %-5s %-9s %13s %10s %8s %-22s %s\n", "cut", "at", "fsck", "integrity", "db+wal_KiB", "newest_age", "lost", "lost_what", "outbox image / live")
	o := powercut.Options{
		Plantd: *plantd,
		Work:   *work,
		Config: func(db string) string {
			return fmt.Sprintf("http: {listen: 127.0.0.1:0}\ngateway: {id: powercut}\ndatabase: {path: %s, commitInterval: %s}\nmqtt: {broker: tcp://%s}\n%sdevices:\n%s",
				db, *commit, strings.TrimSuffix(broker, " (down)"), plants, strings.Join(devs, ""))
		},
		ReopenConfig: func(db string) string {
			return fmt.Sprintf("http: {listen: 127.0.0.1:0}\ngateway: {id: powercut}\ndatabase: {path: %s}\n%s", db, plants)
		},
		Broker: *brokerFlag,
		Cuts:   *cuts,
		Gap:    func() time.Duration { return *gapMin + rand.N(*gapMax-*gapMin+1) },
		Stderr: plantdLog,
		OnCut: func(c powercut.Cut) {
			fsck := "clean"
			if c.Fsck != "" {
				fsck = "FAIL"
			}
			integ := c.Image.Integrity
			if c.Image.Missing {
				integ = "no-db"
			}
			age := "-"
			if c.NewestAge >= 0 {
				age = c.NewestAge.Round(100 * time.Millisecond).String()
			}
			what := strings.Join(c.LostWhat, ",")
			if what == "" {
				what = "-"
			}
			fmt.Printf("%4d %8s %-5s %-9s %13s %10s %8s %-22s %s / %s", c.N, c.At.Round(100*time.Millisecond), fsck, integ,
				fmt.Sprintf("%d+%d", c.Image.DBBytes>>10, c.Image.WALBytes>>10), age,
				c.Lost.Round(100*time.Millisecond), what, c.Image.OutboxSummary(), c.Live.OutboxSummary())
			if c.Reopen != nil {
				fmt.Printf("  REOPEN: %v", c.Reopen)
			}
			if c.Published != nil {
				fmt.Printf("  published %s", published(c.Published))
			}
			if len(c.Reused) > 0 {
				fmt.Printf("  SEQ REUSED: %v", c.Reused)
			}
			if len(c.Ahead) > 0 {
				fmt.Printf("  AHEAD of plantd: %v", c.Ahead)
			}
			if c.Fsck != "" {
				fmt.Printf("\n     fsck: %s", c.Fsck)
			}
			fmt.Println()
		},
	}
	res, err := powercut.Run(ctx, o)
	summary(res, window)
	if err != nil {
		return fmt.Errorf("%w (plantd's log: %s)", err, plantdLog.Name())
	}
	return nil
}

// published is the highest seq delivered per stream in a line, the live
// streams in one entry (how many, the highest of their seqs).
func published(p map[string]uint64) string {
	if len(p) == 0 {
		return "-"
	}
	var parts []string
	var live int
	var liveHi uint64
	for _, n := range slices.Sorted(maps.Keys(p)) {
		if strings.HasPrefix(n, "live/") {
			live++
			liveHi = max(liveHi, p[n])
			continue
		}
		parts = append(parts, fmt.Sprintf("%s<=%d", n, p[n]))
	}
	if live > 0 {
		parts = append(parts, fmt.Sprintf("live(%d streams)<=%d", live, liveHi))
	}
	return strings.Join(parts, ",")
}

// summary prints the counts and the largest losses.
func summary(res []powercut.Cut, window time.Duration) {
	var ok, intact, clean, opened, withData, ageOver, lostOver, reused, watched int
	var ages, losts []time.Duration
	for _, c := range res {
		if c.OK() {
			ok++
		}
		if c.Image.Missing || c.Image.Integrity == "ok" {
			intact++
		}
		if c.Fsck == "" {
			clean++
		}
		if c.Reopen == nil {
			opened++
		}
		if c.Published != nil {
			watched++
			if len(c.Reused) > 0 {
				reused++
			}
		}
		if c.NewestAge >= 0 {
			withData++
			ages = append(ages, c.NewestAge)
			if c.NewestAge > window {
				ageOver++
			}
		}
		if c.Lost > powercut.CacheWindow {
			lostOver++
		}
		losts = append(losts, c.Lost)
	}
	fmt.Printf("summary: %d cuts; e2fsck clean %d; database intact %d (integrity_check ok, or not yet on the disk); reopened by plantd with storage Ok %d; all checks %d\n",
		len(res), clean, intact, opened, ok)
	if watched > 0 {
		fmt.Printf("  seqs: %d of %d images let the next start (after a reboot) number a seq the broker had delivered before the cut again\n", reused, watched)
	}
	if len(ages) > 0 {
		fmt.Printf("  newest raw sample's age at the cut (%d images holding samples): %s (README: at most %s; %d beyond)\n", withData, mmm(ages), window, ageOver)
	}
	if len(losts) > 0 {
		fmt.Printf("  commits lost (bound from the live timeline): %s (README: at most %s; %d beyond)\n", mmm(losts), powercut.CacheWindow, lostOver)
	}
}

// mmm is min / median / max.
func mmm(d []time.Duration) string {
	slices.Sort(d)
	r := func(x time.Duration) string { return x.Round(100 * time.Millisecond).String() }
	return fmt.Sprintf("min %s median %s max %s", r(d[0]), r(d[len(d)/2]), r(d[len(d)-1]))
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// deadAddr is a loopback address where nothing listens: a TCP socket
// bound, never listening, held until closed, so the uplink's connection
// attempts are refused.
func deadAddr() (string, func(), error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", nil, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return "", nil, err
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return "", nil, err
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port), func() { syscall.Close(fd) }, nil
}
