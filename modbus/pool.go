package modbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults of [EndpointConfig].
const (
	DefaultPort    = "502"
	DefaultTimeout = 2 * time.Second
)

// Transport is how an endpoint reaches its devices.
type Transport string

// The transports.
const (
	// TransportTCP is Modbus TCP (MBAP header); Address is host:port. The
	// zero Transport means it.
	TransportTCP Transport = "tcp"
	// TransportRTUOverTCP is RTU frames (unit, PDU, CRC) through a TCP
	// socket to a serial converter in transparent mode; Address is
	// host:port.
	TransportRTUOverTCP Transport = "rtu-over-tcp"
	// TransportRTU is RTU on a serial line (RS485); Address is the
	// device's path (/dev/ttyUSB0), Serial its settings.
	TransportRTU Transport = "rtu"
)

// SerialConfig is a serial line's settings (TransportRTU). Zero values
// mean 9600 baud, 8 data bits, parity N, 1 stop bit.
type SerialConfig struct {
	Baud     int
	DataBits int
	Parity   string // "N", "E" or "O"
	StopBits int
}

// EndpointConfig configures one Modbus endpoint: a TCP address, a serial
// converter's address or a serial line. Zero values mean the defaults.
type EndpointConfig struct {
	// Address is host:port (without a port, 502 is used), or a serial
	// line's device path for TransportRTU.
	Address string
	// Transport is TransportTCP (default), TransportRTUOverTCP or
	// TransportRTU.
	Transport Transport
	// Serial is the line's settings for TransportRTU.
	Serial SerialConfig
	// ConnectDelay is how long to wait after a new connect before the first
	// request. Some inverters drop the first request after a connect. The
	// default is 0.
	ConnectDelay time.Duration
	// Timeout is the default per-request timeout (also used for connects) of
	// the endpoint's clients. Default 2s.
	Timeout time.Duration
}

