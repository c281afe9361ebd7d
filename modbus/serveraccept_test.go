package modbus

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
)

// failingListener is a real listener whose first fails accepts fail as
// when the process is out of file descriptors.
type failingListener struct {
	net.Listener
	fails  int64
	failed atomic.Int64
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.failed.Load() < l.fails {
		l.failed.Add(1)
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: fmt.Errorf("accept4: %w", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestServerAcceptFailureLogs: failed accepts (too many open files, which
// anyone who opens connections can bring about) give one line at once
// and one with the count of the rest when the server stops, not one per
// failure; the server serves once accepts work again.
func TestServerAcceptFailureLogs(t *testing.T) {
	rec := &recorder{}
	srv := NewServer(ServerConfig{}, &memHandler{}, slog.New(rec))
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	ln := &failingListener{Listener: inner, fails: n}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	c := dialFrom(t, loA, inner.Addr().String())
	if err := readOne(c, 1); err != nil {
		t.Fatalf("a read after the failed accepts: %v", err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	lines := rec.lines("accept failed")
	t.Logf("%d failed accepts, %d lines: %v", n, len(lines), lines)
	if len(lines) == 0 || len(lines) > 2 {
		t.Fatalf("%d lines for %d failed accepts, want 1 or 2", len(lines), n)
	}
	if k := len(lines) - countWithSuppressed(lines) + suppressed(lines); k != n {
		t.Errorf("the lines account for %d failed accepts, want %d", k, n)
	}
}
