package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/lorenzodonini/ocpp-go/ocpp"
	ocpp16 "github.com/lorenzodonini/ocpp-go/ocpp1.6"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/core"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/smartcharging"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/types"
	"github.com/lorenzodonini/ocpp-go/ocppj"
)

// ChargePointConfig is a simulated OCPP 1.6J charge point (a wallbox with
// one connector) and the car behind it (chargepoint.go).
type ChargePointConfig struct {
	// ID is the charge point's identity: the last element of its
	// WebSocket URL and the basic auth user. Required, unique among
	// devices, plugs and charge points.
	ID string
	// URL is the central system's WebSocket endpoint, e.g.
	// "ws://127.0.0.1:8887/ocpp"; the twin connects to URL/ID. It may be
	// left empty and set with ChargePoint.SetURL before Run.
	URL string
	// Password, when set, is sent with ID as HTTP basic auth (OCPP 1.6
	// security profile 1).
	Password string
	// MaxCurrentA is the charger's rating per phase (default 16).
	MaxCurrentA float64
	// Phases is 1 or 3 (default 3).
	Phases int
	// VoltageV is the voltage per phase that converts current to power
	// (default 230).
	VoltageV float64
	// Car is the car plugged into the charger.
	Car CarConfig
	// IDTag is the idTag the car authorizes with (default "SIMCAR").
	IDTag string
	// MeterInterval is the period of MeterValues during a transaction, on
	// the wall clock (default 10 s).
	MeterInterval time.Duration
	// ReconnectMin and ReconnectMax bound the wait between connection
	// attempts while the central system is away; it doubles from min to
	// max (default 1 s and 30 s).
	ReconnectMin, ReconnectMax time.Duration
}

// CarConfig is the electric car behind a simulated charge point.
type CarConfig struct {
	// CapacityWh is the usable battery (default 60000).
	CapacityWh float64
	// SoCPct is the state of charge at the start (default 40).
	SoCPct float64
	// TargetSoCPct is where the car stops charging (default 100).
	TargetSoCPct float64
	// MaxCurrentA is the most the car's on-board charger draws per
	// phase (default 16).
	MaxCurrentA float64
	// Unplugged makes the car start unplugged (default: plugged in).
	Unplugged bool
}

// Charge point defaults.
const (
	defaultCPMaxA        = 16
	defaultCPPhases      = 3
	defaultCPVoltageV    = 230
	defaultCPIDTag       = "SIMCAR"
	defaultMeterInterval = 10 * time.Second
	defaultReconnectMin  = time.Second
	defaultReconnectMax  = 30 * time.Second
	defaultCarCapacityWh = 60000
	defaultCarSoCPct     = 40
	defaultCarTargetPct  = 100
	defaultCarMaxA       = 16
	defaultHeartbeat     = 5 * time.Minute
	maxCPCurrentA        = 63
	cpVendor             = "plantd-sim"
	cpModel              = "twin"
	cpFirmware           = "plantd-sim 1"
	maxTraceChanges      = 10000
	ocppSerialLen        = 25 // chargePointSerialNumber's bound
	fullEpsilonPct       = 1e-6
	// minFillWake is the least wall time before the twin looks again for
	// a car about to be full (a plant on a clock that stands still would
	// spin otherwise).
	minFillWake = 10 * time.Millisecond
)

