package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"plantd/internal/proctest"
)

// TestLoginFlood floods the real "plantd demo" with wrong client secrets
// from one address while its devices are polled every 250 ms: after the
// first 10 failures (and one more every 6 s) the address gets 429
// without its secrets being checked, one log line a minute says so, the
// devices are polled on (the flood lasts until each has had 8 good polls
// more), and a client at another address gets its tokens as before. The
// flood lasts at least 5 s, or PLANTD_FLOOD (a Go duration, e.g. 60s) when
// set.
func TestLoginFlood(t *testing.T) {
	t.Parallel() // its own daemon; nothing here is timed
	flood := 5 * time.Second
	if s := os.Getenv("PLANTD_FLOOD"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("PLANTD_FLOOD: %v", err)
		}
		flood = d
	}
	const interval = 250 * time.Millisecond
	d := proctest.Start(t, exec.Command(binPath, "demo", "--interval", interval.String(), "--listen", "127.0.0.1:0", "--mqtt", "off",
		"--db", filepath.Join(t.TempDir(), "demo.db")))
	base := "http://" + listenRE.FindStringSubmatch(d.WaitLog(listenRE, 15*time.Second))[1]
	// The banner's token line, waited for as printed.
	secret := regexp.MustCompile(`(?m)^demo token \(installer role\): (\S+)$`).FindStringSubmatch(
		d.WaitStdout(regexp.MustCompile(`^demo token \(installer role\): `), 15*time.Second))[1]
	// polls returns plantd_device_polls_total less
	// plantd_device_poll_failures_total per device: its good polls.
	polls := func() map[string]float64 {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Error(err)
			return nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out := map[string]float64{}
		for _, m := range regexp.MustCompile(`(?m)^plantd_device_(polls|poll_failures)_total\{device="(\w+)"\} (\S+)$`).FindAllStringSubmatch(string(b), -1) {
			v, _ := strconv.ParseFloat(m[3], 64)
			if m[1] == "poll_failures" {
				v = -v
			}
			out[m[2]] += v
		}
		return out
	}
	// each reports whether every device (at least the five SunSpec ones) has had n good
	// polls more in now than in then.
	each := func(now, then map[string]float64, n float64) bool {
		k := 0
		for id, v := range now {
			if v-then[id] >= n {
				k++
			}
		}
		return k == len(now) && k >= 5
	}
	// Wait for every device to be polled.
	proctest.WaitValue(t, "every device polled (last: the polls)", 15*time.Second, func() (map[string]float64, bool) {
		p := polls()
		return p, each(p, nil, 2)
	})

	// The flood: 8 connections from 127.0.0.1 with wrong secrets.
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16,
			DialContext: func(ctx context.Context, n, a string) (net.Conn, error) { return d.DialContext(ctx, n, a) }}}
	}
	post := func(cl *http.Client, secret string) int {
		form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"demo"}, "client_secret": {secret}}
		resp, err := cl.Post(base+"/oauth2/token", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var sent, unauthorized, limited, other atomic.Int64
	var wg sync.WaitGroup
	attacker := from("127.0.0.1")
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				switch post(attacker, "guess") {
				case 401:
					unauthorized.Add(1)
				case 429:
					limited.Add(1)
				default:
					other.Add(1)
				}
				sent.Add(1)
			}
		}()
	}
	// Meanwhile a client at another address gets a token every 200 ms.
	var grantTimes []time.Duration
	grantFails := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		cl := from("127.0.0.2")
		for ctx.Err() == nil {
			start := time.Now()
			if post(cl, secret) != 200 {
				grantFails++
			}
			grantTimes = append(grantTimes, time.Since(start))
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	// The flood ends once it lasted flood and every device had 8 good
	// polls during it; the polls stalling fails the test.
	p1, t1 := polls(), time.Now()
	minEnd, deadline := time.After(flood), time.After(flood+60*time.Second)
	var p2 map[string]float64
	for p2 = polls(); !each(p2, p1, 8); p2 = polls() {
		select {
		case <-deadline:
			stop()
			wg.Wait()
			t.Fatalf("polls stalled during the flood: %v at its start, %v after %v", p1, p2, flood+60*time.Second)
		case <-time.After(100 * time.Millisecond):
		}
	}
	<-minEnd
	p2 = polls()
	elapsed := time.Since(t1)
	stop()
	wg.Wait()
	floodRate := 0.0
	for id, v := range p2 {
		floodRate += v - p1[id]
	}
	floodRate /= elapsed.Seconds()

	sort.Slice(grantTimes, func(i, j int) bool { return grantTimes[i] < grantTimes[j] })
	p99 := time.Duration(0)
	if n := len(grantTimes); n > 0 {
		p99 = grantTimes[min(n-1, n*99/100)]
	}
	t.Logf("flood %v: %d wrong secrets (%.0f/s): %d answered 401, %d 429, %d other", elapsed.Round(time.Millisecond),
		sent.Load(), float64(sent.Load())/elapsed.Seconds(), unauthorized.Load(), limited.Load(), other.Load())
	t.Logf("good polls: %.1f/s during the flood (5 devices every %v = %.0f/s)", floodRate, interval, 5/interval.Seconds())
	t.Logf("other address: %d grants, %d failed, p99 %v", len(grantTimes), grantFails, p99.Round(time.Microsecond))
	// The allowance: 10, then one more every 6 s.
	if most := int64(10 + elapsed/(6*time.Second) + 1); unauthorized.Load() < 10 || unauthorized.Load() > most {
		t.Errorf("%d wrong secrets were checked, want 10 and one per 6 s (at most %d)", unauthorized.Load(), most)
	}
	if grantFails > 0 || len(grantTimes) == 0 {
		t.Errorf("the other address failed %d of %d grants", grantFails, len(grantTimes))
	}
	// One line for the burst (plus one a minute for a longer flood).
	n := 0
	re := regexp.MustCompile(`msg="failed logins".*source=127\.0\.0\.1 `)
	for _, l := range d.Stderr() {
		if re.MatchString(l) {
			n++
		}
	}
	if want := 1 + int(elapsed/time.Minute); n < 1 || n > want+1 {
		t.Errorf("%d failed-login log lines for 127.0.0.1, want about %d", n, want)
	}
	t.Logf("failed-login log lines for 127.0.0.1: %d", n)
}
