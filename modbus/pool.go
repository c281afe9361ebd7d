package modbus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"plantd/modbus/serialline"
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

// Defaults of [SerialConfig].
const (
	DefaultBaud     = 9600
	DefaultDataBits = 8
	DefaultParity   = "N"
	DefaultStopBits = 1
)

// withDefaults returns s with zero values replaced by the defaults.
func (s SerialConfig) withDefaults() SerialConfig {
	if s.Baud == 0 {
		s.Baud = DefaultBaud
	}
	if s.DataBits == 0 {
		s.DataBits = DefaultDataBits
	}
	s.Parity = strings.ToUpper(strings.TrimSpace(s.Parity))
	if s.Parity == "" {
		s.Parity = DefaultParity
	}
	if s.StopBits == 0 {
		s.StopBits = DefaultStopBits
	}
	return s
}

// Validate reports the first setting that a serial line cannot have, as
// "baud 9601 is not a standard rate (...)". Zero values are valid: they
// mean the defaults.
func (s SerialConfig) Validate() error {
	s = s.withDefaults()
	switch {
	case !slices.Contains(serialline.StandardBauds, s.Baud):
		return fmt.Errorf("baud %d is not a standard rate (%s)", s.Baud, joinInts(serialline.StandardBauds))
	case s.DataBits != 7 && s.DataBits != 8:
		return fmt.Errorf("dataBits %d: want 7 or 8", s.DataBits)
	case s.Parity != "N" && s.Parity != "E" && s.Parity != "O":
		return fmt.Errorf("parity %q: want N, E or O", s.Parity)
	case s.StopBits != 1 && s.StopBits != 2:
		return fmt.Errorf("stopBits %d: want 1 or 2", s.StopBits)
	}
	return nil
}

// FrameGap is the silence the Modbus serial line specification (V1.02,
// 2.5.1.1) asks between two RTU frames: 3.5 character times at the baud,
// and 1.75 ms at rates above 19200 baud. A character counts 11 bits, as
// the specification does.
func (s SerialConfig) FrameGap() time.Duration {
	s = s.withDefaults()
	if s.Baud > 19200 {
		return 1750 * time.Microsecond
	}
	return time.Duration(3.5 * 11 * float64(time.Second) / float64(s.Baud))
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
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
	// Serial is the line's settings for TransportRTU; other transports
	// ignore it.
	Serial SerialConfig
	// FrameGap is the least silence between the end of one exchange and
	// the next request. For TransportRTU the larger of it and the line's
	// 3.5 character times ([SerialConfig.FrameGap]) is kept; for
	// TransportRTUOverTCP it is what the converter needs (default 0: the
	// converter keeps the line's gap itself); TransportTCP ignores it.
	FrameGap time.Duration
	// ConnectDelay is how long to wait after a new connect before the first
	// request. Some inverters drop the first request after a connect. The
	// default is 0.
	ConnectDelay time.Duration
	// Timeout is the default per-request timeout (also used for connects) of
	// the endpoint's clients. Default 2s.
	Timeout time.Duration
}

// Validate reports a config that no endpoint can serve: an unknown
// transport, an empty address, or (TransportRTU) a serial setting the line
// cannot have. Requests on an endpoint made from an invalid config fail
// with [ErrInvalid] and this error.
func (c EndpointConfig) Validate() error {
	c = c.withDefaults()
	switch c.Transport {
	case TransportTCP, TransportRTUOverTCP:
		if host, _, err := net.SplitHostPort(c.Address); err != nil || host == "" {
			return fmt.Errorf("address %q: want host:port", c.Address)
		}
	case TransportRTU:
		if c.Address == "" {
			return errors.New("address: want the serial device's path")
		}
		if err := c.Serial.Validate(); err != nil {
			return fmt.Errorf("serial: %w", err)
		}
	default:
		return fmt.Errorf("transport %q: want %s, %s or %s", c.Transport, TransportTCP, TransportRTUOverTCP, TransportRTU)
	}
	return nil
}

