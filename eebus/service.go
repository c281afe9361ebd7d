package eebus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	eebusapi "github.com/enbility/eebus-go/api"
	ucapi "github.com/enbility/eebus-go/usecases/api"
	cslpc "github.com/enbility/eebus-go/usecases/cs/lpc"
	cslpp "github.com/enbility/eebus-go/usecases/cs/lpp"
	shipapi "github.com/enbility/ship-go/api"
	spineapi "github.com/enbility/spine-go/api"
	"github.com/enbility/spine-go/model"

	"plantd/gridcontrol"
	"plantd/plant"
)

// RoleGridOperator is the role of the windows the control box makes.
const RoleGridOperator = "gridoperator"

// DefaultWindow is the length of a production window without an end of
// its own (renewed from half of it while the limit stands).
const DefaultWindow = 24 * time.Hour

// Gate is grid control's one gate (*gridcontrol.Controller): the windows
// of the control box's production limits are submitted, ended and listed
// there, as every door's.
type Gate interface {
	Submit(ctx context.Context, plantID string, by gridcontrol.Origin, orders []gridcontrol.Order, opts ...gridcontrol.SubmitOption) (gridcontrol.Schedule, error)
	Cancel(ctx context.Context, plantID, scheduleID string, by gridcontrol.Origin) error
	Schedules(plantID string, opts ...gridcontrol.ListOption) ([]gridcontrol.Schedule, error)
	Loaded() <-chan struct{}
}

// Consumers takes the consumption limit: the energy manager
// (*consumer.Manager), which keeps the controllable consumers' draw
// together at or below limitW while on, never below §14a's minimum.
type Consumers interface {
	LimitConsumption(plantID string, on bool, limitW float64)
}

// Spec is the service's setup.
type Spec struct {
	PlantID string
	// Cert is plantd's certificate (LoadOrCreateCert); StateDir keeps
	// the failsafe values the control box writes.
	Cert     tls.Certificate
	StateDir string
	Port     int
	// Brand, Model and Serial are shown to the control box.
	Brand, Model, Serial string
	// Trusted are the control boxes' SKIs (normalized); any other is
	// refused.
	Trusted    []string
	Interfaces []string
	// Peers are control boxes at known addresses (NodeSpec.Peers).
	Peers map[string]string
	// HeartbeatTimeout: without the box's heartbeat this long, the
	// failsafe applies.
	HeartbeatTimeout time.Duration
	// Failsafe are the defaults until the box writes its own.
	Failsafe Failsafe
	// ProductionCommand is FeedInLimit or opModMaxLimW.
	ProductionCommand string
	// ConsumptionNominalW and ProductionNominalW are reported to the box
	// (LPC/LPP scenario 4): the controllable consumers' rated sum and
	// the inverters'. A limit above them is refused. 0: not reported.
	// Deps.ProductionNominal, when set, replaces ProductionNominalW.
	ConsumptionNominalW, ProductionNominalW float64
	// Window is the length of a production window without an end
	// (default DefaultWindow).
	Window time.Duration
}

// Deps are the service's collaborators.
type Deps struct {
	Gate      Gate
	Consumers Consumers // nil: consumption limits are logged only
	Log       func(plant.LogEntry)
	// ProductionNominal is the inverters' rated sum now, in W (0: not
	// known yet), asked before every decision of the loop, since the
	// inverters tell their rating only once discovered; a change is
	// reported to the box and governs the next write's approval. nil:
	// Spec.ProductionNominalW.
	ProductionNominal func() float64
}

// Status is what the service shows of itself.
type Status struct {
	SKI        string `json:"ski"`
	ControlBox string `json:"controlBox,omitempty"` // the connected trusted box's SKI
	Connected  bool   `json:"connected"`
	Failsafe   bool   `json:"failsafe"`
	// ConsumptionLimitW and ProductionLimitW are the limits in force
	// (nil: none).
	ConsumptionLimitW *float64 `json:"consumptionLimitW,omitempty"`
	ProductionLimitW  *float64 `json:"productionLimitW,omitempty"`
	// ProductionWindow is the grid-control schedule holding it.
	ProductionWindow string `json:"productionWindow,omitempty"`
	// LastHeartbeat is when the box's last heartbeat arrived.
	LastHeartbeat time.Time `json:"lastHeartbeat,omitzero"`
	// Limits, Refused and Failsafes count the limits taken and refused
	// and the times the heartbeat's loss put plantd in failsafe.
	Limits, Refused, Failsafes uint64 `json:"-"`
}

