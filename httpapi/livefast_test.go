package httpapi

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"plantd/config"
)

// TestLiveFastPath checks that the fast path (livefast.go) serves the live
// balance and the v2 device list, and answers exactly as the engine does
// for the same request: status, body and every header (the request id
// aside, which is new per request unless the client gave one).
func TestLiveFastPath(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 2})
	const (
		bal = "/live/v1/plants/demo/measurements/sets/EnergyBalance"
		dev = "/live/v2/plants/demo/devices"
	)
	etag := map[string]string{}
	for _, p := range []string{bal, dev} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", p, nil)
		req.Header.Set("Authorization", "Bearer "+tokStandard)
		e.srv.engine.ServeHTTP(rec, req)
		if etag[p] = rec.Header().Get("ETag"); rec.Code != 200 || etag[p] == "" {
			t.Fatalf("%s through the engine: %d, ETag %q", p, rec.Code, etag[p])
		}
	}
	for _, tc := range []struct {
		name, path string
		hdr        []string
		status     int
	}{
		{"balance", bal, nil, 200},
		{"balance revalidated", bal, []string{"If-None-Match", etag[bal]}, 304},
		{"balance of another tag", bal, []string{"If-None-Match", `"other"`}, 200},
		{"devices", dev, nil, 200},
		{"devices gzipped", dev, []string{"Accept-Encoding", "gzip, br"}, 200},
		{"devices revalidated", dev, []string{"If-None-Match", etag[dev]}, 304},
		{"the client's request id", bal, []string{"X-Request-Id", "poll-42"}, 200},
		{"a bad request id replaced", dev, []string{"X-Request-Id", "two words"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := func() *http.Request {
				r := httptest.NewRequest("GET", tc.path, nil)
				r.Header.Set("Authorization", "Bearer "+tokStandard)
				for i := 0; i+1 < len(tc.hdr); i += 2 {
					r.Header.Set(tc.hdr[i], tc.hdr[i+1])
				}
				return r
			}
			fast := httptest.NewRecorder()
			if !e.srv.serveLiveFast(fast, req()) {
				t.Fatal("the fast path did not serve it")
			}
			slow := httptest.NewRecorder()
			e.srv.engine.ServeHTTP(slow, req())
			if fast.Code != tc.status || slow.Code != tc.status {
				t.Fatalf("status fast %d, engine %d, want %d", fast.Code, slow.Code, tc.status)
			}
			if !bytes.Equal(fast.Body.Bytes(), slow.Body.Bytes()) {
				t.Errorf("bodies differ:\nfast   %.200q\nengine %.200q", fast.Body, slow.Body)
			}
			fh, sh := fast.Result().Header, slow.Result().Header
			id := fh.Get("X-Request-Id")
			if id == "" || sh.Get("X-Request-Id") == "" || len(tc.hdr) > 0 && tc.hdr[0] == "X-Request-Id" &&
				(tc.hdr[1] == "poll-42") != (id == "poll-42") {
				t.Errorf("X-Request-Id fast %q, engine %q", id, sh.Get("X-Request-Id"))
			}
			fh.Del("X-Request-Id")
			sh.Del("X-Request-Id")
			if !reflect.DeepEqual(fh, sh) {
				t.Errorf("headers differ:\nfast   %v\nengine %v", fh, sh)
			}
		})
	}
	m := string(e.srv.deps.Registry.Gather())
	for _, want := range []string{
		`plantd_http_requests_total{method="GET",route="` + routeLiveBalance + `",status="200"}`,
		`plantd_http_requests_total{method="GET",route="` + routeLiveDevicesV2 + `",status="304"}`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestLiveFastPathDeclines checks the requests the fast path leaves to
// the engine, writing and recording nothing: no token or a refused one,
// an unknown or migrated plant, an escaped path, a declared body over the
// limit, a CORS request, a debug log (the access log is the engine's) and
// a used-up rate limit. The engine then answers them as always.
func TestLiveFastPathDeclines(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 2})
	// Servers on the same live state with another config or logger.
	variant := func(modify func(*Config), logger *slog.Logger) *Server {
		t.Helper()
		cfg, deps := e.srv.cfg, e.srv.deps
		deps.Registry = nil
		if modify != nil {
			modify(&cfg)
		}
		s, err := New(cfg, deps, logger)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	cors := variant(func(c *Config) { c.CORSOrigins = []string{"*"} }, nil)
	debug := variant(nil, slog.New(slog.NewTextHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelDebug})))
	oneRequest := variant(func(c *Config) { c.RateLimit = config.RateLimit{RequestsPerSecond: 1e-6, Burst: 1} }, nil)
	// One failed login blocks the source (every test request comes from
	// httptest's 192.0.2.1) for an hour, its valid tokens too.
	oneFailure := variant(func(c *Config) { c.FailedLogins = FailedLogins{Burst: 1, Every: time.Hour} }, nil)
	failed := httptest.NewRecorder()
	if oneFailure.ServeHTTP(failed, liveReq("/live/v2/plants/demo/devices", "nope")); failed.Code != 401 {
		t.Fatalf("a wrong token: %d, want 401", failed.Code)
	}
	if rec := httptest.NewRecorder(); !oneRequest.serveLiveFast(rec, liveReq("/live/v2/plants/demo/devices", tokStandard)) {
		t.Fatal("the first request of the rate limit was not served")
	}
	big := liveReq("/live/v2/plants/demo/devices", tokStandard)
	big.ContentLength = maxBody + 1
	withOrigin := liveReq("/live/v2/plants/demo/devices", tokStandard)
	withOrigin.Header.Set("Origin", "https://example.com")
	basic := liveReq("/live/v2/plants/demo/devices", "")
	basic.Header.Set("Authorization", "Basic dXNlcjpwdw==")
	for _, tc := range []struct {
		name   string
		srv    *Server
		req    *http.Request
		status int // the engine's answer
	}{
		{"no token", e.srv, liveReq("/live/v2/plants/demo/devices", ""), 401},
		{"unknown token", e.srv, liveReq("/live/v1/plants/demo/measurements/sets/EnergyBalance", "nope"), 401},
		{"basic auth", e.srv, basic, 401},
		{"unknown plant", e.srv, liveReq("/live/v2/plants/nope/devices", tokStandard), 404},
		{"migrated plant", e.srv, liveReq("/live/v2/plants/7190000/devices", tokStandard), 308},
		{"escaped id", e.srv, liveReq("/live/v2/plants/de%6Do/devices", tokStandard), 200},
		{"trailing slash", e.srv, liveReq("/live/v2/plants/demo/devices/", tokStandard), 404},
		{"body over the limit", e.srv, big, 413},
		{"deprecated v1 list", e.srv, liveReq("/live/v1/plants/demo/devices", tokStandard), 200},
		{"CORS", cors, withOrigin, 200},
		{"debug log", debug, liveReq("/live/v2/plants/demo/devices", tokStandard), 200},
		{"rate limit used up", oneRequest, liveReq("/live/v2/plants/demo/devices", tokStandard), 429},
		{"source blocked", oneFailure, liveReq("/live/v2/plants/demo/devices", tokStandard), 429},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			if tc.srv.serveLiveFast(rec, tc.req) {
				t.Fatal("served by the fast path")
			}
			if rec.Body.Len() > 0 || len(rec.Header()) > 0 || rec.Flushed {
				t.Fatalf("the fast path wrote: %v %q", rec.Header(), rec.Body)
			}
			rec = httptest.NewRecorder()
			tc.srv.ServeHTTP(rec, tc.req)
			if rec.Code != tc.status {
				t.Errorf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
		})
	}
	// The refused tokens were counted once each, by the engine only.
	m := string(e.srv.deps.Registry.Gather())
	if want := `plantd_auth_failures_total{reason="invalid_token"} 1`; !strings.Contains(m, want) {
		t.Errorf("metrics lack %s:\n%s", want, m)
	}
}

// liveReq is a GET of path with the bearer token tok ("" none).
func liveReq(path, tok string) *http.Request {
	r := httptest.NewRequest("GET", path, nil)
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	return r
}