// withDefaults returns c with its address normalised and zero or negative
// durations replaced by defaults.
func (c EndpointConfig) withDefaults() EndpointConfig {
	if c.Transport == "" {
		c.Transport = TransportTCP
	}
	if c.Transport == TransportRTU {
		c.Address = strings.TrimSpace(c.Address)
		c.Serial = c.Serial.withDefaults()
	} else {
		c.Address = normalizeAddress(c.Address)
		c.Serial = SerialConfig{}
	}
	if c.Transport == TransportTCP || c.FrameGap < 0 {
		c.FrameGap = 0
	}
	if c.ConnectDelay < 0 {
		c.ConnectDelay = 0
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// frameGap is the silence kept before each request.
func (c EndpointConfig) frameGap() time.Duration {
	if c.Transport == TransportRTU {
		return max(c.FrameGap, c.Serial.FrameGap())
	}
	return c.FrameGap
}

// key is the pool's key of the endpoint: its transport and address.
func (c EndpointConfig) key() string { return string(c.Transport) + " " + c.Address }

// normalizeAddress adds the default port to an address without one.
func normalizeAddress(addr string) string {
	addr = strings.TrimSpace(addr)
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(strings.Trim(addr, "[]"), DefaultPort)
}

// Pool owns the Modbus endpoints of the process: one per transport and
// address (a TCP address, a converter's address, a serial line), each with
// at most one socket or open port. main creates one Pool and closes it at
// exit. A Pool is safe for concurrent use.
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

// Endpoint returns the one endpoint for cfg.Transport and cfg.Address.
// Every call with the same transport and address returns the same
// *Endpoint and so shares its socket or serial port: the devices on one
// RS485 bus share one endpoint, the bus's one master. The first call's
// config wins, and a later call with another config logs a warning. After
// [Pool.Close], it returns a closed endpoint whose requests fail with
// [ErrClosed].
func (p *Pool) Endpoint(cfg EndpointConfig) *Endpoint {
	cfg = cfg.withDefaults()
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.endpoints[cfg.key()]; ok {
		if e.cfg != cfg {
			p.log.Warn("modbus endpoint already configured, keeping first config",
				"endpoint", cfg.Address, "transport", cfg.Transport,
				"config", fmt.Sprintf("%+v", e.cfg), "ignored", fmt.Sprintf("%+v", cfg))
		}
		return e
	}
	log := p.log.With("endpoint", cfg.Address)
	if cfg.Transport != TransportTCP {
		log = log.With("transport", cfg.Transport)
	}
	e := newEndpoint(cfg, log)
	if p.closed {
		_ = e.close() // not connected: nothing to fail
		return e
	}
	p.endpoints[cfg.key()] = e
	return e
}

// Stats returns the counters of every endpoint of the pool, sorted by
// address, then transport.
func (p *Pool) Stats() []EndpointStats {
	p.mu.Lock()
	out := make([]EndpointStats, 0, len(p.endpoints))
	for _, e := range p.endpoints {
		out = append(out, e.Stats())
	}
	p.mu.Unlock()
	// sort.Slice, not slices.SortFunc: no sort instantiated for this
	// struct in the binary (issue 43), and the list is short.
	sort.Slice(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		return cmp.Or(strings.Compare(a.Address, b.Address), strings.Compare(string(a.Transport), string(b.Transport))) < 0
	})
	return out
}

// Close closes every endpoint and its socket or port. A request in flight
// is first allowed to finish (at most its timeout). Later requests fail
// with [ErrClosed]. Close is idempotent.
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

// maxADU is the largest Modbus frame: a Modbus TCP frame of 7 bytes MBAP
// header and 253 bytes PDU. An RTU frame (unit id, PDU, CRC) is at most 256
// bytes.
const maxADU = 260

// Endpoint is one Modbus TCP address, serial converter or serial line with
// at most one socket or open port, shared by the [Client]s of its unit
// ids: the one master of the link. Get it from [Pool.Endpoint].
type Endpoint struct {
	cfg EndpointConfig
	log *slog.Logger
	// invalid is cfg.Validate's error: every request fails with it.
	invalid error
	// gap is the silence kept before each request (cfg.frameGap).
	gap time.Duration

	// turn serialises requests (control requests first, turn.go); the
	// holder owns the fields below it. Waiting for it honours the
	// caller's context.
	turn      turn
	done      chan struct{} // closed by close
	closeOnce sync.Once

	link      link // open while connected
	connected bool
	readyAt   time.Time // first request allowed after ConnectDelay
	idleSince time.Time // end of the last exchange, for the frame gap
	// connectFailed counts the connects that failed through the address
	// (not a caller's context), and lastConnectErr is the last one's
	// error: requests that waited for their turn while a connect failed
	// fail with its error instead of each trying again (acquire, do).
	// connectFailed is read before the turn, so it is atomic.
	connectFailed  atomic.Uint64
	lastConnectErr error
	// framer encodes requests and checks answers with goburrow's packager
	// of the transport (framing.go).
	framer framer
	rbuf   [maxADU]byte // answer frame; before the exchange the request PDU data (requestData)
	x      exchange     // the request in flight

	created time.Time
	stats   counters
}

func newEndpoint(cfg EndpointConfig, log *slog.Logger) *Endpoint {
	e := &Endpoint{
		cfg:     cfg,
		log:     log,
		gap:     cfg.frameGap(),
		done:    make(chan struct{}),
		framer:  newFramer(cfg),
		created: time.Now(),
	}
	if err := cfg.Validate(); err != nil {
		e.invalid = fmt.Errorf("%w: endpoint config: %w", ErrInvalid, err)
	}
	return e
}

// Address returns the endpoint's host:port or serial device path.
func (e *Endpoint) Address() string { return e.cfg.Address }

// Transport returns the endpoint's transport.
func (e *Endpoint) Transport() Transport { return e.cfg.Transport }

// Config returns the endpoint's config with defaults applied.
func (e *Endpoint) Config() EndpointConfig { return e.cfg }

// Unit returns a client for one unit id on this endpoint. A timeout of 0 (or
// less) means the endpoint's Timeout. Clients are cheap. All clients of an
// endpoint share its socket or port and take turns.
func (e *Endpoint) Unit(id byte, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = e.cfg.Timeout
	}
	return &Client{ep: e, unit: id, timeout: timeout}
}

