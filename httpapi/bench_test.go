package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"plantd/config"
)

// benchPaths are the live endpoints of the performance target.
var benchPaths = []string{
	"/live/v1/plants/demo/measurements/sets/EnergyBalance",
	"/live/v2/plants/demo/devices",
	"/monitoring/v1/plants/demo/measurements/sets/EnergyBalance/Day?Date=2025-06-21",
}

// benchRate lifts the per-credential rate limit out of the way of a load
// test (the default, 20/s with a burst of 40, would answer 429).
var benchRate = config.RateLimit{RequestsPerSecond: 1e9, Burst: 1 << 30}

// BenchmarkHandler serves requests in process (no network) in parallel.
func BenchmarkHandler(b *testing.B) {
	e := newEnv(b, envOpts{rate: benchRate})
	h := e.srv.Handler()
	for _, p := range benchPaths {
		b.Run(p, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req := httptest.NewRequest("GET", p, nil)
				req.Header.Set("Authorization", "Bearer "+tokStandard)
				for pb.Next() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("%s: %d", p, rec.Code)
					}
				}
			})
		})
	}
}

// TestNoMemoryGrowth serves $PLANTD_MEMTEST requests (e.g. 1000000) of the
// live endpoints in process and checks that the live heap
// after them is within 10 % of the heap after the first 10,000. Skipped
// unless PLANTD_MEMTEST is set.
func TestNoMemoryGrowth(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	n, _ := strconv.Atoi(os.Getenv("PLANTD_MEMTEST"))
	if n == 0 {
		t.Skip("PLANTD_MEMTEST not set")
	}
	e := newEnv(t, envOpts{})
	h := e.srv.Handler()
	live := benchPaths[:2]
	reqs := make([]*http.Request, len(live))
	for i, p := range live {
		reqs[i] = httptest.NewRequest("GET", p, nil)
		reqs[i].Header.Set("Authorization", "Bearer "+tokStandard)
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	serve := func(k int) {
		for i := range k {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, reqs[i%len(reqs)])
			if rec.Code != 200 {
				t.Fatalf("status %d", rec.Code)
			}
		}
	}
	serve(10000)
	after10k := heap()
	serve(n - 10000)
	afterN := heap()
	t.Logf("heap after 10k requests: %d B, after %d: %d B (%+.1f %%)", after10k, n, afterN, 100*(float64(afterN)/float64(after10k)-1))
	if float64(afterN) > 1.1*float64(after10k) {
		t.Errorf("heap grew more than 10 %%")
	}
}

// BenchmarkPostSchedule96 POSTs a day of quarter-hour limit windows (96
// commands) in process, eligibility check included; each POST overwrites
// the last one's windows.
func BenchmarkPostSchedule96(b *testing.B) {
	e := newEnv(b, envOpts{})
	h := e.srv.Handler()
	day := e.clock.Now().Add(24 * time.Hour).Truncate(24 * time.Hour)
	var sb strings.Builder
	sb.WriteString(`{"commands":[`)
	for i := range 96 {
		if i > 0 {
			sb.WriteByte(',')
		}
		s := day.Add(time.Duration(i) * 15 * time.Minute)
		fmt.Fprintf(&sb, `{"command":"opModMaxLimW","start":%q,"end":%q,"value":%d}`,
			s.UTC().Format(time.RFC3339), s.Add(15*time.Minute).UTC().Format(time.RFC3339), 30+i%60)
	}
	sb.WriteString(`]}`)
	body := sb.String()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/gridcontrol/v1/plants/demo/schedules", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tokInstaller)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("POST: %d %s", rec.Code, rec.Body)
		}
	}
}