// Service is plantd as the controllable system of LPC and LPP.
type Service struct {
	spec Spec
	deps Deps
	log  *slog.Logger
	node *Node
	lpc  *cslpc.LPC
	lpp  *cslpp.LPP

	qmu   sync.Mutex
	queue []event
	wake  chan struct{}

	smu    sync.Mutex
	status Status

	// The loop's own state.
	stored    stored
	fs        Failsafe
	box       string // the trusted box last connected (or the first trusted)
	connected bool
	lastBeat  time.Time // the box's last heartbeat
	beatSeen  bool
	// beatAt arms the heartbeat watchdog: the last heartbeat, or the
	// connection of a box that has not sent one since.
	beatAt     time.Time
	failsafe   bool
	lost       bool // failsafe for a lost heartbeat (not the start's)
	since      time.Time
	cons, prod limit
	consOn     bool
	consW      float64
	consKnown  bool
	held       heldWindow
	stale      []string
	untrusted  map[string]bool
	// counters for Status
	nLimits, nRefused, nFailsafes uint64
	// prodNominal is the production nominal maximum reported to the box.
	prodNominal float64
}

type limit struct {
	active bool
	w      float64
	until  time.Time // zero: no end
}

type heldWindow struct {
	id   string
	end  time.Time
	w    float64
	name string
	// bounded: the window ends with its limit (a duration), so it is
	// not renewed.
	bounded bool
}

type evKind int

const (
	evConnected evKind = iota
	evDisconnected
	evPairing
	evHeartbeat
	evApprove
	evLimit
	evFailsafeValue
	evFailsafeDuration
)

type event struct {
	kind  evKind
	ski   string
	lpp   bool // the event is LPP's (else LPC's)
	state shipapi.ConnectionState
	err   error
}

// New sets the service up: the node with the LPC and LPP use cases of a
// controllable system on plantd's CEM entity, and the failsafe values
// kept in the state directory. Run starts it.
func New(spec Spec, deps Deps, logger *slog.Logger) (*Service, error) {
	switch {
	case spec.PlantID == "":
		return nil, errors.New("eebus: a plant is required")
	case deps.Gate == nil:
		return nil, errors.New("eebus: grid control is required")
	case len(spec.Trusted) == 0:
		return nil, errors.New("eebus: no trusted control box")
	case spec.HeartbeatTimeout <= 0:
		return nil, errors.New("eebus: heartbeat timeout is required")
	}
	if spec.Window <= 0 {
		spec.Window = DefaultWindow
	}
	if spec.ProductionCommand == "" {
		spec.ProductionCommand = "FeedInLimit"
	}
	if logger == nil {
		logger = slog.Default()
	}
	if deps.Log == nil {
		deps.Log = func(plant.LogEntry) {}
	}
	st, err := loadState(spec.StateDir)
	if err != nil {
		return nil, err
	}
	s := &Service{spec: spec, deps: deps, log: logger, wake: make(chan struct{}, 1), stored: st,
		fs: st.apply(spec.Failsafe), box: spec.Trusted[0], untrusted: map[string]bool{}, prodNominal: spec.ProductionNominalW}
	s.node, err = NewNode(NodeSpec{Cert: spec.Cert, Port: spec.Port, Brand: spec.Brand, Model: spec.Model, Serial: spec.Serial,
		DeviceType: model.DeviceTypeTypeEnergyManagementSystem, EntityType: model.EntityTypeTypeCEM,
		Trusted: spec.Trusted, Interfaces: spec.Interfaces, Peers: spec.Peers},
		NodeEvents{
			Connected:    func(ski string) { s.push(event{kind: evConnected, ski: ski}) },
			Disconnected: func(ski string) { s.push(event{kind: evDisconnected, ski: ski}) },
			Pairing: func(ski string, state shipapi.ConnectionState, err error) {
				s.push(event{kind: evPairing, ski: ski, state: state, err: err})
			},
		})
	if err != nil {
		return nil, err
	}
	s.lpc = cslpc.NewLPC(s.node.Entity(), s.useCaseEvent(false))
	s.lpp = cslpp.NewLPP(s.node.Entity(), s.useCaseEvent(true))
	for _, uc := range []eebusapi.UseCaseInterface{s.lpc, s.lpp} {
		uc.AddFeatures()
		uc.AddUseCase()
	}
	s.publishUseCaseData()
	s.status.SKI = s.node.SKI()
	return s, nil
}

