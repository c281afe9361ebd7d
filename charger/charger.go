package charger

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	ocpp16 "github.com/lorenzodonini/ocpp-go/ocpp1.6"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/core"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/firmware"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/smartcharging"
	"github.com/lorenzodonini/ocpp-go/ocppj"

	"plantd/internal/logthrottle"
)

// Sentinel errors, for errors.Is.
var (
	// ErrUnknownPoint: no charge point of that id is configured.
	ErrUnknownPoint = errors.New("charger: unknown charge point")
	// ErrNotConnected: the charge point is configured but not connected
	// (or it disconnected before it answered).
	ErrNotConnected = errors.New("charger: charge point not connected")
	// ErrRejected: the charge point answered Rejected or NotSupported.
	ErrRejected = errors.New("charger: rejected by the charge point")
)

// Defaults.
const (
	DefaultPath        = "/ocpp"
	DefaultConnectorID = 1
	DefaultValidity    = 60 * time.Second
	// HeartbeatInterval is the interval the BootNotification answer asks
	// a charge point to send heartbeats at.
	HeartbeatInterval = 60 * time.Second
	// MinCurrentA is the least current a charger can charge with (IEC
	// 61851): a limit is 0 (pause) or from MinCurrentA up.
	MinCurrentA = 6.0
)

// Point is one charge point's settings.
type Point struct {
	// ID is the charge point identity: the last path element of
	// ws://host:port/ocpp/<ID>.
	ID string
	// Password, if not "", is the HTTP basic auth password the charge
	// point must send (user name: ID).
	Password string
	// ConnectorID is the connector plantd limits and reports (default 1).
	ConnectorID int
	// MaxCurrentA is the charger's maximum current per phase (6..80 A).
	MaxCurrentA float64
	// Phases is 1 or 3.
	Phases int
	// FallbackCurrentA is the current the charger falls back to when
	// plantd goes quiet: 0 or 6..MaxCurrentA.
	FallbackCurrentA float64
	// Validity is the lifetime of each limit SetCurrent sets (default
	// 60 s); the caller renews the limit every third of it.
	Validity time.Duration
}

// Config is the central system's settings.
type Config struct {
	// Listen is the TCP address to listen on: ":8887", "127.0.0.1:0".
	Listen string
	// Listener, when set, is a listener the caller bound already (Listen
	// then only names it): Run serves on it and closes it.
	Listener net.Listener
	// Path is the URL path the charge points connect under (default
	// "/ocpp"): ws://host:port<Path>/<ID>.
	Path string
	// Now is the wall clock (default time.Now): timestamps sent to the
	// charge points (their clocks follow it) and Status.Updated.
	Now func() time.Time
}

// Status is what plantd knows of one charge point.
type Status struct {
	// Connected: the charge point's websocket is open.
	Connected bool
	// State is the connector's OCPP ChargePointStatus (Available,
	// Preparing, Charging, SuspendedEV, SuspendedEVSE, Finishing,
	// Reserved, Unavailable, Faulted); "" when unknown (never reported,
	// or disconnected).
	State string
	// ErrorCode is the connector's ChargePointErrorCode ("NoError").
	ErrorCode string
	// Transaction: a transaction runs on the connector.
	Transaction bool
	// PowerW is the charging power (HasPower: a meter value gave it).
	PowerW   float64
	HasPower bool
	// EnergyWh is the connector's energy register (HasEnergy).
	EnergyWh  float64
	HasEnergy bool
	// CurrentA is the limit in force as far as plantd knows
	// (HasCurrent): the last accepted SetCurrent until its validity ends,
	// then the fallback (once the charger accepted it).
	CurrentA   float64
	HasCurrent bool
	// OfferedA is the current the charger offers the car (HasOffered:
	// it sent Current.Offered).
	OfferedA   float64
	HasOffered bool
	// SoC is the car's state of charge in percent (HasSoC).
	SoC    float64
	HasSoC bool
	// Updated is when the charge point last sent something (wall clock).
	Updated time.Time
	// LastError is the last failure of a request to the charge point
	// ("profile rejected", "fallback profile rejected"), "" after a
	// success.
	LastError string
}

