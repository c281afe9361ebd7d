package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"plantd/internal/proctest"
	"plantd/mqtt"
)

// noDevicesConfig is a config without devices, listening on listen (more
// of the http section in httpExtra), with the database at db.
func noDevicesConfig(listen, httpExtra, db string) string {
	return fmt.Sprintf("http:\n  listen: %s\n%sdatabase:\n  path: %s\nplants:\n  - {id: p1, name: Test, timezone: Europe/Berlin}\n",
		listen, httpExtra, db)
}

// TestStartFailsFast runs the real binary against components that cannot
// start: it must give up by itself (no retry, and a locked database after
// the store's short lock wait, not the writer's busy timeout), exit
// non-zero, name the reason on stderr, and never tell systemd READY=1.
// How long it took is logged; the 30 s bound only ends a plantd that does
// not give up.
func TestStartFailsFast(t *testing.T) {
	t.Parallel() // its own daemons, socket and files
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()

	for _, tt := range []struct {
		name string
		// setup returns the config, given a fresh directory.
		setup func(t *testing.T, dir string) string
		want  *regexp.Regexp
	}{
		{"port in use", func(t *testing.T, dir string) string {
			return noDevicesConfig(taken.Addr().String(), "", filepath.Join(dir, "plantd.db"))
		}, regexp.MustCompile(`listen tcp ` + regexp.QuoteMeta(taken.Addr().String()) + `: bind: address already in use`)},

		{"unreadable TLS key", func(t *testing.T, dir string) string {
			cert := filepath.Join(dir, "cert.pem")
			if err := os.WriteFile(cert, []byte("a certificate"), 0o644); err != nil {
				t.Fatal(err)
			}
			// Mode 000 keeps a key from the plantd user, but not from
			// root, which the tests may run as: there the key is a
			// directory, which nobody can read as a file.
			key := filepath.Join(dir, "key.pem")
			if os.Geteuid() == 0 {
				if err := os.Mkdir(key, 0o700); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(key, []byte("a key"), 0); err != nil {
				t.Fatal(err)
			}
			return noDevicesConfig("127.0.0.1:0", fmt.Sprintf("  tlsCert: %s\n  tlsKey: %s\n", cert, key),
				filepath.Join(dir, "plantd.db"))
		}, regexp.MustCompile(`tls .*key\.pem.*(is a directory|permission denied)`)},

		{"locked database", func(t *testing.T, dir string) string {
			// This test process is the other process: it holds an
			// exclusive lock on the database while plantd starts.
			path := filepath.Join(dir, "plantd.db")
			db, err := sql.Open("sqlite3", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			conn, err := db.Conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			for _, q := range []string{`CREATE TABLE other (x)`, `BEGIN EXCLUSIVE`, `INSERT INTO other VALUES (1)`} {
				if _, err := conn.ExecContext(t.Context(), q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			return noDevicesConfig("127.0.0.1:0", "", path)
		}, regexp.MustCompile(`database in use: locked by another process \(waited 300ms\)`)},

		{"corrupt database", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "plantd.db")
			if err := os.WriteFile(path, bytes.Repeat([]byte("garbage "), 1024), 0o600); err != nil {
				t.Fatal(err)
			}
			return noDevicesConfig("127.0.0.1:0", "", path)
		}, regexp.MustCompile(`database corrupt`)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfgPath := filepath.Join(dir, "plantd.yaml")
			if err := os.WriteFile(cfgPath, []byte(tt.setup(t, dir)), 0o600); err != nil {
				t.Fatal(err)
			}
			sock, msgs := fakeNotifySocket(t)
			cmd := exec.Command(binPath, "run", "-c", cfgPath)
			cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("plantd still running after 30 s, it did not give up; stderr:\n%s", stderr.String())
			}
			took := time.Since(start)
			t.Logf("exit after %v: %v; stderr: %s", took.Round(time.Millisecond), err, strings.TrimSpace(stderr.String()))
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() == 0 {
				t.Errorf("plantd: %v, want a non-zero exit", err)
			}
			if !tt.want.MatchString(stderr.String()) {
				t.Errorf("stderr does not say %s:\n%s", tt.want, stderr.String())
			}
			if strings.Contains(stderr.String(), "plantd running") {
				t.Errorf("plantd said it was running:\n%s", stderr.String())
			}
			if tt.name == "port in use" {
				// The port is bound before the database is opened.
				if _, err := os.Stat(filepath.Join(dir, "plantd.db")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a database file was created when the port was taken: %v", err)
				}
			}
			// The datagrams plantd sent are queued on the socket, in
			// order: read them up to one of the test's own, sent now.
			for m := range notifyUpTo(t, sock, msgs) {
				if strings.Contains(m, "READY=1") {
					t.Errorf("plantd told systemd %q", m)
				}
			}
		})
	}
}

