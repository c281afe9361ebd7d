package modbus

import "time"

// backoffJitter is the relative jitter of a reconnect wait: ±20%.
const backoffJitter = 0.2

// backoffDelay returns how long to wait before the next connect after
// failures consecutive failures. After the first failure the reconnect is
// immediate (0). After the second it is min, and every further failure doubles
// it, capped at max. r in [0, 1) picks the jitter: the wait is scaled by a
// factor in [0.8, 1.2), and it is never longer than max.
func backoffDelay(failures int, minWait, maxWait time.Duration, r float64) time.Duration {
	if failures <= 1 || maxWait <= 0 {
		return 0
	}
	d := minWait
	for i := 2; i < failures && d < maxWait; i++ {
		if d > maxWait/2 {
			d = maxWait
			break
		}
		d *= 2
	}
	d = min(d, maxWait)
	d = time.Duration(float64(d) * (1 - backoffJitter + 2*backoffJitter*r))
	return max(0, min(d, maxWait))
}