// chargePointsWithDefaults checks c.ChargePoints and fills their
// defaults; devices, plugs and loads must be checked already (the ids
// are compared).
func (c *Config) chargePointsWithDefaults() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
	}
	ids := map[string]string{}
	for _, d := range c.Devices {
		ids[d.ID] = "a device"
	}
	for _, s := range c.Shellies {
		ids[s.ID] = "a plug"
	}
	for _, l := range c.Loads {
		ids[l.ID] = "a load"
	}
	out := make([]ChargePointConfig, len(c.ChargePoints))
	copy(out, c.ChargePoints)
	for i := range out {
		cp := &out[i]
		field := fmt.Sprintf("chargePoints[%d]", i)
		if err := checkID(field, cp.ID); err != nil {
			return err
		}
		if other, ok := ids[cp.ID]; ok {
			return bad("%s.id %q: already used by %s", field, cp.ID, other)
		}
		ids[cp.ID] = "another charge point"
		if cp.URL != "" {
			if err := checkCentralURL(cp.URL); err != nil {
				return bad("%s.url: %v", field, err)
			}
		}
		def := func(v *float64, d float64) {
			if *v == 0 {
				*v = d
			}
		}
		def(&cp.MaxCurrentA, defaultCPMaxA)
		def(&cp.VoltageV, defaultCPVoltageV)
		def(&cp.Car.CapacityWh, defaultCarCapacityWh)
		def(&cp.Car.SoCPct, defaultCarSoCPct)
		def(&cp.Car.TargetSoCPct, defaultCarTargetPct)
		def(&cp.Car.MaxCurrentA, defaultCarMaxA)
		if cp.Phases == 0 {
			cp.Phases = defaultCPPhases
		}
		if cp.IDTag == "" {
			cp.IDTag = defaultCPIDTag
		}
		if cp.MeterInterval == 0 {
			cp.MeterInterval = defaultMeterInterval
		}
		if cp.ReconnectMin == 0 {
			cp.ReconnectMin = defaultReconnectMin
		}
		if cp.ReconnectMax == 0 {
			cp.ReconnectMax = max(defaultReconnectMax, cp.ReconnectMin)
		}
		in := func(v, lo, hi float64) bool { return !math.IsNaN(v) && v >= lo && v <= hi }
		switch {
		case !in(cp.MaxCurrentA, minChargeA, maxCPCurrentA):
			return bad("%s.maxCurrentA %v outside %d..%d", field, cp.MaxCurrentA, minChargeA, maxCPCurrentA)
		case cp.Phases != 1 && cp.Phases != 3:
			return bad("%s.phases %d: want 1 or 3", field, cp.Phases)
		case !in(cp.VoltageV, 100, 300):
			return bad("%s.voltageV %v outside 100..300", field, cp.VoltageV)
		case !in(cp.Car.CapacityWh, 1000, 300000):
			return bad("%s.car.capacityWh %v outside 1000..300000", field, cp.Car.CapacityWh)
		case !in(cp.Car.SoCPct, 0, 100):
			return bad("%s.car.socPct %v outside 0..100", field, cp.Car.SoCPct)
		case !in(cp.Car.TargetSoCPct, 1, 100):
			return bad("%s.car.targetSoCPct %v outside 1..100", field, cp.Car.TargetSoCPct)
		case !in(cp.Car.MaxCurrentA, minChargeA, maxCPCurrentA):
			return bad("%s.car.maxCurrentA %v outside %d..%d", field, cp.Car.MaxCurrentA, minChargeA, maxCPCurrentA)
		case len(cp.IDTag) > 20:
			return bad("%s.idTag %q: longer than 20 characters", field, cp.IDTag)
		case cp.MeterInterval < 0:
			return bad("%s.meterInterval %v: want a positive period", field, cp.MeterInterval)
		case cp.ReconnectMin < 0 || cp.ReconnectMax < cp.ReconnectMin:
			return bad("%s: reconnectMin %v and reconnectMax %v: want 0 < min <= max", field, cp.ReconnectMin, cp.ReconnectMax)
		}
	}
	c.ChargePoints = out
	return nil
}

// checkCentralURL checks a central system URL: ws or wss with a host.
func checkCentralURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return fmt.Errorf("%q: want ws://host:port/path or wss://", s)
	}
	return nil
}

// maxW is the most the charge point draws.
func (c ChargePointConfig) maxW() float64 {
	return min(c.MaxCurrentA, c.Car.MaxCurrentA) * c.VoltageV * float64(c.Phases)
}

// The OCPP statuses of the connector (StatusNotification), as
// ChargePointState.Status shows them.
const (
	StatusAvailable     = "Available"     // no car
	StatusPreparing     = "Preparing"     // a car, no transaction yet
	StatusCharging      = "Charging"      // the car draws power
	StatusSuspendedEV   = "SuspendedEV"   // the car is full (TargetSoCPct)
	StatusSuspendedEVSE = "SuspendedEVSE" // the limit is below 6 A
)

