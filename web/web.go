package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The files of static/, each gzipped, under gz/ (app.css as gz/app.css.gz):
// go generate ./web writes them, TestGzipped fails while they differ from
// static/. Embedding them compressed keeps 117 KB out of the binary; a
// client that takes gzip gets the stored bytes, any other the file
// unpacked as it is sent.
//
//go:generate go test -run ^TestGzipped$ . -update
//go:embed gz
var gzipped embed.FS

// versionToken is the placeholder index.html names its files with.
const versionToken = "/ui/@v/"

// CSP is the Content-Security-Policy of every answer of the page.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// file is one embedded file ready to serve: gz, or body where gzip does
// not pay.
type file struct {
	gz, body    []byte
	size        int // the file's length, unpacked
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
	type entry struct {
		name   string
		gz, un []byte
	}
	var all []entry
	err := fs.WalkDir(gzipped, "gz", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		gz, err := fs.ReadFile(gzipped, p)
		if err != nil {
			return err
		}
		un, err := gunzip(gz)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		all = append(all, entry{strings.TrimSuffix(strings.TrimPrefix(p, "gz/"), ".gz"), gz, un})
		return nil
	})
	if err != nil {
		panic(err)
	}
	// The version is a hash of every file's path and content, in the
	// order of their paths.
	byName := map[string]entry{}
	names := make([]string, 0, len(all))
	for _, e := range all {
		byName[e.name] = e
		names = append(names, e.name)
	}
	slices.Sort(names)
	sum := sha256.New()
	for _, name := range names {
		sum.Write([]byte(name))
		sum.Write(byName[name].un)
	}
	h := &Handler{Version: hex.EncodeToString(sum.Sum(nil))[:12], files: map[string]file{}}
	for _, e := range all {
		if e.name == "index.html" {
			b := bytes.ReplaceAll(e.un, []byte(versionToken), []byte("/ui/"+h.Version+"/"))
			h.index = newFile(e.name, b, gzipText(e.name, b))
			continue
		}
		h.files[e.name] = newFile(e.name, e.un, e.gz)
	}
	return h
}

// gunzip unpacks one gzip stream.
func gunzip(gz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// gzipText returns b gzipped when p is a text file, else nil.
func gzipText(p string, b []byte) []byte {
	if !compressible(contentType(p)) {
		return nil
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

func compressible(ct string) bool {
	return strings.HasPrefix(ct, "text/") || strings.Contains(ct, "json") || strings.Contains(ct, "svg")
}

// contentType is the Content-Type of the page's file p, by its extension,
// from the page's own table: not mime.TypeByExtension, whose first call
// loads the system's tables (/usr/share/mime/globs2, /etc/mime.types:
// 400 KB of map entries the collector marks at every collection for the
// life of the daemon) and whose answers differ from system to system.
func contentType(p string) string {
	if ct, ok := contentTypes[path.Ext(p)]; ok {
		return ct
	}
	return "application/octet-stream"
}

// contentTypes are the types of the page's files by extension.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".json": "application/json",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".txt":  "text/plain; charset=utf-8",
	"":      "text/plain; charset=utf-8", // LICENSE
}

// newFile is the file p of content b, served as gz (b gzipped) where
// that is shorter and the type is worth compressing, else as b.
func newFile(p string, b, gz []byte) file {
	ct := contentType(p)
	sum := sha256.Sum256(b)
	f := file{size: len(b), contentType: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	if gz != nil && len(gz) < len(b) && compressible(ct) {
		f.gz = gz
	} else {
		f.body = b
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
	switch {
	case f.gz == nil:
		hd.Set("Content-Length", strconv.Itoa(len(f.body)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(f.body)
		}
	case acceptsGzip(r.Header.Get("Accept-Encoding")):
		hd.Set("Content-Encoding", "gzip")
		hd.Set("Content-Length", strconv.Itoa(len(f.gz)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(f.gz)
		}
	default: // unpacked on the way out
		hd.Set("Content-Length", strconv.Itoa(f.size))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			if zr, err := gzip.NewReader(bytes.NewReader(f.gz)); err == nil {
				_, _ = io.Copy(w, zr)
			}
		}
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