// SKI is plantd's SKI.
func (s *Service) SKI() string { return s.node.SKI() }

// Status is the service's state now.
func (s *Service) Status() Status {
	s.smu.Lock()
	defer s.smu.Unlock()
	return s.status
}

// publishUseCaseData writes the failsafe values and nominal maxima into
// the use cases' data, which the control box reads.
func (s *Service) publishUseCaseData() {
	if err := s.lpc.SetFailsafeConsumptionActivePowerLimit(s.fs.ConsumptionW, true); err != nil {
		s.log.Debug("set LPC failsafe limit", "err", err)
	}
	if s.fs.ProductionW != nil {
		if err := s.lpp.SetFailsafeProductionActivePowerLimit(*s.fs.ProductionW, true); err != nil {
			s.log.Debug("set LPP failsafe limit", "err", err)
		}
	}
	d := min(max(s.fs.Duration, 2*time.Hour), 24*time.Hour) // the use cases' range
	_ = s.lpc.SetFailsafeDurationMinimum(d, true)
	_ = s.lpp.SetFailsafeDurationMinimum(d, true)
	if s.spec.ConsumptionNominalW > 0 {
		_ = s.lpc.SetConsumptionNominalMax(s.spec.ConsumptionNominalW)
	}
	if s.prodNominal > 0 {
		_ = s.lpp.SetProductionNominalMax(s.prodNominal)
	}
}

// refreshNominal takes the inverters' rated sum (Deps.ProductionNominal)
// and reports a new one to the box. 0 (not known) keeps the last.
func (s *Service) refreshNominal() {
	if s.deps.ProductionNominal == nil {
		return
	}
	w := s.deps.ProductionNominal()
	if !(w > 0) || math.IsInf(w, 0) || w == s.prodNominal {
		return
	}
	if err := s.lpp.SetProductionNominalMax(w); err != nil {
		s.log.Warn("eebus: report the production nominal maximum", "w", w, "err", err)
		return
	}
	s.log.Info("eebus: production nominal maximum", "w", w, "was", s.prodNominal)
	s.prodNominal = w
}

// useCaseEvent maps a use case's events to the loop's.
func (s *Service) useCaseEvent(isLPP bool) eebusapi.EntityEventCallback {
	return func(ski string, _ spineapi.DeviceRemoteInterface, _ spineapi.EntityRemoteInterface, ev eebusapi.EventType) {
		e := event{ski: ski, lpp: isLPP}
		switch ev {
		case cslpc.DataUpdateHeartbeat, cslpp.DataUpdateHeartbeat:
			e.kind = evHeartbeat
		case cslpc.WriteApprovalRequired, cslpp.WriteApprovalRequired:
			e.kind = evApprove
		case cslpc.DataUpdateLimit, cslpp.DataUpdateLimit:
			e.kind = evLimit
		case cslpc.DataUpdateFailsafeConsumptionActivePowerLimit, cslpp.DataUpdateFailsafeProductionActivePowerLimit:
			e.kind = evFailsafeValue
		case cslpc.DataUpdateFailsafeDurationMinimum, cslpp.DataUpdateFailsafeDurationMinimum:
			e.kind = evFailsafeDuration
		default:
			return
		}
		s.push(e)
	}
}

// push queues an event for the loop without blocking the stack.
func (s *Service) push(e event) {
	s.qmu.Lock()
	s.queue = append(s.queue, e)
	s.qmu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Service) take() []event {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	q := s.queue
	s.queue = nil
	return q
}