// ChargePointState is a simulated charge point's state at one instant.
type ChargePointState struct {
	// Connected is true while a WebSocket to the central system is up
	// and the BootNotification was accepted.
	Connected bool
	// Status is connector 1's OCPP status (StatusAvailable, ...).
	Status        string
	Plugged       bool
	TransactionID int // 0: none
	// LimitA is the effective limit per phase, LimitSource what sets it
	// ("TxDefaultProfile#1 level 1", "default (no profile)").
	LimitA      float64
	LimitSource string
	// CurrentA is what the car draws per phase, PowerW in all.
	CurrentA float64
	PowerW   float64
	// EnergyWh is the charger's meter register (since the plant's
	// start), SoCPct the car's state of charge.
	EnergyWh float64
	SoCPct   float64
	// SimTime is the simulated time of PowerW, EnergyWh and SoCPct.
	SimTime time.Time
}

// LimitChange is one change of a charge point's effective limit.
type LimitChange struct {
	Wall   time.Time // wall clock
	LimitA float64   // per phase
	Source string
}

// ChargePoint is a simulated OCPP 1.6J charge point with a car: an OCPP
// client of a central system (Run), a load of the plant (its draw is part
// of the consumption the grid meter sees). Get it with Plant.ChargePoint.
type ChargePoint struct {
	plant *Plant
	cfg   ChargePointConfig
	log   *slog.Logger
	car   *carLoad      // guarded by plant.mu
	kick  chan struct{} // wakes the evaluator to rearm its timer

	mu        sync.Mutex // guards the fields below; taken before plant.mu
	url       string
	running   bool
	profiles  profileSet
	plugged   bool
	tx        txView
	stops     []stopTx // StopTransactions not yet delivered
	authFail  bool     // the central system refused the car until it is unplugged
	connected bool
	status    string
	lim       limit
	snap      carSnap
	trace     []LimitChange
	changed   chan struct{} // closed and replaced at every change
}

// stopTx is a transaction that ended, to report.
type stopTx struct {
	id      int
	meterWh int
	at      time.Time
	reason  core.Reason
	idTag   string
}

// carSnap is the car's physics read at one instant.
type carSnap struct {
	t        time.Time
	drawA    float64
	powerW   float64
	energyWh float64
	socPct   float64
}

// carLoad is the car as a load of the plant; its fields are guarded by
// the plant's mu. Its energy is the load's (integrated on the simulated
// clock with every other load); the state of charge follows from it.
type carLoad struct {
	cfg        CarConfig
	wPerA      float64 // VoltageV × phases
	drawA      float64 // per phase, set by the charge point's limit
	socBase    float64 // SoC when the load's energy was energyBase
	energyBase float64
	load       *load
}

// socLocked is the car's state of charge at the plant's time.
func (c *carLoad) socLocked() float64 {
	return c.socBase + (c.load.energyWh-c.energyBase)/c.cfg.CapacityWh*100
}

// full reports whether the car reached its target.
func (c *carLoad) full() bool { return c.socLocked() >= c.cfg.TargetSoCPct-fullEpsilonPct }

// power is the car's draw (the load's power hook): the current the
// charger allows until the car is full.
func (c *carLoad) power(time.Time) float64 {
	if c.drawA <= 0 || c.full() {
		return 0
	}
	return c.drawA * c.wPerA
}

// next is the instant the car becomes full at its draw (the load's next
// hook), so the plant ends an integration step there.
func (c *carLoad) next(t time.Time) time.Time {
	w := c.power(t)
	if w <= 0 {
		return time.Time{}
	}
	remWh := (c.cfg.TargetSoCPct - c.socLocked()) / 100 * c.cfg.CapacityWh
	return t.Add(time.Duration(remWh / w * float64(time.Hour)))
}

// addChargePointsLocked builds the configured charge points and registers
// their cars as loads. Called by New.
func (p *Plant) addChargePointsLocked() {
	for _, cc := range p.cfg.ChargePoints {
		cp := &ChargePoint{
			plant:   p,
			cfg:     cc,
			log:     p.log.With("device", cc.ID),
			kick:    make(chan struct{}, 1),
			url:     cc.URL,
			plugged: !cc.Car.Unplugged,
			status:  StatusAvailable,
			changed: make(chan struct{}),
		}
		cp.car = &carLoad{cfg: cc.Car, wPerA: cc.VoltageV * float64(cc.Phases), socBase: cc.Car.SoCPct}
		cp.car.load = &load{id: cc.ID, power: cp.car.power, next: cp.car.next}
		p.addLoadLocked(cp.car.load)
		p.chargePoints = append(p.chargePoints, cp)
	}
}