// Plugged reports whether the connector's status means a car is connected
// (OCPP 1.6 §4.9: Preparing through Finishing; Available, Reserved,
// Unavailable, Faulted and an unknown status do not).
func (s Status) Plugged() bool {
	switch core.ChargePointStatus(s.State) {
	case core.ChargePointStatusPreparing, core.ChargePointStatusCharging, core.ChargePointStatusSuspendedEV,
		core.ChargePointStatusSuspendedEVSE, core.ChargePointStatusFinishing:
		return true
	}
	return false
}

// Central is plantd's OCPP 1.6J central system: the configured charge
// points connect to it, and SetCurrent limits them.
type Central struct {
	cfg      Config
	log      *slog.Logger
	points   map[string]*point // fixed after New
	refusals *logthrottle.Limiter
	cs       ocpp16.CentralSystem
	ready    chan struct{} // closed once Run listens

	ws     *wsServer
	runCtx context.Context // set by Run before it serves

	mu       sync.Mutex
	nextTx   int
	ran      bool
	stopping bool // Run is stopping: no new setup goroutines

	wg sync.WaitGroup // setup goroutines
}

// point is a configured charge point and its state (under Central.mu).
type point struct {
	cfg Point
	log *slog.Logger

	conn      *wsConn // the current connection; nil when disconnected
	setupDone bool    // the fallback has been sent on this connection
	st        Status
	fallback  bool      // the charger accepted the fallback profile
	limitA    float64   // the last accepted SetCurrent
	limitTo   time.Time // and when it ends
	tx        int       // the running transaction's id, 0 if none
}

// New validates cfg and points and returns a central system; Run serves it.
func New(cfg Config, points []Point, log *slog.Logger) (*Central, error) {
	if log == nil {
		return nil, errors.New("charger: nil logger")
	}
	if cfg.Listener != nil {
		cfg.Listen = cfg.Listener.Addr().String()
	}
	if cfg.Listen == "" {
		return nil, errors.New("charger: listen: empty address")
	}
	if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
		return nil, fmt.Errorf("charger: listen %q: %w", cfg.Listen, err)
	}
	if cfg.Path == "" {
		cfg.Path = DefaultPath
	}
	cfg.Path = "/" + strings.Trim(cfg.Path, "/")
	if cfg.Path == "/" {
		cfg.Path = ""
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Central{
		cfg:      cfg,
		log:      log,
		points:   make(map[string]*point, len(points)),
		refusals: logthrottle.New(log, "client", 0, 0),
		ready:    make(chan struct{}),
		nextTx:   1,
	}
	c.ws = newWSServer(cfg.Path, c.malformed)
	endpoint := ocppj.NewServer(c.ws, nil, nil, core.Profile, firmware.Profile, smartcharging.Profile)
	c.cs = ocpp16.NewCentralSystem(endpoint, c.ws)
	c.cs.SetCoreHandler(handler{c})
	c.cs.SetFirmwareManagementHandler(handler{c})
	c.cs.SetNewChargingStationValidationHandler(c.checkClient)
	c.cs.SetNewChargePointHandler(c.connected)
	c.cs.SetChargePointDisconnectedHandler(c.disconnected)
	for i, p := range points {
		if err := p.validate(); err != nil {
			return nil, fmt.Errorf("charger: points[%d] (%q): %w", i, p.ID, err)
		}
		if c.points[p.ID] != nil {
			return nil, fmt.Errorf("charger: points[%d]: duplicate id %q", i, p.ID)
		}
		if p.ConnectorID == 0 {
			p.ConnectorID = DefaultConnectorID
		}
		if p.Validity == 0 {
			p.Validity = DefaultValidity
		}
		c.points[p.ID] = &point{cfg: p, log: log.With("charger", p.ID)}
	}
	return c, nil
}

