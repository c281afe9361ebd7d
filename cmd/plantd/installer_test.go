package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/config"
	"plantd/sim"
	"plantd/sim/simtest"
)

// The installer's path (issue 25, items 10-13): what an installer meets
// between "apt install" and the first device polled.

// packagedConfig returns the package's conffile (packaging/plantd.yaml)
// with its database in dir and the API on a free loopback port, as a
// test can run it; everything else as installed.
func packagedConfig(t *testing.T, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "packaging", "plantd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(raw)
	for old, repl := range map[string]string{
		"  listen: 127.0.0.1:8080\n":          "  listen: 127.0.0.1:0\n",
		"  path: /var/lib/plantd/plantd.db\n": "  path: " + filepath.Join(dir, "plantd.db") + "\n",
	} {
		if !strings.Contains(cfg, old) {
			t.Fatalf("packaging/plantd.yaml lacks %q", old)
		}
		cfg = strings.Replace(cfg, old, repl, 1)
	}
	return cfg
}

// waitStatus waits for a STATUS= message that matches re and returns its
// submatches.
func waitStatus(t *testing.T, msgs <-chan string, re *regexp.Regexp, timeout time.Duration) []string {
	t.Helper()
	deadline := time.After(timeout)
	last := ""
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatalf("notify socket closed; last message %q", last)
			}
			last = m
			if sm := re.FindStringSubmatch(m); sm != nil {
				return sm
			}
		case <-deadline:
			t.Fatalf("no STATUS= matching %s within %v; last message %q", re, timeout, last)
		}
	}
}

// TestPackagedConfigFirstRun runs the real binary on the package's
// conffile: it holds no devices, no credentials, no broker and no
// example identity, listens on loopback only, and plantd starts on it,
// says "no devices configured" with what to do in the log and the status
// line, and connects to nothing.
func TestPackagedConfigFirstRun(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
	installed, err := config.Load(filepath.Join("..", "..", "packaging", "plantd.yaml"))
	if err != nil {
		t.Fatalf("the packaged config: %v", err)
	}
	example, err := config.Load(filepath.Join("..", "..", "packaging", "plantd.yaml.example"))
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(installed.HTTP.Listen)
	for _, c := range []struct {
		what string
		bad  bool
	}{
		{"devices", len(installed.Devices) != 0},
		{"tokens", len(installed.Tokens) != 0},
		{"OAuth clients", len(installed.OAuthClients) != 0},
		{"an MQTT broker", installed.MQTT.Broker != ""},
		{"the example's gateway id", installed.Gateway.ID == example.Gateway.ID},
		{"the example's plant name", installed.Plants[0].Name == example.Plants[0].Name},
		{"an API beyond loopback (" + installed.HTTP.Listen + ")", !net.ParseIP(host).IsLoopback()},
	} {
		if c.bad {
			t.Errorf("the packaged config has %s", c.what)
		}
	}

	dir := t.TempDir()
	sock, msgs := fakeNotifySocket(t)
	d := startDaemonConfig(t, packagedConfig(t, dir), "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=600000")
	want := "no devices configured: run `plantd scan HOST` to find a device, add it under devices: in " + d.path
	d.WaitLog(regexp.MustCompile(`level=WARN msg="`+regexp.QuoteMeta(want)), 30*time.Second)
	sm := waitStatus(t, msgs, regexp.MustCompile(`STATUS=(no devices configured[^\n]*)`), 30*time.Second)
	if !strings.HasPrefix(sm[1], want) || !strings.Contains(sm[1], "systemctl reload plantd") || !strings.Contains(sm[1], "0 measurements stored") {
		t.Errorf("status line %q, want it to start %q and say how to apply it", sm[1], want)
	}
	d.stop()
	for _, l := range d.Stderr() {
		if strings.Contains(l, "device=") || strings.Contains(l, "modbus") {
			t.Errorf("a device line on a config without devices: %s", l)
		}
	}
}

// TestStatusCountsStoredAfterRestart: the status line's "measurements
// stored" counts what the database holds, so after a restart it is not 0.
func TestStatusCountsStoredAfterRestart(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
	p := simtest.Start(t, sim.DefaultConfig())
	dir := t.TempDir()
	sock, msgs := fakeNotifySocket(t)
	d := startDaemonConfig(t, simConfig(p, dir, 1, ""), "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=600000")
	stored := regexp.MustCompile(`STATUS=1 devices: [^\n]*; ([1-9]\d*) measurements stored`)
	before, _ := strconv.Atoi(waitStatus(t, msgs, stored, 30*time.Second)[1])
	d.stop()

	// The same database, now without devices: nothing new is written.
	cfg := noDevicesConfig("127.0.0.1:0", "", filepath.Join(dir, "plantd.db"))
	sock2, msgs2 := fakeNotifySocket(t)
	d2 := startDaemonConfig(t, cfg, "NOTIFY_SOCKET="+sock2, "WATCHDOG_USEC=600000")
	after, _ := strconv.Atoi(waitStatus(t, msgs2, regexp.MustCompile(`STATUS=(?:no devices configured|0 devices)[^\n]*; ([1-9]\d*) measurements stored`), 30*time.Second)[1])
	d2.stop()
	if after < before {
		t.Errorf("after the restart the status line says %d measurements stored, before it %d", after, before)
	}
}
