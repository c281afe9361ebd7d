package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"plantd/config"
	"plantd/sim"
	"plantd/sim/simtest"
)

// TestReloadRefusesPlantNameAndZone sends SIGHUP to the real binary after
// the plant's name and time zone were changed (with a new token): the
// reload is refused as a whole, naming the keys and the restart, so the
// API still shows the running name and zone and the new token is not
// taken; a reload of the running plant then applies as usual.
func TestReloadRefusesPlantNameAndZone(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
	p := simtest.Start(t, sim.DefaultConfig())
	dir := t.TempDir()
	const tokA, tokB = "token-a-of-the-plant-reload-test", "token-b-of-the-plant-reload-test"
	tokens := func(name, tok string) string {
		return fmt.Sprintf("tokens:\n  - {name: %s, sha256: %s, role: standard}\n", name, config.TokenHash(tok))
	}
	devs := p.Devices()[:1]
	d := startDaemonConfig(t, simConfigOf(devs, dir, tokens("a", tokA)))
	api := d.waitAPI(10 * time.Second)
	d.WaitLog(regexp.MustCompile(`ready: `), 30*time.Second)
	plants := func(tok string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+api+"/monitoring/v1/plants", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.StatusCode, ""
		}
		var out struct {
			Plants []struct {
				Name     string `json:"name"`
				Timezone string `json:"timezone"`
			} `json:"plants"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Plants) != 1 {
			t.Fatalf("plants: %v %+v", err, out)
		}
		return resp.StatusCode, out.Plants[0].Name + " " + out.Plants[0].Timezone
	}
	if code, got := plants(tokA); code != 200 || got != "Test Europe/Berlin" {
		t.Fatalf("before the reload: %d %q", code, got)
	}

	renamed := strings.Replace(simConfigOf(devs, dir, tokens("b", tokB)), "{id: p1, name: Test, timezone: Europe/Berlin}",
		"{id: p1, name: Renamed, timezone: America/New_York}", 1)
	d.writeConfig(renamed)
	// The unit's ExecReload first: check-config --running refuses it (exit
	// 1, naming the keys), so systemctl reload fails and never signals.
	out, err := exec.Command(binPath, "check-config", "--running", d.path).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFailure || !strings.Contains(string(out), "plants[0].timezone") || !strings.Contains(string(out), "systemctl restart plantd") {
		t.Errorf("check-config --running on a changed zone: %v\n%s\nwant exit %d naming plants[0].timezone and the restart", err, out, exitFailure)
	}
	// (A SIGHUP sent all the same is refused by the daemon itself.)
	d.Signal(syscall.SIGHUP)
	line := d.WaitLog(regexp.MustCompile(`config reload refused`), 10*time.Second)
	for _, want := range []string{"plants[0].name", "plants[0].timezone", "systemctl restart plantd"} {
		if !strings.Contains(line, want) {
			t.Errorf("refusal %q does not name %q", line, want)
		}
	}
	if code, got := plants(tokA); code != 200 || got != "Test Europe/Berlin" {
		t.Errorf("after the refused reload, token a: %d %q, want the running name and zone", code, got)
	}
	if code, _ := plants(tokB); code != http.StatusUnauthorized {
		t.Errorf("after the refused reload, token b: %d, want 401 (nothing applied)", code)
	}

	// The running name and zone again: the token change applies.
	d.writeConfig(simConfigOf(devs, dir, tokens("b", tokB)))
	if out, err := exec.Command(binPath, "check-config", "--running", d.path).CombinedOutput(); err != nil {
		t.Errorf("check-config --running on the running name and zone: %v\n%s", err, out)
	}
	d.Signal(syscall.SIGHUP)
	d.WaitLog(regexp.MustCompile(`config reloaded"? tokens=1`), 10*time.Second)
	if code, got := plants(tokB); code != 200 || got != "Test Europe/Berlin" {
		t.Errorf("after the reload, token b: %d %q", code, got)
	}
	d.stop()
}

// TestRestartOnly: the plant keys a reload refuses, by plant id.
func TestRestartOnly(t *testing.T) {
	base := []config.Plant{{ID: "a", Name: "A", Timezone: "Europe/Berlin"}, {ID: "b", Name: "B", Timezone: "UTC"}}
	for _, tt := range []struct {
		name   string
		change func([]config.Plant) []config.Plant
		want   string
	}{
		{"nothing", func(p []config.Plant) []config.Plant { return p }, ""},
		{"description", func(p []config.Plant) []config.Plant { p[0].Description = "x"; return p }, ""},
		{"name", func(p []config.Plant) []config.Plant { p[1].Name = "B2"; return p }, "plants[1].name"},
		{"zone", func(p []config.Plant) []config.Plant { p[0].Timezone = "UTC"; return p }, "plants[0].timezone"},
		{"both, reordered", func(p []config.Plant) []config.Plant {
			p[0].Name, p[1].Timezone = "A2", "Asia/Tokyo"
			return []config.Plant{p[1], p[0]}
		}, "plants[0].timezone, plants[1].name"},
		{"a plant added", func(p []config.Plant) []config.Plant {
			return append(p, config.Plant{ID: "c", Name: "C", Timezone: "UTC"})
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			running, next := config.Default(), config.Default()
			running.Plants = append([]config.Plant(nil), base...)
			next.Plants = tt.change(append([]config.Plant(nil), base...))
			if got := strings.Join(restartOnly(running, next), ", "); got != tt.want {
				t.Errorf("restartOnly = %q, want %q", got, tt.want)
			}
		})
	}
}