// ControlUnit is Unit for a client whose requests take the endpoint's
// turn before every ordinary request waiting for it (turn.go): grid
// control's, whose writes must renew a limit within the device's
// reversion timeout however many polls are queued on its bus.
func (e *Endpoint) ControlUnit(id byte, timeout time.Duration) *Client {
	c := e.Unit(id, timeout)
	c.class = classControl
	return c
}

// EndpointStats are the counters of an endpoint since it was created: for
// a serial line or a converter, the bus's. plantd exports them at /metrics
// (cmd/plantd, [Pool.Stats]). Counting costs a few atomic adds per request.
type EndpointStats struct {
	// Address is the endpoint's host:port or serial device path.
	Address string
	// Transport is the endpoint's transport.
	Transport Transport
	// Connected reports whether a socket or port is open now.
	Connected bool
	// Requests counts requests written to the socket or line.
	Requests uint64
	// Failures counts requests without a valid answer (I/O error, timeout,
	// mismatch, malformed frame): the sum of the four counts below. Each
	// one closed the socket (on a serial line: only I/O errors close the
	// port; see the package doc).
	Failures uint64
	// Exceptions counts Modbus exception answers.
	Exceptions uint64
	// Timeouts, Mismatches, Malformed and IOErrors (any other failure:
	// EOF, reset) count failures of those kinds.
	Timeouts, Mismatches, Malformed, IOErrors uint64
	// CRCErrors counts RTU answers whose CRC was wrong. Each one also
	// counts in Malformed.
	CRCErrors uint64
	// BytesWritten and BytesRead count the bytes of the frames written and
	// read (RTU: the bytes on the wire; TCP: the Modbus frames, without
	// the TCP/IP headers). Bytes discarded from a serial line after a
	// failure count as read.
	BytesWritten, BytesRead uint64
	// Busy is the time spent in exchanges, from the request's write to the
	// answer's last byte or the failure (on a serial line after a failure,
	// the drain before the next write too). Utilisation is Busy / Elapsed:
	// on a serial line, the share of time the bus carried plantd's frames,
	// the devices' turnaround and the waits for dead units; the frame gaps
	// are not in it.
	Busy time.Duration
	// Elapsed is the time since the endpoint was created.
	Elapsed time.Duration
	// Waiting is the number of requests waiting for their turn now.
	Waiting int64
	// Connects counts successful connects (serial: port opens), and
	// ConnectFailures failed ones.
	Connects, ConnectFailures uint64
}

