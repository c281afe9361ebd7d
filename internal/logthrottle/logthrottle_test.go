package logthrottle

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"plantd/internal/proctest"
)

// sink is a slog.Handler keeping each record's message and attributes.
type sink struct {
	mu   sync.Mutex
	msgs []string
	recs []map[string]string
}

func (s *sink) Enabled(context.Context, slog.Level) bool { return true }
func (s *sink) WithAttrs([]slog.Attr) slog.Handler       { return s }
func (s *sink) WithGroup(string) slog.Handler            { return s }
func (s *sink) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]string{"level": r.Level.String()}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	s.mu.Lock()
	s.msgs, s.recs = append(s.msgs, r.Message), append(s.recs, attrs)
	s.mu.Unlock()
	return nil
}

// summary is each line as "source/reason/suppressed", the source under
// the attribute key.
func (s *sink) summary(key string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.recs))
	for _, a := range s.recs {
		out = append(out, a[key]+"/"+a["reason"]+"/"+a["suppressed"])
	}
	return out
}

// accounted is the events the lines account for: one per line written
// for an event (no suppressed count), and the suppressed counts.
func (s *sink) accounted() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, a := range s.recs {
		if a["suppressed"] == "" {
			n++
			continue
		}
		k, err := strconv.ParseInt(a["suppressed"], 10, 64)
		if err != nil {
			panic(err)
		}
		n += k
	}
	return n
}

// clocked returns a limiter on a clock the test sets, starting at t0.
func clocked(s *sink, max int) (*Limiter, *time.Time, time.Time) {
	l := New(slog.New(s), "client", 0, max)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	l.now = func() time.Time { return now }
	return l, &now, t0
}

// TestLimiter: the first event of a source and reason is logged, the
// rest of its minute counted and reported on the next line; sources past
// the bound share one line per reason.
func TestLimiter(t *testing.T) {
	const a, b = "192.0.2.1", "192.0.2.2"
	type event struct {
		at     time.Duration // since the start
		source string
		reason string
	}
	for _, tc := range []struct {
		name   string
		max    int
		events []event
		flush  time.Duration // Flush at this time (0: none), then FlushAll
		// want is the lines written, as "client/reason/suppressed".
		want []string
	}{
		{"one event", 8, []event{{0, a, "allow"}}, 0, []string{"192.0.2.1/allow/"}},
		{"a burst within the minute", 8,
			[]event{{0, a, "allow"}, {time.Second, a, "allow"}, {2 * time.Second, a, "allow"}},
			0, []string{"192.0.2.1/allow/", "192.0.2.1/allow/2"}},
		{"the next minute's event carries the count", 8,
			[]event{{0, a, "allow"}, {time.Second, a, "allow"}, {61 * time.Second, a, "allow"}, {62 * time.Second, a, "allow"}},
			0, []string{"192.0.2.1/allow/", "192.0.2.1/allow/1", "192.0.2.1/allow/1"}},
		{"sources and reasons apart", 8,
			[]event{{0, a, "allow"}, {0, b, "allow"}, {0, a, "write"}, {time.Second, b, "allow"}},
			0, []string{"192.0.2.1/allow/", "192.0.2.2/allow/", "192.0.2.1/write/", "192.0.2.2/allow/1"}},
		{"a flush after the minute reports, quiet pairs go", 8,
			[]event{{0, a, "allow"}, {time.Second, a, "allow"}, {0, b, "allow"}},
			90 * time.Second, []string{"192.0.2.1/allow/", "192.0.2.2/allow/", "192.0.2.1/allow/1"}},
		{"past the bound: one shared pair", 1,
			[]event{{0, a, "allow"}, {0, b, "allow"}, {0, "192.0.2.3", "allow"}},
			0, []string{"192.0.2.1/allow/", "other/allow/", "other/allow/1"}},
		{"a source named like the shared one stays apart", 1,
			[]event{{0, Other, "allow"}, {0, a, "allow"}},
			0, []string{"other/allow/", "other/allow/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sink{}
			l, now, t0 := clocked(s, tc.max)
			for _, e := range tc.events {
				*now = t0.Add(e.at)
				l.Log(slog.LevelInfo, e.source, e.reason, "refused")
			}
			if tc.flush > 0 {
				*now = t0.Add(tc.flush)
				l.Flush()
				if n := len(l.entries); n != 1 {
					t.Errorf("%d pairs kept after the flush, want 1", n)
				}
			}
			l.FlushAll()
			if got := s.summary("client"); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("lines %q, want %q", got, tc.want)
			}
			if len(l.entries) != 0 {
				t.Errorf("%d pairs kept after FlushAll", len(l.entries))
			}
			if n := l.Events(); n != int64(len(tc.events)) {
				t.Errorf("Events() = %d, want %d", n, len(tc.events))
			}
		})
	}
}

