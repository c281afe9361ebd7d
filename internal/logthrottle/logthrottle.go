package logthrottle

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Limiter defaults.
const (
	// DefaultEvery is the least time between two lines of one source
	// and reason.
	DefaultEvery = time.Minute
	// DefaultSources bounds the source and reason pairs a Limiter keeps
	// apart.
	DefaultSources = 256
	// Other is the source logged for the events of the sources beyond
	// the bound.
	Other = "other"
)

// Limiter rate-limits the log lines of events from sources that have not
// authenticated: one source must not write a line per event. Events are
// counted per source and reason. The first event of a pair is logged at
// once; later ones at most once per interval, the line carrying
// suppressed=N, the events not logged since. A pair quiet for an
// interval is forgotten.
//
// At most maxSources pairs are kept apart: the events of further sources
// share one pair per reason, logged with the source [Other], so that a
// flood of sources bounds both the memory and the lines (reasons are a
// fixed set: at most maxSources pairs and one shared pair per reason,
// each a line or two per interval).
//
// Flush writes the counts of pairs whose interval has passed; its user
// calls it every interval (or has Start do it) and FlushAll when it stops.
// Its methods are safe for concurrent use.
type Limiter struct {
	log   *slog.Logger
	key   string // the attribute naming the source: "client", "topic"
	every time.Duration
	max   int
	now   func() time.Time // time.Now; tests set it

	mu      sync.Mutex
	entries map[key]*entry
	swept   time.Time // the last sweep of a full map
	events  int64     // every event, logged or suppressed
}

// key is a source and reason; other is the shared source beyond max.
type key struct {
	source string
	other  bool
	reason string
}

// entry is the state of one key.
type entry struct {
	logged     time.Time // when its last line was written
	suppressed int64     // events since, not logged
	level      slog.Level
	msg        string // the message of its last event
}

// line is a line to write once the lock is released.
type line struct {
	key        key
	level      slog.Level
	msg        string
	suppressed int64
	args       []any
}

// New returns a limiter writing to log, naming the source with the
// attribute sourceKey ("client", "topic"), at most one line per source
// and reason every interval (DefaultEvery when 0), keeping at most
// maxSources pairs apart (DefaultSources when 0).
func New(log *slog.Logger, sourceKey string, every time.Duration, maxSources int) *Limiter {
	if every <= 0 {
		every = DefaultEvery
	}
	if maxSources <= 0 {
		maxSources = DefaultSources
	}
	return &Limiter{log: log, key: sourceKey, every: every, max: maxSources, now: time.Now, entries: map[key]*entry{}}
}

// Log records an event of source for reason (a short word, "allow",
// "write") and writes msg at level with the source, the reason and args
// unless the pair has had a line within the interval.
func (l *Limiter) Log(level slog.Level, source, reason, msg string, args ...any) {
	now := l.now()
	var lines []line
	l.mu.Lock()
	l.events++
	k := key{source: source, reason: reason}
	e := l.entries[k]
	if e == nil && len(l.entries) >= l.max && now.Sub(l.swept) >= time.Second {
		// Full: make room from the pairs quiet for an interval (at most
		// once a second, so that a flood does not sweep per event).
		l.swept = now
		lines = l.flush(now, false)
	}
	if e == nil && len(l.entries) >= l.max {
		k = key{other: true, reason: reason}
		e = l.entries[k]
	}
	switch {
	case e == nil:
		l.entries[k] = &entry{logged: now, level: level, msg: msg}
		lines = append(lines, line{key: k, level: level, msg: msg, args: args})
	case now.Sub(e.logged) >= l.every:
		lines = append(lines, line{key: k, level: level, msg: msg, suppressed: e.suppressed, args: args})
		e.logged, e.suppressed, e.level, e.msg = now, 0, level, msg
	default:
		e.suppressed++
		e.level, e.msg = level, msg
	}
	l.mu.Unlock()
	l.write(lines)
}

// Events returns the number of events recorded so far, logged or
// suppressed.
func (l *Limiter) Events() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.events
}

// Flush writes a line for each pair whose interval has passed with
// events suppressed (the message and level of its last event, the
// source, the reason and suppressed=N), and forgets the pairs quiet for
// an interval.
func (l *Limiter) Flush() {
	l.mu.Lock()
	lines := l.flush(l.now(), false)
	l.mu.Unlock()
	l.write(lines)
}

// FlushAll writes a line for each pair with events suppressed, whatever
// its interval, and forgets every pair (its user stopping).
func (l *Limiter) FlushAll() {
	l.mu.Lock()
	lines := l.flush(l.now(), true)
	l.mu.Unlock()
	l.write(lines)
}

// Start flushes every interval on a timer until the returned stop is
// called, which flushes all. Between flushes no goroutine waits (a server
// that starts one per Serve keeps its goroutine count to its
// connections'). stop may be called once.
func (l *Limiter) Start() (stop func()) {
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	mu.Lock()
	t = time.AfterFunc(l.every, func() {
		l.Flush()
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			t.Reset(l.every)
		}
	})
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
		l.FlushAll()
	}
}

// flush collects the lines of the pairs due (all: every pair with a
// count) and drops the quiet ones. Call it under l.mu.
func (l *Limiter) flush(now time.Time, all bool) []line {
	var lines []line
	for k, e := range l.entries {
		due := all || now.Sub(e.logged) >= l.every
		switch {
		case !due:
		case e.suppressed > 0:
			lines = append(lines, line{key: k, level: e.level, msg: e.msg, suppressed: e.suppressed})
			e.logged, e.suppressed = now, 0
			if all {
				delete(l.entries, k)
			}
		default:
			delete(l.entries, k)
		}
	}
	return lines
}

func (l *Limiter) write(lines []line) {
	for _, ln := range lines {
		source := ln.key.source
		if ln.key.other {
			source = Other
		}
		args := append([]any{l.key, source, "reason", ln.key.reason}, ln.args...)
		if ln.suppressed > 0 {
			args = append(args, "suppressed", ln.suppressed)
		}
		l.log.Log(context.Background(), ln.level, ln.msg, args...)
	}
}
