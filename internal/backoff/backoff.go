// Package backoff is plantd's one rule for waiting after failures: an
// exponential wait with a cap and optional jitter. Its users keep the
// count of consecutive failures and the clock; the package only computes
// the wait, so that it is pure and tested on its own.
//
// # Import boundary
//
// This package imports only the standard library. Any plantd package may
// import it.
//
// Imports: none
package backoff

import "time"

// Exp is an exponential backoff. The wait after n consecutive failures is
// First·2^(n-1), capped at Max; no failure (n ≤ 0) waits nothing. Jitter
// in [0, 1] shortens a wait by up to that fraction, so that many waiters
// that failed together do not come back together; a wait never exceeds
// Max. The zero Exp never waits.
type Exp struct {
	First, Max time.Duration
	Jitter     float64
}

// Wait returns the wait after n consecutive failures. r in [0, 1) picks
// the jitter (rand.Float64): the wait is scaled by 1 - Jitter·r.
func (b Exp) Wait(n int, r float64) time.Duration {
	if n <= 0 || b.First <= 0 || b.Max <= 0 {
		return 0
	}
	d := min(b.First, b.Max)
	for i := 1; i < n && d < b.Max; i++ {
		if d > b.Max/2 {
			d = b.Max
			break
		}
		d *= 2
	}
	if b.Jitter > 0 {
		d -= time.Duration(float64(d) * min(b.Jitter, 1) * min(max(r, 0), 1))
	}
	return d
}
