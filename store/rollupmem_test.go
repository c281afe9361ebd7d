package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkRollup rolls up one 5-minute interval of 1,000 devices polled
// every second (the 20-device bench plant 50 times over; scripts/scale
// 1000 50 in the daemon) from a real database file, as a writer does at
// its first rollup after a start (no carry, no buffers kept). It reports
// what one rollup allocates and the most the heap's objects (live and not
// yet swept) grew above the live heap before it, sampled every 100 µs
// while it runs: run it with GOGC=25 as the daemon (cmd/plantd) runs; an
// 18 MB ballast stands for the daemon's live heap at 1,000 devices, which
// sets the collector's pace. ROLLUP_BATCH sets the batch's samples
// (rollupBatchSamples); ROLLUP_FIRST=290 records from 4:50 into the
// interval only, as the first rollup after a start sees it: most of what
// a rollup allocates is per device, not per sample (13.6 MB with 10 s of
// samples, 24.3 with the whole interval when this was written; 10.6 and
// 15.6 at e3ad8b1, 9.7 and 14.5 since a chunk's scans share one chunk
// reader). At night the powers are 0 and the
// counters stand still (the simulator's inverters after sunset): every
// counter's run then spans the whole interval (31.5 MB, 11.2 since series
// reuses the run's array).
func BenchmarkRollup(b *testing.B) {
	for _, tc := range []struct {
		name  string
		night bool
	}{{"day", false}, {"night", true}} {
		b.Run(tc.name, func(b *testing.B) { benchRollup(b, tc.night) })
	}
}

func benchRollup(b *testing.B, night bool) {
	const devs = 1000
	bp := newBenchPlant(b)
	bp.night = night
	cfg := Config{Path: filepath.Join(b.TempDir(), "plantd.db"), QueueLen: DefaultQueueLen}
	if v, err := strconv.Atoi(os.Getenv("ROLLUP_BATCH")); err == nil {
		cfg.rollupBatch = v // to compare batch sizes
	}
	s := openTest(b, cfg)
	stop := runStore(b, s)
	t0 := time.Date(2026, 6, 21, 12, 0, 0, 0, time.UTC)
	n := len(bp.devs)
	first := int64(0)
	if v, err := strconv.Atoi(os.Getenv("ROLLUP_FIRST")); err == nil {
		first = int64(v) // the first second recorded: a start shortly before the interval's end
	}
	for tick := first; tick < 5*60+40; tick++ {
		t := t0.Add(time.Duration(tick) * time.Second)
		for i := range devs {
			m := bp.measurement(i%n, tick, t)
			m.DeviceID = fmt.Sprintf("%s-%02d", m.DeviceID, i/n)
			for !s.Record(m) {
				s.Flush(context.Background())
			}
		}
	}
	stop()
	ballast := make([]byte, 18<<20)
	ctx := context.Background()
	from, to := t0.UnixMilli(), t0.Add(5*time.Minute).UnixMilli()
	var peak atomic.Int64
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() int64 { metrics.Read(sample); return int64(sample[0].Value.Uint64()) }
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if _, err := s.wdb.Load().ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES ('watermark', ?)`, from); err != nil {
			b.Fatal(err)
		}
		w := newWriter(s)
		if err := w.load(ctx); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		base := heap()
		done := make(chan struct{})
		go func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(100 * time.Microsecond):
				}
				if d := heap() - base; d > peak.Load() {
					peak.Store(d)
				}
			}
		}()
		b.StartTimer()
		if err := w.rollupChunk(ctx, to); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		close(done)
		if w.wm != to {
			b.Fatalf("watermark %d, want %d", w.wm, to)
		}
		b.StartTimer()
	}
	runtime.KeepAlive(ballast)
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-MB")
}
