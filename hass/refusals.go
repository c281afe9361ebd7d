package hass

import (
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Bounds of what a command may carry and of what its log lines quote.
const (
	// MaxCommandPayload is the largest command payload handled: a
	// larger one is refused before it is parsed or copied (Home
	// Assistant's commands are a number or a word).
	MaxCommandPayload = 64 << 10
	// excerptLen bounds the bytes of a payload a log line quotes;
	// topicExcerptLen those of a topic or an id.
	excerptLen      = 64
	topicExcerptLen = 128
	// refusalEvery is the least time between two log lines of refused
	// commands of one topic and reason: the first is logged at once,
	// the next ones are counted and logged at most once a minute with
	// the count (the command topics are open to whoever the broker lets
	// publish).
	refusalEvery = time.Minute
	// maxRefusalKeys bounds the topics and reasons remembered: beyond
	// it, refusals of further topics share one key per reason.
	maxRefusalKeys = 256
)

// excerpt is at most n bytes of b as a string for a log line: cut at a
// rune boundary, invalid UTF-8 as U+FFFD, and "…" when cut. The log
// handler quotes and escapes it.
func excerpt(b []byte, n int) string {
	cut := len(b) > n
	if cut {
		b = b[:n]
		// Drop a rune the cut split.
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if cut {
		s += "…"
	}
	return s
}

// refusals rate-limits the log lines of refused commands per topic and
// reason: admit lets the first through and then one a minute, with the
// number it held back since; flush hands over the counts of keys that
// went quiet, so that none is lost. Memory is bounded by
// maxRefusalKeys. Safe for paho's handler and Run at once.
type refusals struct {
	mu   sync.Mutex
	now  func() time.Time
	keys map[refusalKey]*refusalCount
	// total counts every refusal, logged or held back.
	total int64
}

// refusalKey is a topic (cut to topicExcerptLen, or "" for the
// overflow of topics beyond maxRefusalKeys) and a reason.
type refusalKey struct{ topic, reason string }

type refusalCount struct {
	// logged is when the key's last line was written; held the
	// refusals not logged since.
	logged time.Time
	held   int
}

func newRefusals(now func() time.Time) *refusals {
	return &refusals{now: now, keys: map[refusalKey]*refusalCount{}}
}

// admit reports whether a refusal of topic for reason is logged now, and
// how many of the key were held back since its last line.
func (r *refusals) admit(topic, reason string) (ok bool, held int) {
	now := r.now()
	k := refusalKey{topic, reason}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	c := r.keys[k]
	if c == nil {
		if len(r.keys) >= maxRefusalKeys {
			k.topic = ""
			c = r.keys[k]
		}
		if c == nil {
			r.keys[k] = &refusalCount{logged: now}
			return true, 0
		}
	}
	if now.Sub(c.logged) < refusalEvery {
		c.held++
		return false, 0
	}
	held, c.held, c.logged = c.held, 0, now
	return true, held
}

// count returns the number of refusals so far.
func (r *refusals) count() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// heldBack is a key's count of refusals not logged, as flush returns it.
type heldBack struct {
	refusalKey
	n int
}

// flush returns the keys whose last line is a minute old with refusals
// held back since (their count is reset and the key's minute starts
// again) and forgets the keys quiet for a minute.
func (r *refusals) flush() []heldBack {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []heldBack
	for k, c := range r.keys {
		if now.Sub(c.logged) < refusalEvery {
			continue
		}
		if c.held == 0 {
			delete(r.keys, k)
			continue
		}
		out = append(out, heldBack{k, c.held})
		c.held, c.logged = 0, now
	}
	return out
}
