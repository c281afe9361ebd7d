//go:build pprof

package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"
)

// startPprof serves Go's profiles (/debug/pprof/) on the loopback address
// in PLANTD_PPROF (e.g. 127.0.0.1:6060) until ctx ends, for a developer
// chasing memory or CPU on a running gateway. Off unless set; refused on
// an address that is not loopback, since profiles show the process's
// memory. Only in a binary built with -tags pprof (net/http/pprof adds
// 0.4 MB to the stripped binary).
func startPprof(ctx context.Context, logger *slog.Logger) {
	addr := os.Getenv("PLANTD_PPROF")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		logger.Warn("PLANTD_PPROF ignored: not a loopback host:port", "addr", addr)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("pprof server", "addr", addr, "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	logger.Info("pprof serving", "addr", addr)
}
