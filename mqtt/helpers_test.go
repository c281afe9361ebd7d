package mqtt

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"plantd/mqtt/mqtttest"
	"plantd/plant"
	"plantd/store"
)

func newBroker(t testing.TB, users map[string]string) *mqtttest.Broker {
	return mqtttest.Start(t, mqtttest.Options{Users: users})
}

// openStore opens a store in a temporary directory (one plant "p1").
func openStore(t testing.TB, path string) *store.Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "plantd.db")
	}
	st, err := store.Open(context.Background(), store.Config{Path: path, Plants: []store.PlantInfo{{ID: "p1"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// testLogger logs to stderr with -v, else discards.
func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.DiscardHandler)
}

// runUplink starts u.Run; the returned stop cancels it and waits.
func runUplink(t testing.TB, u *Uplink) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { u.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Error("uplink did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// logSteadily hands the uplink log entries of plant p1 at about 200/s,
// as a poller would, until stop, which returns how many were taken.
func logSteadily(t testing.TB, u *Uplink) (stop func() int) {
	var logged atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(5 * time.Millisecond)
		defer tk.Stop()
		for ctx.Err() == nil {
			<-tk.C
			if u.Log(plant.LogEntry{PlantID: "p1", Code: "Test", Message: fmt.Sprint(logged.Load() + 1)}) {
				logged.Add(1)
			}
		}
	}()
	var once sync.Once
	stop = func() int {
		once.Do(func() { cancel(); <-done })
		return int(logged.Load())
	}
	t.Cleanup(func() { stop() })
	return stop
}

// outboxDepth is the number of messages in the outbox streams named (all
// streams when none is).
func outboxDepth(t testing.TB, st *store.Store, streams ...string) int {
	ss, err := st.OutboxStreams(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range ss {
		if len(streams) == 0 || slices.Contains(streams, s.Stream) {
			n += s.Depth
		}
	}
	return n
}

// getenvDuration parses a duration from the environment (0 when unset).
func getenvDuration(t testing.TB, name string) time.Duration {
	s := os.Getenv(name)
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}
