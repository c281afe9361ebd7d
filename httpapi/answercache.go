package httpapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gin-gonic/gin"
)

// answerCache keeps the encoded bodies of the live answers that clients
// poll (the live balance and energy mix, the live device lists), so that
// the many requests between two polls cost an atomic load and a write
// instead of a snapshot of every device, a JSON encoding and a hash.
//
// An answer is valid while the live state has not changed (Live.Changes)
// and the live clock is in the same second: the answers carry times with
// second resolution and staleness follows the clock. A request that finds
// its answer outdated builds it anew; requests that find it outdated at
// the same time wait for that one build instead of each making their own
// (a poll of every device of a plant changes the state, so a loaded
// server would otherwise encode the same answer once per waiting
// connection). Slots are per answer and plant (or device), so the cache
// holds at most routes × plants (devices for the mix) bodies.
type answerCache struct {
	mu sync.RWMutex
	m  map[liveKey]*answerSlot
}

// answerKind names one live answer (a route).
type answerKind uint8

const (
	answerBalance answerKind = iota
	answerMix
	answerDevicesV1
	answerDevicesV2
)

// liveKey is a slot's answer and the plant's (mix: device's) id.
type liveKey struct {
	kind answerKind
	id   string
}

// answerSlot holds the newest answer of a key.
type answerSlot struct {
	cur   atomic.Pointer[cachedAnswer]
	build sync.Mutex // held while the answer is built anew
}

// cachedAnswer is one encoded answer, what it was built from and its
// header values (shared by every response that sends it: the slices are
// never changed after newAnswer, and their capacity is their length, so
// that an append to a response's header copies them).
type cachedAnswer struct {
	changes uint64
	second  int64
	body    []byte
	etag    string
	etagHdr []string
	lenHdr  []string

	gzOnce   sync.Once
	gz       []byte // body gzipped, made on the first request that accepts it
	gzLenHdr []string
}

// Header values of every live answer.
var (
	hdrJSON       = []string{"application/json; charset=utf-8"}
	hdrRevalidate = []string{"private, no-cache"}
	hdrGzip       = []string{"gzip"}
)

// hdrValue is a header value slice that an append copies.
func hdrValue(v string) []string { return []string{v}[:1:1] }

func newAnswer(changes uint64, second int64, body []byte) *cachedAnswer {
	tag := etagOf(body)
	return &cachedAnswer{changes: changes, second: second, body: body, etag: tag,
		etagHdr: hdrValue(tag), lenHdr: hdrValue(strconv.Itoa(len(body)))}
}

// fresh reports whether a may answer a request that saw the live state
// at changes and the clock at second: built from that state or a newer
// one, in the same second.
func (a *cachedAnswer) fresh(changes uint64, second int64) bool {
	return a != nil && a.changes >= changes && a.second == second
}

// gzipped returns the body gzipped and its Content-Length (made once).
func (a *cachedAnswer) gzipped() ([]byte, []string) {
	a.gzOnce.Do(func() {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(a.body)
		_ = zw.Close()
		a.gz = buf.Bytes()
		a.gzLenHdr = hdrValue(strconv.Itoa(len(a.gz)))
	})
	return a.gz, a.gzLenHdr
}

// slot returns the slot of k, made the first time.
func (c *answerCache) slot(k liveKey) *answerSlot {
	c.mu.RLock()
	sl := c.m[k]
	c.mu.RUnlock()
	if sl != nil {
		return sl
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[liveKey]*answerSlot{}
	}
	if sl = c.m[k]; sl == nil {
		sl = &answerSlot{}
		c.m[k] = sl
	}
	return sl
}

// liveAnswer returns the answer of k: the slot's when it is fresh for
// this request, otherwise built by build (or by the request building it
// already), encoded and kept. An answer is never older than the live
// state and the second the request saw when it came.
func (s *Server) liveAnswer(k liveKey, build func() (any, error)) (*cachedAnswer, error) {
	sl := s.answers.slot(k)
	changes, second := s.deps.Live.Changes(), s.now().Unix()
	if a := sl.cur.Load(); a.fresh(changes, second) {
		return a, nil
	}
	sl.build.Lock()
	defer sl.build.Unlock()
	if a := sl.cur.Load(); a.fresh(changes, second) {
		return a, nil // built while this request waited
	}
	// What the build sees is at least this new.
	changes, second = s.deps.Live.Changes(), s.now().Unix()
	v, err := build()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	a := newAnswer(changes, second, b)
	sl.cur.Store(a)
	return a, nil
}

// writeLive answers 200 with the live answer of k (liveAnswer), or 500.
func (s *Server) writeLive(c *gin.Context, k liveKey, build func() (any, error)) {
	a, err := s.liveAnswer(k, build)
	if err != nil {
		s.internal(c, err)
		return
	}
	writeAnswer(c.Writer, c.Request, a)
}

// writeAnswer writes a live answer and returns its status. Every answer
// has an ETag, so a client that polls with If-None-Match gets 304 until
// the data changes; Cache-Control says to revalidate every time. Large
// bodies go gzipped to a client that accepts it.
func writeAnswer(w http.ResponseWriter, r *http.Request, a *cachedAnswer) int {
	h := w.Header()
	h["Etag"] = a.etagHdr
	h["Cache-Control"] = hdrRevalidate
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified
	}
	body, n := a.body, a.lenHdr
	if len(body) >= gzipMin && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		h["Content-Encoding"] = hdrGzip
		h.Add("Vary", "Accept-Encoding")
		body, n = a.gzipped()
	}
	h["Content-Type"] = hdrJSON
	if len(body) >= chunkingSize {
		// Larger bodies would go chunked; net/http sets it on smaller ones.
		h["Content-Length"] = n
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return http.StatusOK
}

// chunkingSize is the body size from which net/http sends a body
// without Content-Length chunked (its bufferBeforeChunkingSize).
const chunkingSize = 2048

// etagOf is the strong entity tag of a body: 96 bits of its SHA-256.
func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
}