// TestReadyWithoutDevices: without devices, READY=1 follows the start at
// once: the first poll round is done when it starts, so plantd reports
// ready on that, not after readyWait (the figure for the packaging note is
// logged).
func TestReadyWithoutDevices(t *testing.T) {
	t.Parallel() // its own daemon, socket and files
	dir := t.TempDir()
	sock, msgs := fakeNotifySocket(t)
	d := startDaemonConfig(t, noDevicesConfig("127.0.0.1:0", "", filepath.Join(dir, "plantd.db")), "NOTIFY_SOCKET="+sock)
	// The bound only ends a test whose daemon never gets ready; readyWait
	// (60 s) is longer, and the log line below tells the two apart.
	deadline := time.After(30 * time.Second)
	for ready := false; !ready; {
		select {
		case m := <-msgs:
			ready = strings.Contains(m, "READY=1")
		case <-deadline:
			t.Fatalf("no READY=1 within 30 s; the last lines:\n%s", d.Tail(20))
		}
	}
	// READY=1 came on the first round's end, not on readyWait's warning.
	l := d.WaitLog(regexp.MustCompile(`msg="ready: store open, HTTP API bound, first poll round done, schedules loaded"`), 30*time.Second)
	t.Logf("%s", l)
	for _, l := range d.Stderr() {
		if strings.Contains(l, "ready before the first poll round ended") {
			t.Errorf("plantd got ready on readyWait: %s", l)
		}
	}
	d.stop()
}

// TestDemoPortTaken: plantd demo on a taken port says so first and only:
// no banner, no token, no database file.
func TestDemoPortTaken(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	db := filepath.Join(dir, "demo.db")
	cmd := exec.Command(binPath, "demo", "--listen", taken.Addr().String(), "--db", db, "--mqtt", "off")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("plantd demo still running after 30 s; stdout:\n%s", stdout.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Errorf("plantd demo: %v, want a non-zero exit", err)
	}
	first, _, _ := strings.Cut(stderr.String(), "\n")
	if !strings.Contains(first, "address already in use") || !strings.Contains(first, taken.Addr().String()) {
		t.Errorf("first line of stderr %q, want the taken port", first)
	}
	if stdout.Len() > 0 {
		t.Errorf("plantd demo printed its banner on a taken port:\n%s", stdout.String())
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a database file was created: %v", err)
	}
}

// TestDemoWithoutEmbeddedBroker: in the packaged binary (tag nobroker)
// plantd demo has no embedded broker; it says so in its banner and runs
// without an uplink instead of failing. Runs runDemo in this process, with
// StartBroker as the nobroker build has it.
func TestDemoWithoutEmbeddedBroker(t *testing.T) {
	startBroker = func(string, bool, *slog.Logger) (*mqtt.Broker, error) { return nil, mqtt.ErrNoBroker }
	defer func() { startBroker = mqtt.StartBroker }()

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr proctest.Buffer
	code := make(chan int, 1)
	go func() {
		code <- runDemo(ctx, []string{"--listen", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "demo.db"), "--interval", "1s"}, &stdout, &stderr)
	}()
	banner := regexp.MustCompile(`(?s)HTTP API on http://(\S+),.*demo token \(installer role\): (\S+)\n.*Ctrl-C stops it`)
	var m []string
	for deadline := time.Now().Add(30 * time.Second); m == nil; time.Sleep(20 * time.Millisecond) {
		select {
		case c := <-code:
			t.Fatalf("runDemo returned %d before its banner; stderr:\n%s", c, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no banner after 30 s; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
		m = banner.FindStringSubmatch(stdout.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "MQTT: off, this build has no embedded broker") || strings.Contains(out, "MQTT broker (embedded)") {
		t.Errorf("banner does not say the uplink is off:\n%s", out)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m[1]+"/live/v1/plants/demo/measurements/sets/EnergyBalance", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+m[2])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("energy balance: %s, want 200", resp.Status)
	}
	cancel()
	select {
	case c := <-code:
		if c != exitOK {
			t.Errorf("runDemo exited %d after cancel, want %d; stderr:\n%s", c, exitOK, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("runDemo still running 30 s after cancel")
	}
}