// ChargePoints returns the plant's charge points in config order.
func (p *Plant) ChargePoints() []*ChargePoint {
	return append([]*ChargePoint(nil), p.chargePoints...)
}

// ChargePoint returns the charge point with the id, or nil.
func (p *Plant) ChargePoint(id string) *ChargePoint {
	for _, cp := range p.chargePoints {
		if cp.cfg.ID == id {
			return cp
		}
	}
	return nil
}

// ID returns the charge point's identity.
func (cp *ChargePoint) ID() string { return cp.cfg.ID }

// SetURL sets the central system's URL (see ChargePointConfig.URL); it
// applies from the next connection attempt.
func (cp *ChargePoint) SetURL(u string) error {
	if err := checkCentralURL(u); err != nil {
		return fmt.Errorf("sim: charge point %s: %w", cp.cfg.ID, err)
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.url = u
	return nil
}

// Changed returns a channel that is closed at the next change of the
// state (status, connection, plug, transaction, limit): a test or a
// display waits on it instead of polling.
func (cp *ChargePoint) Changed() <-chan struct{} {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.changed
}

// notifyLocked wakes everyone waiting on Changed.
func (cp *ChargePoint) notifyLocked() {
	close(cp.changed)
	cp.changed = make(chan struct{})
}

// State returns the charge point's state now.
func (cp *ChargePoint) State() ChargePointState {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.updateLocked()
	return cp.stateLocked()
}

// stateLocked is the state from the last update.
func (cp *ChargePoint) stateLocked() ChargePointState {
	return ChargePointState{
		Connected: cp.connected, Status: cp.status, Plugged: cp.plugged, TransactionID: cp.tx.id,
		LimitA: cp.lim.A, LimitSource: cp.lim.Source,
		CurrentA: cp.snap.drawA, PowerW: cp.snap.powerW, EnergyWh: cp.snap.energyWh, SoCPct: cp.snap.socPct,
		SimTime: cp.snap.t,
	}
}

// Trace returns every change of the effective limit so far (the last
// 10000), oldest first; the first entry is the limit at the first update.
func (cp *ChargePoint) Trace() []LimitChange {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return append([]LimitChange(nil), cp.trace...)
}

// Plug plugs the car in (true) or out. Plugged in, the twin starts a
// transaction once connected; unplugged, it ends the running one (its
// StopTransaction waits for a connection if there is none) and drops the
// transaction's TxProfiles.
func (cp *ChargePoint) Plug(in bool) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.plugged == in {
		return
	}
	cp.plugged = in
	cp.updateLocked()
	if !in {
		cp.authFail = false
		cp.endTxLocked(core.ReasonEVDisconnected)
	}
	cp.log.Info("car plugged", "in", in)
	cp.notifyLocked()
	cp.wake()
}

// endTxLocked ends the running transaction (after an update), keeping its
// StopTransaction to send.
func (cp *ChargePoint) endTxLocked(reason core.Reason) {
	if cp.tx.id == 0 {
		return
	}
	cp.stops = append(cp.stops, stopTx{id: cp.tx.id, meterWh: int(cp.snap.energyWh), at: time.Now(), reason: reason, idTag: cp.cfg.IDTag})
	cp.profiles.remove(func(c *chargingProfile) bool {
		return c.p.ChargingProfilePurpose == types.ChargingProfilePurposeTxProfile
	})
	cp.log.Info("transaction ended", "transaction", cp.tx.id, "reason", reason, "meterWh", int(cp.snap.energyWh))
	cp.tx = txView{}
	cp.updateLocked()
}

// wake makes the evaluator recompute its next boundary.
func (cp *ChargePoint) wake() {
	select {
	case cp.kick <- struct{}{}:
	default:
	}
}