// Run starts the node and runs the loop until ctx ends; it starts in the
// failsafe state, which holds until the control box has spoken.
func (s *Service) Run(ctx context.Context) error {
	select {
	case <-s.deps.Gate.Loaded():
	case <-ctx.Done():
		return nil
	}
	s.stale = s.openWindows()
	now := time.Now()
	s.failsafe, s.lost, s.since = true, false, now
	if ms := s.stored.LostSince; ms != nil {
		since := time.UnixMilli(*ms)
		if since.After(now) {
			since = now // the clock was set back since: from now
		}
		if end := since.Add(s.fs.Duration); now.Before(end) {
			// Restarted within a heartbeat loss's failsafe: it holds to
			// its end, whatever the box says meanwhile.
			s.lost, s.since = true, since
			s.entry(plant.LevelWarning, "EEBusFailsafe", fmt.Sprintf("EEBus: resuming the failsafe of the lost heartbeat (since %s), held until %s at least: %s",
				since.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), s.describeFailsafe()))
			s.log.Warn("eebus: failsafe of the lost heartbeat resumed", "since", since, "until", end, "failsafe", s.describeFailsafe())
		} else {
			s.stored.LostSince = nil
			s.save()
		}
	}
	if !s.lost {
		s.entry(plant.LevelWarning, "EEBusFailsafe", fmt.Sprintf("EEBus: starting in the failsafe state until the control box speaks: %s", s.describeFailsafe()))
		s.log.Warn("eebus: failsafe until the control box speaks", "failsafe", s.describeFailsafe())
	}
	s.node.Start()
	defer s.node.Stop()
	s.log.Info("eebus: controllable system started", "ski", s.node.SKI(), "port", s.spec.Port, "trusted", s.spec.Trusted)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.refreshNominal()
		for _, e := range s.take() {
			s.handle(ctx, e, time.Now())
		}
		next := s.decide(ctx, time.Now())
		timer.Reset(time.Until(next))
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// openWindows lists the schedules of an earlier run's control box still
// open: ended once this run holds what it decided.
func (s *Service) openWindows() []string {
	scheds, err := s.deps.Gate.Schedules(s.spec.PlantID)
	if err != nil {
		s.log.Warn("eebus: list the windows of an earlier run", "err", err)
		return nil
	}
	var ids []string
	for _, sc := range scheds {
		if !strings.HasPrefix(sc.CreatedBy, string(gridcontrol.DoorEEBus)+":") {
			continue
		}
		for _, cm := range sc.Commands {
			if cm.Status != gridcontrol.StatusDone {
				ids = append(ids, sc.ScheduleID)
				break
			}
		}
	}
	return ids
}

func (s *Service) handle(ctx context.Context, e event, now time.Time) {
	trusted := s.node.Trusted(e.ski)
	if !trusted {
		switch e.kind {
		case evPairing, evConnected:
			if !s.untrusted[e.ski] {
				s.untrusted[e.ski] = true
				s.entry(plant.LevelWarning, "EEBusUntrusted", fmt.Sprintf("EEBus: refused SKI %s, which is not a trusted control box (eebus.trusted)", e.ski))
				s.log.Warn("eebus: untrusted SKI refused", "ski", e.ski)
			}
			if e.kind == evConnected {
				s.node.hub.DisconnectSKI(e.ski, "not trusted")
			}
		}
		// Never act on what an untrusted peer says (and the stack's
		// events for other local devices in the process are not ours).
		return
	}
	switch e.kind {
	case evConnected:
		s.box, s.connected = e.ski, true
		if s.beatAt.Before(now) {
			s.beatAt = now // a box that connects and never beats goes to failsafe too
		}
		s.entry(plant.LevelInfo, "EEBusConnected", fmt.Sprintf("EEBus: control box %s connected", e.ski))
		s.log.Info("eebus: control box connected", "ski", e.ski)
	case evDisconnected:
		s.connected = false
		s.entry(plant.LevelWarning, "EEBusDisconnected", fmt.Sprintf("EEBus: control box %s disconnected", e.ski))
		s.log.Warn("eebus: control box disconnected", "ski", e.ski)
	case evPairing:
		if e.state == shipapi.ConnectionStateError || e.state == shipapi.ConnectionStateRemoteDeniedTrust {
			s.log.Warn("eebus: pairing with the control box failed", "ski", e.ski, "state", e.state, "err", e.err)
		}
	case evHeartbeat:
		s.box = e.ski
		s.lastBeat, s.beatSeen, s.beatAt = now, true, now
		s.log.Debug("eebus: heartbeat", "ski", e.ski)
		if s.failsafe && !s.lost {
			s.recover("the control box speaks")
		}
	case evApprove:
		s.approve(e.lpp)
	case evLimit:
		s.box = e.ski
		s.readLimit(e.lpp, now)
		if s.failsafe && !s.lost {
			s.recover("the control box sent a limit")
		}
	case evFailsafeValue:
		s.readFailsafe(e.lpp)
	case evFailsafeDuration:
		s.readFailsafeDuration(e.lpp)
	}
}

