package httpapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
)

// answerCache keeps the encoded bodies of the live answers that clients
// poll (the live balance and energy mix, the live device lists), so that
// the many requests between two polls cost a map lookup and a write
// instead of a snapshot of every device, a JSON encoding and a hash.
//
// An entry is valid while the live state has not changed (Live.Changes)
// and the live clock is in the same second: the answers carry times with
// second resolution and staleness follows the clock. Entries are per
// route and plant, so the cache holds at most routes × plants bodies.
type answerCache struct {
	mu sync.Mutex
	m  map[string]*cachedAnswer
}

// cachedAnswer is one encoded answer and what it was built from.
type cachedAnswer struct {
	changes uint64
	second  int64
	body    []byte
	etag    string

	gzOnce sync.Once
	gz     []byte // body gzipped, made on the first request that accepts it
}

// gzipped returns the body gzipped (made once).
func (a *cachedAnswer) gzipped() []byte {
	a.gzOnce.Do(func() {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(a.body)
		_ = zw.Close()
		a.gz = buf.Bytes()
	})
	return a.gz
}

// get returns the entry of key if it is still valid.
func (c *answerCache) get(key string, changes uint64, second int64) *cachedAnswer {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.m[key]
	if a == nil || a.changes != changes || a.second != second {
		return nil
	}
	return a
}

// put stores a under key unless a newer answer is there already.
func (c *answerCache) put(key string, a *cachedAnswer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*cachedAnswer{}
	}
	if old := c.m[key]; old != nil && (old.changes > a.changes || old.changes == a.changes && old.second > a.second) {
		return
	}
	c.m[key] = a
}

// writeLive answers 200 with the live answer of key: from the cache when
// the live state and the second did not change since it was built,
// otherwise built by build, encoded and kept. Every answer has an ETag,
// so a client that polls with If-None-Match gets 304 until the data
// changes; Cache-Control says to revalidate every time.
func (s *Server) writeLive(c *gin.Context, key string, build func() (any, error)) {
	changes := s.deps.Live.Changes()
	second := s.now().Unix()
	a := s.answers.get(key, changes, second)
	if a == nil {
		v, err := build()
		if err != nil {
			s.internal(c, err)
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			s.internal(c, fmt.Errorf("encode response: %w", err))
			return
		}
		a = &cachedAnswer{changes: changes, second: second, body: b, etag: etagOf(b)}
		s.answers.put(key, a)
	}
	h := c.Writer.Header()
	h.Set("ETag", a.etag)
	h.Set("Cache-Control", "private, no-cache")
	if inm := c.GetHeader("If-None-Match"); inm != "" && strings.Contains(inm, a.etag) {
		c.Status(http.StatusNotModified)
		c.Writer.WriteHeaderNow()
		return
	}
	body := a.body
	if len(body) >= gzipMin && strings.Contains(c.GetHeader("Accept-Encoding"), "gzip") {
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		body = a.gzipped()
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", body)
}

// etagOf is the strong entity tag of a body: 96 bits of its SHA-256.
func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
}