// validate checks a Point's fields (defaults not yet applied).
func (p Point) validate() error {
	switch {
	case p.ID == "":
		return errors.New("id: empty")
	case strings.ContainsAny(p.ID, "/?#% "):
		return fmt.Errorf("id %q: not a path element", p.ID)
	case p.ConnectorID < 0:
		return fmt.Errorf("connectorId %d: negative", p.ConnectorID)
	case !(p.MaxCurrentA >= MinCurrentA && p.MaxCurrentA <= 80):
		return fmt.Errorf("maxCurrentA %g: not within 6..80", p.MaxCurrentA)
	case p.Phases != 1 && p.Phases != 3:
		return fmt.Errorf("phases %d: not 1 or 3", p.Phases)
	case p.FallbackCurrentA != 0 && !(p.FallbackCurrentA >= MinCurrentA && p.FallbackCurrentA <= p.MaxCurrentA):
		return fmt.Errorf("fallbackCurrentA %g: not 0 or within 6..%g", p.FallbackCurrentA, p.MaxCurrentA)
	case p.Validity < 0 || (p.Validity > 0 && p.Validity < 3*time.Second):
		return fmt.Errorf("validity %s: below 3s", p.Validity)
	}
	return nil
}

// Ready is closed once Run listens: Addr is valid from then on.
func (c *Central) Ready() <-chan struct{} { return c.ready }

// Addr returns the address Run listens on; nil before Ready is closed.
func (c *Central) Addr() net.Addr {
	select {
	case <-c.ready:
		return c.ws.ln.Addr()
	default:
		return nil
	}
}

// Run listens on Config.Listen and serves the charge points until ctx
// ends; it returns nil then, once the listener and every connection are
// closed and its goroutines have ended. It returns an error if it cannot
// listen. Run may be called once.
func (c *Central) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.ran {
		c.mu.Unlock()
		return errors.New("charger: Run called twice")
	}
	c.ran = true
	c.mu.Unlock()

	ln := c.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", c.cfg.Listen); err != nil {
			return fmt.Errorf("charger: listen: %w", err)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.runCtx = runCtx
	c.ws.ln = ln
	stopFlush := c.refusals.Start()
	defer stopFlush()

	served := make(chan struct{})
	go func() {
		defer close(served)
		c.cs.Start(0, c.cfg.Path)
	}()
	close(c.ready)
	c.log.Info("ocpp central system listening", "addr", ln.Addr().String(), "path", c.cfg.Path+"/<id>", "points", len(c.points))

	var serveErr error
	select {
	case <-ctx.Done():
	case <-served:
		serveErr = errors.New("charger: server stopped unexpectedly")
	}
	cancel()
	// Connections first, while ocpp-go's dispatcher still runs (it takes
	// their disconnections), then the dispatcher.
	c.ws.shutdown()
	// A ctx that ended at once may come before ocpp-go's Start started
	// its dispatcher, whose Stop would then close a nil channel.
	<-c.ws.started
	c.cs.Stop()
	<-served
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	c.wg.Wait()
	return serveErr
}

// Status returns what plantd knows of the charge point id.
func (c *Central) Status(id string) (Status, error) {
	p := c.points[id]
	if p == nil {
		return Status{}, fmt.Errorf("%w: %q", ErrUnknownPoint, id)
	}
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	st := p.st
	st.Connected = p.conn != nil
	switch {
	case p.limitTo.After(now):
		st.CurrentA, st.HasCurrent = p.limitA, true
	case p.fallback:
		st.CurrentA, st.HasCurrent = p.cfg.FallbackCurrentA, true
	}
	return st, nil
}

