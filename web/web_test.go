package web

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string, hdr ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// TestServe checks types, caching, compression and security headers of
// the page and of every embedded file.
func TestServe(t *testing.T) {
	h := New()
	if len(h.Version) != 12 {
		t.Fatalf("version %q", h.Version)
	}
	resp := get(t, h, "/")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("/: %d %v", resp.StatusCode, resp.Header)
	}
	if bytes.Contains(body, []byte(versionToken)) || !bytes.Contains(body, []byte("/ui/"+h.Version+"/js/app.js")) {
		t.Errorf("index.html does not name its files under /ui/%s/", h.Version)
	}
	// No inline script or style: every <script> has a src, no style= or
	// <style>, no on...= handlers.
	for _, re := range []string{`<script(?:\s[^>]*)?>\s*[^<\s]`, `<style`, `\sstyle=`, `\son[a-z]+=`} {
		if regexp.MustCompile(re).Match(body) {
			t.Errorf("index.html matches %s (inline code the CSP would block)", re)
		}
	}
	for _, hd := range []struct{ name, want string }{
		{"Content-Security-Policy", CSP}, {"X-Content-Type-Options", "nosniff"}, {"Referrer-Policy", "no-referrer"},
		{"X-Frame-Options", "DENY"}, {"Cross-Origin-Opener-Policy", "same-origin"}, {"Cross-Origin-Resource-Policy", "same-origin"},
	} {
		if got := resp.Header.Get(hd.name); got != hd.want {
			t.Errorf("/ %s: %q, want %q", hd.name, got, hd.want)
		}
	}
	if !strings.Contains(CSP, "script-src 'self';") || strings.Contains(CSP, "unsafe") {
		t.Errorf("CSP %q", CSP)
	}
	etag := resp.Header.Get("ETag")
	if r := get(t, h, "/", "If-None-Match", etag); r.StatusCode != http.StatusNotModified {
		t.Errorf("/ with If-None-Match: %d", r.StatusCode)
	}

	types := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", "": "text/plain; charset=utf-8", ".txt": "text/plain; charset=utf-8"}
	n := 0
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "static/index.html" {
			return err
		}
		n++
		name := strings.TrimPrefix(p, "static/")
		want, _ := fs.ReadFile(static, p)
		ext := ""
		if i := strings.LastIndexByte(name, '.'); i > strings.LastIndexByte(name, '/') {
			ext = name[i:]
		}
		url := "/ui/" + h.Version + "/" + name
		r := get(t, h, url)
		got, _ := io.ReadAll(r.Body)
		if r.StatusCode != 200 || !bytes.Equal(got, want) {
			t.Errorf("%s: %d, %d bytes, want %d", url, r.StatusCode, len(got), len(want))
		}
		if ct, ok := types[ext]; !ok || r.Header.Get("Content-Type") != ct {
			t.Errorf("%s: Content-Type %q, want %q", url, r.Header.Get("Content-Type"), ct)
		}
		if r.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || r.Header.Get("Content-Security-Policy") != CSP ||
			r.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", url, r.Header)
		}
		// Gzipped when asked, the same bytes once unpacked.
		rz := get(t, h, url, "Accept-Encoding", "br, gzip;q=0.8")
		if rz.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(rz.Body)
			if err != nil {
				t.Fatal(err)
			}
			un, _ := io.ReadAll(zr)
			if !bytes.Equal(un, want) || !strings.Contains(rz.Header.Get("Vary"), "Accept-Encoding") {
				t.Errorf("%s gzipped: differs or no Vary", url)
			}
		} else if len(want) > 1024 {
			t.Errorf("%s (%d bytes) not gzipped", url, len(want))
		}
		if r := get(t, h, url, "Accept-Encoding", "gzip;q=0"); r.Header.Get("Content-Encoding") != "" {
			t.Errorf("%s: gzipped though refused", url)
		}
		// An older version's URL still answers, revalidated.
		if r := get(t, h, "/ui/000000000000/"+name); r.StatusCode != 200 || r.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("old version of %s: %d %q", name, r.StatusCode, r.Header.Get("Cache-Control"))
		}
		if r := get(t, h, url, "If-None-Match", r.Header.Get("ETag")); r.StatusCode != http.StatusNotModified {
			t.Errorf("%s with If-None-Match: %d", url, r.StatusCode)
		}
		return nil
	})
	if err != nil || n < 8 {
		t.Fatalf("walked %d files: %v", n, err)
	}
	for _, p := range []string{"/ui/", "/ui/" + h.Version + "/", "/ui/" + h.Version + "/nope.js", "/ui/" + h.Version + "/../web.go",
		"/ui/" + h.Version + "/js/../app.css", "/ui/" + h.Version + "/index.html", "/index.html"} {
		if r := get(t, h, p); r.StatusCode != 404 || r.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d, want 404", p, r.StatusCode)
		}
	}
	req := httptest.NewRequest("POST", "/", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /: %d %v", rec.Code, rec.Header())
	}
	req = httptest.NewRequest("HEAD", "/", nil)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") == "" {
		t.Errorf("HEAD /: %d, %d bytes", rec.Code, rec.Body.Len())
	}
}

// TestWeight keeps the page under the 250 KB compressed, chart
// library included.
func TestWeight(t *testing.T) {
	h := New()
	total := len(h.index.gz)
	for name, f := range h.files {
		if strings.HasSuffix(name, "LICENSE") || strings.HasSuffix(name, "SHA256SUMS") {
			continue
		}
		if f.gz != nil {
			total += len(f.gz)
		} else {
			total += len(f.body)
		}
	}
	t.Logf("page weight %d bytes gzipped", total)
	if total > 250_000 {
		t.Errorf("page weight %d bytes gzipped, over 250 KB", total)
	}
}

// TestVendoredHashes checks the vendored uPlot against the SHA-256 sums
// scripts/vendor-uplot.sh wrote when it fetched and verified the npm
// package.
func TestVendoredHashes(t *testing.T) {
	sums, err := os.ReadFile("static/vendor/uplot/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(sums))
	n := 0
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		b, err := os.ReadFile("static/vendor/uplot/" + name)
		if err != nil {
			t.Fatal(err)
		}
		got := sha256.Sum256(b)
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: sha256 %x, SHA256SUMS says %s (run scripts/vendor-uplot.sh)", name, got, sum)
		}
		n++
	}
	if n != 3 {
		t.Errorf("SHA256SUMS lists %d files, want 3", n)
	}
}

// TestEveryFileTyped: every file of the page has its Content-Type in the
// page's own table (contentTypes); a new kind of file (a font, a source
// map) must be added there rather than go out as application/octet-stream.
func TestEveryFileTyped(t *testing.T) {
	n := 0
	err := fs.WalkDir(gzipped, "gz", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		name := strings.TrimSuffix(p, ".gz")
		if _, ok := contentTypes[path.Ext(name)]; !ok {
			t.Errorf("%s: extension %q not in contentTypes", name, path.Ext(name))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no files embedded")
	}
}
