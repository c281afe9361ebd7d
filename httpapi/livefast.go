package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// The live answers that clients poll many times a second (the live
// energy balance and the v2 device list; the deprecated v1 list stays
// with the engine) are served by a fast path in
// front of the Gin engine when the request is an ordinary one: the same
// answer, headers, metrics and rate limit as through Gin, without its
// middleware chain, context and per-request allocations. Any other
// request, and any of these that would not be answered 200 or 304 (no
// or a refused token, an unknown or migrated plant, a CORS request, a
// declared body over the limit, an error building the answer), goes to
// the engine, which answers it as always: the fast path answers only
// what the engine would have answered the same way, and writes nothing
// before it knows it answers.

// Route templates of the fast path's answers, as the engine's FullPath
// names them for the metrics.
const (
	routeLiveBalance   = "/live/v1/plants/:plantId/measurements/sets/EnergyBalance"
	routeLiveDevicesV2 = "/live/v2/plants/:plantId/devices"
)

// fastRoute is one route of the fast path.
type fastRoute struct {
	prefix, suffix string // the path is prefix + plant id + suffix
	route          string
	kind           answerKind
	version        int // of the device lists
}

var fastRoutes = []fastRoute{
	{"/live/v1/plants/", "/measurements/sets/EnergyBalance", routeLiveBalance, answerBalance, 0},
	{"/live/v2/plants/", "/devices", routeLiveDevicesV2, answerDevicesV2, 2},
}

// ServeHTTP serves r: a live answer by the fast path, or by the engine.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/live/") && s.serveLiveFast(w, r) {
		return
	}
	s.engine.ServeHTTP(w, r)
}

// matchFast returns the fast route of path and the plant id in it.
func matchFast(path string) (*fastRoute, string) {
	for i := range fastRoutes {
		fr := &fastRoutes[i]
		if id, ok := strings.CutPrefix(path, fr.prefix); ok {
			if id, ok = strings.CutSuffix(id, fr.suffix); ok && id != "" && !strings.Contains(id, "/") {
				return fr, id
			}
		}
	}
	return nil, ""
}

// serveLiveFast answers r when it is an ordinary request for a live
// answer of the fast path, and reports whether it did.
func (s *Server) serveLiveFast(w http.ResponseWriter, r *http.Request) (served bool) {
	start := time.Now()
	if r.URL.RawPath != "" || r.ContentLength > maxBody ||
		(len(s.cfg.CORSOrigins) > 0 && r.Header.Get("Origin") != "") ||
		s.log.Enabled(context.Background(), slog.LevelDebug) {
		return false // escaped ids, 413, CORS and the access log: the engine's
	}
	fr, id := matchFast(r.URL.Path)
	if fr == nil {
		return false
	}
	if _, migrated := s.migratedPlants[id]; migrated {
		return false
	}
	p, ok := s.deps.Live.Plant(id)
	if !ok || !s.auth.Admitted(r) {
		return false
	}
	// A panic while building goes to the engine, whose recoverer logs it
	// and answers 500 (nothing is written yet).
	defer func() {
		if v := recover(); v != nil {
			if served {
				panic(v)
			}
			s.engine.ServeHTTP(w, r)
			served = true
		}
	}()
	var a *cachedAnswer
	var err error
	if fr.kind == answerBalance {
		a, err = s.liveAnswer(liveKey{fr.kind, p.ID}, func() (any, error) { return s.balanceAnswer(p) })
	} else {
		a, err = s.liveAnswer(liveKey{fr.kind, p.ID}, func() (any, error) { return s.liveDeviceList(p, fr.version) })
	}
	if err != nil {
		return false // the engine builds it again and answers the error
	}
	served = true
	h := w.Header()
	h["X-Request-Id"] = []string{requestIDOf(r.Header.Get("X-Request-Id"))}
	status := writeAnswer(w, r, a)
	s.metrics.count(http.MethodGet, fr.route, status, start)
	return true
}