// TestLimiterFlushLine: a line written by a flush carries the message
// and level of the pair's last event, the source under the limiter's
// key, and no args; a line written by an event carries its args after
// the source and reason, in order.
func TestLimiterFlushLine(t *testing.T) {
	s := &sink{}
	l, now, t0 := clocked(s, 0)
	l.key = "topic"
	l.Log(slog.LevelWarn, "plantd/gw/x/set", "invalid", "first", "problem", "p", "size", 3)
	l.Log(slog.LevelInfo, "plantd/gw/x/set", "invalid", "second", "problem", "q")
	*now = t0.Add(time.Minute)
	l.Flush()
	if len(s.msgs) != 2 || s.msgs[0] != "first" || s.msgs[1] != "second" {
		t.Fatalf("messages %q, want first and second", s.msgs)
	}
	first, flushed := s.recs[0], s.recs[1]
	if first["topic"] != "plantd/gw/x/set" || first["problem"] != "p" || first["size"] != "3" || first["level"] != "WARN" {
		t.Errorf("event line %v", first)
	}
	if flushed["topic"] != "plantd/gw/x/set" || flushed["reason"] != "invalid" || flushed["suppressed"] != "1" ||
		flushed["problem"] != "" || flushed["level"] != "INFO" {
		t.Errorf("flushed line %v, want the last event's message and level with suppressed=1 and no args", flushed)
	}
}

// TestLimiterMinutes: 5,000 events within a minute are one line; the
// first after the minute is logged with the 4,999 between; a pair with
// events suppressed is reported by Flush after its minute and its minute
// starts again; after a quiet minute it is forgotten.
func TestLimiterMinutes(t *testing.T) {
	s := &sink{}
	l, now, t0 := clocked(s, 0)
	for range 5000 {
		l.Log(slog.LevelInfo, "a", "x", "refused")
	}
	l.Log(slog.LevelInfo, "a", "y", "refused")
	*now = t0.Add(time.Minute)
	l.Log(slog.LevelInfo, "a", "x", "refused")
	l.Log(slog.LevelInfo, "a", "x", "refused") // suppressed
	want := []string{"a/x/", "a/y/", "a/x/4999"}
	if got := s.summary("client"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	*now = t0.Add(2 * time.Minute)
	l.Flush()
	want = append(want, "a/x/1")
	if got := s.summary("client"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the flush: lines %q, want %q", got, want)
	}
	if len(l.entries) != 1 {
		t.Errorf("%d pairs after the flush, want a/x (its minute started again)", len(l.entries))
	}
	*now = t0.Add(3 * time.Minute)
	l.Flush()
	if len(l.entries) != 0 || len(s.msgs) != len(want) {
		t.Errorf("after a quiet minute: %d pairs, %d lines, want none kept and no line", len(l.entries), len(s.msgs)-len(want))
	}
}

// TestLimiterFlood: 10,000 events from 5,000 sources keep at most the
// bound of pairs, write at most two lines per pair kept, and count every
// event.
func TestLimiterFlood(t *testing.T) {
	s := &sink{}
	l := New(slog.New(s), "client", 0, 64)
	for i := range 10000 {
		l.Log(slog.LevelInfo, fmt.Sprint("10.0.", i%5000>>8, ".", i%5000&0xff), "allow", "refused")
		if len(l.entries) > 64+1 {
			t.Fatalf("%d pairs kept after %d events, bound 64 and the shared one", len(l.entries), i+1)
		}
	}
	l.FlushAll()
	// A line per pair (64 and the shared one) and one more each when
	// FlushAll reports their counts.
	if n := len(s.msgs); n > 2*(64+1) {
		t.Errorf("%d lines for 10,000 events, want at most %d", n, 2*(64+1))
	}
	if n := s.accounted(); n != 10000 {
		t.Errorf("the lines account for %d events, want 10,000", n)
	}
	if n := l.Events(); n != 10000 {
		t.Errorf("Events() = %d, want 10,000", n)
	}
}

// TestLimiterStart: the timer Start sets flushes every interval, and
// stop flushes all that is left.
func TestLimiterStart(t *testing.T) {
	s := &sink{}
	l := New(slog.New(s), "client", 20*time.Millisecond, 0)
	stop := l.Start()
	l.Log(slog.LevelInfo, "a", "x", "refused")
	l.Log(slog.LevelInfo, "a", "x", "refused")
	proctest.WaitValue(t, "a flush (last: the summary)", 10*time.Second, func() ([]string, bool) {
		return s.summary("client"), s.accounted() == 2
	})
	l.Log(slog.LevelInfo, "b", "x", "refused")
	l.Log(slog.LevelInfo, "b", "x", "refused")
	stop()
	if n := s.accounted(); n != 4 {
		t.Errorf("the lines account for %d events after stop, want 4: %q", n, s.summary("client"))
	}
}