// approve decides the limits the control box writes: refused when
// negative, not a number, above the nominal maximum reported, or of a
// negative duration; approved otherwise.
func (s *Service) approve(isLPP bool) {
	name, nominal := "consumption", s.spec.ConsumptionNominalW
	pending := map[model.MsgCounterType]ucapi.LoadLimit{}
	if isLPP {
		name, nominal = "production", s.prodNominal
		pending = s.lpp.PendingProductionLimits()
	} else {
		pending = s.lpc.PendingConsumptionLimits()
	}
	for mc, l := range pending {
		reason := ""
		switch {
		case math.IsNaN(l.Value) || math.IsInf(l.Value, 0) || l.Value < 0:
			reason = fmt.Sprintf("limit %g W is not a power", l.Value)
		case nominal > 0 && l.Value > nominal:
			reason = fmt.Sprintf("limit %g W is above the nominal maximum %g W", l.Value, nominal)
		case l.Duration < 0:
			reason = fmt.Sprintf("negative duration %s", l.Duration)
		}
		if reason != "" {
			s.nRefused++
			s.entry(plant.LevelWarning, "EEBusLimitRefused", fmt.Sprintf("EEBus: %s limit refused: %s", name, reason))
			s.log.Warn("eebus: limit refused", "kind", name, "reason", reason)
		}
		if isLPP {
			s.lpp.ApproveOrDenyProductionLimit(mc, reason == "", reason)
		} else {
			s.lpc.ApproveOrDenyConsumptionLimit(mc, reason == "", reason)
		}
	}
}

// readLimit takes the limit the use case now holds.
func (s *Service) readLimit(isLPP bool, now time.Time) {
	var l ucapi.LoadLimit
	var err error
	name, cur := "consumption", &s.cons
	if isLPP {
		name, cur = "production", &s.prod
		l, err = s.lpp.ProductionLimit()
	} else {
		l, err = s.lpc.ConsumptionLimit()
	}
	if err != nil {
		s.log.Warn("eebus: read the limit", "kind", name, "err", err)
		return
	}
	n := limit{active: l.IsActive, w: math.Abs(l.Value)}
	if l.IsActive && l.Duration > 0 {
		n.until = now.Add(l.Duration)
	}
	*cur = n
	s.nLimits++
	msg := fmt.Sprintf("EEBus: the control box ends the %s limit", name)
	if n.active {
		msg = fmt.Sprintf("EEBus: %s limit %g W from control box %s", name, n.w, s.box)
		if !n.until.IsZero() {
			msg += fmt.Sprintf(" for %s", l.Duration)
		}
	}
	s.entry(plant.LevelInfo, "EEBusLimit", msg)
	s.log.Info("eebus: limit", "kind", name, "active", n.active, "w", n.w, "duration", l.Duration)
}

func (s *Service) readFailsafe(isLPP bool) {
	if isLPP {
		v, _, err := s.lpp.FailsafeProductionActivePowerLimit()
		if err != nil {
			return
		}
		v = math.Abs(v)
		if s.fs.ProductionW != nil && *s.fs.ProductionW == v {
			return
		}
		s.stored.ProductionW, s.fs.ProductionW = &v, &v
	} else {
		v, _, err := s.lpc.FailsafeConsumptionActivePowerLimit()
		if err != nil || (s.stored.ConsumptionW != nil && v == s.fs.ConsumptionW) {
			return
		}
		s.stored.ConsumptionW, s.fs.ConsumptionW = &v, v
	}
	s.save()
	s.entry(plant.LevelInfo, "EEBusFailsafeSet", "EEBus: the control box set the failsafe values: "+s.describeFailsafe())
}

