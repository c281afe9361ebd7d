package gridinput

import "time"

// debounce holds a pattern of contacts until it has been read unchanged
// for d.
type debounce struct {
	d     time.Duration
	key   string    // the pattern read last
	since time.Time // its first read in a row (wall)
	has   bool
}

// see takes a read of the pattern key at now: whether it stands (read
// unchanged for d; at once for d 0), else when it will.
func (b *debounce) see(key string, now time.Time) (at time.Time, stands bool) {
	if !b.has || key != b.key {
		b.key, b.since, b.has = key, now, true
	}
	at = b.since.Add(b.d)
	return at, !now.Before(at)
}

// reset forgets the pattern: the next read starts the debounce anew.
func (b *debounce) reset() { b.has = false }
