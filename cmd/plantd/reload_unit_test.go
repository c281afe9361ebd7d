package main

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"plantd/config"
)

// TestReloadChecksFirst runs the unit's ExecReload= commands as systemd
// does, in order, with the real binary: against an invalid config the
// first fails (non-zero, the problem on stderr, which the journal keeps)
// so that systemd never sends the signal and "systemctl reload" fails;
// against a valid one it passes and the last sends SIGHUP.
func TestReloadChecksFirst(t *testing.T) {
	t.Parallel() // the binary and files only
	unit, err := os.ReadFile(filepath.Join("..", "..", "systemd", "plantd.service"))
	if err != nil {
		t.Fatal(err)
	}
	var reload [][]string
	for l := range strings.Lines(string(unit)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "ExecReload="); ok {
			reload = append(reload, strings.Fields(v))
		}
	}
	if len(reload) < 2 || !slices.Equal(reload[len(reload)-1], []string{"/bin/kill", "-HUP", "$MAINPID"}) {
		t.Fatalf("ExecReload= %q: want the check, then /bin/kill -HUP $MAINPID", reload)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	writeConfig(t, good, noDevicesConfig("127.0.0.1:0", "", filepath.Join(dir, "db")))
	writeConfig(t, bad, noDevicesConfig("127.0.0.1:0", "", filepath.Join(dir, "db"))+"devices:\n  - {id: d, host: 192.0.2.1, unit: 300}\n")
	run := func(cmd []string, cfg string) (string, int) {
		args := slices.Clone(cmd)
		for i, a := range args {
			if a == "/etc/plantd/plantd.yaml" {
				args[i] = cfg
			}
		}
		if args[0] != "/usr/bin/plantd" {
			t.Fatalf("ExecReload=%s: want /usr/bin/plantd check-config before the signal", strings.Join(cmd, " "))
		}
		c := exec.Command(binPath, args[1:]...)
		out, err := c.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	checks := reload[:len(reload)-1]
	failed := false
	for _, cmd := range checks {
		if out, code := run(cmd, bad); code != 0 {
			failed = true
			if !strings.Contains(out, "devices[0].unit: 300 is not a Modbus unit id") {
				t.Errorf("the failed check says %q, want the problem with its line", out)
			}
			break
		}
	}
	if !failed {
		t.Error("an invalid config passes ExecReload's checks: systemd would signal plantd and report success")
	}
	for _, cmd := range checks {
		if out, code := run(cmd, good); code != 0 {
			t.Errorf("ExecReload=%s fails on a valid config: exit %d %s", strings.Join(cmd, " "), code, out)
		}
	}
}

// TestConsumersChanged: two loads of one config are no change (the
// consumer settings' pointers differ, their values not); a changed rated
// power is one.
func TestConsumersChanged(t *testing.T) {
	text := `plants:
  - {id: p, name: P, timezone: UTC}
devices:
  - {id: h, host: 10.0.0.2, kind: consumer, consumer: {driver: sgready, coil: 2, coilB: 3, ratedPower: 2000, hysteresis: 100}}
`
	a, err := config.Parse("a.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := config.Parse("a.yaml", []byte(text))
	log := slog.New(slog.DiscardHandler)
	if consumersChanged(a, b, log) {
		t.Error("the same config counts as a change")
	}
	c, _ := config.Parse("a.yaml", []byte(strings.Replace(text, "ratedPower: 2000", "ratedPower: 2400", 1)))
	if !consumersChanged(a, c, log) {
		t.Error("a changed rated power is no change")
	}
}