func (s *Service) readFailsafeDuration(isLPP bool) {
	var d time.Duration
	var err error
	if isLPP {
		d, _, err = s.lpp.FailsafeDurationMinimum()
	} else {
		d, _, err = s.lpc.FailsafeDurationMinimum()
	}
	if err != nil || d <= 0 || (s.stored.Duration != nil && d == s.fs.Duration) {
		return
	}
	s.stored.Duration, s.fs.Duration = &d, d
	s.save()
	s.entry(plant.LevelInfo, "EEBusFailsafeSet", "EEBus: the control box set the failsafe values: "+s.describeFailsafe())
}

func (s *Service) save() {
	if err := saveState(s.spec.StateDir, s.stored); err != nil {
		s.log.Error("eebus: keep the failsafe values", "err", err)
	}
}

func (s *Service) recover(why string) {
	if s.lost && s.stored.LostSince != nil {
		s.stored.LostSince = nil
		s.save()
	}
	s.failsafe, s.lost = false, false
	s.entry(plant.LevelInfo, "EEBusRecovered", fmt.Sprintf("EEBus: failsafe ended: %s", why))
	s.log.Info("eebus: failsafe ended", "why", why)
}

// decide runs the heartbeat watchdog, the failsafe and the limits' ends,
// brings the consumers and grid control to what is in force, and
// returns when to decide again.
func (s *Service) decide(ctx context.Context, now time.Time) time.Time {
	next := now.Add(time.Hour)
	soon := func(t time.Time) {
		if !t.IsZero() && t.Before(next) {
			next = t
		}
	}
	if !s.failsafe && !s.beatAt.IsZero() {
		if deadline := s.beatAt.Add(s.spec.HeartbeatTimeout); !now.Before(deadline) {
			s.failsafe, s.lost, s.since = true, true, now
			s.nFailsafes++
			ms := now.UnixMilli()
			s.stored.LostSince = &ms
			s.save()
			s.entry(plant.LevelWarning, "EEBusHeartbeatLost", fmt.Sprintf("EEBus: no heartbeat from control box %s for %s", s.box, s.spec.HeartbeatTimeout))
			s.entry(plant.LevelError, "EEBusFailsafe", fmt.Sprintf("EEBus: failsafe for at least %s: %s", s.fs.Duration, s.describeFailsafe()))
			s.log.Error("eebus: heartbeat lost: failsafe", "box", s.box, "failsafe", s.describeFailsafe())
		} else {
			soon(deadline)
		}
	}
	if s.failsafe && s.lost {
		end := s.since.Add(s.fs.Duration)
		beating := s.beatSeen && now.Sub(s.lastBeat) < s.spec.HeartbeatTimeout
		switch {
		case !now.Before(end) && beating:
			s.recover("the heartbeat is back and the failsafe duration is over")
		case now.Before(end):
			soon(end)
		}
	}
	for _, k := range []struct {
		name string
		l    *limit
	}{{"consumption", &s.cons}, {"production", &s.prod}} {
		if l := k.l; l.active && !l.until.IsZero() {
			if !now.Before(l.until) {
				*l = limit{}
				s.entry(plant.LevelInfo, "EEBusLimitEnded", fmt.Sprintf("EEBus: the %s limit's duration is over", k.name))
			} else {
				soon(l.until)
			}
		}
	}
	consOn, consW := s.cons.active, s.cons.w
	var prodW *float64
	name := s.box
	if s.prod.active {
		v := s.prod.w
		prodW = &v
	}
	if s.failsafe {
		consOn, consW, prodW, name = true, s.fs.ConsumptionW, s.fs.ProductionW, s.box+"/failsafe"
	}
	if !s.consKnown || consOn != s.consOn || (consOn && consW != s.consW) {
		s.consOn, s.consW, s.consKnown = consOn, consW, true
		if s.deps.Consumers != nil {
			s.deps.Consumers.LimitConsumption(s.spec.PlantID, consOn, consW)
		}
	}
	until := time.Time{}
	if !s.failsafe && s.prod.active {
		until = s.prod.until
	}
	s.hold(ctx, prodW, until, name, now)
	if s.held.id != "" && !s.held.bounded {
		soon(s.held.end.Add(-s.spec.Window / 2))
	}
	s.publish(consOn, consW)
	return next
}

func (s *Service) origin(name string) gridcontrol.Origin {
	return gridcontrol.Origin{Door: gridcontrol.DoorEEBus, Name: name, Role: RoleGridOperator,
		Channel: string(gridcontrol.DoorEEBus) + ":" + strings.TrimSuffix(name, "/failsafe")}
}

