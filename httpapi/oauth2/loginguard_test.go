package oauth2_test

import (
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/httpapi/oauth2"
	"plantd/internal/proctest"
)

// TestFailedLoginLimit: after Burst failed logins from one address its
// requests get 429 with Retry-After (even with the right secret, which is
// then not checked), one log line says so for the burst, and another
// address logs in as before; an allowance comes back after Every.
func TestFailedLoginLimit(t *testing.T) {
	t.Parallel() // its own server
	var logs proctest.Buffer
	e := newEnv(t, envOpts{logger: slog.New(slog.NewTextHandler(&logs, nil)), modify: func(c *oauth2.Config) {
		c.FailedLogins = oauth2.FailedLogins{Burst: 5, Every: 10 * time.Second}
	}})
	post := func(cl *http.Client, secret string) (int, string) {
		t.Helper()
		form := url.Values{"grant_type": {"client_credentials"}, "client_id": {oauthID}, "client_secret": {secret}}
		resp, err := cl.Post(e.ts.URL+"/oauth2/token", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	a, b := clientFrom("127.0.0.1"), clientFrom("127.0.0.2")
	for i := range 5 {
		if st, _ := post(a, "wrong"); st != 401 {
			t.Fatalf("failure %d: status %d, want 401", i+1, st)
		}
	}
	for i := range 50 {
		st, ra := post(a, "wrong")
		if st != 429 {
			t.Fatalf("guess %d after the burst: status %d, want 429", i+6, st)
		}
		if secs, err := strconv.Atoi(ra); err != nil || secs < 1 || secs > 10 {
			t.Fatalf("Retry-After %q", ra)
		}
	}
	if st, _ := post(a, oauthSecret); st != 429 {
		t.Errorf("right secret from the blocked address: %d, want 429", st)
	}
	// Bearer tokens from that address are refused too, without a lookup.
	req, _ := http.NewRequest("GET", e.ts.URL+readPath, nil)
	req.Header.Set("Authorization", "Bearer "+tokStandard)
	if resp, err := a.Do(req); err != nil || resp.StatusCode != 429 {
		t.Fatalf("bearer from the blocked address: %v %v", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}
	// Another address is not affected.
	if st, _ := post(b, oauthSecret); st != 200 {
		t.Errorf("other address, right secret: %d, want 200", st)
	}
	if st, _ := post(b, "wrong"); st != 401 {
		t.Errorf("other address, wrong secret: %d, want 401", st)
	}
	// One line for the burst of 57 from 127.0.0.1 (the first failure);
	// the rest is counted for the next line, a minute later.
	lines := func(src string) []string {
		var out []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `msg="failed logins"`) && strings.Contains(l, "source="+src+" ") {
				out = append(out, l)
			}
		}
		return out
	}
	if got := lines("127.0.0.1"); len(got) != 1 || !strings.Contains(got[0], "failures=1 ") {
		t.Errorf("log lines of 127.0.0.1 during the burst:\n%s", strings.Join(got, "\n"))
	}
	// An allowance comes back after Every.
	e.clock.Add(10 * time.Second)
	if st, _ := post(a, oauthSecret); st != 200 {
		t.Errorf("after 10 s, right secret: %d, want 200", st)
	}
	// A minute on, the next event logs the burst's counts.
	e.clock.Add(time.Minute)
	post(a, "wrong")
	got := lines("127.0.0.1")
	if len(got) != 2 || !strings.Contains(got[1], "failures=5 ") || !strings.Contains(got[1], "refused=52 ") {
		t.Errorf("log lines of 127.0.0.1 after a minute:\n%s", strings.Join(got, "\n"))
	}
	// An unknown bearer token from the other address.
	req, _ = http.NewRequest("GET", e.ts.URL+readPath, nil)
	req.Header.Set("Authorization", "Bearer no-such-token")
	if resp, err := b.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("unknown bearer token: %v %v", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}
	// The Host counts them by reason (the API's /metrics): 7 wrong
	// secrets (5 + 1 from each address later), 52 refused unchecked, 1
	// unknown bearer token.
	want := map[string]int{"invalid_client": 7, "rate_limited": 52, "invalid_token": 1}
	if got := e.host.failuresByReason(); !maps.Equal(got, want) {
		t.Errorf("failed logins by reason %v, want %v", got, want)
	}
}

// BenchmarkTokenGrant measures client_credentials grants per second
// through the handler (no rate limit in the way).
func BenchmarkTokenGrant(b *testing.B) {
	e := newEnv(b, envOpts{})
	h := e.handler
	body := url.Values{"grant_type": {"client_credentials"}, "client_id": {oauthID}, "client_secret": {oauthSecret}}.Encode()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("POST", "/oauth2/token", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.RemoteAddr = "192.0.2.1:1234"
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grants/s")
}

// BenchmarkRefreshGrant measures refresh_token grants (rotation) per
// second, one refresh chain per goroutine.
func BenchmarkRefreshGrant(b *testing.B) {
	e := codeEnvB(b)
	h := e.handler
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rt := ""
		for pb.Next() {
			if rt == "" {
				b.StopTimer()
				rt = e.refreshTokenB(b)
				b.StartTimer()
			}
			req, _ := http.NewRequest("POST", "/oauth2/token", strings.NewReader(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth(appID, appSecret)
			req.RemoteAddr = "192.0.2.1:1234"
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			rt = extract(rec.Body.String(), "refresh_token")
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grants/s")
}

// BenchmarkFailedLoginRefused measures the answer to a source that used
// up its failed logins (what a flood of wrong secrets costs).
func BenchmarkFailedLoginRefused(b *testing.B) {
	e := newEnv(b, envOpts{})
	h := e.handler
	body := url.Values{"grant_type": {"client_credentials"}, "client_id": {oauthID}, "client_secret": {"wrong"}}.Encode()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("POST", "/oauth2/token", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.RemoteAddr = "192.0.2.9:1234"
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 429 && rec.Code != 401 {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "answers/s")
}

// TestFailedLoginIPv6Prefix: failed logins count per IPv6 /64 (an
// IPv4-mapped address as its IPv4 address), so a host walking through the
// addresses of its /64 is blocked after Burst failures as one address is,
// and the burst is one log line naming the /64, not one per address.
// Another /64 and another IPv4 address are not affected. (The source
// address is set on the request: a test cannot dial from two addresses of
// one /64 without changing the host's network; the server is the real
// handler.)
func TestFailedLoginIPv6Prefix(t *testing.T) {
	t.Parallel() // its own server
	var logs proctest.Buffer
	e := newEnv(t, envOpts{logger: slog.New(slog.NewTextHandler(&logs, nil)), modify: func(c *oauth2.Config) {
		c.FailedLogins = oauth2.FailedLogins{Burst: 3, Every: time.Minute}
	}})
	h := e.handler
	post := func(remote, secret string) int {
		t.Helper()
		form := url.Values{"grant_type": {"client_credentials"}, "client_id": {oauthID}, "client_secret": {secret}}
		req := httptest.NewRequest("POST", "/oauth2/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, tt := range []struct {
		name   string
		remote string
		secret string
		want   int
	}{
		// Three addresses of one /64 use up its three failures.
		{"first address of the /64", "[2001:db8:1:2::1]:4000", "wrong", 401},
		{"second address", "[2001:db8:1:2:aaaa::9]:4000", "wrong", 401},
		{"third address", "[2001:db8:1:2:ffff:ffff:ffff:ffff]:4000", "wrong", 401},
		{"a fourth address of the /64 is refused", "[2001:db8:1:2::77]:4000", "wrong", 429},
		{"even with the right secret", "[2001:db8:1:2:1234::1]:4000", oauthSecret, 429},
		{"zoned address of the /64", "[2001:db8:1:2::5%eth0]:4000", oauthSecret, 429},
		{"the next /64 is another source", "[2001:db8:1:3::1]:4000", oauthSecret, 200},
		// IPv4 counts per address; mapped and plain are one address.
		{"IPv4 failure 1", "192.0.2.7:1", "wrong", 401},
		{"IPv4-mapped failure 2", "[::ffff:192.0.2.7]:1", "wrong", 401},
		{"IPv4 failure 3", "192.0.2.7:2", "wrong", 401},
		{"IPv4-mapped is blocked with it", "[::ffff:192.0.2.7]:2", oauthSecret, 429},
		{"the next IPv4 address is another source", "192.0.2.8:1", oauthSecret, 200},
	} {
		if got := post(tt.remote, tt.secret); got != tt.want {
			t.Errorf("%s (%s): status %d, want %d", tt.name, tt.remote, got, tt.want)
		}
	}
	var lines []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `msg="failed logins"`) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 || !strings.Contains(lines[0], "source=2001:db8:1:2::/64 ") || !strings.Contains(lines[1], "source=192.0.2.7 ") {
		t.Errorf("want one line for the /64's burst and one for 192.0.2.7, got:\n%s", strings.Join(lines, "\n"))
	}
}
