package charger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	ocpp16 "github.com/lorenzodonini/ocpp-go/ocpp1.6"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/core"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/smartcharging"
	"github.com/lorenzodonini/ocpp-go/ocpp1.6/types"
	"github.com/lorenzodonini/ocpp-go/ws"
)

// wait is how long a test waits for an event before it fails.
const wait = 5 * time.Second

// logRec collects log lines; changed is signalled after each.
type logRec struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{}
}

type recHandler struct {
	rec   *logRec
	attrs []slog.Attr
}

func (h recHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return recHandler{h.rec, append(append([]slog.Attr{}, h.attrs...), as...)}
}
func (h recHandler) WithGroup(string) slog.Handler { return h }
func (h recHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s", a)
	}
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s", a); return true })
	h.rec.mu.Lock()
	h.rec.lines = append(h.rec.lines, b.String())
	h.rec.mu.Unlock()
	select {
	case h.rec.changed <- struct{}{}:
	default:
	}
	return nil
}

// waitLine waits for a line containing every part.
func (l *logRec) waitLine(t testing.TB, parts ...string) string {
	t.Helper()
	deadline := time.After(wait)
	for {
		l.mu.Lock()
		for _, line := range l.lines {
			if containsAll(line, parts) {
				l.mu.Unlock()
				return line
			}
		}
		l.mu.Unlock()
		select {
		case <-l.changed:
		case <-deadline:
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("no log line with %q in:\n%s", parts, strings.Join(l.lines, "\n"))
		}
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// rig is a running Central and its log.
type rig struct {
	c   *Central
	url string
	log *logRec
}

// start runs a Central for points on 127.0.0.1:0 until the test ends.
func start(t testing.TB, points ...Point) *rig {
	t.Helper()
	rec := &logRec{changed: make(chan struct{}, 1)}
	c, err := New(Config{Listen: "127.0.0.1:0"}, points, slog.New(recHandler{rec: rec}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(wait):
			t.Error("Run did not return")
		}
	})
	select {
	case <-c.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	return &rig{c: c, url: "ws://" + c.Addr().String() + "/ocpp", log: rec}
}

// fakeCP is a charge point on ocpp-go's own charge point API; it
// answers SetChargingProfile with answer and passes the requests on.
type fakeCP struct {
	ocpp16.ChargePoint
	profiles chan *smartcharging.SetChargingProfileRequest
	configs  chan *core.ChangeConfigurationRequest

	mu     sync.Mutex
	answer smartcharging.ChargingProfileStatus
	once   sync.Once
}

// stop stops the charge point once: ocpp-go's Stop panics on a second
// call (it closes a channel again).
func (f *fakeCP) stop() { f.once.Do(f.Stop) }

func (f *fakeCP) setAnswer(s smartcharging.ChargingProfileStatus) {
	f.mu.Lock()
	f.answer = s
	f.mu.Unlock()
}

// dial connects a fakeCP as id (with password if not "") and stops it
// when the test ends; it returns Start's error.
func dial(t testing.TB, r *rig, id, password string) (*fakeCP, error) {
	t.Helper()
	client := ws.NewClient()
	if password != "" {
		client.SetBasicAuth(id, password)
	}
	f := &fakeCP{
		ChargePoint: ocpp16.NewChargePoint(id, nil, client),
		profiles:    make(chan *smartcharging.SetChargingProfileRequest, 16),
		configs:     make(chan *core.ChangeConfigurationRequest, 16),
		answer:      smartcharging.ChargingProfileStatusAccepted,
	}
	f.SetCoreHandler(cpCore{f})
	f.SetSmartChargingHandler(cpSmart{f})
	if err := f.Start(r.url); err != nil { // ocpp-go appends "/" + id
		return nil, err
	}
	t.Cleanup(f.stop)
	return f, nil
}

// boot connects id, boots it and sends its first StatusNotification
// (Available), after which the central system installs the fallback.
func boot(t testing.TB, r *rig, id, password string) *fakeCP {
	t.Helper()
	f, err := dial(t, r, id, password)
	if err != nil {
		t.Fatalf("connect %s: %v", id, err)
	}
	conf, err := f.BootNotification("model", "vendor")
	if err != nil {
		t.Fatalf("boot %s: %v", id, err)
	}
	if conf.Status != core.RegistrationStatusAccepted || conf.Interval != 60 {
		t.Fatalf("boot %s: %+v", id, conf)
	}
	if _, err := f.StatusNotification(1, core.NoError, core.ChargePointStatusAvailable); err != nil {
		t.Fatalf("status %s: %v", id, err)
	}
	return f
}

// nextProfile waits for the next SetChargingProfile at f.
func (f *fakeCP) nextProfile(t testing.TB) *smartcharging.SetChargingProfileRequest {
	t.Helper()
	select {
	case p := <-f.profiles:
		return p
	case <-time.After(wait):
		t.Fatal("no SetChargingProfile arrived")
		return nil
	}
}

type cpSmart struct{ f *fakeCP }

func (h cpSmart) OnSetChargingProfile(req *smartcharging.SetChargingProfileRequest) (*smartcharging.SetChargingProfileConfirmation, error) {
	h.f.mu.Lock()
	answer := h.f.answer
	h.f.mu.Unlock()
	h.f.profiles <- req
	return smartcharging.NewSetChargingProfileConfirmation(answer), nil
}
func (cpSmart) OnClearChargingProfile(*smartcharging.ClearChargingProfileRequest) (*smartcharging.ClearChargingProfileConfirmation, error) {
	return nil, errors.New("not implemented")
}
func (cpSmart) OnGetCompositeSchedule(*smartcharging.GetCompositeScheduleRequest) (*smartcharging.GetCompositeScheduleConfirmation, error) {
	return nil, errors.New("not implemented")
}

type cpCore struct{ f *fakeCP }

func (h cpCore) OnChangeConfiguration(req *core.ChangeConfigurationRequest) (*core.ChangeConfigurationConfirmation, error) {
	h.f.configs <- req
	if req.Key == "MeterValuesSampledData" {
		return core.NewChangeConfigurationConfirmation(core.ConfigurationStatusNotSupported), nil
	}
	return core.NewChangeConfigurationConfirmation(core.ConfigurationStatusAccepted), nil
}
func (cpCore) OnChangeAvailability(*core.ChangeAvailabilityRequest) (*core.ChangeAvailabilityConfirmation, error) {
	return nil, errors.New("not implemented")
}
func (cpCore) OnClearCache(*core.ClearCacheRequest) (*core.ClearCacheConfirmation, error) {
	return nil, errors.New("not implemented")
}
func (cpCore) OnDataTransfer(*core.DataTransferRequest) (*core.DataTransferConfirmation, error) {
	return nil, errors.New("not implemented")
}
func (cpCore) OnGetConfiguration(*core.GetConfigurationRequest) (*core.GetConfigurationConfirmation, error) {
	return nil, errors.New("not implemented")
}
func (cpCore) OnRemoteStartTransaction(*core.RemoteStartTransactionRequest) (*core.RemoteStartTransactionConfirmation, error) {
	return nil, errors.New("not implemented")
}
func (cpCore) OnRemoteStopTransaction(*core.RemoteStopTransactionRequest) (*core.RemoteStopTransactionConfirmation, error) {
	return nil, errors.New("not implemented")
}
func (cpCore) OnReset(*core.ResetRequest) (*core.ResetConfirmation, error) {
	return nil, errors.New("not implemented")
}
func (cpCore) OnUnlockConnector(*core.UnlockConnectorRequest) (*core.UnlockConnectorConfirmation, error) {
	return nil, errors.New("not implemented")
}

// wallbox is a 3-phase 16 A charger falling back to 6 A.
func wallbox(id, password string) Point {
	return Point{ID: id, Password: password, MaxCurrentA: 16, Phases: 3, FallbackCurrentA: 6}
}

func checkProfile(t *testing.T, req *smartcharging.SetChargingProfileRequest, level int, limitA float64, phases int) {
	t.Helper()
	p := req.ChargingProfile
	if req.ConnectorId != 1 || p.StackLevel != level || p.ChargingProfilePurpose != types.ChargingProfilePurposeTxDefaultProfile ||
		p.ChargingSchedule.ChargingRateUnit != types.ChargingRateUnitAmperes || len(p.ChargingSchedule.ChargingSchedulePeriod) != 1 {
		t.Fatalf("profile: connector %d, %+v", req.ConnectorId, p)
	}
	period := p.ChargingSchedule.ChargingSchedulePeriod[0]
	if period.Limit != limitA || period.NumberPhases == nil || *period.NumberPhases != phases {
		t.Fatalf("period: %+v (phases %v), want %g A on %d phases", period, period.NumberPhases, limitA, phases)
	}
}

func TestBootInstallsFallback(t *testing.T) {
	r := start(t, wallbox("wb1", ""))
	f := boot(t, r, "wb1", "")

	req := f.nextProfile(t)
	checkProfile(t, req, 0, 6, 3)
	p := req.ChargingProfile
	if p.ValidTo != nil || p.ChargingSchedule.Duration != nil || p.ChargingProfileKind != types.ChargingProfileKindRelative {
		t.Fatalf("fallback must not end: %+v", p)
	}
	// The meter value configuration follows; NotSupported is ignored.
	for _, key := range []string{"MeterValueSampleInterval", "MeterValuesSampledData"} {
		select {
		case c := <-f.configs:
			if c.Key != key {
				t.Fatalf("configuration %s, want %s", c.Key, key)
			}
		case <-time.After(wait):
			t.Fatalf("no ChangeConfiguration %s", key)
		}
	}
	r.log.waitLine(t, "fallback profile installed", "charger=wb1")
	st, err := r.c.Status("wb1")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Connected || st.State != "Available" || !st.HasCurrent || st.CurrentA != 6 {
		t.Fatalf("status %+v", st)
	}
}

func TestMeterValuesInStatus(t *testing.T) {
	r := start(t, wallbox("wb1", ""))
	f := boot(t, r, "wb1", "")

	if _, err := f.StatusNotification(1, core.NoError, core.ChargePointStatusCharging); err != nil {
		t.Fatal(err)
	}
	tx, err := f.StartTransaction(1, "car", 1000, types.NewDateTime(time.Now()))
	if err != nil || tx.TransactionId == 0 || tx.IdTagInfo.Status != types.AuthorizationStatusAccepted {
		t.Fatalf("start transaction: %+v, %v", tx, err)
	}
	sv := func(m types.Measurand, unit types.UnitOfMeasure, v string) types.SampledValue {
		return types.SampledValue{Measurand: m, Unit: unit, Value: v}
	}
	tests := []struct {
		name   string
		values []types.SampledValue
		txID   *int
		check  func(Status) bool
	}{
		{"kW and kWh in a transaction", []types.SampledValue{
			sv(types.MeasurandPowerActiveImport, types.UnitOfMeasureKW, "11.04"),
			sv(types.MeasurandEnergyActiveImportRegister, types.UnitOfMeasureKWh, "1.5"),
			sv(types.MeasurandSoC, types.UnitOfMeasurePercent, "42"),
			sv(types.MeasurandCurrentOffered, types.UnitOfMeasureA, "16"),
		}, &tx.TransactionId, func(s Status) bool {
			return s.PowerW == 11040 && s.EnergyWh == 1500 && s.SoC == 42 && s.OfferedA == 16 && s.Transaction
		}},
		{"W and Wh outside a transaction", []types.SampledValue{
			sv(types.MeasurandPowerActiveImport, types.UnitOfMeasureW, "3680"),
			sv("", "", "2500"), // the default measurand, Wh
		}, nil, func(s Status) bool { return s.PowerW == 3680 && s.EnergyWh == 2500 && s.SoC == 42 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.MeterValues(1, []types.MeterValue{{Timestamp: types.NewDateTime(time.Now()), SampledValue: tt.values}},
				func(req *core.MeterValuesRequest) { req.TransactionId = tt.txID })
			if err != nil {
				t.Fatal(err)
			}
			st, _ := r.c.Status("wb1")
			if !st.HasPower || !st.HasEnergy || !st.HasSoC || st.State != "Charging" || !tt.check(st) {
				t.Fatalf("status %+v", st)
			}
		})
	}
	if _, err := f.StopTransaction(4000, types.NewDateTime(time.Now()), tx.TransactionId); err != nil {
		t.Fatal(err)
	}
	if st, _ := r.c.Status("wb1"); st.Transaction || st.EnergyWh != 4000 {
		t.Fatalf("after stop: %+v", st)
	}
	if _, err := f.Authorize("car"); err != nil {
		t.Fatal(err)
	}
	if c, err := f.DataTransfer("acme"); err != nil || c.Status != core.DataTransferStatusUnknownVendorId {
		t.Fatalf("data transfer: %+v, %v", c, err)
	}
	if _, err := f.Heartbeat(); err != nil {
		t.Fatal(err)
	}
}

func TestSetCurrent(t *testing.T) {
	r := start(t, wallbox("wb1", "secret"))
	f := boot(t, r, "wb1", "secret")
	f.nextProfile(t) // the fallback

	before := time.Now()
	if err := r.c.SetCurrent(t.Context(), "wb1", 16, 3); err != nil {
		t.Fatal(err)
	}
	req := f.nextProfile(t)
	checkProfile(t, req, 1, 16, 3)
	p := req.ChargingProfile
	if p.ChargingProfileKind != types.ChargingProfileKindAbsolute || p.ValidTo == nil || p.ValidFrom == nil ||
		p.ChargingSchedule.StartSchedule == nil || p.ChargingSchedule.Duration == nil {
		t.Fatalf("limit profile %+v", p)
	}
	want := before.Add(DefaultValidity)
	if d := p.ValidTo.Sub(want); d < -time.Second || d > 2*time.Second {
		t.Fatalf("validTo %s, want about %s", p.ValidTo.Time, want)
	}
	if end := p.ChargingSchedule.StartSchedule.Add(time.Duration(*p.ChargingSchedule.Duration) * time.Second); !end.Equal(p.ValidTo.Time) {
		t.Fatalf("schedule ends %s, validTo %s", end, p.ValidTo.Time)
	}
	if st, _ := r.c.Status("wb1"); st.CurrentA != 16 || st.LastError != "" {
		t.Fatalf("status %+v", st)
	}

	// The same stack level and id again: the charger replaces the limit.
	if err := r.c.SetCurrent(t.Context(), "wb1", 0, 1); err != nil {
		t.Fatal(err)
	}
	if again := f.nextProfile(t).ChargingProfile; again.ChargingProfileId != p.ChargingProfileId || again.StackLevel != 1 {
		t.Fatalf("second limit %+v", again)
	}

	f.setAnswer(smartcharging.ChargingProfileStatusRejected)
	err := r.c.SetCurrent(t.Context(), "wb1", 10, 3)
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("rejected: %v", err)
	}
	r.log.waitLine(t, "WARN", "rejected the current limit", "charger=wb1")
	if st, _ := r.c.Status("wb1"); st.LastError != "profile rejected" || st.CurrentA != 0 {
		t.Fatalf("status after rejection %+v", st)
	}
}

func TestSetCurrentErrors(t *testing.T) {
	r := start(t, wallbox("wb1", ""), wallbox("wb2", ""))
	f := boot(t, r, "wb2", "")
	f.nextProfile(t)

	tests := []struct {
		name   string
		id     string
		amps   float64
		phases int
		want   error
	}{
		{"unknown", "nope", 16, 3, ErrUnknownPoint},
		{"never connected", "wb1", 16, 3, ErrNotConnected},
		{"above max", "wb2", 20, 3, nil},
		{"below 6 A", "wb2", 3, 3, nil},
		{"2 phases", "wb2", 10, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := r.c.SetCurrent(t.Context(), tt.id, tt.amps, tt.phases)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := r.c.Status("nope"); !errors.Is(err, ErrUnknownPoint) {
		t.Fatalf("status of unknown: %v", err)
	}

	f.stop()
	r.log.waitLine(t, "charge point disconnected", "charger=wb2")
	if err := r.c.SetCurrent(t.Context(), "wb2", 16, 3); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("after disconnect: %v", err)
	}
	if st, _ := r.c.Status("wb2"); st.Connected || st.State != "" {
		t.Fatalf("status after disconnect %+v", st)
	}
}

func TestRefusedConnections(t *testing.T) {
	r := start(t, wallbox("wb1", "secret"), wallbox("wb2", ""))
	good := boot(t, r, "wb2", "")
	good.nextProfile(t)

	tests := []struct {
		name, id, password, reason string
	}{
		{"unknown id", "intruder", "", "unknown charge point id"},
		{"wrong password", "wb1", "guess", "wrong password"},
		{"missing password", "wb1", "", "missing password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := dial(t, r, tt.id, tt.password); err == nil {
				t.Fatal("connected")
			}
			line := r.log.waitLine(t, "WARN", "ocpp connection refused", tt.reason, "charger="+tt.id)
			if !strings.Contains(line, "remote=127.0.0.1:") {
				t.Fatalf("no remote address: %s", line)
			}
		})
	}
	if err := r.c.SetCurrent(t.Context(), "wb2", 16, 3); err != nil {
		t.Fatal(err)
	}
	if st, _ := r.c.Status("wb1"); st.Connected {
		t.Fatal("refused charger shows connected")
	}
}

