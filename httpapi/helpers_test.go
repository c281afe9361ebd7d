package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"plantd/config"
	"plantd/devices"
	"plantd/devices/channels"
	"plantd/gridcontrol"
	"plantd/httpapi/oauth2/oauthconfig"
	"plantd/modbus"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/sim/simtest"
	"plantd/store"
	"plantd/sunspec"
)

// The secrets of the test credentials; the config holds their hashes.
const (
	tokStandard     = "standard-token"
	tokInstaller    = "installer-token"
	tokGridOperator = "gridoperator-token"
	oauthID         = "cloud"
	oauthSecret     = "cloud-secret"
)

// clock is a settable clock shared by the simulator, the live cache and
// the server.
type clock struct{ ns atomic.Int64 }

func (c *clock) Now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) Set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func (c *clock) Add(d time.Duration) { c.ns.Add(int64(d)) }

// simDev is one simulated device with its Modbus client and read plan.
type simDev struct {
	id     string
	dev    *sim.Device
	client *modbus.Client
	info   *sunspec.Device
	plan   *devices.ReadPlan
}

// env is a server fed by the simulated demo plant.
type env struct {
	t     testing.TB
	clock *clock
	sim   *sim.Plant
	devs  []*simDev
	live  *plant.Live
	hist  *fakeHistory
	srv   *Server
	ts    *httptest.Server
	loc   *time.Location
}

// envOpts tunes newEnv.
type envOpts struct {
	rate   config.RateLimit
	polls  int           // number of polls (default 57: 00:00..14:00 every 15 min)
	step   time.Duration // between polls (default 15 min)
	modify func(*Config)
	// noGridControl leaves Deps.GridControl nil (POST schedules: 501).
	noGridControl bool
	// devices edits the plant's devices before the live cache is built.
	devices func([]plant.DeviceInfo)
	// logger receives the server's log (nil: discarded).
	logger *slog.Logger
	// plants and more are plants and devices beside the simulated ones
	// (consumer devices, which no simulated Modbus device stands for).
	plants []plant.Plant
	more   []plant.DeviceInfo
	// consumers is Deps.Consumers.
	consumers Consumers
}

var day = time.Date(2025, 6, 21, 0, 0, 0, 0, mustLoc("Europe/Berlin"))

func mustLoc(name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return l
}

func float(v float64) *float64 { return &v }

// testConfig is the server config of the demo plant.
func testConfig(rate config.RateLimit) Config {
	return Config{
		Listen:    "127.0.0.1:0",
		RateLimit: rate,
		Plants: []config.Plant{{
			ID: "demo", Name: "Demo plant", Description: "simulated", Timezone: "Europe/Berlin",
			Location: config.Location{Latitude: float(48.1), Longitude: float(11.6), Country: "DE", FederalState: "Bayern", City: "München",
				ZipCode: "80331", Street: "Marienplatz", StreetNo: "1", CurrencyCode3: "EUR"},
			Installation: config.Installation{PeakPowerW: 18000, DCPowerInputMaxW: 18500, CO2SavingsFactor: 420,
				StartUp: config.Date{Year: 2024, Month: 4, Day: 1}, Azimuth: float(180), CollectorSlope: float(30),
				PVModuleAreas: []config.PVModuleArea{{Name: "south roof", Azimuth: float(180), CollectorSlope: float(30), PeakPowerW: 10000, ModuleCount: 24}}},
		}},
		Tokens: []config.Token{
			{Name: "std", SHA256: config.TokenHash(tokStandard), Role: config.RoleStandard},
			{Name: "inst", SHA256: strings.ToUpper(config.TokenHash(tokInstaller)), Role: config.RoleInstaller},
			{Name: "grid", SHA256: config.TokenHash(tokGridOperator), Role: config.RoleGridOperator},
		},
		OAuthClients: []oauthconfig.Client{{ClientID: oauthID, SecretSHA256: config.TokenHash(oauthSecret), Role: config.RoleStandard}},
		Migrated: config.Migrated{
			Plants:  map[string]string{"7190000": "demo"},
			Devices: map[string]string{"old-inv1": "inv1"},
		},
		Stakeholders: map[string][]Stakeholder{"demo": {{Role: "owner", Name: "Demo Owner", Email: "owner@example.com"}}},
	}
}

