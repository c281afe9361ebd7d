// Command benchload is a closed-loop HTTP load generator for plantd's API:
// -c connections each send GET requests back to back for -d, cycling
// through the given paths, and it reports requests per second and latency
// percentiles. Only non-2xx answers and transport errors count as errors.
//
//	go run ./scripts/benchload -url http://127.0.0.1:8080 -token T -c 64 -d 10s PATH...
//
// Imports: none
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:8080", "base URL")
	token := flag.String("token", "", "bearer token")
	conns := flag.Int("c", 64, "concurrent connections")
	dur := flag.Duration("d", 10*time.Second, "duration")
	warm := flag.Duration("warmup", time.Second, "warm-up (not measured)")
	flag.Parse()
	paths := flag.Args()
	if len(paths) == 0 {
		fmt.Fprintln(os.Stderr, "benchload: give at least one path")
		os.Exit(2)
	}
	tr := &http.Transport{MaxIdleConns: *conns, MaxIdleConnsPerHost: *conns, MaxConnsPerHost: *conns, DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	var (
		measuring atomic.Bool
		errs      atomic.Int64
		mu        sync.Mutex
		all       []time.Duration
	)
	ctx, cancel := context.WithTimeout(context.Background(), *warm+*dur)
	defer cancel()
	go func() { time.Sleep(*warm); measuring.Store(true) }()
	var wg sync.WaitGroup
	for w := range *conns {
		wg.Go(func() {
			lat := make([]time.Duration, 0, 1<<16)
			for i := w; ctx.Err() == nil; i++ {
				req, _ := http.NewRequestWithContext(ctx, "GET", *base+paths[i%len(paths)], nil)
				if *token != "" {
					req.Header.Set("Authorization", "Bearer "+*token)
				}
				start := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				took := time.Since(start)
				if ctx.Err() != nil {
					break
				}
				if !measuring.Load() {
					continue
				}
				if err != nil || resp.StatusCode/100 != 2 {
					errs.Add(1)
				}
				lat = append(lat, took)
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(all)
	pct := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(float64(len(all))*p))]
	}
	fmt.Printf("paths=%v conns=%d duration=%s requests=%d errors=%d req/s=%.0f p50=%s p90=%s p99=%s max=%s\n",
		paths, *conns, *dur, len(all), errs.Load(), float64(len(all))/dur.Seconds(),
		pct(.50), pct(.90), pct(.99), pct(1))
	if errs.Load() > 0 {
		os.Exit(1)
	}
}