func TestMalformedFrames(t *testing.T) {
	r := start(t, wallbox("wb1", ""), wallbox("wb2", ""))
	good := boot(t, r, "wb2", "")
	good.nextProfile(t)

	dialer := websocket.Dialer{Subprotocols: []string{"ocpp1.6"}}
	conn, _, err := dialer.DialContext(t.Context(), r.url+"/wb1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	frames := []struct {
		name, frame string
		answer      bool // a CallError comes back
	}{
		{"no JSON", "hello", false},
		{"no array", `{"a":1}`, false},
		{"invalid payload", `[2,"m1","BootNotification",{"chargePointModel":1}]`, true},
		{"unknown action", `[2,"m2","Bogus",{}]`, true},
	}
	for _, fr := range frames {
		if err := conn.WriteMessage(websocket.TextMessage, []byte(fr.frame)); err != nil {
			t.Fatalf("%s: %v", fr.name, err)
		}
		if !fr.answer {
			continue
		}
		_ = conn.SetReadDeadline(time.Now().Add(wait))
		_, data, err := conn.ReadMessage()
		if err != nil || !strings.HasPrefix(string(data), "[4,") {
			t.Fatalf("%s: answer %s, %v", fr.name, data, err)
		}
	}
	r.log.waitLine(t, "WARN", "ocpp message from charge point not handled", "charger=wb1")
	if err := r.c.SetCurrent(t.Context(), "wb2", 16, 3); err != nil {
		t.Fatal(err)
	}
}

