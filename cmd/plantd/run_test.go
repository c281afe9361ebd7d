package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"plantd/config"
	"plantd/internal/proctest"
)

// listenRE matches the log line naming the HTTP API's address.
var listenRE = regexp.MustCompile(`http api listening.* addr=(\S+)`)

// plantdRun is the real binary running "plantd run -c", its log lines kept
// for the test to wait on.
type plantdRun struct {
	*proctest.Proc
	t    testing.TB
	path string // the config file
	api  string // the HTTP API's host:port, once waitAPI saw it
}

// startDaemon runs "plantd run -c cfgPath" with env added to the test's
// environment, until the test ends.
func startDaemon(t testing.TB, cfgPath string, env ...string) *plantdRun {
	t.Helper()
	cmd := exec.Command(binPath, "run", "-c", cfgPath)
	cmd.Env = append(os.Environ(), env...)
	return &plantdRun{Proc: proctest.Start(t, cmd), t: t, path: cfgPath}
}

// startDaemonConfig writes cfg to a new plantd.yaml and runs plantd on it.
func startDaemonConfig(t *testing.T, cfg string, env ...string) *plantdRun {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plantd.yaml")
	writeConfig(t, path, cfg)
	return startDaemon(t, path, env...)
}

func writeConfig(t testing.TB, path, cfg string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeConfig replaces the daemon's config file (for a reload).
func (d *plantdRun) writeConfig(cfg string) {
	d.t.Helper()
	writeConfig(d.t, d.path, cfg)
}

// waitOnline waits until the daemon logged each of ids online, wherever
// in its log (the first poll round may end before the API listens).
func (d *plantdRun) waitOnline(timeout time.Duration, ids ...string) {
	d.t.Helper()
	d.WaitLines("online: "+strings.Join(ids, ", "), timeout, func(lines []string) bool {
		for _, id := range ids {
			if !slices.ContainsFunc(lines, func(l string) bool {
				return strings.Contains(l, `msg="device online"`) && (strings.Contains(l, " device="+id+" ") || strings.HasSuffix(l, " device="+id))
			}) {
				return false
			}
		}
		return true
	})
}

// waitAPI waits for the log line naming the API's address and returns it.
func (d *plantdRun) waitAPI(timeout time.Duration) string {
	d.t.Helper()
	d.api = listenRE.FindStringSubmatch(d.WaitLog(listenRE, timeout))[1]
	return d.api
}

// request sends a request with a bearer token (and a JSON body unless
// empty) to the API and returns the status and body.
func (d *plantdRun) request(method, path, token, body string) (int, []byte) {
	d.t.Helper()
	req, _ := http.NewRequest(method, "http://"+d.api+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// stop ends plantd with SIGTERM and wants exit status 0.
func (d *plantdRun) stop() {
	d.t.Helper()
	d.Stop(syscall.SIGTERM, 30*time.Second)
}

// runInProcess runs the daemon of cfg in the test's process (now: its
// clock, nil for the wall's) until the test ends, and then checks that
// run returned without an error.
func runInProcess(t *testing.T, cfg *config.Config, now func() time.Time, logger *slog.Logger) *daemon {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	d, err := newDaemon(ctx, cfg, listeners{}, now, logger)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.run(ctx, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	return d
}
