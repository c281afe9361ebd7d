package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"plantd/internal/proctest"
	"plantd/sim"
)

// readmeGridControl is the sh block of README.md's "Grid control"
// section, as a reader copies it.
func readmeGridControl(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Grid control\n")
	if !ok {
		t.Fatal("README.md has no Grid control section")
	}
	_, block, ok := strings.Cut(sec, "```sh\n")
	if !ok {
		t.Fatal("README.md's Grid control section has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	return block
}

// TestDemoGridControlExample runs README's grid-control example as written
// (only the port differs, and T is the demo's token) and the command the
// demo's banner prints against the real binary, with the simulated clock
// far from the wall clock: ahead at real speed, and behind at 288×. The
// example's window must be stored and run on the simulated clock (applied
// or over), the banner's window applied; the example's eligibility check
// and all-or-nothing request say that OpModDisconnect reaches only the
// classic inverter.
func TestDemoGridControlExample(t *testing.T) {
	t.Parallel() // its own daemons, ports and files
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is needed to run README's example in CI")
		}
		t.Skip("curl not found: README's example not run")
	}
	loc, err := time.LoadLocation(sim.DefaultTimeZone)
	if err != nil {
		t.Fatal(err)
	}
	y, m, d := time.Now().In(loc).Date()
	cases := []struct {
		name  string
		start time.Time // on the simulated clock: daylight, far from now
		speed string
		// wantExample: the status the example's window reaches
		// ("applied": appliedAt set while it runs)
		wantExample string
	}{
		{name: "simulated clock ahead, real speed", start: time.Date(y, m, d+1, 10, 0, 0, 0, loc), speed: "1", wantExample: "applied"},
		{name: "simulated clock behind, 288x", start: time.Date(y, m, d-1, 10, 0, 0, 0, loc), speed: "288", wantExample: "done"},
	}
	script := readmeGridControl(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "demo.db")
			p := proctest.Start(t, exec.Command(binPath, "demo", "--interval", "250ms", "--speed", tc.speed, "--start", tc.start.Format("2006-01-02T15:04"),
				"--listen", "127.0.0.1:0", "--db", db, "--mqtt", "off"))
			base := "http://" + listenRE.FindStringSubmatch(p.WaitLog(listenRE, 20*time.Second))[1]
			out := p.WaitStdout(regexp.MustCompile(`^grid control, `), 10*time.Second)
			token := regexp.MustCompile(`(?m)^demo token \(installer role\): (\S+)$`).FindStringSubmatch(out)[1]
			banner := regexp.MustCompile(`(?m)^grid control, .*?: (curl .*)$`).FindStringSubmatch(out)[1]
			// Both inverters discovered, so that the check judges them.
			p.WaitLines("both inverters online", 20*time.Second, func(lines []string) bool {
				n := 0
				for _, l := range lines {
					if strings.Contains(l, `msg="device online"`) && (strings.Contains(l, " device=inv1 ") || strings.Contains(l, " device=inv2 ")) {
						n++
					}
				}
				return n == 2
			})
			run := func(what, script string) []map[string]any {
				t.Helper()
				c := exec.Command("sh", "-e", "-c", strings.ReplaceAll(script, "http://127.0.0.1:8080", base))
				c.Env = append(os.Environ(), "T="+token)
				b, err := c.Output()
				if err != nil {
					t.Fatalf("%s: %v\n%s", what, err, b)
				}
				var vs []map[string]any
				dec := json.NewDecoder(bytes.NewReader(b))
				for {
					var v map[string]any
					if err := dec.Decode(&v); errors.Is(err, io.EOF) {
						return vs
					} else if err != nil {
						t.Fatalf("%s: %v in its output:\n%s", what, err, b)
					}
					vs = append(vs, v)
				}
			}
			answers := run("README's example", script)
			if len(answers) != 5 {
				t.Fatalf("README's example: %d answers, want 5 (schedule, eligibility, refusal, settings, logs): %v", len(answers), answers)
			}
			example := scheduleID(t, "README's POST", answers[0])
			results, _ := answers[1]["results"].([]any)
			if len(results) != 2 {
				t.Fatalf("README's eligibility check: %v", answers[1])
			}
			disc, _ := results[0].(map[string]any)
			if disc["eligible"] != true || disc["partial"] != true || disc["coverage"] != 0.556 {
				t.Errorf("README's eligibility check of OpModDisconnect: %v, want eligible, partial, coverage 0.556", disc)
			}
			if answers[2]["status"] != 422.0 {
				t.Errorf("README's all-or-nothing disconnect: %v, want 422", answers[2])
			}

			// status is the example's and the banner's window as GET lists them.
			status := func(id string) (string, bool) {
				req, _ := http.NewRequest("GET", base+"/gridcontrol/v1/plants/demo/schedules", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var list struct {
					Schedules []struct {
						ScheduleID string `json:"scheduleId"`
						Commands   []struct {
							Status    string `json:"status"`
							AppliedAt string `json:"appliedAt"`
						} `json:"commands"`
					} `json:"schedules"`
				}
				if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
					t.Fatal(err)
				}
				for _, s := range list.Schedules {
					if s.ScheduleID == id && len(s.Commands) == 1 {
						return s.Commands[0].Status, s.Commands[0].AppliedAt != ""
					}
				}
				t.Fatalf("schedule %s not listed", id)
				return "", false
			}
			// Waited for: applied and done both stay once reached.
			proctest.WaitFor(t, "README's window "+tc.wantExample+" on the simulated clock", 90*time.Second, func() bool {
				st, applied := status(example)
				if tc.wantExample == "applied" {
					return applied
				}
				return st == tc.wantExample
			})
			// The banner's window overwrites the example's limit (newest
			// wins): sent once the example's window ran.
			bannerID := scheduleID(t, "the banner's command", run("the banner's command", banner)[0])
			// The window runs to 2 min after the demo's start: waited
			// for to 90 s after the POST, however slowly it applies.
			proctest.WaitFor(t, "the banner's window applied", 90*time.Second, func() bool {
				st, applied := status(bannerID)
				return applied && st == "active"
			})
		})
	}
}

// scheduleID is the id of the schedule a POST answer holds.
func scheduleID(t *testing.T, what string, answer map[string]any) string {
	t.Helper()
	sc, _ := answer["schedule"].(map[string]any)
	id, _ := sc["scheduleId"].(string)
	if id == "" {
		t.Fatalf("%s stored no schedule: %v", what, answer)
	}
	return id
}
