package httpapi

import (
	"io"
	"strings"
	"testing"

	"plantd/web"
)

// TestPage checks that the gateway's own page is served through the API's
// engine (request id, metrics) with its own headers, without a token.
func TestPage(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	v := web.New().Version
	for _, c := range []struct{ path, ctype, cache string }{
		{"/", "text/html; charset=utf-8", "no-cache"},
		{"/ui/" + v + "/js/app.js", "text/javascript; charset=utf-8", "public, max-age=31536000, immutable"},
		{"/ui/" + v + "/vendor/uplot/uPlot.iife.min.js", "text/javascript; charset=utf-8", "public, max-age=31536000, immutable"},
	} {
		resp := e.do("GET", c.path, "", "", "")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != c.ctype || resp.Header.Get("Cache-Control") != c.cache ||
			resp.Header.Get("Content-Security-Policy") != web.CSP || resp.Header.Get("X-Request-Id") == "" || len(b) == 0 {
			t.Errorf("%s: %d %v", c.path, resp.StatusCode, resp.Header)
		}
	}
	resp := e.do("GET", "/ui/"+v+"/nope.js", "", "", "")
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown file: %d", resp.StatusCode)
	}
	// The API around it is unchanged: JSON, no page headers, token needed.
	resp = e.do("GET", "/monitoring/v1/plants", "", "", "")
	resp.Body.Close()
	if resp.StatusCode != 401 || strings.Contains(resp.Header.Get("Content-Type"), "html") || resp.Header.Get("Content-Security-Policy") != "" {
		t.Errorf("/monitoring/v1/plants without token: %d %v", resp.StatusCode, resp.Header)
	}
}