// checkClient is the websocket layer's check of a charge point that
// connects: a configured id, and its password if it has one.
func (c *Central) checkClient(id string, r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	p := c.points[id]
	if p == nil {
		c.refusals.Log(slog.LevelWarn, host, "unknown id",
			"ocpp connection refused: unknown charge point id", "charger", id, "remote", r.RemoteAddr)
		return false
	}
	if p.cfg.Password == "" {
		return true
	}
	user, pass, ok := r.BasicAuth()
	if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(id)) != 1 ||
		subtle.ConstantTimeCompare([]byte(pass), []byte(p.cfg.Password)) != 1 {
		reason := "wrong password"
		if !ok {
			reason = "missing password"
		}
		c.refusals.Log(slog.LevelWarn, host, reason,
			"ocpp connection refused: "+reason, "charger", id, "remote", r.RemoteAddr)
		return false
	}
	return true
}

// malformed logs a frame of a connected charge point that ocpp-go could
// not handle (no JSON, no OCPP-J call, an invalid payload).
func (c *Central) malformed(id string, err error) {
	c.refusals.Log(slog.LevelWarn, id, "malformed",
		"ocpp message from charge point not handled", "charger", id, "err", err)
}

// connected records a new connection of a charge point.
func (c *Central) connected(ch ocpp16.ChargePointConnection) {
	p := c.points[ch.ID()]
	conn, _ := ch.(*wsConn)
	if p == nil || conn == nil {
		return
	}
	now := c.cfg.Now()
	c.mu.Lock()
	p.conn = conn
	p.setupDone = false
	p.st.Updated = now
	c.mu.Unlock()
	p.log.Info("charge point connected", "remote", ch.RemoteAddr().String())
}

// disconnected records the end of a connection.
func (c *Central) disconnected(ch ocpp16.ChargePointConnection) {
	p := c.points[ch.ID()]
	if p == nil {
		return
	}
	c.mu.Lock()
	if conn, _ := ch.(*wsConn); p.conn != conn {
		c.mu.Unlock()
		return
	}
	p.conn = nil
	p.st.State, p.st.ErrorCode = "", ""
	c.mu.Unlock()
	p.log.Info("charge point disconnected")
}

// validCurrent checks a limit for p: 0 or MinCurrentA..MaxCurrentA, on 1
// phase or (a 3-phase charger) 3.
func (p *point) validCurrent(amps float64, phases int) error {
	if math.IsNaN(amps) || amps < 0 || amps > p.cfg.MaxCurrentA || (amps > 0 && amps < MinCurrentA) {
		return fmt.Errorf("charger %s: current %g A: not 0 or within %g..%g", p.cfg.ID, amps, MinCurrentA, p.cfg.MaxCurrentA)
	}
	if phases != 1 && phases != 3 || phases > p.cfg.Phases {
		return fmt.Errorf("charger %s: %d phases: the charger has %d", p.cfg.ID, phases, p.cfg.Phases)
	}
	return nil
}

// SetCurrent limits the charge point id to amps per phase on phases
// phases (0 pauses charging) for its Validity: a TxDefaultProfile at
// stack level 1 that ends then, when the charger falls back to the
// level-0 fallback on its own. The caller renews it every third of
// Validity. SetCurrent returns once the charger answered, or ctx ended:
// ErrUnknownPoint, ErrNotConnected, ErrRejected (Rejected or
// NotSupported) wrapped with the charger's id.
func (c *Central) SetCurrent(ctx context.Context, id string, amps float64, phases int) error {
	p := c.points[id]
	if p == nil {
		return fmt.Errorf("%w: %q", ErrUnknownPoint, id)
	}
	if err := p.validCurrent(amps, phases); err != nil {
		return err
	}
	now := c.cfg.Now()
	err := c.setProfile(ctx, p, limitProfile(now, p.cfg.Validity, amps, phases))
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		p.limitA, p.limitTo = amps, now.Add(p.cfg.Validity)
		p.st.LastError = ""
	case errors.Is(err, ErrRejected):
		if p.st.LastError != "profile rejected" {
			p.log.Warn("charge point rejected the current limit", "currentA", amps, "phases", phases, "err", err)
		}
		p.st.LastError = "profile rejected"
	case errors.Is(err, ErrNotConnected), ctx.Err() != nil:
	default:
		p.st.LastError = err.Error()
	}
	return err
}
