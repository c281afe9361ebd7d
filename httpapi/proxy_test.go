package httpapi

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"plantd/config"
	"plantd/internal/proctest"
	"plantd/plant"
)

// TestForwardedHeadersNotTrusted: a client's X-Forwarded-For and X-Real-IP
// must not change the address in the access log, unless the config names
// the proxy it came through.
func TestForwardedHeadersNotTrusted(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	for _, tt := range []struct {
		name    string
		proxies []string
		want    string
	}{
		{"no proxy configured", nil, "remote=127.0.0.1"},
		{"loopback is the proxy", []string{"127.0.0.1"}, "remote=6.6.6.6"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			live := plant.NewLive([]plant.Plant{{ID: "p1", Name: "p"}}, nil, nil)
			cfg := testConfig(config.RateLimit{RequestsPerSecond: 1000, Burst: 1000})
			cfg.TrustedProxies = tt.proxies
			var logs proctest.Buffer
			srv, err := New(cfg, Deps{Live: live, History: newFakeHistory(live)}, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv.Handler())
			defer ts.Close()
			req, _ := http.NewRequest("GET", ts.URL+"/nowhere", nil)
			req.Header.Set("X-Forwarded-For", "6.6.6.6")
			req.Header.Set("X-Real-IP", "6.6.6.6")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if l := logs.String(); !strings.Contains(l, tt.want) {
				t.Errorf("access log, want %s:\n%s", tt.want, l)
			}
		})
	}
}