// newEnv starts the simulated plant on a fixed clock, discovers its
// devices over Modbus TCP, polls them over the day into a Live cache and
// a fake history (which stores what the polls gave), and serves the API on
// an httptest server.
func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	if o.rate.RequestsPerSecond == 0 {
		o.rate = config.RateLimit{RequestsPerSecond: 1e6, Burst: 1e6}
	}
	if o.polls == 0 {
		o.polls = 57
	}
	if o.step == 0 {
		o.step = 15 * time.Minute
	}
	e := &env{t: t, clock: &clock{}, loc: day.Location()}
	e.clock.Set(day)
	cfg := sim.DefaultConfig()
	cfg.Now, cfg.Start, cfg.ClearSky = e.clock.Now, day, true
	e.sim = simtest.Start(t, cfg)
	pool := modbus.NewPool(nil)
	t.Cleanup(func() { _ = pool.Close() })

	plants := []plant.Plant{{ID: "demo", Name: "Demo plant", Description: "simulated", Location: e.loc}}
	infos := []plant.DeviceInfo{{ID: "gw", PlantID: "demo", Name: "plantd", Kind: kind.Gateway}}
	for _, d := range e.sim.Devices() {
		// The simulator always answers: the timeout only ends a hung
		// test, however slowly a loaded machine runs the parallel tests.
		c := pool.Endpoint(modbus.EndpointConfig{Address: d.Addr()}).Unit(d.Unit(), 30*time.Second)
		info, err := devices.Discover(t.(interface{ Context() context.Context }).Context(), c)
		if err != nil {
			t.Fatalf("discover %s: %v", d.ID(), err)
		}
		plan, err := devices.NewReadPlan(info, info.PollModels())
		if err != nil {
			t.Fatalf("read plan %s: %v", d.ID(), err)
		}
		e.devs = append(e.devs, &simDev{id: d.ID(), dev: d, client: c, info: info, plan: plan})
		infos = append(infos, plant.DeviceInfo{ID: d.ID(), PlantID: "demo", Name: d.ID(), Kind: d.Kind()})
	}
	plants = append(plants, o.plants...)
	infos = append(infos, o.more...)
	if o.devices != nil {
		o.devices(infos)
	}
	e.live = plant.NewLive(plants, infos, e.clock.Now)
	e.hist = newFakeHistory(e.live)
	for i := range o.polls {
		if i > 0 {
			e.clock.Add(o.step)
		}
		e.pollAll()
	}
	scfg := testConfig(o.rate)
	if o.modify != nil {
		o.modify(&scfg)
	}
	// The tests step token expiry and rate limits on the same clock.
	deps := Deps{Live: e.live, History: e.hist, Now: e.clock.Now, WallClock: e.clock.Now, Consumers: o.consumers}
	if !o.noGridControl {
		deps.GridControl = e.gridControl(plants)
	}
	logger := o.logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	srv, err := New(scfg, deps, logger)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.srv = srv
	e.ts = httptest.NewServer(srv.Handler())
	t.Cleanup(e.ts.Close)
	return e
}

// gridControl is a grid-control component on a real SQLite store, on the
// env's clock; its control cycle does not run (the API tests check what is
// stored and answered; gridcontrol's tests check the writes).
func (e *env) gridControl(plants []plant.Plant) *gridcontrol.Controller {
	ctx := context.Background()
	var sp []store.PlantInfo
	for _, p := range plants {
		sp = append(sp, store.PlantInfo{ID: p.ID, Location: p.Location})
	}
	st, err := store.Open(ctx, store.Config{Path: filepath.Join(e.t.TempDir(), "plantd.db"), Plants: sp, Now: e.clock.Now}, nil)
	if err != nil {
		e.t.Fatalf("open store: %v", err)
	}
	e.t.Cleanup(func() { _ = st.Close() })
	conns := func(id string) (sunspec.ReadWriter, bool) {
		for _, d := range e.devs {
			if d.id == id {
				return d.client, true
			}
		}
		return nil, false
	}
	gc, err := gridcontrol.New(gridcontrol.Config{Clock: gridcontrol.FuncClock(e.clock.Now)}, st, e.live, conns, nil)
	if err != nil {
		e.t.Fatalf("grid control: %v", err)
	}
	return gc
}

