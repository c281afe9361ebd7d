package proctest

import (
	"testing"
	"time"
)

// Polling intervals of WaitFor and WaitValue: the first check is at
// once, the next after minPoll, each wait twice the one before up to
// maxPoll, so a condition that holds soon is seen soon (six checks in
// the first 63 ms) and one that takes seconds is asked at most 20 times
// a second: a condition may ask plantd's HTTP API, whose default rate
// limit per credential is 20 requests a second (a faster poll gets 429).
const (
	minPoll = time.Millisecond
	maxPoll = 50 * time.Millisecond
)

// WaitFor polls cond until it holds, and fails tb (Fatal, from the test's
// goroutine) when it does not within timeout: "timed out after 5s
// waiting for <what>". what names the condition awaited ("the device
// online"); timeout is a backstop against a stuck program, not a timing
// the test relies on: choose it generous. It is the one polling wait of
// plantd's tests; a wait for a value is WaitValue, and a wait on an event
// (a channel) needs neither.
func WaitFor(tb testing.TB, what string, timeout time.Duration, cond func() bool) {
	tb.Helper()
	WaitValue(tb, what, timeout, func() (struct{}, bool) { return struct{}{}, cond() })
}

// WaitValue polls get, as WaitFor polls its condition, until it returns
// ok, and returns the value it returned then. On the timeout it fails tb
// with what, the timeout and the last value got.
func WaitValue[T any](tb testing.TB, what string, timeout time.Duration, get func() (T, bool)) T {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for wait := minPoll; ; wait = min(2*wait, maxPoll) {
		v, ok := get()
		if ok {
			return v
		}
		if !time.Now().Before(deadline) {
			if _, empty := any(v).(struct{}); empty {
				tb.Fatalf("timed out after %v waiting for %s", timeout, what)
			} else {
				tb.Fatalf("timed out after %v waiting for %s; last %+v", timeout, what, v)
			}
			return v
		}
		time.Sleep(min(wait, time.Until(deadline)+time.Millisecond))
	}
}