// hold brings grid control to the production limit w (nil: none): a new
// window when it differs from the held one or that is past half its
// length (one without an end of its own), then the old one ended; or
// the held one ended. Failures are logged and tried again at the next
// decision.
func (s *Service) hold(ctx context.Context, w *float64, until time.Time, name string, now time.Time) {
	if w == nil {
		if s.held.id != "" {
			if err := s.deps.Gate.Cancel(ctx, s.spec.PlantID, s.held.id, s.origin(s.held.name)); err != nil {
				s.log.Warn("eebus: end the production window", "schedule", s.held.id, "err", err)
				return
			}
			s.entry(plant.LevelInfo, "EEBusReleased", fmt.Sprintf("EEBus: no production limit: schedule %s ended", s.held.id))
			s.held = heldWindow{}
		}
		s.endStale(ctx)
		return
	}
	renew := s.held.id != "" && !s.held.bounded && !now.Before(s.held.end.Add(-s.spec.Window/2))
	if s.held.id != "" && s.held.w == *w && s.held.name == name && s.held.bounded == !until.IsZero() && !renew {
		return
	}
	length := s.spec.Window
	if !until.IsZero() {
		length = until.Sub(now)
		if length < time.Second {
			length = time.Second
		}
	}
	v := *w
	sc, err := s.deps.Gate.Submit(ctx, s.spec.PlantID, s.origin(name),
		[]gridcontrol.Order{{Command: s.spec.ProductionCommand, For: length, Value: &v, Unit: "W"}},
		gridcontrol.SkipEligibilityCheck(true))
	if err != nil {
		s.log.Warn("eebus: submit the production window", "err", err)
		return
	}
	old := s.held
	s.held = heldWindow{id: sc.ScheduleID, w: v, name: name, bounded: !until.IsZero()}
	for _, cm := range sc.Commands {
		s.held.end = cm.End
	}
	if old.id == "" || old.w != v || old.name != name {
		s.entry(plant.LevelInfo, "EEBusApplied", fmt.Sprintf("EEBus: %s %g W by eebus:%s (schedule %s)", s.spec.ProductionCommand, v, name, sc.ScheduleID))
	}
	if old.id != "" {
		if err := s.deps.Gate.Cancel(ctx, s.spec.PlantID, old.id, s.origin(old.name)); err != nil {
			s.log.Warn("eebus: end the previous production window", "schedule", old.id, "err", err)
		}
	}
	s.endStale(ctx)
}

func (s *Service) endStale(ctx context.Context) {
	keep := s.stale[:0]
	for _, id := range s.stale {
		if id == s.held.id {
			continue
		}
		if err := s.deps.Gate.Cancel(ctx, s.spec.PlantID, id, s.origin(s.box)); err != nil && !errors.Is(err, gridcontrol.ErrUnknownSchedule) {
			s.log.Warn("eebus: end a window of the earlier run", "schedule", id, "err", err)
			keep = append(keep, id)
		}
	}
	s.stale = keep
}

func (s *Service) publish(consOn bool, consW float64) {
	st := Status{SKI: s.node.SKI(), ControlBox: s.box, Connected: s.connected, Failsafe: s.failsafe, ProductionWindow: s.held.id,
		LastHeartbeat: s.lastBeat, Limits: s.nLimits, Refused: s.nRefused, Failsafes: s.nFailsafes}
	if consOn {
		v := consW
		st.ConsumptionLimitW = &v
	}
	if s.held.id != "" {
		v := s.held.w
		st.ProductionLimitW = &v
	}
	s.smu.Lock()
	s.status = st
	s.smu.Unlock()
}

func (s *Service) describeFailsafe() string {
	p := "no production limit"
	if s.fs.ProductionW != nil {
		p = fmt.Sprintf("production %g W", *s.fs.ProductionW)
	}
	return fmt.Sprintf("consumption %g W, %s, at least %s", s.fs.ConsumptionW, p, s.fs.Duration)
}

func (s *Service) entry(level, code, msg string) {
	s.deps.Log(plant.LogEntry{Time: time.Now().UTC(), Level: level, Code: code, Message: msg, PlantID: s.spec.PlantID})
}