// pollAll reads every simulated device once at the clock's time, as the
// poller would, and feeds the samples to Live and the history.
func (e *env) pollAll() {
	at := e.clock.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, sd := range e.devs {
		models, err := sd.plan.Read(ctx, sd.client)
		s := channels.NewDevice(sd.info).Sample(sd.id, at, models)
		if err != nil {
			s.Readings, s.Registers, s.Status = nil, nil, plant.DeviceStatus{}
			s.Err, s.State = err, plant.StateOffline
		}
		e.live.Apply(s)
		e.hist.sample(s)
	}
	e.hist.record("demo", at)
}

// do sends a request with a bearer token ("" = none).
func (e *env) do(method, path, token, contentType, body string) *http.Response {
	e.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// getJSON GETs path with the standard token and decodes a 200 body.
func (e *env) getJSON(path string, v any) {
	e.t.Helper()
	resp := e.do("GET", path, tokStandard, "", "")
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
}

// fakeHistory is an in-memory History standing in for the store (which
// does not exist yet). It holds what the test's polls of the simulated
// plant gave: device readings and the plant's energy balance and mix at
// every poll time, and a log entry per failed poll; it rolls them up by
// period and resolution the way the API asks.
type fakeHistory struct {
	live *plant.Live

	mu        sync.Mutex
	dev       map[string][]snap // device id → snapshots
	plant     map[string][]snap // plant id → balance + mix snapshots
	logs      []plant.LogEntry  // oldest first
	healthErr error
}

type snap struct {
	t       time.Time
	values  map[string]float64
	indexed map[string][]plant.IndexedValue
	sets    map[string]bool
}

func newFakeHistory(l *plant.Live) *fakeHistory {
	return &fakeHistory{live: l, dev: map[string][]snap{}, plant: map[string][]snap{}}
}

// sample stores one poll's readings (through Live, as the store gets them
// from the same samples).
func (h *fakeHistory) sample(s plant.Sample) {
	d, ok := h.live.Device(s.Device)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.Err != nil {
		h.logs = append(h.logs, plant.LogEntry{Time: s.Time, Level: "Warning", Code: "PollFailed", Message: s.Err.Error(),
			PlantID: d.Info.PlantID, DeviceID: d.Info.ID})
		return
	}
	sn := snap{t: s.Time, values: map[string]float64{}, indexed: map[string][]plant.IndexedValue{}, sets: map[string]bool{}}
	for _, r := range d.Readings {
		if r.Channel.Counter() {
			continue
		}
		sn.sets[string(r.Channel.Set())] = true
		if r.Channel.Indexed() {
			sn.indexed[r.Channel.Field()] = append(sn.indexed[r.Channel.Field()], plant.IndexedValue{Index: plant.IndexLabel(r.Index), Value: r.Value})
		} else {
			sn.values[r.Channel.Field()] = r.Value
		}
	}
	if len(h.dev[d.Info.ID]) == 0 {
		h.logs = append(h.logs, plant.LogEntry{Time: s.Time, Level: "Info", Code: "DeviceDiscovered",
			Message: fmt.Sprintf("%s %s discovered", s.Nameplate.Manufacturer, s.Nameplate.Model), PlantID: d.Info.PlantID, DeviceID: d.Info.ID})
	}
	h.dev[d.Info.ID] = append(h.dev[d.Info.ID], sn)
}

// record stores the plant's balance and mix at t.
func (h *fakeHistory) record(plantID string, t time.Time) {
	b, err := h.live.EnergyBalance(plantID)
	if err != nil {
		return
	}
	m, _ := h.live.EnergyMix(plantID)
	sn := snap{t: t, values: map[string]float64{}}
	for _, v := range []any{b, m} {
		raw, _ := json.Marshal(v)
		_ = json.Unmarshal(raw, &sn.values)
	}
	h.mu.Lock()
	h.plant[plantID] = append(h.plant[plantID], sn)
	h.mu.Unlock()
}

// window is the [from, to) of a query's period.
func window(q plant.SetQuery, latest time.Time) (time.Time, time.Time) {
	switch q.Period {
	case plant.PeriodDay:
		return q.Date, q.Date.AddDate(0, 0, 1)
	case plant.PeriodWeek:
		return q.Date, q.Date.AddDate(0, 0, 7)
	case plant.PeriodMonth:
		return q.Date, q.Date.AddDate(0, 1, 0)
	case plant.PeriodYear:
		return q.Date, q.Date.AddDate(1, 0, 0)
	case plant.PeriodRecent:
		return latest.Add(-time.Hour), latest.Add(time.Nanosecond)
	}
	return time.Time{}, latest.Add(time.Nanosecond)
}

// bucketStart floors t to the resolution in loc.
func bucketStart(t time.Time, res string, loc *time.Location) (time.Time, time.Duration) {
	t = t.In(loc)
	switch res {
	case plant.ResolutionOneMinute:
		return t.Truncate(time.Minute), time.Minute
	case plant.ResolutionFiveMinutes:
		return t.Truncate(5 * time.Minute), 5 * time.Minute
	case plant.ResolutionFifteenMinutes:
		return t.Truncate(15 * time.Minute), 15 * time.Minute
	case plant.ResolutionOneHour:
		return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, loc), time.Hour
	case plant.ResolutionOneDay:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc), 24 * time.Hour
	case plant.ResolutionOneMonth:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc), 30 * 24 * time.Hour
	}
	return time.Date(t.Year(), 1, 1, 0, 0, 0, 0, loc), 365 * 24 * time.Hour
}