// electrics are the figures limits convert by.
func (cp *ChargePoint) electrics() electrics {
	return electrics{maxA: cp.cfg.MaxCurrentA, voltageV: cp.cfg.VoltageV, phases: cp.cfg.Phases}
}

// updateLocked evaluates the profiles at the wall clock, sets the car's
// current in the plant (integrated to now first), records a limit change
// and the status, and returns the next wall instant something changes by
// itself (a profile boundary, the car becoming full); zero if none.
func (cp *ChargePoint) updateLocked() time.Time {
	now := time.Now()
	lim := cp.profiles.effective(now, cp.tx, cp.electrics())
	changed := false
	if lim != cp.lim || len(cp.trace) == 0 {
		cp.lim = lim
		if len(cp.trace) >= maxTraceChanges {
			cp.trace = append(cp.trace[:0], cp.trace[1:]...)
		}
		cp.trace = append(cp.trace, LimitChange{Wall: now, LimitA: lim.A, Source: lim.Source})
		cp.log.Info("charge limit", "limitA", lim.A, "source", lim.Source)
		changed = true
	}
	var drawA float64
	if cp.plugged && cp.tx.id != 0 && lim.A >= minChargeA {
		drawA = min(lim.A, cp.cfg.MaxCurrentA, cp.cfg.Car.MaxCurrentA)
	}
	p := cp.plant
	p.mu.Lock()
	p.advanceLocked(p.simNow())
	c := cp.car
	if c.drawA != drawA {
		c.drawA = drawA
		p.flowsLocked(p.t)
	}
	full := c.full()
	fill := c.next(p.t)
	cp.snap = carSnap{t: p.t, drawA: drawA, powerW: c.load.w, energyWh: c.load.energyWh, socPct: c.socLocked()}
	if full {
		cp.snap.drawA = 0
	}
	var fillIn time.Duration // wall time until the car is full
	if !fill.IsZero() {
		fillIn = max(time.Duration(float64(fill.Sub(p.t))/p.cfg.Speed), minFillWake)
	}
	p.mu.Unlock()

	status := StatusAvailable
	switch {
	case !cp.plugged:
	case cp.tx.id == 0:
		status = StatusPreparing
	case lim.A < minChargeA:
		status = StatusSuspendedEVSE
	case full:
		status = StatusSuspendedEV
	default:
		status = StatusCharging
	}
	if status != cp.status {
		cp.log.Info("charge point status", "status", status, "was", cp.status)
		cp.status = status
		changed = true
	}
	if changed {
		cp.notifyLocked()
	}
	next := cp.profiles.next(now, cp.tx)
	if fillIn > 0 {
		if w := now.Add(fillIn); next.IsZero() || w.Before(next) {
			next = w
		}
	}
	return next
}

// evaluate re-evaluates the limit at every boundary a profile or the car
// sets, on the wall clock, until ctx ends; no polling.
func (cp *ChargePoint) evaluate(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		cp.mu.Lock()
		next := cp.updateLocked()
		cp.mu.Unlock()
		t.Stop()
		if !next.IsZero() {
			t.Reset(max(time.Until(next), 0))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-cp.kick:
		}
	}
}