// Utilisation is Busy / Elapsed, in 0..1 (0 before any time elapsed).
func (s EndpointStats) Utilisation() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return min(1, float64(s.Busy)/float64(s.Elapsed))
}

type counters struct {
	connected                                 atomic.Bool
	waiting                                   atomic.Int64
	requests, exceptions                      atomic.Uint64
	timeouts, mismatches, malformed, ioErrors atomic.Uint64
	crcErrors                                 atomic.Uint64
	written, read                             atomic.Uint64
	busy                                      atomic.Int64 // nanoseconds
	connects, connectFailures                 atomic.Uint64
}

// Stats returns a snapshot of the endpoint's counters. It does not wait for a
// request in flight.
func (e *Endpoint) Stats() EndpointStats {
	c := &e.stats
	st := EndpointStats{
		Address:         e.cfg.Address,
		Transport:       e.cfg.Transport,
		Connected:       c.connected.Load(),
		Waiting:         c.waiting.Load(),
		Requests:        c.requests.Load(),
		Exceptions:      c.exceptions.Load(),
		Timeouts:        c.timeouts.Load(),
		Mismatches:      c.mismatches.Load(),
		Malformed:       c.malformed.Load(),
		IOErrors:        c.ioErrors.Load(),
		CRCErrors:       c.crcErrors.Load(),
		BytesWritten:    c.written.Load(),
		BytesRead:       c.read.Load(),
		Busy:            time.Duration(c.busy.Load()),
		Elapsed:         time.Since(e.created),
		Connects:        c.connects.Load(),
		ConnectFailures: c.connectFailures.Load(),
	}
	st.Failures = st.Timeouts + st.Mismatches + st.Malformed + st.IOErrors
	return st
}

// acquire waits for the endpoint's turn in class c's queue, the context
// or close. A caller that had to wait gets waited true and the count of
// failed connects when it began to wait (see connectFailed); one that got
// its turn at once pays no more than the turn's lock.
func (e *Endpoint) acquire(ctx context.Context, c class) (waited bool, failedBefore uint64, err error) {
	if !e.turn.take() {
		waited, failedBefore = true, e.connectFailed.Load()
		e.stats.waiting.Add(1)
		err = e.turn.wait(ctx, c, e.done)
		e.stats.waiting.Add(-1)
		if err != nil {
			return waited, failedBefore, err
		}
	}
	select {
	case <-e.done:
		e.turn.release()
		return waited, failedBefore, ErrClosed
	default:
		return waited, failedBefore, nil
	}
}

func (e *Endpoint) release() { e.turn.release() }

// close marks the endpoint closed, waits for the request in flight and closes
// the socket.
func (e *Endpoint) close() error {
	var err error
	e.closeOnce.Do(func() {
		close(e.done)
		// Waiters see done and leave; the request in flight ends first.
		_ = e.turn.wait(context.Background(), classControl, nil)
		defer e.release()
		if e.connected {
			if cerr := e.disconnect("close"); cerr != nil {
				err = fmt.Errorf("modbus close %s: %w", e.cfg.Address, cerr)
			}
		}
	})
	return err
}

// connect opens the socket or port. The caller holds sem.
func (e *Endpoint) connect(ctx context.Context, timeout time.Duration) error {
	t, err := requestTimeout(ctx, timeout)
	if err != nil {
		return err
	}
	l, err := openLink(ctx, e.cfg, t, &e.framer)
	if err != nil {
		e.stats.connectFailures.Add(1)
		err = classify(err)
		if ctx.Err() == nil { // the address failed, not the caller
			e.lastConnectErr = err
			e.connectFailed.Add(1)
		}
		return err
	}
	e.link = l
	e.connected = true
	e.stats.connected.Store(true)
	e.stats.connects.Add(1)
	e.readyAt = time.Now().Add(e.cfg.ConnectDelay)
	e.log.Debug("modbus connected", "connect_delay", e.cfg.ConnectDelay)
	return nil
}

// disconnect closes the socket or port. The caller holds sem.
func (e *Endpoint) disconnect(reason string) error {
	err := e.link.close()
	e.link = nil
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
