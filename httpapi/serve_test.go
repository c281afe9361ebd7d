package httpapi

import (
	"context"
	"net"
	"os"
	"testing"
	"time"
)

// TestServeDemo serves the API fed by the simulated plant on
// $PLANTD_SERVE_ADDR for $PLANTD_SERVE_FOR (default 60s), polling the
// simulator every second as the poller would, for scripts/cloud-client.py
// and scripts/bench until cmd/plantd wires httpapi into `plantd demo`.
// Skipped unless PLANTD_SERVE_ADDR is set. Static tokens: see the tok*
// constants; OAuth client "cloud" / "cloud-secret".
func TestServeDemo(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	addr := os.Getenv("PLANTD_SERVE_ADDR")
	if addr == "" {
		t.Skip("PLANTD_SERVE_ADDR not set")
	}
	dur := time.Minute
	if v := os.Getenv("PLANTD_SERVE_FOR"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		dur = d
	}
	e := newEnv(t, envOpts{})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), dur)
	defer cancel()
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				e.clock.Add(time.Second)
				e.pollAll()
			}
		}
	}()
	t.Logf("serving on %s for %s", ln.Addr(), dur)
	if err := e.srv.Serve(ctx, ln); err != nil {
		t.Fatal(err)
	}
}
