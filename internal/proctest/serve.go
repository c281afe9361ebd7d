package proctest

import (
	"context"
	"net"
	"testing"
)

// ServeTCP runs serve (a server's Serve(ctx, ln)) on a free 127.0.0.1
// port until the test ends, then cancels it and wants it to return nil.
// It returns the port's host:port.
func ServeTCP(tb testing.TB, serve func(context.Context, net.Listener) error) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("serve %s: %v", ln.Addr(), err)
		}
	})
	return ln.Addr().String()
}
