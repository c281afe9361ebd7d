package main

import (
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"plantd/config"
	"plantd/httpapi/oauth2/oauthconfig"
	"plantd/internal/proctest"
	"plantd/sim"
	"plantd/sim/simtest"
)

// simConfig is a config of the simulated plant's first n devices, polled
// every 250 ms, with the given extra YAML.
func simConfig(p *sim.Plant, dir string, n int, extra string) string {
	return simConfigOf(p.Devices()[:n], dir, extra)
}

// simConfigOf is a config of the given simulated devices, polled every
// 250 ms, with the given extra YAML.
func simConfigOf(devices []*sim.Device, dir string, extra string) string {
	var devs strings.Builder
	for _, d := range devices {
		host, port, _ := net.SplitHostPort(d.Addr())
		fmt.Fprintf(&devs, "  - {id: %s, host: %s, port: %s, pollInterval: 250ms, timeout: 500ms}\n", d.ID(), host, port)
	}
	return fmt.Sprintf("http:\n  listen: 127.0.0.1:0\ndatabase:\n  path: %s\nplants:\n  - {id: p1, name: Test, timezone: Europe/Berlin}\ndevices:\n%s%s",
		filepath.Join(dir, "plantd.db"), devs.String(), extra)
}

// fakeNotifySocket is systemd's side of sd_notify for a test: a unixgram
// socket to pass as NOTIFY_SOCKET, and the messages plantd sends to it.
func fakeNotifySocket(t *testing.T) (path string, msgs <-chan string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch := make(chan string, 1000)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(ch)
				return
			}
			ch <- string(buf[:n])
		}
	}()
	return path, ch
}

// notifyUpTo sends a datagram of the test's own to the socket at path,
// whose messages fakeNotifySocket delivers on msgs, and yields the
// messages before it: all a process that has exited sent there.
func notifyUpTo(t *testing.T, path string, msgs <-chan string) iter.Seq[string] {
	t.Helper()
	const end = "TEST-END"
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(end)); err != nil {
		t.Fatal(err)
	}
	return func(yield func(string) bool) {
		for {
			select {
			case m, ok := <-msgs:
				if !ok || m == end || !yield(m) {
					return
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the test's own datagram not read within 30 s")
			}
		}
	}
}

// TestSystemdNotify runs the real binary with NOTIFY_SOCKET pointing at a
// unixgram socket the test listens on, and a watchdog of 600 ms: READY=1
// comes once the first poll round ran (both devices polled), with a
// STATUS= summary; WATCHDOG=1 follows at a third of the watchdog interval
// with the summary refreshed; SIGTERM sends STOPPING=1.
func TestSystemdNotify(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
	p := simtest.Start(t, sim.DefaultConfig())
	dir := t.TempDir()
	sock, msgs := fakeNotifySocket(t)
	next := func(timeout time.Duration) string {
		t.Helper()
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatal("notify socket closed")
			}
			return m
		case <-time.After(timeout):
			t.Fatalf("no notify message within %v", timeout)
		}
		return ""
	}

	start := time.Now()
	d := startDaemonConfig(t, simConfig(p, dir, 2, ""), "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=600000")
	var ready string
	for ready == "" {
		m := next(30 * time.Second)
		if strings.Contains(m, "READY=1") {
			ready = m
		} else if !strings.Contains(m, "STATUS=starting") && !strings.Contains(m, "WATCHDOG=1") {
			t.Errorf("before READY=1: %q", m)
		}
	}
	t.Logf("READY=1 after %v: %q", time.Since(start).Round(time.Millisecond), ready)
	if !regexp.MustCompile(`STATUS=2 devices: \d online`).MatchString(ready) {
		t.Errorf("READY=1 without the summary: %q", ready)
	}
	// The first round is done: both devices answered once (the sim is up),
	// so the log says so before or with READY.
	d.WaitLog(regexp.MustCompile(`ready: store open, HTTP API bound, first poll round done, schedules loaded`), 10*time.Second)

	status := regexp.MustCompile(`STATUS=2 devices: 2 online, 0 stale, 0 offline; (\d+) measurements stored; API on 127\.0\.0\.1:\d+`)
	var beats []time.Time
	stored := ""
	// Six beats for their rate; more, up to 10 s, until the refreshed
	// summary counts the first measurements (the store commits in
	// batches, later on a loaded machine).
	for deadline := time.Now().Add(10 * time.Second); len(beats) < 6 || (stored == "0" && time.Now().Before(deadline)); {
		m := next(5 * time.Second)
		if !strings.Contains(m, "WATCHDOG=1") {
			t.Errorf("unexpected message: %q", m)
			continue
		}
		beats = append(beats, time.Now())
		if sm := status.FindStringSubmatch(m); sm == nil {
			t.Errorf("WATCHDOG=1 without the summary: %q", m)
		} else {
			stored = sm[1]
		}
	}
	if gap := beats[5].Sub(beats[0]) / 5; gap > 400*time.Millisecond {
		t.Errorf("WATCHDOG=1 every %v, want about 200 ms (a third of WatchdogSec)", gap)
	}
	if stored == "0" {
		t.Errorf("no measurements stored after %d watchdog rounds", len(beats))
	}

	d.Signal(syscall.SIGTERM)
	for {
		m := next(10 * time.Second)
		if strings.Contains(m, "STOPPING=1") {
			break
		}
	}
	if err := d.Wait(30 * time.Second); err != nil {
		t.Errorf("plantd after SIGTERM: %v", err)
	}
}