// Run connects to the central system and serves it until ctx ends: it
// connects (retrying with backoff while the central system is away),
// boots, reports the status, starts a transaction when the car is
// plugged, sends MeterValues and Heartbeats, answers smart charging; a
// lost connection is reconnected the same way. Limits apply and follow
// their profiles whether connected or not. It returns nil when ctx ends,
// once its goroutines are done, and an error if the charge point has no
// URL or already runs.
func (cp *ChargePoint) Run(ctx context.Context) error {
	cp.mu.Lock()
	if cp.running {
		cp.mu.Unlock()
		return fmt.Errorf("sim: charge point %s: already running", cp.cfg.ID)
	}
	if cp.url == "" {
		cp.mu.Unlock()
		return fmt.Errorf("sim: charge point %s: no central system URL", cp.cfg.ID)
	}
	cp.running = true
	cp.mu.Unlock()
	defer func() {
		cp.mu.Lock()
		cp.running = false
		cp.mu.Unlock()
	}()
	var wg sync.WaitGroup
	wg.Go(func() { cp.evaluate(ctx) })
	defer wg.Wait()

	wait := cp.cfg.ReconnectMin
	failures := 0
	for ctx.Err() == nil {
		cp.mu.Lock()
		u := cp.url
		cp.mu.Unlock()
		c, err := cp.dial(u)
		if err == nil {
			failures, wait = 0, cp.cfg.ReconnectMin
			cp.log.Info("connected to central system", "url", u)
			err = cp.session(ctx, c)
			c.stop()
			cp.setConnected(false)
			if ctx.Err() != nil {
				break
			}
			cp.log.Warn("connection to central system lost", "err", err)
		} else {
			failures++
			if failures == 1 {
				cp.log.Warn("central system unreachable, retrying", "url", u, "err", err)
			} else {
				cp.log.Debug("central system unreachable", "url", u, "attempt", failures, "err", err)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		wait = min(2*wait, cp.cfg.ReconnectMax)
	}
	return nil
}

// setConnected records the connection state.
func (cp *ChargePoint) setConnected(v bool) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.connected != v {
		cp.connected = v
		cp.notifyLocked()
	}
}

// conn is one WebSocket session with the central system: ocpp-go's charge
// point over its own ocppj and ws clients, made new for every connection.
type conn struct {
	cp       ocpp16.ChargePoint
	down     chan struct{} // closed when the connection drops
	downOnce sync.Once
	stopOnce sync.Once
}

// stop closes the connection. Only the session's goroutine calls it,
// after its last request: ocpp-go v0.19.0's dispatcher blocks forever (a
// send on a nil channel) on a request enqueued while it stops.
func (c *conn) stop() { c.stopOnce.Do(c.cp.Stop) }

// call sends a request and waits for its answer, the end of ctx or of
// the connection. The request is enqueued asynchronously, so a wait that
// ends early leaves nothing blocked: ocpp-go's synchronous calls wait
// for a stop that would race with the enqueueing of the next request,
// and a request pending when the connection drops is never answered nor
// timed out (the dispatcher pauses its timer).
func call[T ocpp.Response](ctx context.Context, c *conn, req ocpp.Request) (T, error) {
	var zero T
	type result struct {
		res ocpp.Response
		err error
	}
	ch := make(chan result, 1)
	if err := c.cp.SendRequestAsync(req, func(res ocpp.Response, err error) { ch <- result{res, err} }); err != nil {
		return zero, fmt.Errorf("%s: %w", req.GetFeatureName(), err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return zero, fmt.Errorf("%s: %w", req.GetFeatureName(), r.err)
		}
		res, ok := r.res.(T)
		if !ok {
			return zero, fmt.Errorf("%s: answer %T", req.GetFeatureName(), r.res)
		}
		return res, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-c.down:
		return zero, fmt.Errorf("%s: %w", req.GetFeatureName(), errDisconnected)
	}
}

// lost marks the connection as dropped.
func (c *conn) lost() { c.downOnce.Do(func() { close(c.down) }) }

// dial opens a connection to the central system at base/ID.
func (cp *ChargePoint) dial(base string) (*conn, error) {
	// Its own client (chargepoint_ws.go), which never reconnects: Run
	// reconnects with its own backoff, bound to its context.
	wsc := newWSClient()
	if cp.cfg.Password != "" {
		wsc.SetBasicAuth(cp.cfg.ID, cp.cfg.Password)
	}
	endpoint := ocppj.NewClient(cp.cfg.ID, wsc, nil, nil, core.Profile, smartcharging.Profile)
	c := &conn{down: make(chan struct{})}
	endpoint.SetOnDisconnectedHandler(func(error) { c.lost() })
	c.cp = ocpp16.NewChargePoint(cp.cfg.ID, endpoint, wsc)
	c.cp.SetCoreHandler(coreHandler{cp})
	c.cp.SetSmartChargingHandler(smartHandler{cp})
	if err := c.cp.Start(base); err != nil {
		return nil, fmt.Errorf("connect %s/%s: %w", base, cp.cfg.ID, err)
	}
	return c, nil
}

// errDisconnected ends a session whose connection dropped.
var errDisconnected = errors.New("disconnected")

// session runs one connection: BootNotification until accepted, then the
// messages the state asks for, Heartbeats and MeterValues, until ctx ends
// or the connection drops.
func (cp *ChargePoint) session(ctx context.Context, c *conn) error {
	hb, err := cp.boot(ctx, c)
	if err != nil {
		return err
	}
	cp.setConnected(true)
	if err := sendStatus(ctx, c, 0, StatusAvailable); err != nil {
		return err
	}
	heartbeat := time.NewTicker(hb)
	defer heartbeat.Stop()
	meter := time.NewTicker(cp.cfg.MeterInterval)
	defer meter.Stop()
	sent := ""
	for {
		changed := cp.Changed()
		if err := cp.sync(ctx, c, &sent); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.down:
			return errDisconnected
		case <-changed:
		case <-heartbeat.C:
			if _, err := call[*core.HeartbeatConfirmation](ctx, c, core.NewHeartbeatRequest()); err != nil {
				return err
			}
		case <-meter.C:
			if err := cp.sendMeter(ctx, c, types.ReadingContextSamplePeriodic); err != nil {
				return err
			}
		}
	}
}

