package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"plantd/config"
	"plantd/internal/proctest"
	"plantd/sim"
	"plantd/sim/simtest"
)

// TestReloadDevices sends SIGHUP to the real binary with one simulated
// device added and another removed: the new one is polled and online, the
// removed one is gone from /metrics, /healthz and the device list, and the
// device that stayed is polled throughout, its counter never reset (its
// goroutine was not restarted).
func TestReloadDevices(t *testing.T) {
	t.Parallel() // its own daemon, ports and files
	p := simtest.Start(t, sim.DefaultConfig())
	all := p.Devices()
	kept, removed, added := all[0], all[1], all[2]
	dir := t.TempDir()
	const tok = "token-of-the-device-reload-test"
	extra := fmt.Sprintf("tokens:\n  - {name: t, sha256: %s, role: standard}\n", config.TokenHash(tok))
	d := startDaemonConfig(t, simConfigOf([]*sim.Device{kept, removed}, dir, extra))
	api := d.waitAPI(10 * time.Second)
	d.WaitLog(regexp.MustCompile(`ready: `), 30*time.Second)

	get := func(path string) []byte {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+api+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return body
	}
	metric := func(body []byte, name, device string) (float64, bool) {
		m := regexp.MustCompile(name + `\{device="` + regexp.QuoteMeta(device) + `"\} (\S+)`).FindSubmatch(body)
		if m == nil {
			return 0, false
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v, true
	}
	deviceIDs := func() []string {
		var out struct {
			Devices []struct {
				DeviceID string `json:"deviceId"`
			} `json:"devices"`
		}
		body := get("/monitoring/v1/plants/p1/devices")
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("device list: %v: %s", err, body)
		}
		var ids []string
		for _, d := range out.Devices {
			ids = append(ids, d.DeviceID)
		}
		return ids
	}
	if ids := deviceIDs(); !slices.Equal(ids, []string{kept.ID(), removed.ID()}) {
		t.Fatalf("devices before the reload: %v", ids)
	}

	// The kept device's poll counter, scraped every 50 ms across the
	// reload.
	type scrape struct {
		at    time.Time
		polls float64
	}
	var (
		mu      sync.Mutex
		scrapes []scrape
	)
	stop := make(chan struct{})
	scraped := make(chan struct{})
	go func() {
		defer close(scraped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			resp, err := http.Get("http://" + api + "/metrics")
			if err != nil {
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if v, ok := metric(body, "plantd_device_polls_total", kept.ID()); ok {
				mu.Lock()
				scrapes = append(scrapes, scrape{time.Now(), v})
				mu.Unlock()
			}
		}
	}()
	scrapesAfter := func(t0 time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, s := range scrapes {
			if s.at.After(t0) {
				n++
			}
		}
		return n
	}
	proctest.WaitFor(t, "10 scrapes of the kept device's poll counter in /metrics", 10*time.Second, func() bool { return scrapesAfter(time.Time{}) >= 10 })

	d.writeConfig(simConfigOf([]*sim.Device{kept, added}, dir, extra))
	reloaded := time.Now()
	d.Signal(syscall.SIGHUP)
	line := d.WaitLog(regexp.MustCompile(`devices reloaded`), 10*time.Second)
	want := regexp.MustCompile(`added=` + added.ID() + ` removed=` + removed.ID() + ` changed=(""|$| )`)
	if !want.MatchString(line) {
		t.Errorf("reload log %q, want %s", line, want)
	}

	// The new device comes online, the removed one is gone.
	proctest.WaitValue(t, fmt.Sprintf("%s online and %s gone from /metrics (last: online, still there)", added.ID(), removed.ID()), 20*time.Second,
		func() ([2]any, bool) {
			body := get("/metrics")
			online, _ := metric(body, "plantd_device_online", added.ID())
			_, stillThere := metric(body, "plantd_device_polls_total", removed.ID())
			return [2]any{online, stillThere}, online == 1 && !stillThere
		})
	if ids := deviceIDs(); !slices.Equal(ids, []string{kept.ID(), added.ID()}) {
		t.Errorf("devices after the reload: %v, want %s and %s", ids, kept.ID(), added.ID())
	}
	var health struct {
		Devices map[string]int `json:"devices"`
	}
	if err := json.Unmarshal(get("/healthz"), &health); err != nil {
		t.Fatal(err)
	}
	if health.Devices["total"] != 2 || health.Devices["ok"] != 2 {
		t.Errorf("/healthz devices %v, want 2 in total, 2 ok", health.Devices)
	}

	// Two more seconds of scrapes, then the kept device's counter: never
	// lower than before (a restarted poll goroutine starts from 0), and
	// rising without a gap of more than a few poll intervals.
	proctest.WaitFor(t, "5 scrapes after the reload", 20*time.Second, func() bool { return scrapesAfter(reloaded.Add(2*time.Second)) >= 5 })
	close(stop)
	<-scraped
	lastRise := scrapes[0].at
	var before, after float64
	for i, s := range scrapes {
		if i > 0 && s.polls < scrapes[i-1].polls {
			t.Errorf("%s's poll counter fell from %v to %v at %v", kept.ID(), scrapes[i-1].polls, s.polls, s.at.Sub(reloaded))
		}
		if i > 0 && s.polls > scrapes[i-1].polls {
			if gap := s.at.Sub(lastRise); gap > time.Second {
				t.Errorf("%s not polled for %v (until %v after the reload)", kept.ID(), gap.Round(time.Millisecond), s.at.Sub(reloaded).Round(time.Millisecond))
			}
			lastRise = s.at
		}
		if s.at.Before(reloaded) {
			before = s.polls
		} else {
			after = s.polls
		}
	}
	t.Logf("%s: %v polls at the reload, %v %v later; %d scrapes", kept.ID(), before, after, scrapes[len(scrapes)-1].at.Sub(reloaded).Round(time.Millisecond), len(scrapes))
	d.stop()
}
