package oauth2

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// FailedLogins limits failed logins (a wrong client secret, an unknown
// client, an invalid bearer token) per source (sourceKey: an IPv4 address,
// or an IPv6 /64): Burst failures, then one more per Every. A source whose allowance is used up gets 429
// with Retry-After, without its credentials being checked, until it has
// one again; other sources are not affected.
type FailedLogins struct {
	Burst int           // default 10
	Every time.Duration // default 6 s (10 a minute)
}

// maxSources bounds the addresses tracked; beyond it the idle ones are
// dropped, and if none is idle new addresses share one allowance.
const maxSources = 10000

// loginGuard counts failed logins per source (sourceKey) and logs them,
// one line per source per minute with counts (DESIGN §5).
type loginGuard struct {
	now   func() time.Time
	cfg   FailedLogins
	log   *slog.Logger
	logEv time.Duration // the least time between two lines of a source

	mu      sync.Mutex
	sources map[string]*source
}

// source is one address's allowance and what is not logged yet.
type source struct {
	lim      *rate.Limiter
	failures int // since the last line
	refused  int // since the last line
	logged   time.Time
}

func newLoginGuard(cfg FailedLogins, now func() time.Time, log *slog.Logger) *loginGuard {
	if cfg.Burst < 1 {
		cfg.Burst = 10
	}
	if cfg.Every <= 0 {
		cfg.Every = 6 * time.Second
	}
	return &loginGuard{now: now, cfg: cfg, log: log, logEv: time.Minute, sources: map[string]*source{}}
}

// sourceAddr is the request's peer address (never a forwarded header: a
// client could name any address there).
func sourceAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// sourceKey is the source a request counts against: an IPv4 address
// (an IPv4-mapped IPv6 one too) as it is, an IPv6 address as its /64.
// One host or site usually holds a whole /64 (SLAAC, privacy addresses),
// so counting each IPv6 address alone would give it 2^64 allowances and
// a log line per address.
func sourceKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String()
	}
	p, err := ip.WithZone("").Prefix(64)
	if err != nil {
		return addr
	}
	return p.String()
}

// get returns the source's state; the caller holds g.mu.
func (g *loginGuard) get(addr string, create bool) *source {
	s := g.sources[addr]
	if s != nil || !create {
		return s
	}
	if len(g.sources) >= maxSources {
		g.sweepLocked(g.now(), false)
		if len(g.sources) >= maxSources {
			addr = "other"
			if s = g.sources[addr]; s != nil {
				return s
			}
		}
	}
	s = &source{lim: rate.NewLimiter(rate.Every(g.cfg.Every), g.cfg.Burst)}
	g.sources[addr] = s
	return s
}

// blocked reports whether addr's source has used up its failed logins,
// and for how long; a refused request is counted for the log.
func (g *loginGuard) blocked(addr string) (bool, time.Duration) {
	addr = sourceKey(addr)
	now := g.now()
	g.mu.Lock()
	s := g.get(addr, false)
	if s == nil {
		g.mu.Unlock()
		return false, 0
	}
	tokens := s.lim.TokensAt(now)
	if tokens >= 1 {
		g.mu.Unlock()
		return false, 0
	}
	s.refused++
	line := g.due(s, now)
	g.mu.Unlock()
	g.emit(addr, line)
	wait := time.Duration((1 - tokens) * float64(g.cfg.Every))
	return true, wait
}

// tracking reports whether the guard holds state of addr's source (it
// failed a login lately), without counting or logging anything. A source
// the guard does not track is not blocked; one it tracks may be (blocked
// says). With no source tracked at all, the usual case, it costs a lock.
func (g *loginGuard) tracking(addr string) bool {
	g.mu.Lock()
	n := len(g.sources)
	g.mu.Unlock()
	if n == 0 {
		return false
	}
	addr = sourceKey(addr)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sources[addr] != nil
}

// failed records a failed login from addr's source.
func (g *loginGuard) failed(addr string) {
	addr = sourceKey(addr)
	now := g.now()
	g.mu.Lock()
	s := g.get(addr, true)
	s.lim.AllowN(now, 1)
	s.failures++
	line := g.due(s, now)
	g.mu.Unlock()
	g.emit(addr, line)
}

// logLine is what one log line of a source says.
type logLine struct {
	failures, refused int
	ok                bool
}

// due takes the counts to log if the source's last line is a minute old
// (or it has none); the caller holds g.mu.
func (g *loginGuard) due(s *source, now time.Time) logLine {
	if !s.logged.IsZero() && now.Sub(s.logged) < g.logEv {
		return logLine{}
	}
	l := logLine{failures: s.failures, refused: s.refused, ok: true}
	s.failures, s.refused, s.logged = 0, 0, now
	return l
}

func (g *loginGuard) emit(addr string, l logLine) {
	if !l.ok || l.failures+l.refused == 0 {
		return
	}
	g.log.Warn("failed logins", "source", addr, "failures", l.failures, "refused", l.refused,
		"limit", strconv.Itoa(g.cfg.Burst)+" then 1 per "+g.cfg.Every.String())
}

// sweepLocked logs the counts of sources whose line is due (flush) and
// drops sources with a full allowance and nothing to log; the caller
// holds g.mu.
func (g *loginGuard) sweepLocked(now time.Time, flush bool) []func() {
	var out []func()
	for addr, s := range g.sources {
		if flush && s.failures+s.refused > 0 {
			if l := g.due(s, now); l.ok {
				out = append(out, func() { g.emit(addr, l) })
			}
		}
		if s.failures+s.refused == 0 && s.lim.TokensAt(now) >= float64(g.cfg.Burst) && now.Sub(s.logged) >= g.logEv {
			delete(g.sources, addr)
		}
	}
	return out
}

// run logs the tail of every burst (the counts after a source's last
// line) and forgets idle sources, every 10 s until ctx ends.
func (g *loginGuard) run(ctx context.Context) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		g.mu.Lock()
		emits := g.sweepLocked(g.now(), true)
		g.mu.Unlock()
		for _, e := range emits {
			e()
		}
	}
}
