package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestConfigTooLarge: a config file above 1 MiB (a sparse 50 MB file) is
// refused at once on every path: check-config exits 78 naming the cap, a
// reload keeps the running config, and a start exits 78.
func TestConfigTooLarge(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	writeConfig(t, big, noDevicesConfig("127.0.0.1:0", "", filepath.Join(dir, "big.db")))
	if err := os.Truncate(big, 50<<20); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check-config", big}, {"run", "-c", big}} {
		start := time.Now()
		_, stderr, code := runBinary(t, args...)
		if code != exitConfig || !strings.Contains(stderr, "1 MiB") {
			t.Errorf("plantd %s: exit %d, stderr %q; want %d naming the 1 MiB cap", strings.Join(args, " "), code, stderr, exitConfig)
		}
		t.Logf("plantd %s refused in %v", args[0], time.Since(start).Round(time.Millisecond))
	}

	d := startDaemonConfig(t, noDevicesConfig("127.0.0.1:0", "", filepath.Join(dir, "plantd.db")))
	d.waitAPI(10 * time.Second)
	d.WaitLines("ready", 30*time.Second, func(lines []string) bool {
		return strings.Contains(strings.Join(lines, "\n"), "msg=\"ready: ")
	})
	if err := os.Truncate(d.path, 50<<20); err != nil {
		t.Fatal(err)
	}
	d.Signal(syscall.SIGHUP)
	line := d.WaitLog(regexp.MustCompile(`config reload refused`), 10*time.Second)
	if !strings.Contains(line, "1 MiB") {
		t.Errorf("reload refusal %q does not name the 1 MiB cap", line)
	}
	if code, _ := d.request("GET", "/healthz", "", ""); code != 200 {
		t.Errorf("after the refused reload: /healthz %d", code)
	}
	d.stop()
}
