package controlbox

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	eebusapi "github.com/enbility/eebus-go/api"
	"github.com/enbility/eebus-go/features/client"
	ucapi "github.com/enbility/eebus-go/usecases/api"
	eglpc "github.com/enbility/eebus-go/usecases/eg/lpc"
	eglpp "github.com/enbility/eebus-go/usecases/eg/lpp"
	"github.com/enbility/ship-go/cert"
	spineapi "github.com/enbility/spine-go/api"
	"github.com/enbility/spine-go/model"

	"plantd/eebus"
)

// Spec is a box: its port, the SKI it trusts (plantd's) and, to dial
// plantd without mDNS, plantd's address; its heartbeat period.
type Spec struct {
	Port      int
	Trust     string
	PeerAddr  string // host:port of the trusted SKI; empty: mDNS
	Heartbeat time.Duration
	Serial    string
	// Cert is the box's certificate; none: a new one (a new SKI).
	Cert *tls.Certificate
}

// Box is a control box.
type Box struct {
	node *eebus.Node
	lpc  *eglpc.LPC
	lpp  *eglpp.LPP

	mu      sync.Mutex
	lpcPeer spineapi.EntityRemoteInterface
	lppPeer spineapi.EntityRemoteInterface
	// lpcData, lppData: plantd's limit data arrived (a write needs its
	// descriptions).
	lpcData, lppData bool
	seen             chan struct{}
	seenOnce         sync.Once
}

// New makes a box with a fresh certificate; Start runs it.
func New(spec Spec) (*Box, error) {
	if spec.Serial == "" {
		spec.Serial = "box-1"
	}
	if spec.Heartbeat <= 0 {
		spec.Heartbeat = 4 * time.Second
	}
	var c tls.Certificate
	if spec.Cert != nil {
		c = *spec.Cert
	} else {
		var err error
		if c, err = cert.CreateCertificate("controlbox", "plantd", "DE", spec.Serial); err != nil {
			return nil, fmt.Errorf("control box: certificate: %w", err)
		}
	}
	ns := eebus.NodeSpec{Cert: c, Port: spec.Port, Brand: "plantd", Model: "ControlBox", Serial: spec.Serial,
		DeviceType: model.DeviceTypeTypeElectricitySupplySystem, EntityType: model.EntityTypeTypeGridGuard,
		Heartbeat: spec.Heartbeat, Trusted: []string{spec.Trust}}
	if spec.PeerAddr != "" {
		ns.Peers = map[string]string{spec.Trust: spec.PeerAddr}
	}
	b := &Box{seen: make(chan struct{})}
	var err error
	if b.node, err = eebus.NewNode(ns, eebus.NodeEvents{}); err != nil {
		return nil, err
	}
	b.lpc = eglpc.NewLPC(b.node.Entity(), func(_ string, _ spineapi.DeviceRemoteInterface, e spineapi.EntityRemoteInterface, ev eebusapi.EventType) {
		switch ev {
		case eglpc.UseCaseSupportUpdate:
			b.found(&b.lpcPeer, e, nil)
		case eglpc.DataUpdateLimit:
			b.found(nil, e, &b.lpcData)
		}
	})
	b.lpp = eglpp.NewLPP(b.node.Entity(), func(_ string, _ spineapi.DeviceRemoteInterface, e spineapi.EntityRemoteInterface, ev eebusapi.EventType) {
		switch ev {
		case eglpp.UseCaseSupportUpdate:
			b.found(&b.lppPeer, e, nil)
		case eglpp.DataUpdateLimit:
			b.found(nil, e, &b.lppData)
		}
	})
	for _, uc := range []eebusapi.UseCaseInterface{b.lpc, b.lpp} {
		uc.AddFeatures()
		uc.AddUseCase()
	}
	return b, nil
}

func (b *Box) found(p *spineapi.EntityRemoteInterface, e spineapi.EntityRemoteInterface, data *bool) {
	b.mu.Lock()
	if p != nil {
		*p = e
	}
	if data != nil {
		*data = true
	}
	both := b.lpcPeer != nil && b.lppPeer != nil && b.lpcData && b.lppData
	b.mu.Unlock()
	if both {
		b.seenOnce.Do(func() { close(b.seen) })
	}
}

// SKI is the box's SKI.
func (b *Box) SKI() string { return b.node.SKI() }

// Start starts the box's server and discovery.
func (b *Box) Start() { b.node.Start() }

// Stop stops it.
func (b *Box) Stop() { b.node.Stop() }

// Ready waits until plantd's LPC and LPP are seen with their limit data
// (a write before that finds no limit to write: ErrDataNotAvailable).
func (b *Box) Ready(ctx context.Context) error {
	select {
	case <-b.seen:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("control box: plantd's LPC and LPP not seen: %w", ctx.Err())
	}
}

func (b *Box) peers() (lpc, lpp spineapi.EntityRemoteInterface) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lpcPeer, b.lppPeer
}

// ErrNoAnswer: plantd did not answer a write.
var ErrNoAnswer = errors.New("no answer")

