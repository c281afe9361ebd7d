package sunspecserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"plantd/gridcontrol"
	"plantd/internal/logthrottle"
	"plantd/modbus"
	"plantd/plant"
	"plantd/plant/kind"
)

// Live is the live state the server reads: the plant's devices and its
// energy balance, and the change counter that says when to read them
// again (plant.Live).
type Live interface {
	Devices(plantID string) ([]plant.DeviceLive, error)
	EnergyBalance(plantID string) (plant.Balance, error)
	Changes() uint64
}

// Grid is grid control as the server's writes reach it
// (gridcontrol.Controller).
type Grid interface {
	Submit(ctx context.Context, plantID string, by gridcontrol.Origin, orders []gridcontrol.Order, opts ...gridcontrol.SubmitOption) (gridcontrol.Schedule, error)
	Cancel(ctx context.Context, plantID, scheduleID string, by gridcontrol.Origin) error
	Extend(ctx context.Context, plantID, scheduleID string, end time.Time, by gridcontrol.Origin) error
	// GoverningLimit is the limit in force, which the reads show.
	GoverningLimit(plantID string) (gridcontrol.LimitInForce, bool, error)
}

// DefaultRole is the role of the schedules the server's writes make
// unless configured: an installer's limit tightens but never loosens a
// grid operator's.
const DefaultRole = "installer"

// Config is a server's configuration.
type Config struct {
	// PlantID is the plant the server shows.
	PlantID string
	// UnitID is the unit id the server answers to (default 1); requests
	// for another unit answer exception 0x0B.
	UnitID byte
	// Writes lets masters write the controls; without it every write
	// answers exception 1.
	Writes bool
	// Role is the role of the schedules writes make (default
	// DefaultRole).
	Role string
	// Allow lists the client addresses (prefixes) that may connect;
	// empty: every client. Required with Writes (New refuses without).
	Allow []netip.Prefix
	// MaxConns bounds the open connections (default
	// modbus.DefaultMaxConns), MaxConnsPerClient those of one client
	// address (default modbus.DefaultMaxConnsPerClient).
	MaxConns, MaxConnsPerClient int
	// IdleTimeout closes a connection without requests for that long
	// (default modbus.DefaultIdleTimeout).
	IdleTimeout time.Duration
	// GatewayID is model 1's SN, Version its Vr.
	GatewayID, Version string
	// Now is grid control's clock (the windows' times); default
	// time.Now.
	Now func() time.Time
	// MaxAge bounds how old the map may be when read while the live
	// state does not change (default 1 s): what depends on the clock
	// alone (a device turning stale, RvrtRem) moves on.
	MaxAge time.Duration
}

// Server is the plant as one SunSpec device over Modbus TCP. It is a
// modbus.Handler, served by modbus.Server.
type Server struct {
	cfg  Config
	live Live
	grid Grid
	log  *slog.Logger
	srv  *modbus.Server
	// refusals rate-limits the log lines of refused connections and
	// writes per master and reason (shared with srv).
	refusals *logthrottle.Limiter
	// ctx is Serve's, for the writes' trips through grid control.
	ctx context.Context

	mu      sync.Mutex // guards the fields below
	img     *image
	changes uint64    // live.Changes() at the last refresh
	fresh   time.Time // wall time of the last refresh
	// masters holds each master's own state of the limit (controls.go),
	// at most maxMasters.
	masters map[netip.Addr]*control
	gov     inForce // the limit in force as last fetched
	own     ownRegs // the registers each master reads its own
}

var _ modbus.Handler = (*Server)(nil)

// New makes the server of a plant. The map's models follow the plant's
// configured devices: 203 with a grid meter, 124 with a battery.
func New(cfg Config, live Live, grid Grid, log *slog.Logger) (*Server, error) {
	if cfg.UnitID == 0 {
		cfg.UnitID = 1
	}
	if cfg.Role == "" {
		cfg.Role = DefaultRole
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = time.Second
	}
	if cfg.Writes && len(cfg.Allow) == 0 {
		return nil, errors.New("sunspec server: writes need an allow-list of the masters that may write (modbusServer.allow)")
	}
	devs, err := live.Devices(cfg.PlantID)
	if err != nil {
		return nil, fmt.Errorf("sunspec server: %w", err)
	}
	// A device configured without a kind may turn out a meter or a
	// battery: the map keeps its layout from the start, so it has room
	// for both.
	var meter, battery bool
	for _, d := range devs {
		if !d.Info.Active() {
			continue
		}
		meter = meter || d.Info.GridMeter() || d.Info.Kind == ""
		battery = battery || d.Info.Kind == kind.Battery || d.Info.Kind == ""
	}
	img, err := buildImage(layout(meter, battery), identity{model: "plantd aggregate", options: cfg.PlantID,
		version: cfg.Version, serial: cfg.GatewayID, unit: cfg.UnitID})
	if err != nil {
		return nil, fmt.Errorf("sunspec server: %w", err)
	}
	s := &Server{cfg: cfg, live: live, grid: grid, log: log, img: img, masters: map[netip.Addr]*control{},
		own: ownRegsOf(img), ctx: context.Background(), refusals: modbus.NewRefusals(log)}
	var allow func(netip.Addr) bool
	if len(cfg.Allow) > 0 {
		allow = func(a netip.Addr) bool {
			return slices.ContainsFunc(cfg.Allow, func(p netip.Prefix) bool { return p.Contains(a) })
		}
	}
	s.srv = modbus.NewServer(modbus.ServerConfig{MaxConns: cfg.MaxConns, MaxConnsPerClient: cfg.MaxConnsPerClient,
		IdleTimeout: cfg.IdleTimeout, Allow: allow, Refusals: s.refusals}, s, log)
	return s, nil
}