// setFields returns the fields of a set type, or nil for "all of snap".
func setFields(setType string) map[string]bool {
	out := map[string]bool{}
	if setType == string(plant.SetEnergyBalance) {
		for _, f := range []string{"pvGeneration", "gridFeedIn", "gridConsumption", "directConsumption", "selfConsumption",
			"selfSupply", "totalConsumption", "totalGeneration", "batteryCharging", "batteryDischarging",
			"batteryStateOfCharge", "autarkyRate", "selfConsumptionRate"} {
			out[f] = true
		}
		return out
	}
	if setType == string(plant.SetEnergyMix) {
		for _, f := range []string{"pvConsumptionRate", "batteryConsumptionRate", "gridConsumptionRate", "totalConsumption"} {
			out[f] = true
		}
		return out
	}
	for _, c := range plant.Channels() {
		if string(c.Set()) == setType {
			out[c.Field()] = true
		}
	}
	return out
}

func (h *fakeHistory) QuerySet(ctx context.Context, q plant.SetQuery) (plant.SetResult, error) {
	if q.Period == "" {
		q.Period = plant.PeriodRecent
	}
	res0 := resolutionFor(q.SetType, q.Period, q.WithTotal)
	p, _ := h.live.Plant(q.PlantID)
	loc := plantLoc(p)
	h.mu.Lock()
	defer h.mu.Unlock()
	var snaps []snap
	if q.DeviceID == "" || q.SetType == plant.SetEnergyMix {
		snaps = h.plant[q.PlantID]
		if snaps == nil {
			return plant.SetResult{}, fmt.Errorf("plant %q: %w", q.PlantID, ErrNotFound)
		}
	} else {
		var ok bool
		snaps, ok = h.dev[q.DeviceID]
		if !ok {
			return plant.SetResult{}, fmt.Errorf("device %q: %w", q.DeviceID, ErrNotFound)
		}
	}
	if len(snaps) == 0 {
		return plant.SetResult{Resolution: res0}, nil
	}
	from, to := window(q, snaps[len(snaps)-1].t)
	fields := setFields(string(q.SetType))
	energy := q.ReturnEnergyValues && strings.HasPrefix(string(q.SetType), "EnergyAndPower") ||
		q.SetType == plant.SetEnergyBalance && q.ReturnEnergyValues
	type acc struct {
		start time.Time
		dur   time.Duration
		sum   map[string]float64
		n     map[string]int
		ix    map[string][]plant.IndexedValue
	}
	var buckets []*acc
	for _, sn := range snaps {
		if sn.t.Before(from) || !sn.t.Before(to) {
			continue
		}
		bs, dur := bucketStart(sn.t, res0, loc)
		if len(buckets) == 0 || !buckets[len(buckets)-1].start.Equal(bs) {
			buckets = append(buckets, &acc{start: bs, dur: dur, sum: map[string]float64{}, n: map[string]int{}, ix: map[string][]plant.IndexedValue{}})
		}
		b := buckets[len(buckets)-1]
		for k, v := range sn.values {
			if fields == nil || fields[k] {
				b.sum[k] += v
				b.n[k]++
			}
		}
		for k, v := range sn.indexed {
			if fields == nil || fields[k] {
				b.ix[k] = v
			}
		}
	}
	res := plant.SetResult{Resolution: res0}
	tot := plant.SetRow{Start: from, Values: map[string]float64{}}
	if q.Period == plant.PeriodRecent || q.Period == plant.PeriodTotal {
		tot.Start = time.Time{} // the API takes the first row's start
	}
	for _, b := range buckets {
		r := plant.SetRow{Start: b.start.UTC(), Values: map[string]float64{}}
		for k, s := range b.sum {
			v := s / float64(b.n[k])
			if energy && !strings.HasSuffix(k, "Rate") && k != "batteryStateOfCharge" {
				v *= b.dur.Hours()
			}
			r.Values[k] = v
			tot.Values[k] += v
		}
		if len(b.ix) > 0 {
			r.Indexed = b.ix
		}
		res.Rows = append(res.Rows, r)
	}
	if q.WithTotal && len(res.Rows) > 0 {
		// Energies (Wh) sum up; powers, rates and states average.
		if !energy {
			for k, v := range tot.Values {
				tot.Values[k] = v / float64(len(res.Rows))
			}
		}
		res.Total = &tot
	}
	return res, nil
}

