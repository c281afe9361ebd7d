package httpc

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client sends requests; the zero value is usable (no timeout).
type Client struct {
	// Timeout, if > 0, bounds a request from its dial to the end of
	// its answer's body.
	Timeout time.Duration
	// TLSConfig is the configuration of https requests (nil: the
	// defaults); ServerName defaults to the URL's host.
	TLSConfig *tls.Config
}

// ErrScheme is returned for a URL that is neither http nor https.
var ErrScheme = errors.New("httpc: unsupported scheme")

// Do sends req and returns its answer. The caller must close the answer's
// body, which closes the connection. A request with a body needs its
// ContentLength set (http.NewRequest does for bytes and strings readers)
// or is sent chunked.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	cancel := context.CancelFunc(func() {})
	if c.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
	}
	resp, err := c.do(ctx, cancel, req)
	if err != nil {
		cancel()
		if ctx.Err() != nil {
			err = ended(ctx, err)
		}
		op := req.Method
		if op == "" {
			op = http.MethodGet
		}
		return nil, &url.Error{Op: op[:1] + strings.ToLower(op[1:]), URL: req.URL.Redacted(), Err: err}
	}
	return resp, nil
}

func (c *Client) do(ctx context.Context, cancel context.CancelFunc, req *http.Request) (*http.Response, error) {
	u := req.URL
	port := u.Port()
	switch u.Scheme {
	case "http":
		if port == "" {
			port = "80"
		}
	case "https":
		if port == "" {
			port = "443"
		}
	default:
		return nil, fmt.Errorf("%w %q", ErrScheme, u.Scheme)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return nil, err
	}
	// The context's end, whenever it comes, ends every read and write
	// on the connection at once.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error) {
		stop()
		conn.Close()
		return nil, err
	}
	if u.Scheme == "https" {
		cfg := &tls.Config{}
		if c.TLSConfig != nil {
			cfg = c.TLSConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fail(err)
		}
		conn = tc
	}
	out := *req // Write reads Close; the caller's request stays as it was
	out.Close = true
	bw := bufio.NewWriter(conn)
	if err := out.Write(bw); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return fail(err)
	}
	resp.Body = &body{ReadCloser: resp.Body, ctx: ctx, done: func() { stop(); cancel(); conn.Close() }}
	return resp, nil
}

// body is an answer's body: closing it closes the connection, and a read
// the context ended reports the context's error.
type body struct {
	io.ReadCloser
	ctx  context.Context
	done func()
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.ctx.Err() != nil {
		err = ended(b.ctx, err)
	}
	return n, err
}

func (b *body) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}

// endedError is an error of a request whose context ended: it wraps the
// context's cause and the I/O error it caused, and is a timeout when the
// cause is one (url.Error.Timeout, os.IsTimeout's kind of check).
type endedError struct{ cause, err error }

func ended(ctx context.Context, err error) error {
	return &endedError{cause: context.Cause(ctx), err: err}
}

func (e *endedError) Error() string   { return e.cause.Error() + " (" + e.err.Error() + ")" }
func (e *endedError) Unwrap() []error { return []error{e.cause, e.err} }
func (e *endedError) Timeout() bool   { return errors.Is(e.cause, context.DeadlineExceeded) }
