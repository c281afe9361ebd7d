package modbus

import (
	"context"
	"io"
	"net"
	"time"
)

// openLink opens the endpoint's socket or serial port within timeout.
func openLink(ctx context.Context, cfg EndpointConfig, timeout time.Duration, f *framer) (link, error) {
	if cfg.Transport == TransportRTU {
		return openSerial(f)
	}
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", cfg.Address)
	if err != nil {
		return nil, err
	}
	l, err := newTCPLink(conn.(*net.TCPConn))
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return l, nil
}

// portableTCP makes new TCP links use the portable loop (connLink) where
// plantd's own loop is built, for benchmarks and tests that compare the
// two. Set it before the endpoints connect.
var portableTCP bool

// connLink is the portable socket loop: net.Conn's deadline, Write and
// Read. It is the TCP link where plantd's own loop (transport_unix.go) is
// not built, and a comparison for it (BenchmarkTCPLoop).
type connLink struct {
	conn net.Conn
}

func (l *connLink) exchange(x *exchange) error {
	if err := l.conn.SetDeadline(x.deadline); err != nil {
		return err
	}
	if _, err := l.conn.Write(x.req); err != nil {
		return err
	}
	for {
		m, err := l.conn.Read(x.buf[x.n:])
		if done, ferr := x.received(m); done || ferr != nil {
			return ferr
		}
		if err != nil {
			if err == io.EOF && x.n > 0 {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
}

// keep is false: a socket is closed after any failure, so that a late
// answer is never read as the next request's.
func (l *connLink) keep(error) bool { return false }

func (l *connLink) close() error { return l.conn.Close() }