// serverGoroutines counts the goroutines of the central system: this
// package's and ocpp-go's server side.
func serverGoroutines() (int, string) {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	var found []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "testing.tRunner") {
			continue
		}
		for _, mark := range []string{"charger.(*Central)", "charger.(*wsServer)", "DefaultServerDispatcher", "ocpp16.(*centralSystem)", "ocppj.(*Server)"} {
			if strings.Contains(g, mark) {
				n++
				found = append(found, g)
				break
			}
		}
	}
	return n, strings.Join(found, "\n\n")
}

func TestRunStopsCleanly(t *testing.T) {
	rec := &logRec{changed: make(chan struct{}, 1)}
	c, err := New(Config{Listen: "127.0.0.1:0"}, []Point{wallbox("wb1", "")}, slog.New(recHandler{rec: rec}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	<-c.Ready()
	r := &rig{c: c, url: "ws://" + c.Addr().String() + "/ocpp", log: rec}
	f := boot(t, r, "wb1", "")
	f.nextProfile(t)
	if n, _ := serverGoroutines(); n == 0 {
		t.Fatal("no server goroutines seen while running: the count is blind")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("Run did not return")
	}
	if err := c.SetCurrent(t.Context(), "wb1", 16, 3); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("after Run: %v", err)
	}
	// ocpp-go's answer callbacks are its own short goroutines: wait for
	// them on a deadline.
	deadline := time.Now().Add(wait)
	for {
		n, stacks := serverGoroutines()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left after Run:\n%s", n, stacks)
		}
		runtime.Gosched()
	}
}