// boot sends BootNotification until the central system accepts it
// (waiting the interval it answers between tries) and returns the
// heartbeat interval.
func (cp *ChargePoint) boot(ctx context.Context, c *conn) (time.Duration, error) {
	for {
		req := core.NewBootNotificationRequest(cpModel, cpVendor)
		req.ChargePointSerialNumber = cp.cfg.ID[:min(len(cp.cfg.ID), ocppSerialLen)]
		req.FirmwareVersion = cpFirmware
		res, err := call[*core.BootNotificationConfirmation](ctx, c, req)
		if err != nil {
			return 0, err
		}
		iv := time.Duration(res.Interval) * time.Second
		if iv <= 0 {
			iv = defaultHeartbeat
		}
		if res.Status == core.RegistrationStatusAccepted {
			cp.log.Info("boot accepted", "heartbeat", iv)
			return iv, nil
		}
		cp.log.Warn("boot not accepted", "status", res.Status, "retry", iv)
		t := time.NewTimer(iv)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		case <-c.down:
			t.Stop()
			return 0, errDisconnected
		case <-t.C:
		}
	}
}

// sync sends what the state asks for: the StopTransactions of ended
// transactions, connector 1's status when it changed since the last sent
// (*sent), and Authorize and StartTransaction for a plugged car without
// one.
func (cp *ChargePoint) sync(ctx context.Context, c *conn, sent *string) error {
	for {
		cp.mu.Lock()
		if len(cp.stops) == 0 {
			cp.mu.Unlock()
			break
		}
		s := cp.stops[0]
		cp.mu.Unlock()
		req := core.NewStopTransactionRequest(s.meterWh, types.NewDateTime(s.at), s.id)
		req.Reason, req.IdTag = s.reason, s.idTag
		if _, err := call[*core.StopTransactionConfirmation](ctx, c, req); err != nil {
			return fmt.Errorf("transaction %d: %w", s.id, err)
		}
		cp.mu.Lock()
		cp.stops = cp.stops[1:]
		cp.mu.Unlock()
	}
	cp.mu.Lock()
	cp.updateLocked()
	status := cp.status
	start := cp.plugged && cp.tx.id == 0 && !cp.authFail
	cp.mu.Unlock()
	if status != *sent {
		if err := sendStatus(ctx, c, 1, status); err != nil {
			return err
		}
		*sent = status
	}
	if !start || status != StatusPreparing {
		return nil
	}
	return cp.startTx(ctx, c)
}

// sendStatus sends a StatusNotification of the connector.
func sendStatus(ctx context.Context, c *conn, connector int, s string) error {
	req := core.NewStatusNotificationRequest(connector, core.NoError, core.ChargePointStatus(s))
	req.Timestamp = types.NewDateTime(time.Now())
	_, err := call[*core.StatusNotificationConfirmation](ctx, c, req)
	return err
}