func (h *fakeHistory) DeviceSets(ctx context.Context, deviceID string) ([]plant.SetType, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	snaps, ok := h.dev[deviceID]
	if !ok {
		return nil, fmt.Errorf("device %q: %w", deviceID, ErrNotFound)
	}
	seen := map[string]bool{}
	for _, s := range snaps {
		for k := range s.sets {
			seen[k] = true
		}
	}
	var out []plant.SetType
	for k := range seen {
		out = append(out, plant.SetType(k))
	}
	slices.Sort(out)
	return out, nil
}

func (h *fakeHistory) Logs(ctx context.Context, q plant.LogQuery) ([]plant.LogEntry, string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var match []plant.LogEntry
	for i := len(h.logs) - 1; i >= 0; i-- { // newest first
		l := h.logs[i]
		if l.PlantID != q.PlantID || q.DeviceID != "" && l.DeviceID != q.DeviceID {
			continue
		}
		if !q.From.IsZero() && l.Time.Before(q.From) || !q.To.IsZero() && !l.Time.Before(q.To) {
			continue
		}
		match = append(match, l)
	}
	off := 0
	if q.Cursor != "" {
		n, err := strconv.Atoi(q.Cursor)
		if err != nil || n < 0 || n > len(match) {
			return nil, "", fmt.Errorf("cursor %q: %w", q.Cursor, ErrBadQuery)
		}
		off = n
	}
	end := min(len(match), off+q.Limit)
	next := ""
	if end < len(match) {
		next = strconv.Itoa(end)
	}
	return match[off:end], next, nil
}

func (h *fakeHistory) Schedules(ctx context.Context, plantID string) ([]plant.Schedule, error) {
	return []plant.Schedule{}, nil // no schedule is stored: grid control is not wired yet
}

func (h *fakeHistory) Health() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.healthErr
}

var _ History = (*fakeHistory)(nil)

// newRecorder serves one request from a given remote address in process.
func newRecorder(e *env, method, path, remote string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	req.RemoteAddr = remote
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	return rec
}
