package httpapi

import (
	"compress/gzip"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestLiveAnswerCache checks the live answers kept between polls: the same
// body and ETag while nothing changed, 304 to If-None-Match, a new body
// after a poll (lastUpdateUtc, the balance) and after the clock moved to
// the next second with nothing polled (the times in the answers), and the
// gzipped body equal to the plain one.
func TestLiveAnswerCache(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 2})
	get := func(path string, hdr ...string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", e.ts.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tokStandard)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r io.Reader = resp.Body
		if resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			r = zr
		}
		b, _ := io.ReadAll(r)
		if cc := resp.Header.Get("Cache-Control"); resp.StatusCode == 200 && cc != "private, no-cache" {
			t.Errorf("%s: Cache-Control %q", path, cc)
		}
		return resp.StatusCode, resp.Header.Get("ETag"), string(b)
	}
	for _, path := range []string{
		"/live/v1/plants/demo/measurements/sets/EnergyBalance",
		"/live/v1/devices/meter/measurement/sets/EnergyMix",
		"/live/v1/plants/demo/devices",
		"/live/v2/plants/demo/devices",
	} {
		t.Run(path, func(t *testing.T) {
			code, tag, body := get(path)
			if code != 200 || tag == "" {
				t.Fatalf("first GET: %d, ETag %q", code, tag)
			}
			if code2, tag2, body2 := get(path); code2 != 200 || tag2 != tag || body2 != body {
				t.Errorf("second GET without a change: %d, ETag %q (was %q), same body %v", code2, tag2, tag, body2 == body)
			}
			if code, _, body := get(path, "If-None-Match", tag); code != http.StatusNotModified || body != "" {
				t.Errorf("If-None-Match: %d %q, want 304 without body", code, body)
			}
			if _, gtag, gbody := get(path, "Accept-Encoding", "gzip"); gtag != tag || gbody != body {
				t.Errorf("gzip accepted: ETag %q, body equal %v", gtag, gbody == body)
			}

			// A poll a minute later: new values, new time.
			e.clock.Add(time.Minute)
			e.pollAll()
			code, tag3, body3 := get(path, "If-None-Match", tag)
			if code != 200 || tag3 == tag || body3 == body {
				t.Errorf("after a poll: %d, ETag %q (was %q), body changed %v", code, tag3, tag, body3 != body)
			}

			// The clock alone, a second later: the balance and the mix
			// carry the time, the device lists the gateway's own
			// lastUpdateUtc (plantd answers now).
			e.clock.Add(time.Second)
			if _, tag4, body4 := get(path); tag4 == tag3 || body4 == body3 {
				t.Errorf("a second later: the same answer %s", body4)
			}
		})
	}
}
