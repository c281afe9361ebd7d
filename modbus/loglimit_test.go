package modbus

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// logRecord is one line a recorder saw: its message and attributes.
type logRecord struct {
	msg   string
	attrs map[string]string
}

// recorder is a slog.Handler keeping every record.
type recorder struct {
	mu  sync.Mutex
	out []logRecord
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	lr := logRecord{msg: rec.Message, attrs: map[string]string{}}
	rec.Attrs(func(a slog.Attr) bool {
		lr.attrs[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	r.out = append(r.out, lr)
	r.mu.Unlock()
	return nil
}

// lines returns the records with message msg.
func (r *recorder) lines(msg string) []logRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logRecord
	for _, l := range r.out {
		if l.msg == msg {
			out = append(out, l)
		}
	}
	return out
}

// suppressed sums the suppressed counts of lines.
func suppressed(lines []logRecord) int {
	n := 0
	for _, l := range lines {
		var k int
		_, _ = fmt.Sscan(l.attrs["suppressed"], &k)
		n += k
	}
	return n
}

// TestLogLimiter: the first event of a source and reason is logged, the
// rest of its minute counted and reported on the next line; sources past
// the bound share one line per reason.
func TestLogLimiter(t *testing.T) {
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	type event struct {
		at     time.Duration // since the start
		source netip.Addr
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
			[]event{{0, a, "allow"}, {0, b, "allow"}, {0, netip.MustParseAddr("192.0.2.3"), "allow"}},
			0, []string{"192.0.2.1/allow/", "other/allow/", "other/allow/1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			l := NewLogLimiter(slog.New(rec), 0, tc.max)
			t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
			var now time.Time
			l.now = func() time.Time { return now }
			for _, e := range tc.events {
				now = t0.Add(e.at)
				l.Log(slog.LevelInfo, e.source, e.reason, "refused")
			}
			if tc.flush > 0 {
				now = t0.Add(tc.flush)
				l.Flush()
				if n := len(l.entries); n != 1 {
					t.Errorf("%d pairs kept after the flush, want 1", n)
				}
			}
			l.FlushAll()
			var got []string
			for _, r := range rec.lines("refused") {
				got = append(got, r.attrs["client"]+"/"+r.attrs["reason"]+"/"+r.attrs["suppressed"])
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("lines %q, want %q", got, tc.want)
			}
			if len(l.entries) != 0 {
				t.Errorf("%d pairs kept after FlushAll", len(l.entries))
			}
		})
	}
}

// TestLogLimiterFlood: 10,000 events from 5,000 sources keep at most
// the bound of pairs, write at most two lines per pair kept, and count
// every event.
func TestLogLimiterFlood(t *testing.T) {
	rec := &recorder{}
	l := NewLogLimiter(slog.New(rec), 0, 64)
	for i := range 10000 {
		src := netip.AddrFrom4([4]byte{10, 0, byte(i % 5000 >> 8), byte(i % 5000)})
		l.Log(slog.LevelInfo, src, "allow", "refused")
		if len(l.entries) > 64+1 {
			t.Fatalf("%d pairs kept after %d events, bound 64 and the shared one", len(l.entries), i+1)
		}
	}
	l.FlushAll()
	lines := rec.lines("refused")
	// A line per pair (64 and the shared one) and one more each when
	// FlushAll reports their counts.
	if len(lines) > 2*(64+1) {
		t.Errorf("%d lines for 10,000 events, want at most %d", len(lines), 2*(64+1))
	}
	if n := len(lines) + suppressed(lines) - countWithSuppressed(lines); n != 10000 {
		t.Errorf("the lines account for %d events, want 10,000", n)
	}
}

// countWithSuppressed is the lines that only report a count (written by
// a flush, not by an event).
func countWithSuppressed(lines []logRecord) int {
	n := 0
	for _, l := range lines {
		if l.attrs["suppressed"] != "" {
			n++
		}
	}
	return n
}