// write sends one write and waits for plantd's answer: its error number
// (0: accepted).
func write(ctx context.Context, send func(cb func(model.ResultDataType)) (*model.MsgCounterType, error)) (model.ErrorNumberType, error) {
	got := make(chan model.ResultDataType, 1)
	if _, err := send(func(r model.ResultDataType) {
		select {
		case got <- r:
		default:
		}
	}); err != nil {
		return 0, err
	}
	select {
	case r := <-got:
		if r.ErrorNumber == nil {
			return model.ErrorNumberTypeNoError, nil
		}
		return *r.ErrorNumber, nil
	case <-ctx.Done():
		return 0, ErrNoAnswer
	}
}

// Limit writes a consumption (LPC) or production (LPP) limit and waits
// for plantd's answer: its SPINE error number, 0 when accepted.
func (b *Box) Limit(ctx context.Context, production bool, l ucapi.LoadLimit) (model.ErrorNumberType, error) {
	lpc, lpp := b.peers()
	if production {
		return write(ctx, func(cb func(model.ResultDataType)) (*model.MsgCounterType, error) {
			return b.lpp.WriteProductionLimit(lpp, l, cb)
		})
	}
	return write(ctx, func(cb func(model.ResultDataType)) (*model.MsgCounterType, error) {
		return b.lpc.WriteConsumptionLimit(lpc, l, cb)
	})
}

// WriteRaw writes a limit as the box builds it on the wire, without the
// use case's checks: an active limit of number × 10^scale W and, when end
// is not empty, the limit's end as that string (an ISO 8601 duration such
// as PT10M, or anything else), to test how plantd takes data that no
// well-behaved box sends. It waits for plantd's answer: its SPINE error
// number, 0 when accepted.
func (b *Box) WriteRaw(ctx context.Context, production bool, number int64, scale int8, end string) (model.ErrorNumberType, error) {
	lpc, lpp := b.peers()
	local, peer, dir := b.lpc.LocalEntity, lpc, model.EnergyDirectionTypeConsume
	if production {
		local, peer, dir = b.lpp.LocalEntity, lpp, model.EnergyDirectionTypeProduce
	}
	lc, err := client.NewLoadControl(local, peer)
	if err != nil {
		return 0, fmt.Errorf("load control of plantd: %w", err)
	}
	limits, err := lc.GetLimitDataForFilter(model.LoadControlLimitDescriptionDataType{
		LimitType:      new(model.LoadControlLimitTypeTypeSignDependentAbsValueLimit),
		LimitDirection: &dir,
		ScopeType:      new(model.ScopeTypeTypeActivePowerLimit),
	})
	if err != nil || len(limits) != 1 || limits[0].LimitId == nil {
		return 0, fmt.Errorf("plantd's limit: %v", err)
	}
	data := model.LoadControlLimitDataType{LimitId: limits[0].LimitId, IsLimitActive: new(true),
		Value: &model.ScaledNumberType{Number: (*model.NumberType)(&number), Scale: (*model.ScaleType)(&scale)}}
	if end != "" {
		data.TimePeriod = &model.TimePeriodType{EndTime: model.NewAbsoluteOrRelativeTimeType(end)}
	}
	return write(ctx, func(cb func(model.ResultDataType)) (*model.MsgCounterType, error) {
		mc, err := lc.WriteLimitData([]model.LoadControlLimitDataType{data}, nil, nil)
		if err == nil && mc != nil {
			_ = lc.AddResponseCallback(*mc, func(msg spineapi.ResponseMessage) {
				if r, ok := msg.Data.(*model.ResultDataType); ok {
					cb(*r)
				}
			})
		}
		return mc, err
	})
}

// Failsafe writes a failsafe limit in W (production: LPP's, else LPC's).
func (b *Box) Failsafe(production bool, w float64) error {
	lpc, lpp := b.peers()
	var err error
	if production {
		_, err = b.lpp.WriteFailsafeProductionActivePowerLimit(lpp, w)
	} else {
		_, err = b.lpc.WriteFailsafeConsumptionActivePowerLimit(lpc, w)
	}
	return err
}

// Nominal is the nominal maximum plantd reports (production: LPP's, the
// inverters' rated sum; else LPC's, the controllable consumers'). The
// Energy Guard use cases of eebus-go v0.7.0 never fetch it: the first
// call subscribes to plantd's electrical connection and requests its
// characteristics, and waits for them until ctx ends; then plantd's
// notifications keep them current.
func (b *Box) Nominal(ctx context.Context, production bool) (float64, error) {
	lpc, lpp := b.peers()
	peer, read := lpc, func() (float64, error) { return b.lpc.ConsumptionNominalMax(lpc) }
	if production {
		peer, read = lpp, func() (float64, error) { return b.lpp.ProductionNominalMax(lpp) }
	}
	if peer == nil {
		return 0, errors.New("plantd's use case not seen")
	}
	ec, err := client.NewElectricalConnection(b.node.Entity(), peer)
	if err != nil {
		return 0, fmt.Errorf("electrical connection: %w", err)
	}
	if !ec.HasSubscription() {
		if _, err := ec.Subscribe(); err != nil {
			return 0, fmt.Errorf("subscribe to the electrical connection: %w", err)
		}
		if _, err := ec.RequestCharacteristics(nil, nil); err != nil {
			return 0, fmt.Errorf("request the characteristics: %w", err)
		}
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		w, err := read()
		if err == nil {
			return w, nil
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-tick.C:
		}
	}
}