// startTx authorizes the car's idTag and starts a transaction.
func (cp *ChargePoint) startTx(ctx context.Context, c *conn) error {
	tag := cp.cfg.IDTag
	auth, err := call[*core.AuthorizeConfirmation](ctx, c, core.NewAuthorizationRequest(tag))
	if err != nil {
		return err
	}
	if auth.IdTagInfo == nil || auth.IdTagInfo.Status != types.AuthorizationStatusAccepted {
		cp.refused("authorize", auth.IdTagInfo)
		return nil
	}
	cp.mu.Lock()
	meterWh := int(cp.snap.energyWh)
	cp.mu.Unlock()
	now := time.Now()
	res, err := call[*core.StartTransactionConfirmation](ctx, c, core.NewStartTransactionRequest(1, tag, meterWh, types.NewDateTime(now)))
	if err != nil {
		return err
	}
	cp.mu.Lock()
	if !cp.plugged { // unplugged meanwhile: end it at once
		cp.tx = txView{id: res.TransactionId, start: now}
		cp.endTxLocked(core.ReasonEVDisconnected)
		cp.mu.Unlock()
		return nil
	}
	cp.tx = txView{id: res.TransactionId, start: now}
	cp.log.Info("transaction started", "transaction", res.TransactionId, "meterWh", meterWh)
	if res.IdTagInfo == nil || res.IdTagInfo.Status != types.AuthorizationStatusAccepted {
		cp.updateLocked()
		cp.endTxLocked(core.ReasonDeAuthorized)
		cp.mu.Unlock()
		cp.refused("start transaction", res.IdTagInfo)
		return nil
	}
	cp.updateLocked()
	cp.notifyLocked()
	cp.mu.Unlock()
	cp.wake()
	return cp.sendMeter(ctx, c, types.ReadingContextTransactionBegin)
}

// refused records that the central system refused the car's idTag: no
// new attempt until the car is plugged in again.
func (cp *ChargePoint) refused(what string, info *types.IdTagInfo) {
	status := "none"
	if info != nil {
		status = string(info.Status)
	}
	cp.log.Warn("central system refused the car", "step", what, "idTag", cp.cfg.IDTag, "status", status)
	cp.mu.Lock()
	cp.authFail = true
	cp.mu.Unlock()
}

// sendMeter sends one MeterValues of the running transaction (none
// without one): the register Energy.Active.Import.Register in Wh,
// Power.Active.Import in W, Current.Import in A per phase (one value for
// each of L1..L3, or L1 alone on one phase), Current.Offered in A (the
// effective limit, per phase) and the car's SoC in Percent.
func (cp *ChargePoint) sendMeter(ctx context.Context, c *conn, rc types.ReadingContext) error {
	cp.mu.Lock()
	cp.updateLocked()
	st, tx := cp.stateLocked(), cp.tx.id
	cp.mu.Unlock()
	if tx == 0 {
		return nil
	}
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	sv := []types.SampledValue{
		{Value: f(st.EnergyWh, 1), Context: rc, Measurand: types.MeasurandEnergyActiveImportRegister, Location: types.LocationOutlet, Unit: types.UnitOfMeasureWh},
		{Value: f(st.PowerW, 0), Context: rc, Measurand: types.MeasurandPowerActiveImport, Location: types.LocationOutlet, Unit: types.UnitOfMeasureW},
	}
	for _, ph := range []types.Phase{types.PhaseL1, types.PhaseL2, types.PhaseL3}[:cp.cfg.Phases] {
		sv = append(sv, types.SampledValue{Value: f(st.CurrentA, 2), Context: rc, Measurand: types.MeasurandCurrentImport,
			Phase: ph, Location: types.LocationOutlet, Unit: types.UnitOfMeasureA})
	}
	sv = append(sv,
		types.SampledValue{Value: f(st.LimitA, 2), Context: rc, Measurand: types.MeasurandCurrentOffered, Location: types.LocationOutlet, Unit: types.UnitOfMeasureA},
		types.SampledValue{Value: f(st.SoCPct, 1), Context: rc, Measurand: types.MeasurandSoC, Location: types.LocationEV, Unit: types.UnitOfMeasurePercent},
	)
	mv := []types.MeterValue{{Timestamp: types.NewDateTime(time.Now()), SampledValue: sv}}
	req := core.NewMeterValuesRequest(1, mv)
	req.TransactionId = &tx
	_, err := call[*core.MeterValuesConfirmation](ctx, c, req)
	return err
}
