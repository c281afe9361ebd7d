package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
)

//go:embed static
var static embed.FS

// versionToken is the placeholder index.html names its files with.
const versionToken = "/ui/@v/"

// CSP is the Content-Security-Policy of every answer of the page.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// file is one embedded file ready to serve.
type file struct {
	body, gz    []byte // gz is nil when compression does not pay
	contentType string
	etag        string
}

// Handler serves the page at / and its files at /ui/{version}/{path}.
type Handler struct {
	// Version names the current set of files in their URLs.
	Version string
	index   file
	files   map[string]file
}

// New reads the embedded files. It panics only if the embedded tree is
// broken, which the package's tests rule out.
func New() *Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err)
	}
	raw := map[string][]byte{}
	all := sha256.New()
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		raw[p] = b
		all.Write([]byte(p))
		all.Write(b)
		return nil
	})
	if err != nil {
		panic(err)
	}
	h := &Handler{Version: hex.EncodeToString(all.Sum(nil))[:12], files: map[string]file{}}
	for p, b := range raw {
		if p == "index.html" {
			b = bytes.ReplaceAll(b, []byte(versionToken), []byte("/ui/"+h.Version+"/"))
			h.index = newFile(p, b)
			continue
		}
		h.files[p] = newFile(p, b)
	}
	return h
}

func newFile(p string, b []byte) file {
	ct := mime.TypeByExtension(path.Ext(p))
	switch path.Ext(p) {
	case ".js":
		ct = "text/javascript; charset=utf-8"
	case ".html":
		ct = "text/html; charset=utf-8"
	case ".css":
		ct = "text/css; charset=utf-8"
	case "":
		ct = "text/plain; charset=utf-8" // LICENSE
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	sum := sha256.Sum256(b)
	f := file{body: b, contentType: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	if strings.HasPrefix(ct, "text/") || strings.Contains(ct, "json") || strings.Contains(ct, "svg") {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(b)
		_ = zw.Close()
		if buf.Len() < len(b) {
			f.gz = buf.Bytes()
		}
	}
	return f
}

// ServeHTTP serves GET and HEAD of / and /ui/{version}/{path}.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	hd.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == "/" {
		hd.Set("Cache-Control", "no-cache")
		h.serve(w, r, h.index)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/ui/")
	version, name, ok2 := strings.Cut(rest, "/")
	f, ok3 := h.files[name]
	if !ok || !ok2 || !ok3 || name != path.Clean(name) {
		hd.Set("Cache-Control", "no-store")
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if version == h.Version {
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		// A page loaded before an upgrade asks for the old version: answer
		// with today's file, revalidated each time.
		hd.Set("Cache-Control", "no-cache")
	}
	h.serve(w, r, f)
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, f file) {
	hd := w.Header()
	hd.Set("ETag", f.etag)
	hd.Set("Content-Type", f.contentType)
	if f.gz != nil {
		hd.Add("Vary", "Accept-Encoding")
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.body
	if f.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		hd.Set("Content-Encoding", "gzip")
		body = f.gz
	}
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// acceptsGzip reports whether an Accept-Encoding value allows gzip.
func acceptsGzip(ae string) bool {
	for _, part := range strings.Split(ae, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			return strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0"
		}
	}
	return false
}
