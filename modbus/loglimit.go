package modbus

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"time"
)

// LogLimiter defaults.
const (
	// DefaultLogEvery is the least time between two lines of one source
	// and reason.
	DefaultLogEvery = time.Minute
	// DefaultLogSources bounds the source and reason pairs a LogLimiter
	// keeps apart.
	DefaultLogSources = 256
)

// LogLimiter rate-limits the log lines of events from sources that have
// not authenticated (a Modbus server's clients: a refused connection, a
// refused write, a frame that is no Modbus): one client must not write
// a line per event. Events are counted per source address and reason.
// The first event of a pair is logged at once; later ones at most once
// per interval, the line carrying suppressed=N, the events not logged
// since the pair's last line. A pair quiet for an interval is forgotten.
//
// At most maxSources pairs are kept apart: the events of further sources
// share one pair per reason, logged with client=other, so that a flood of
// addresses bounds both the memory and the lines (reasons are a fixed
// set: at most maxSources pairs and one shared pair per reason, each a
// line or two per interval).
//
// Flush writes the counts of pairs whose interval has passed; a Server
// calls it every interval while it serves and FlushAll when it stops.
// Its methods are safe for concurrent use.
type LogLimiter struct {
	log   *slog.Logger
	every time.Duration
	max   int
	now   func() time.Time // time.Now; tests set it

	mu      sync.Mutex
	entries map[logKey]*logEntry
	swept   time.Time // the last sweep of a full map
}

// logKey is a source and reason; other is the shared source beyond max.
type logKey struct {
	source netip.Addr
	other  bool
	reason string
}

// logEntry is the state of one key.
type logEntry struct {
	logged     time.Time // when its last line was written
	suppressed int64     // events since, not logged
	level      slog.Level
	msg        string // the message of its last event
}

// logLine is a line to write once the lock is released.
type logLine struct {
	key        logKey
	level      slog.Level
	msg        string
	suppressed int64
	args       []any
}

// NewLogLimiter returns a limiter writing to log, at most one line per
// source and reason every interval (DefaultLogEvery when 0), keeping at
// most maxSources pairs apart (DefaultLogSources when 0).
func NewLogLimiter(log *slog.Logger, every time.Duration, maxSources int) *LogLimiter {
	if every <= 0 {
		every = DefaultLogEvery
	}
	if maxSources <= 0 {
		maxSources = DefaultLogSources
	}
	return &LogLimiter{log: log, every: every, max: maxSources, now: time.Now, entries: map[logKey]*logEntry{}}
}

// Every returns the limiter's interval.
func (l *LogLimiter) Every() time.Duration { return l.every }

// Log records an event of source for reason (a short word, "allow",
// "write") and writes msg at level with client=source, reason and args
// unless the pair has had a line within the interval.
func (l *LogLimiter) Log(level slog.Level, source netip.Addr, reason, msg string, args ...any) {
	now := l.now()
	var lines []logLine
	l.mu.Lock()
	k := logKey{source: source, reason: reason}
	e := l.entries[k]
	if e == nil && len(l.entries) >= l.max && now.Sub(l.swept) >= time.Second {
		// Full: make room from the pairs quiet for an interval (at most
		// once a second, so that a flood does not sweep per event).
		l.swept = now
		lines = l.flush(now, false)
	}
	if e == nil && len(l.entries) >= l.max {
		k = logKey{other: true, reason: reason}
		e = l.entries[k]
	}
	switch {
	case e == nil:
		l.entries[k] = &logEntry{logged: now, level: level, msg: msg}
		lines = append(lines, logLine{key: k, level: level, msg: msg, args: args})
	case now.Sub(e.logged) >= l.every:
		lines = append(lines, logLine{key: k, level: level, msg: msg, suppressed: e.suppressed, args: args})
		e.logged, e.suppressed, e.level, e.msg = now, 0, level, msg
	default:
		e.suppressed++
		e.level, e.msg = level, msg
	}
	l.mu.Unlock()
	l.write(lines)
}

// Flush writes a line for each pair whose interval has passed with
// events suppressed, and forgets the pairs quiet for an interval.
func (l *LogLimiter) Flush() {
	l.mu.Lock()
	lines := l.flush(l.now(), false)
	l.mu.Unlock()
	l.write(lines)
}

// FlushAll writes a line for each pair with events suppressed, whatever
// its interval, and forgets every pair (a server stopping).
func (l *LogLimiter) FlushAll() {
	l.mu.Lock()
	lines := l.flush(l.now(), true)
	l.mu.Unlock()
	l.write(lines)
}

// run flushes every interval until ctx ends, then flushes all.
func (l *LogLimiter) run(ctx context.Context) {
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.Flush()
		case <-ctx.Done():
			l.FlushAll()
			return
		}
	}
}

// flush collects the lines of the pairs due (all: every pair with a
// count) and drops the quiet ones. Call it under l.mu.
func (l *LogLimiter) flush(now time.Time, all bool) []logLine {
	var lines []logLine
	for k, e := range l.entries {
		due := all || now.Sub(e.logged) >= l.every
		switch {
		case !due:
		case e.suppressed > 0:
			lines = append(lines, logLine{key: k, level: e.level, msg: e.msg, suppressed: e.suppressed})
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

func (l *LogLimiter) write(lines []logLine) {
	for _, ln := range lines {
		client := "other"
		if !ln.key.other {
			client = ln.key.source.String()
		}
		args := append([]any{"client", client, "reason", ln.key.reason}, ln.args...)
		if ln.suppressed > 0 {
			args = append(args, "suppressed", ln.suppressed)
		}
		l.log.Log(context.Background(), ln.level, ln.msg, args...)
	}
}