// FailsafeDuration writes the failsafe duration minimum (2h..24h).
func (b *Box) FailsafeDuration(d time.Duration) error {
	lpc, _ := b.peers()
	_, err := b.lpc.WriteFailsafeDurationMinimum(lpc, d)
	return err
}

// Heartbeat stops (false) or restarts (true) the box's heartbeat.
func (b *Box) Heartbeat(on bool) error {
	hb := b.node.Entity().HeartbeatManager()
	if !on {
		hb.StopHeartbeat()
		return nil
	}
	return hb.StartHeartbeat()
}

// answerWait bounds the wait for plantd's answer to a write: eebus-go
// v0.7.0 registers a write's result callback after sending it, so an
// answer quicker than that (a refusal, decided at once) is not seen.
const answerWait = 3 * time.Second

// Serve runs line commands from r, one at a time, answering each on w
// with a line "ok [n]" or "error <message>":
//
//	ready                        wait until plantd's LPC and LPP are seen
//	lpc|lpp <W> [<duration>]     an active limit (duration 0 or none: no end); ok <SPINE error
//	                             number>, or "ok -" when no answer came (answerWait)
//	lpc|lpp end                  deactivate the limit
//	raw lpc|lpp <n> <scale> [<end>]  an active limit of n × 10^scale W written raw
//	                             (WriteRaw: no use-case checks; end as sent, e.g. -PT10M)
//	failsafe lpc|lpp <W>         a failsafe limit
//	failsafe duration <d>        the failsafe duration minimum
//	nominal lpc|lpp              the nominal maximum plantd reports: ok <W>
//	heartbeat stop|start
//
// Each command waits at most timeout. It returns at the end of r.
func Serve(ctx context.Context, b *Box, r io.Reader, w io.Writer, timeout time.Duration) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		ans, err := command(cctx, b, f)
		cancel()
		if err != nil {
			ans = "error " + err.Error()
		}
		if _, err := fmt.Fprintln(w, ans); err != nil {
			return err
		}
	}
	return sc.Err()
}

func command(ctx context.Context, b *Box, f []string) (string, error) {
	switch {
	case f[0] == "ready":
		return "ok", b.Ready(ctx)
	case (f[0] == "lpc" || f[0] == "lpp") && len(f) >= 2:
		l := ucapi.LoadLimit{IsActive: true}
		if f[1] == "end" {
			l.IsActive = false
		} else {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return "", fmt.Errorf("limit %q: %w", f[1], err)
			}
			l.Value = v
			if len(f) > 2 {
				if l.Duration, err = time.ParseDuration(f[2]); err != nil {
					return "", fmt.Errorf("duration %q: %w", f[2], err)
				}
			}
		}
		actx, cancel := context.WithTimeout(ctx, answerWait)
		defer cancel()
		n, err := b.Limit(actx, f[0] == "lpp", l)
		if errors.Is(err, ErrNoAnswer) {
			return "ok -", nil
		}
		return fmt.Sprintf("ok %d", n), err
	case f[0] == "raw" && (len(f) == 4 || len(f) == 5) && (f[1] == "lpc" || f[1] == "lpp"):
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return "", fmt.Errorf("number %q: %w", f[2], err)
		}
		sc, err := strconv.ParseInt(f[3], 10, 8)
		if err != nil {
			return "", fmt.Errorf("scale %q: %w", f[3], err)
		}
		end := ""
		if len(f) == 5 {
			end = f[4]
		}
		actx, cancel := context.WithTimeout(ctx, answerWait)
		defer cancel()
		e, err := b.WriteRaw(actx, f[1] == "lpp", n, int8(sc), end)
		if errors.Is(err, ErrNoAnswer) {
			return "ok -", nil
		}
		return fmt.Sprintf("ok %d", e), err
	case f[0] == "failsafe" && len(f) == 3 && f[1] == "duration":
		d, err := time.ParseDuration(f[2])
		if err != nil {
			return "", err
		}
		return "ok", b.FailsafeDuration(d)
	case f[0] == "failsafe" && len(f) == 3 && (f[1] == "lpc" || f[1] == "lpp"):
		v, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			return "", err
		}
		return "ok", b.Failsafe(f[1] == "lpp", v)
	case f[0] == "nominal" && len(f) == 2 && (f[1] == "lpc" || f[1] == "lpp"):
		w, err := b.Nominal(ctx, f[1] == "lpp")
		return fmt.Sprintf("ok %g", w), err
	case f[0] == "heartbeat" && len(f) == 2 && (f[1] == "stop" || f[1] == "start"):
		return "ok", b.Heartbeat(f[1] == "start")
	}
	return "", fmt.Errorf("unknown command %q", strings.Join(f, " "))
}