// Serve answers Modbus TCP on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	s.log.Info("SunSpec server listening", "addr", ln.Addr().String(), "unit", s.cfg.UnitID, "writes", s.cfg.Writes, "role", s.cfg.Role)
	if s.cfg.Writes && s.cfg.Role == "gridoperator" {
		s.log.Warn("SunSpec server: masters write limits with the grid operator's role: no installer can loosen or end them",
			"allow", fmt.Sprint(s.cfg.Allow), "config", "modbusServer.role")
	}
	return s.srv.Serve(ctx, ln)
}

// Stats returns the Modbus server's counters.
func (s *Server) Stats() modbus.ServerStats { return s.srv.Stats() }

// Models lists the map's models and where they start, in map order.
func (s *Server) Models() []ModelInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ModelInfo, len(s.img.models))
	for i, m := range s.img.models {
		out[i] = ModelInfo{ID: m.inst.Model.ID, Addr: m.inst.Addr, Len: uint16(len(m.inst.Regs) - 2)}
	}
	return out
}

// ModelInfo locates one model of the map.
type ModelInfo struct {
	ID   uint16
	Addr uint16 // the model's ID register
	Len  uint16 // L: the registers after ID and L
}

// span returns the index in the map of registers addr..addr+n-1, false
// when they are not all inside it.
func (img *image) span(addr uint16, n int) (int, bool) {
	off := int(addr) - Base
	return off, off >= 0 && n > 0 && off+n <= len(img.regs)
}

// Registers answers reads of holding registers (function 3) from the map
// and writes (6, 16) to its controls. Input registers (4) answer
// exception 1, addresses outside the map exception 2.
func (s *Server) Registers(req *modbus.Request) ([]uint16, error) {
	if req.Unit != s.cfg.UnitID {
		return nil, modbus.Exception(modbus.ExceptionGatewayTargetDeviceFailedToRespond)
	}
	if req.Function == 4 {
		return nil, modbus.Exception(modbus.ExceptionIllegalFunction)
	}
	if req.IsWrite() {
		return nil, s.write(req)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	off, ok := s.img.span(req.Addr, int(req.Quantity))
	if !ok {
		return nil, modbus.Exception(modbus.ExceptionIllegalDataAddress)
	}
	s.refreshLocked()
	out := slices.Clone(s.img.regs[off : off+int(req.Quantity)])
	s.overlayLocked(out, off, req.Client)
	return out, nil
}

// Bits answers exception 1: the map has no coils or discrete inputs.
func (s *Server) Bits(req *modbus.Request) ([]bool, error) {
	if req.Unit != s.cfg.UnitID {
		return nil, modbus.Exception(modbus.ExceptionGatewayTargetDeviceFailedToRespond)
	}
	return nil, modbus.Exception(modbus.ExceptionIllegalFunction)
}

// minRefresh is the least time between two rewrites of the map: a plant
// of a thousand devices changes its live state hundreds of times a
// second, and a rewrite reads every device.
const minRefresh = 100 * time.Millisecond

// refreshLocked rewrites the measured points when the live state changed
// (at most every minRefresh) or the map is older than MaxAge. No device is
// asked: the values are the poller's.
func (s *Server) refreshLocked() {
	n := s.live.Changes()
	now := time.Now()
	gridNow := s.cfg.Now()
	ended := s.gov.ok && !gridNow.Before(s.gov.lim.End)
	age := now.Sub(s.fresh)
	if !s.fresh.IsZero() && !ended && (age < minRefresh || (n == s.changes && age < s.cfg.MaxAge)) {
		return
	}
	s.changes, s.fresh = n, now
	devs, err := s.live.Devices(s.cfg.PlantID)
	if err != nil {
		s.log.Warn("live devices", "err", err)
		return
	}
	b, err := s.live.EnergyBalance(s.cfg.PlantID)
	if err != nil {
		s.log.Warn("live balance", "err", err)
		return
	}
	if err := s.img.fill(totalsOf(devs, b)); err != nil {
		s.log.Warn("SunSpec map", "err", err)
	}
	s.publishLocked(gridNow)
}

// base is the context of the writes' trips through grid control; called
// with s.mu held.
func (s *Server) base() context.Context { return s.ctx }

// errNotPermitted is why a write was refused without reaching grid
// control.
var errNotPermitted = errors.New("writes are not enabled (modbusServer.writes)")