// TestReloadSIGHUP sends SIGHUP to the real binary: a valid new config
// replaces the HTTP tokens and the log level at once and names the changes
// that need a restart (the gateway id); an invalid one (that would also
// remove a device) is refused with
// its problems and the running config stays; polling goes on throughout.
func TestReloadSIGHUP(t *testing.T) {
	t.Parallel() // its own files, processes and ports
	p := simtest.Start(t, sim.DefaultConfig())
	dir := t.TempDir()
	const tokA, tokB = "token-a-of-the-first-config", "token-b-of-the-reloaded-config"
	tokens := func(name, tok string) string {
		return fmt.Sprintf("tokens:\n  - {name: %s, sha256: %s, role: standard}\n", name, config.TokenHash(tok))
	}
	d := startDaemonConfig(t, simConfig(p, dir, 2, tokens("a", tokA)))
	api := d.waitAPI(10 * time.Second)
	d.WaitLog(regexp.MustCompile(`ready: `), 30*time.Second)
	get := func(tok string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+api+"/monitoring/v1/plants", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if a, b := get(tokA), get(tokB); a != 200 || b != 401 {
		t.Fatalf("before the reload: token a %d, token b %d", a, b)
	}

	// Token b instead of a, debug logging, a memory limit (applied at
	// once), another gateway id (needs a restart).
	d.writeConfig(simConfig(p, dir, 2, tokens("b", tokB)+"log:\n  level: debug\ngateway:\n  id: gw-renamed\n  memoryLimitMB: 80\n"))
	d.Signal(syscall.SIGHUP)
	d.WaitLog(regexp.MustCompile(`config reloaded"? tokens=1 .*logLevel=debug`), 10*time.Second)
	d.WaitLog(regexp.MustCompile(`memory limit applied"? limitMiB=80`), 10*time.Second)
	d.WaitLog(regexp.MustCompile(`need a restart.*: gateway"?$`), 10*time.Second)
	if a, b := get(tokA), get(tokB); a != 401 || b != 200 {
		t.Errorf("after the reload: token a %d, token b %d", a, b)
	}
	d.WaitLog(regexp.MustCompile(`level=DEBUG`), 10*time.Second)

	// An invalid config: refused, the problems logged, token b still good.
	d.writeConfig(simConfig(p, dir, 1, tokens("b", tokB)+"bogusKey: 1\n"))
	d.Signal(syscall.SIGHUP)
	d.WaitLog(regexp.MustCompile(`config reload refused, the running config stays`), 10*time.Second)
	d.WaitLog(regexp.MustCompile(`config: .*plantd.yaml:\d+: .*bogusKey`), 10*time.Second)
	if b := get(tokB); b != 200 {
		t.Errorf("after a refused reload: token b %d", b)
	}
	// Still polling both devices of the running config.
	polls := func() string {
		resp, err := http.Get("http://" + api + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`plantd_device_polls_total\{device="inv2"\} (\S+)`).FindSubmatch(body)
		if m == nil {
			t.Fatal("no poll counter of inv2 in /metrics")
		}
		return string(m[1])
	}
	before := polls()
	proctest.WaitFor(t, "inv2 polled after the reloads", 10*time.Second, func() bool { return polls() != before })
	d.stop()
}

// TestChangedSections: what a reload applies (tokens, OAuth2 clients, the
// log level) is not reported; every other top-level change is.
func TestChangedSections(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*config.Config)
		want   string
	}{
		{"nothing", func(*config.Config) {}, ""},
		{"reloadable", func(c *config.Config) {
			c.Tokens = []config.Token{{Name: "x", SHA256: config.TokenHash("x"), Role: config.RoleStandard}}
			c.OAuthClients = []oauthconfig.Client{{ClientID: "c", SecretSHA256: config.TokenHash("s"), Role: config.RoleStandard}}
			c.Log.Level = "debug"
		}, ""},
		{"log format", func(c *config.Config) { c.Log.Format = "json" }, "log.format"},
		{"listener and devices", func(c *config.Config) {
			c.HTTP.Listen = "0.0.0.0:9090"
			c.Devices = append(c.Devices, config.NewDevice())
		}, "http, devices"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			running, next := config.Default(), config.Default()
			tt.change(next)
			if got := strings.Join(changedSections(running, next), ", "); got != tt.want {
				t.Errorf("changedSections = %q, want %q", got, tt.want)
			}
		})
	}
}
