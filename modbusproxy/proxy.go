package modbusproxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"plantd/modbus"
)

// Defaults of a proxy.
const (
	DefaultRequestsPerSecond = 10
	DefaultBurst             = 20
	// maxClients bounds the token buckets kept; the oldest idle one goes
	// first.
	maxClients = 1024
)

// Config is a proxy's configuration.
type Config struct {
	// Device names the device in the log.
	Device string
	// Client is the device's client: its unit on the endpoint plantd
	// polls it through.
	Client *modbus.Client
	// Held returns the register ranges of the device a third party may
	// not write now (nil: none).
	Held func() []modbus.Range
	// RequestsPerSecond and Burst are each client's token bucket
	// (defaults DefaultRequestsPerSecond, DefaultBurst).
	RequestsPerSecond float64
	Burst             int
	// MaxConns bounds the open connections (modbus.ServerConfig).
	MaxConns int
}

// Proxy forwards the requests of third-party clients to one device. It is
// a modbus.Handler.
type Proxy struct {
	cfg Config
	log *slog.Logger
	srv *modbus.Server

	mu      sync.Mutex
	buckets map[netip.Addr]*bucket
	ctx     context.Context
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time
}

var _ modbus.Handler = (*Proxy)(nil)

// New makes the proxy of a device.
func New(cfg Config, log *slog.Logger) *Proxy {
	if cfg.RequestsPerSecond <= 0 {
		cfg.RequestsPerSecond = DefaultRequestsPerSecond
	}
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultBurst
	}
	p := &Proxy{cfg: cfg, log: log, buckets: map[netip.Addr]*bucket{}, ctx: context.Background()}
	p.srv = modbus.NewServer(modbus.ServerConfig{MaxConns: cfg.MaxConns}, p, log)
	return p
}

// Serve answers Modbus TCP on ln until ctx ends.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	p.mu.Lock()
	p.ctx = ctx
	p.mu.Unlock()
	p.log.Info("modbus proxy listening", "device", p.cfg.Device, "addr", ln.Addr().String())
	return p.srv.Serve(ctx, ln)
}

// Stats returns the server's counters.
func (p *Proxy) Stats() modbus.ServerStats { return p.srv.Stats() }

// admit takes a token of the client's bucket; false when it is empty.
func (p *Proxy) admit(client netip.Addr) bool {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.buckets[client]
	if b == nil {
		if len(p.buckets) >= maxClients {
			var oldest netip.Addr
			for a, o := range p.buckets {
				if !oldest.IsValid() || o.last.Before(p.buckets[oldest].last) {
					oldest = a
				}
			}
			delete(p.buckets, oldest)
		}
		b = &bucket{lim: rate.NewLimiter(rate.Limit(p.cfg.RequestsPerSecond), p.cfg.Burst)}
		p.buckets[client] = b
	}
	b.last = now
	return b.lim.AllowN(now, 1)
}

// errBusy answers a request beyond the client's rate or to a held
// control.
var errBusy = modbus.Exception(modbus.ExceptionServerDeviceBusy)

// held reports whether registers addr..addr+n-1 touch a held range.
func (p *Proxy) held(addr, n uint16) bool {
	if p.cfg.Held == nil {
		return false
	}
	for _, r := range p.cfg.Held() {
		if int(addr) < int(r.Addr)+int(r.Count) && int(r.Addr) < int(addr)+int(n) {
			return true
		}
	}
	return false
}

// answer maps the device's error onto the client's exception: the
// device's own exception as it was, anything else 0x0B.
func (p *Proxy) answer(req *modbus.Request, err error) error {
	if err == nil {
		return nil
	}
	var ex *modbus.ExceptionError
	if errors.As(err, &ex) {
		return modbus.Exception(ex.Code)
	}
	p.log.Debug("proxied request failed", "device", p.cfg.Device, "client", req.Client.String(), "function", req.Function, "err", err)
	return modbus.Exception(modbus.ExceptionGatewayTargetDeviceFailedToRespond)
}

func (p *Proxy) context() context.Context {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ctx
}

// Registers forwards functions 3, 4, 6 and 16.
func (p *Proxy) Registers(req *modbus.Request) ([]uint16, error) {
	if !p.admit(req.Client) {
		return nil, errBusy
	}
	if req.IsWrite() && p.held(req.Addr, req.Quantity) {
		p.log.Info("proxied write refused: plantd holds the control", "device", p.cfg.Device, "client", req.Client.String(), "addr", req.Addr)
		return nil, errBusy
	}
	ctx, c := p.context(), p.cfg.Client
	switch req.Function {
	case 3:
		regs, err := c.ReadHoldingRegisters(ctx, req.Addr, req.Quantity, nil)
		return regs, p.answer(req, err)
	case 4:
		regs, err := c.ReadInputRegisters(ctx, req.Addr, req.Quantity, nil)
		return regs, p.answer(req, err)
	}
	return nil, p.answer(req, c.WriteRegisters(ctx, req.Addr, req.Regs))
}

// Bits forwards functions 1, 2, 5 and 15.
func (p *Proxy) Bits(req *modbus.Request) ([]bool, error) {
	if !p.admit(req.Client) {
		return nil, errBusy
	}
	ctx, c := p.context(), p.cfg.Client
	switch req.Function {
	case 1:
		bits, err := c.ReadCoils(ctx, req.Addr, req.Quantity, nil)
		return bits, p.answer(req, err)
	case 2:
		bits, err := c.ReadDiscreteInputs(ctx, req.Addr, req.Quantity, nil)
		return bits, p.answer(req, err)
	case 5:
		return nil, p.answer(req, c.WriteCoil(ctx, req.Addr, req.Bits[0]))
	}
	return nil, p.answer(req, c.WriteCoils(ctx, req.Addr, req.Bits))
}
