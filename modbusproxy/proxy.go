package modbusproxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"plantd/internal/logthrottle"
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

// SettingsModels are the SunSpec models a write reaches only with
// Config.WriteSettings: the common model (1: identity, device address),
// the nameplate and basic settings (120, 121) and the IEEE 1547 DER AC
// measurement and DER capacity (701, 702: ratings, nominal values such
// as VNom).
var SettingsModels = []uint16{1, 120, 121, 701, 702}

// Model is a SunSpec model of the device and its registers (from
// discovery).
type Model struct {
	ID    uint16
	Range modbus.Range
}

// Config is a proxy's configuration.
type Config struct {
	// Device names the device in the log.
	Device string
	// Client is the device's client: its unit on the endpoint plantd
	// polls it through.
	Client *modbus.Client
	// Allow lists the client addresses that may connect (empty: every
	// client); another client's connection is closed at once.
	Allow []netip.Prefix
	// Writes lets clients write (functions 5, 6, 15, 16); without it
	// every write answers exception 1 (illegal function).
	Writes bool
	// WriteSettings lets register writes reach SettingsModels; without it
	// they answer exception 2 (illegal data address).
	WriteSettings bool
	// Models returns the device's models and their places; known is
	// false while they are not (the device not discovered yet): register
	// writes then answer exception 6 unless WriteSettings. nil: never
	// known.
	Models func() (models []Model, known bool)
	// Held returns the register ranges of the device a third party may
	// not write now (nil: none).
	Held func() []modbus.Range
	// RequestsPerSecond and Burst are each client's token bucket
	// (defaults DefaultRequestsPerSecond, DefaultBurst).
	RequestsPerSecond float64
	Burst             int
	// MaxConns and MaxConnsPerClient bound the open connections
	// (modbus.ServerConfig).
	MaxConns, MaxConnsPerClient int
}

// Proxy forwards the requests of third-party clients to one device. It is
// a modbus.Handler.
type Proxy struct {
	cfg      Config
	log      *slog.Logger
	srv      *modbus.Server
	refusals *logthrottle.Limiter // shared with srv

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
	p := &Proxy{cfg: cfg, log: log, buckets: map[netip.Addr]*bucket{}, ctx: context.Background(),
		refusals: modbus.NewRefusals(log)}
	var allow func(netip.Addr) bool
	if len(cfg.Allow) > 0 {
		allow = func(a netip.Addr) bool {
			return slices.ContainsFunc(cfg.Allow, func(p netip.Prefix) bool { return p.Contains(a) })
		}
	}
	p.srv = modbus.NewServer(modbus.ServerConfig{MaxConns: cfg.MaxConns, MaxConnsPerClient: cfg.MaxConnsPerClient,
		Allow: allow, Refusals: p.refusals}, p, log)
	return p
}

// Serve answers Modbus TCP on ln until ctx ends.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	p.mu.Lock()
	p.ctx = ctx
	p.mu.Unlock()
	p.log.Info("modbus proxy listening", "device", p.cfg.Device, "addr", ln.Addr().String(),
		"writes", p.cfg.Writes, "writeSettings", p.cfg.WriteSettings, "allow", len(p.cfg.Allow))
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

// The refusals' answers: errBusy a request beyond the client's rate, to
// a held control or while the device's models are unknown; errNoWrites
// a write while writes are off; errSettings a write to a settings model.
var (
	errBusy     = modbus.Exception(modbus.ExceptionServerDeviceBusy)
	errNoWrites = modbus.Exception(modbus.ExceptionIllegalFunction)
	errSettings = modbus.Exception(modbus.ExceptionIllegalDataAddress)
)

// mayWrite checks a write (registers: a register write) against the
// rules and logs a refusal, rate-limited per client and reason.
func (p *Proxy) mayWrite(req *modbus.Request, registers bool) error {
	refuse := func(err error, reason, msg string, args ...any) error {
		args = append([]any{"device", p.cfg.Device, "function", req.Function, "addr", req.Addr, "quantity", req.Quantity}, args...)
		p.refusals.Log(slog.LevelInfo, req.Client.String(), reason, msg, args...)
		return err
	}
	if !p.cfg.Writes {
		return refuse(errNoWrites, "writes", "proxied write refused: the proxy is read-only (writes: false)")
	}
	if !registers {
		return nil
	}
	if p.held(req.Addr, req.Quantity) {
		return refuse(errBusy, "held", "proxied write refused: plantd holds the control")
	}
	if p.cfg.WriteSettings {
		return nil
	}
	m, known := p.settingsModel(req.Addr, req.Quantity)
	switch {
	case !known:
		return refuse(errBusy, "settings", "proxied write refused: the device's models are not known yet")
	case m != 0:
		return refuse(errSettings, "settings", "proxied write refused: a nameplate or settings model (writeSettings: false)", "model", m)
	}
	return nil
}

// settingsModel returns the settings model (SettingsModels) registers
// addr..addr+n-1 touch, 0 when none; known is false while the device's
// models are not known.
func (p *Proxy) settingsModel(addr, n uint16) (model uint16, known bool) {
	if p.cfg.Models == nil {
		return 0, false
	}
	models, known := p.cfg.Models()
	if !known {
		return 0, false
	}
	for _, m := range models {
		if slices.Contains(SettingsModels, m.ID) && overlaps(m.Range, addr, n) {
			return m.ID, true
		}
	}
	return 0, true
}

// overlaps reports whether registers addr..addr+n-1 touch r.
func overlaps(r modbus.Range, addr, n uint16) bool {
	return int(addr) < int(r.Addr)+int(r.Count) && int(r.Addr) < int(addr)+int(n)
}

// held reports whether registers addr..addr+n-1 touch a held range.
func (p *Proxy) held(addr, n uint16) bool {
	if p.cfg.Held == nil {
		return false
	}
	return slices.ContainsFunc(p.cfg.Held(), func(r modbus.Range) bool { return overlaps(r, addr, n) })
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
	if req.IsWrite() {
		if err := p.mayWrite(req, true); err != nil {
			return nil, err
		}
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
	if req.IsWrite() {
		if err := p.mayWrite(req, false); err != nil {
			return nil, err
		}
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