// withDefaults returns c with its address normalised and zero or negative
// durations replaced by defaults.
func (c EndpointConfig) withDefaults() EndpointConfig {
	c.Address = normalizeAddress(c.Address)
	if c.ConnectDelay < 0 {
		c.ConnectDelay = 0
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// normalizeAddress adds the default port to an address without one.
func normalizeAddress(addr string) string {
	addr = strings.TrimSpace(addr)
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(strings.Trim(addr, "[]"), DefaultPort)
}

// Pool owns the Modbus TCP endpoints of the process: one per address, each
// with at most one socket. main creates one Pool and closes it at exit. A Pool
// is safe for concurrent use.
type Pool struct {
	log *slog.Logger

	mu        sync.Mutex
	endpoints map[string]*Endpoint
	closed    bool
}

// NewPool returns an empty pool. A nil logger discards logs.
func NewPool(logger *slog.Logger) *Pool {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Pool{
		log:       logger,
		endpoints: make(map[string]*Endpoint),
	}
}

// Endpoint returns the one endpoint for cfg.Address. Every call with the same
// address returns the same *Endpoint and so shares its socket. The first
// call's config wins, and a later call with another config logs a warning.
// After [Pool.Close], it returns a closed endpoint whose requests fail with
// [ErrClosed].
func (p *Pool) Endpoint(cfg EndpointConfig) *Endpoint {
	cfg = cfg.withDefaults()
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.endpoints[cfg.Address]; ok {
		if e.cfg != cfg {
			p.log.Warn("modbus endpoint already configured, keeping first config",
				"endpoint", cfg.Address, "config", fmt.Sprintf("%+v", e.cfg), "ignored", fmt.Sprintf("%+v", cfg))
		}
		return e
	}
	e := newEndpoint(cfg, p.log.With("endpoint", cfg.Address))
	if p.closed {
		_ = e.close() // not connected: nothing to fail
		return e
	}
	p.endpoints[cfg.Address] = e
	return e
}

// Stats returns the counters of every endpoint of the pool, by address.
func (p *Pool) Stats() []EndpointStats {
	p.mu.Lock()
	out := make([]EndpointStats, 0, len(p.endpoints))
	for _, e := range p.endpoints {
		out = append(out, e.Stats())
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b EndpointStats) int { return strings.Compare(a.Address, b.Address) })
	return out
}

// Close closes every endpoint and its socket. A request in flight is first
// allowed to finish (at most its timeout). Later requests fail with
// [ErrClosed]. Close is idempotent.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	eps := make([]*Endpoint, 0, len(p.endpoints))
	for _, e := range p.endpoints {
		eps = append(eps, e)
	}
	p.mu.Unlock()

	errs := make([]error, len(eps))
	var wg sync.WaitGroup
	for i, e := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.close()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// maxADU is the largest Modbus TCP frame: 7 bytes MBAP header + 253 bytes PDU.
const maxADU = 260

// Endpoint is one Modbus TCP address (host:port) with at most one socket,
// shared by the [Client]s of its unit ids. Get it from [Pool.Endpoint].
type Endpoint struct {
	cfg EndpointConfig
	log *slog.Logger

	// sem serialises requests; the holder owns the fields below it. Waiting
	// for it honours the caller's context.
	sem       chan struct{}
	done      chan struct{} // closed by close
	closeOnce sync.Once

	conn      net.Conn        // open while connected
	raw       syscall.RawConn // conn's file descriptor, for roundTrip
	connected bool
	readyAt   time.Time // first request allowed after ConnectDelay
	// connectFailed counts the connects that failed through the address
	// (not a caller's context), and lastConnectErr is the last one's
	// error: requests that waited for their turn while a connect failed
	// fail with its error instead of each trying again (acquire, do).
	// connectFailed is read before the turn, so it is atomic.
	connectFailed  atomic.Uint64
	lastConnectErr error
	txID           uint16
	buf            [maxADU]byte // request frame
	rbuf           [maxADU]byte // answer frame
	// exchange is the request in flight and step its read callback.
	exchange exchange
	step     func(fd uintptr) bool

	stats counters
}

func newEndpoint(cfg EndpointConfig, log *slog.Logger) *Endpoint {
	e := &Endpoint{
		cfg:  cfg,
		log:  log,
		sem:  make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	e.step = e.exchange.step
	return e
}

// Address returns the endpoint's host:port.
func (e *Endpoint) Address() string { return e.cfg.Address }

// Config returns the endpoint's config with defaults applied.
func (e *Endpoint) Config() EndpointConfig { return e.cfg }

// Unit returns a client for one unit id on this endpoint. A timeout of 0 (or
// less) means the endpoint's Timeout. Clients are cheap. All clients of an
// endpoint share its socket and take turns.
func (e *Endpoint) Unit(id byte, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = e.cfg.Timeout
	}
	return &Client{ep: e, unit: id, timeout: timeout}
}

// EndpointStats are the counters of an endpoint since it was created.
// plantd exports them at /metrics (cmd/plantd, [Pool.Stats]). Counting
// costs one atomic add per request that succeeds, a few more per failure.
type EndpointStats struct {
	// Address is the endpoint's host:port.
	Address string
	// Connected reports whether a socket is open now.
	Connected bool
	// Requests counts requests written to the socket.
	Requests uint64
	// Failures counts requests without a valid answer (I/O error, timeout,
	// mismatch, malformed frame): the sum of the four counts below. Each
	// one closed the socket.
	Failures uint64
	// Exceptions counts Modbus exception answers.
	Exceptions uint64
	// Timeouts, Mismatches, Malformed and IOErrors (any other failure:
	// EOF, reset) count failures of those kinds.
	Timeouts, Mismatches, Malformed, IOErrors uint64
	// Waiting is the number of requests waiting for their turn now.
	Waiting int64
	// Connects counts successful connects, and ConnectFailures failed ones.
	Connects, ConnectFailures uint64
}

type counters struct {
	connected                                 atomic.Bool
	waiting                                   atomic.Int64
	requests, exceptions                      atomic.Uint64
	timeouts, mismatches, malformed, ioErrors atomic.Uint64
	connects, connectFailures                 atomic.Uint64
}

// Stats returns a snapshot of the endpoint's counters. It does not wait for a
// request in flight.
func (e *Endpoint) Stats() EndpointStats {
	c := &e.stats
	st := EndpointStats{
		Address:         e.cfg.Address,
		Connected:       c.connected.Load(),
		Waiting:         c.waiting.Load(),
		Requests:        c.requests.Load(),
		Exceptions:      c.exceptions.Load(),
		Timeouts:        c.timeouts.Load(),
		Mismatches:      c.mismatches.Load(),
		Malformed:       c.malformed.Load(),
		IOErrors:        c.ioErrors.Load(),
		Connects:        c.connects.Load(),
		ConnectFailures: c.connectFailures.Load(),
	}
	st.Failures = st.Timeouts + st.Mismatches + st.Malformed + st.IOErrors
	return st
}

// acquire waits for the endpoint's turn, the context or close. A caller
// that had to wait gets waited true and the count of failed connects when
// it began to wait (see connectFailed); one that got its turn at once pays
// no more than the channel send.
func (e *Endpoint) acquire(ctx context.Context) (waited bool, failedBefore uint64, err error) {
	select {
	case e.sem <- struct{}{}:
	default:
		waited, failedBefore = true, e.connectFailed.Load()
		e.stats.waiting.Add(1)
		select {
		case e.sem <- struct{}{}:
			e.stats.waiting.Add(-1)
		case <-ctx.Done():
			e.stats.waiting.Add(-1)
			return waited, failedBefore, ctx.Err()
		case <-e.done:
			e.stats.waiting.Add(-1)
			return waited, failedBefore, ErrClosed
		}
	}
	select {
	case <-e.done:
		<-e.sem
		return waited, failedBefore, ErrClosed
	default:
		return waited, failedBefore, nil
	}
}

func (e *Endpoint) release() { <-e.sem }

// close marks the endpoint closed, waits for the request in flight and closes
// the socket.
func (e *Endpoint) close() error {
	var err error
	e.closeOnce.Do(func() {
		close(e.done)
		e.sem <- struct{}{}
		defer e.release()
		if e.connected {
			if cerr := e.disconnect("close"); cerr != nil {
				err = fmt.Errorf("modbus close %s: %w", e.cfg.Address, cerr)
			}
		}
	})
	return err
}

// connect opens the socket. The caller holds sem.
func (e *Endpoint) connect(ctx context.Context, timeout time.Duration) error {
	t, err := requestTimeout(ctx, timeout)
	if err != nil {
		return err
	}
	if err := e.dial(ctx, t); err != nil {
		e.stats.connectFailures.Add(1)
		err = classify(err)
		if ctx.Err() == nil { // the address failed, not the caller
			e.lastConnectErr = err
			e.connectFailed.Add(1)
		}
		return err
	}
	e.connected = true
	e.stats.connected.Store(true)
	e.stats.connects.Add(1)
	e.readyAt = time.Now().Add(e.cfg.ConnectDelay)
	e.log.Debug("modbus connected", "connect_delay", e.cfg.ConnectDelay)
	return nil
}

// disconnect closes the socket. The caller holds sem.
func (e *Endpoint) disconnect(reason string) error {
	err := e.conn.Close()
	e.conn, e.raw = nil, nil
	e.connected = false
	e.stats.connected.Store(false)
	e.log.Debug("modbus disconnected", "reason", reason)
	return err
}

// waitReady waits out the ConnectDelay of a new connection. The caller holds
// sem.
func (e *Endpoint) waitReady(ctx context.Context) error {
	d := time.Until(e.readyAt)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-e.done:
		return ErrClosed
	}
}

// requestTimeout returns the smaller of timeout and what is left of the
// context's deadline, or the context's error if that is nothing.
func requestTimeout(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if left <= 0 {
			return 0, context.DeadlineExceeded
		}
		timeout = min(timeout, left)
	}
	return timeout, nil
}