// TestRunCancelledAtOnce: a Run whose context is already over returns
// without panicking. ocpp-go's Stop closes its dispatcher's channels, nil
// until its Start ran: Run once called it first (a "close of nil channel"
// in a full suite run when the daemon stopped at once).
func TestRunCancelledAtOnce(t *testing.T) {
	for range 50 {
		c, err := New(Config{Listen: "127.0.0.1:0"}, []Point{wallbox("wb1", "")}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := c.Run(ctx); err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
}

func TestNewValidates(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		name  string
		cfg   Config
		point Point
	}{
		{"no listen", Config{}, wallbox("a", "")},
		{"bad listen", Config{Listen: "8887"}, wallbox("a", "")},
		{"no id", Config{Listen: ":0"}, wallbox("", "")},
		{"id with slash", Config{Listen: ":0"}, wallbox("a/b", "")},
		{"max 5 A", Config{Listen: ":0"}, Point{ID: "a", MaxCurrentA: 5, Phases: 1}},
		{"2 phases", Config{Listen: ":0"}, Point{ID: "a", MaxCurrentA: 16, Phases: 2}},
		{"fallback 3 A", Config{Listen: ":0"}, Point{ID: "a", MaxCurrentA: 16, Phases: 1, FallbackCurrentA: 3}},
		{"fallback above max", Config{Listen: ":0"}, Point{ID: "a", MaxCurrentA: 16, Phases: 1, FallbackCurrentA: 20}},
		{"validity 1s", Config{Listen: ":0"}, Point{ID: "a", MaxCurrentA: 16, Phases: 1, Validity: time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg, []Point{tt.point}, log); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if _, err := New(Config{Listen: ":0"}, []Point{wallbox("a", ""), wallbox("a", "")}, log); err == nil {
		t.Fatal("duplicate id accepted")
	}
}

func BenchmarkSetCurrent(b *testing.B) {
	r := start(b, wallbox("wb1", ""))
	f := boot(b, r, "wb1", "")
	f.nextProfile(b)
	b.ResetTimer()
	for b.Loop() {
		if err := r.c.SetCurrent(context.Background(), "wb1", 16, 3); err != nil {
			b.Fatal(err)
		}
		<-f.profiles
	}
}

func TestFallbackRejected(t *testing.T) {
	r := start(t, wallbox("wb1", ""))
	f, err := dial(t, r, "wb1", "")
	if err != nil {
		t.Fatal(err)
	}
	f.setAnswer(smartcharging.ChargingProfileStatusRejected)
	if _, err := f.BootNotification("model", "vendor"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Heartbeat(); err != nil { // any message after the boot
		t.Fatal(err)
	}
	checkProfile(t, f.nextProfile(t), 0, 6, 3)
	r.log.waitLine(t, "WARN", "did not take the fallback profile", "cannot guarantee", "charger=wb1")
	if st, _ := r.c.Status("wb1"); st.HasCurrent || st.LastError != "fallback profile rejected" {
		t.Fatalf("status %+v", st)
	}
}
