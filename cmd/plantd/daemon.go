package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"
	"golang.org/x/sync/errgroup"

	"plantd/config"
	"plantd/consumer"
	"plantd/devices/poller"
	"plantd/eebus"
	"plantd/forecast"
	"plantd/gridcontrol"
	"plantd/gridinput"
	"plantd/hass"
	"plantd/httpapi"
	"plantd/metrics"
	"plantd/modbus"
	"plantd/mqtt"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/siteplan"
	"plantd/store"
	"plantd/sunspec"
	"plantd/sunspecserver"
	"plantd/tariffs"
)

// listeners are the ports a caller bound before the daemon starts (the
// demo: a free port each); nil ones the daemon binds from the config.
type listeners struct {
	HTTP, SunSpec, OCPP net.Listener
}

// daemon is a running plantd: the components a config asks for, wired
// together. Data flows one way: poller → live state → store and MQTT
// uplink, and the HTTP API reads the live state and the store.
type daemon struct {
	log  *slog.Logger
	pool *modbus.Pool
	// chargePoints is the OCPP central system (nil without chargers).
	chargePoints *chargePoints
	conns        *deviceConns
	poller       *poller.Poller
	live         *plant.Live
	store        *store.Store
	grid         *gridcontrol.Controller
	homes        *consumer.Manager // nil without consumers
	inputs       *gridInputs       // nil without inputs
	eebus        *eebus.Service    // nil unless eebus.enabled
	tariffs      *tariffs.Service  // nil without tariffs:
	plan         *siteplan.Runner  // nil without tariffs:
	forecast     *forecast.Service // nil: forecast off, or no plant located
	api          *httpapi.Server
	up           *mqtt.Uplink // nil without a broker
	ha           *hass.Link   // nil without local.mqtt
	ln           net.Listener
	plants       []plant.Plant

	// sunspec serves the plant as a SunSpec device on sunspecLn (nil
	// without modbusServer; sunspec.go).
	sunspec   *sunspecserver.Server
	sunspecLn net.Listener
	proxies   []deviceProxy // devices[].proxy

	// pollDuration is the poll latency histogram of /metrics (DESIGN §9).
	pollDuration *metrics.HistogramVec

	// deactivated caches the deactivatedAt of each device disabled in the
	// config (see devicesOf); newDaemon and the reload only.
	deactivated map[string]time.Time

	// now is the daemon's clock: the time of live values and stored
	// measurements. The demo sets the simulator's clock, so that a fast
	// simulated day is also a fast day in the database.
	now func() time.Time

	// reportEvery, when set, logs each plant's live energy balance at that
	// interval (the demo does, so that its user sees the plant work).
	reportEvery time.Duration

	// cfg is the config the daemon started with; level is the log level a
	// reload may change; reload reads the config file again (nil: the
	// demo, which has none). reloadNote is for STATUS= (supervise only).
	cfg        *config.Config
	level      *slog.LevelVar
	reload     func() (*config.Config, error)
	reloadNote string

	// configPath is the config file of plantd run ("" for the demo), named
	// by the first-run message; storedBefore is the count of measurements
	// the database held at start less those this process had written by
	// then (-1 until counted), for STATUS= (notify.go).
	configPath   string
	storedBefore atomic.Int64
}

// newDaemon builds the components of a validated config. It binds the
// HTTP port first (lns.HTTP, when the caller bound it already, else
// cfg.HTTP.Listen) and then opens the database, so that a port in use or
// a broken disk stops plantd at start with a clear message, and a port in
// use leaves no database file behind. On error lns.HTTP is closed.
func newDaemon(ctx context.Context, cfg *config.Config, lns listeners, now func() time.Time, logger *slog.Logger) (d *daemon, err error) {
	ln := lns.HTTP
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.HTTP.Listen); err != nil {
			return nil, fmt.Errorf("http api: %w", err)
		}
	}
	defer func() {
		if err != nil {
			ln.Close()
		}
	}()
	plants, err := plantsOf(cfg)
	if err != nil {
		return nil, err
	}
	// Grid control runs on the system's clock, or on the clock given (the
	// demo's simulated one, on which its schedules are written); its run
	// loop fires the window edges by that clock either way.
	var gridClock gridcontrol.Clock
	if now == nil {
		// Samples are stamped on a monotonic-anchored clock that logs
		// wall-clock jumps (plant.Clock).
		now = plant.NewClock(plant.ClockConfig{Logger: logger.With("component", "clock")}).Now
	} else {
		gridClock = gridcontrol.FuncClock(now)
	}
	d = &daemon{log: logger, cfg: cfg, plants: plants, now: now, ln: ln,
		deactivated: map[string]time.Time{}}

	var storePlants []store.PlantInfo
	for _, p := range plants {
		storePlants = append(storePlants, store.PlantInfo{ID: p.ID, Location: p.Location})
	}
	d.store, err = store.Open(ctx, store.Config{Path: cfg.Database.Path, RawRetention: cfg.Database.RawRetention, BatchInterval: cfg.Database.CommitInterval, Plants: storePlants, Now: now,
		FutureTolerance: maxPollInterval(cfg)},
		logger.With("component", "store"))
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	built := d // the named result is nil on an error return
	defer func() {
		if err != nil {
			if built.pool != nil {
				built.pool.Close()
			}
			built.store.Close()
		}
	}()
	// The devices, the disabled ones with the time they were first seen
	// disabled, which the database keeps.
	infos, err := d.devicesOf(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d.live = plant.NewLive(plants, infos, now)
	d.live.SetLogger(logger.With("component", "plant"))
	d.pool = modbus.NewPool(logger.With("component", "modbus"))
	d.conns = newDeviceConns(cfg, d.pool)
	d.pollDuration = metrics.NewHistogramVec("plantd_poll_duration_seconds",
		"Duration of a device's poll (discovery and a retry included) by device kind and result (ok, error).",
		[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}, "kind", "result")
	if d.poller, err = poller.New(pollerConfigs(cfg), d.pool, d.onSample, logger.With("component", "poller")); err != nil {
		return nil, err
	}
	// The forecast before the control: newControl builds the day-ahead
	// plan, which reads it.
	if d.forecast, err = d.newForecast(cfg, logger.With("component", "forecast")); err != nil {
		return nil, err
	}
	if err = d.newControl(ctx, cfg, lns.OCPP, gridClock, logger); err != nil {
		return nil, err
	}
	if err = d.newAPI(cfg, logger); err != nil {
		return nil, err
	}
	if err = d.newLocal(cfg, lns.SunSpec, logger); err != nil {
		return nil, err
	}
	return d, nil
}

// newControl builds what controls the plant: the home energy manager's
// consumers, grid control (which gives them the surplus) and the grid
// operator's inputs (whose §14a contact dims the consumers).
func (d *daemon) newControl(ctx context.Context, cfg *config.Config, ocppLn net.Listener, gridClock gridcontrol.Clock, logger *slog.Logger) error {
	var err error
	if d.chargePoints, err = newCentral(cfg, ocppLn, logger); err != nil {
		return err
	}
	if d.homes, err = d.newConsumers(ctx, cfg); err != nil {
		return err
	}
	var absorber gridcontrol.Absorber
	var dimmer gridinput.Dimmer // without consumers a dimming contact is only logged
	if d.homes != nil {
		absorber, dimmer = d.homes, d.homes
	}
	d.grid, err = gridcontrol.New(gridcontrol.Config{
		RevertTimeout:    cfg.GridControl.ReversionTimeout,
		RampPctPerSecond: cfg.GridControl.RampRatePercentPerSecond,
		MeterGrace:       cfg.GridControl.MeterLossGrace,
		DefaultLimitPct:  cfg.GridControl.Defaults.PowerLimitPercent,
		// The demo's schedule times are simulated plant times, as the
		// page and the API show them.
		Clock:    gridClock,
		Absorber: absorber,
	}, gridStore{Store: d.store, d: d}, d.live, d.conns.get, logger.With("component", "gridcontrol"))
	if err != nil {
		return err
	}
	if d.inputs, err = d.newInputs(cfg, dimmer); err != nil {
		return err
	}
	if d.eebus, err = d.newEEBus(cfg, logger); err != nil {
		return err
	}
	if d.tariffs, err = d.newTariffs(cfg, logger); err != nil {
		return err
	}
	d.plan, err = d.newPlan(cfg, logger)
	return err
}

// newAPI builds the HTTP API with its metrics registry and, with a
// broker configured, the MQTT uplink (whose remote commands run as API
// requests in the uplink's role).
func (d *daemon) newAPI(cfg *config.Config, logger *slog.Logger) error {
	reg := metrics.NewRegistry()
	collector := newDaemonCollector(d.poller, d.pool, d.store, d.live)
	collector.homes = d.homes
	reg.MustRegister(collector)
	reg.MustRegister(newGridCollector(d.grid), d.pollDuration)
	reg.MustRegister(serversCollector{d}) // the SunSpec server and the proxies, made by newLocal
	if d.eebus != nil {
		reg.MustRegister(eebusCollector{d.eebus})
	}
	if d.tariffs != nil {
		reg.MustRegister(d.tariffs)
	}
	if d.forecast != nil {
		reg.MustRegister(d.forecast)
	}
	apiDeps := httpapi.Deps{Live: d.live, History: storeHistory{d.store}, GridControl: d.grid, Registry: reg, Now: d.now}
	if d.homes != nil {
		apiDeps.Consumers = d.homes
	}
	if d.inputs != nil {
		apiDeps.Inputs = d.inputs
	}
	if d.eebus != nil {
		apiDeps.EEBus = eebusAPI{s: d.eebus, plant: cfg.EEBus.Plant}
	}
	if d.tariffs != nil {
		apiDeps.Tariffs = d.tariffs
	}
	if d.plan != nil {
		apiDeps.Planner = d.plan
	}
	if d.forecast != nil {
		apiDeps.Forecasts = d.forecast
	}
	commands, planAPI := &lateHandler{}, &lateHandler{}
	if len(cfg.MQTT.BrokerURLs()) > 0 {
		locs := map[string]*time.Location{}
		for _, p := range d.plants {
			locs[p.ID] = p.Location
		}
		deps := mqtt.Deps{Outbox: d.store, Live: d.live, Rollups: storeRollups{st: d.store, locs: locs}}
		if d.eebus != nil {
			deps.EEBus = eebusAPI{s: d.eebus, plant: cfg.EEBus.Plant}
		}
		if cfg.MQTT.RemoteControl {
			deps.Commands = commands
		}
		if d.tariffs != nil {
			deps.Plan = apiPlanItems{plant: cfg.Tariffs.Plant, h: planAPI}
		}
		var err error
		if d.up, err = mqtt.New(uplinkConfig(cfg), deps, logger.With("component", "mqtt")); err != nil {
			return err
		}
		apiDeps.Connected = uplinkHealth{d.up}
		reg.MustRegister(newUplinkCollector(d.up))
	}
	var err error
	d.api, err = httpapi.New(httpapi.ConfigFrom(cfg), apiDeps, logger.With("component", "http"))
	if err == nil && cfg.MQTT.RemoteControl {
		commands.h, err = d.api.AsRole("mqtt:"+cfg.Gateway.ID, cfg.MQTT.RemoteRole)
	}
	if err == nil && d.up != nil && d.tariffs != nil {
		planAPI.h, err = d.api.AsRole("uplink:"+cfg.Gateway.ID, config.RoleStandard)
	}
	if err != nil {
		return fmt.Errorf("http api: %w", err)
	}
	return nil
}

// newLocal builds the gateway's local integrations: Home Assistant over a
// LAN broker, the SunSpec server and the devices' proxies.
func (d *daemon) newLocal(cfg *config.Config, sunspecLn net.Listener, logger *slog.Logger) error {
	var err error
	if d.ha, err = d.newHass(cfg, logger.With("component", "hass")); err != nil {
		return err
	}
	if d.sunspec, d.sunspecLn, err = d.newSunSpec(cfg, sunspecLn); err != nil {
		return err
	}
	if d.proxies, err = d.newProxies(cfg); err != nil && d.sunspecLn != nil {
		d.sunspecLn.Close()
	}
	return err
}

// logEntry stores a log entry and hands it to the uplink (both never
// block); it reports whether the store took it.
func (d *daemon) logEntry(e plant.LogEntry) bool {
	ok := d.store.Log(e)
	if d.up != nil {
		d.up.Log(e)
	}
	return ok
}

// gridStore is the store as the grid controller sees it: its log entries
// (schedules accepted, controls restored, writes failed) go where the
// daemon's go, to the store and the uplink's log stream.
type gridStore struct {
	*store.Store
	d *daemon
}

func (g gridStore) Log(e plant.LogEntry) bool { return g.d.logEntry(e) }

// onSample is the poller's sink: the live state first, then the store
// (non-blocking) with the device's readings and, for every change the
// live state reports (communication state, health), a log entry.
func (d *daemon) onSample(s plant.Sample) {
	s.Time = d.now().UTC()
	events := d.live.Apply(s)
	info, readings, ok := d.live.Readings(s.Device)
	if !ok {
		return
	}
	kind, result := string(info.Kind), "ok"
	if kind == "" {
		kind = "unknown" // not discovered yet, no kind configured
	}
	if s.Err != nil {
		result = "error"
	}
	d.pollDuration.Observe(s.Duration.Seconds(), kind, result)
	if s.Err == nil {
		// readings was made for this call: the store keeps it.
		d.store.RecordOwned(store.Measurement{PlantID: info.PlantID, DeviceID: s.Device, Kind: info.Kind, Measures: info.Measures, Time: s.Time, Readings: readings})
	}
	for _, e := range events {
		d.logEvent(e)
	}
}

// logEvent logs a change of a device: to the store and the uplink, and a
// change of its communication state to plantd's own log too.
func (d *daemon) logEvent(e plant.Event) {
	d.logEntry(e.LogEntry())
	if !e.StateChanged() {
		return
	}
	attrs := []any{"device", e.DeviceID}
	if n := e.Nameplate; n != nil && e.State == plant.StateOnline {
		attrs = append(attrs, "manufacturer", n.Manufacturer, "model", n.Model, "models", modelList(n.Models))
	}
	if address, unit := d.conns.where(e.DeviceID); address != "" {
		// A SunSpec device (a consumer's driver names its own address
		// in its errors).
		attrs = append(attrs, "address", address, "unit", unit)
	}
	if e.State == plant.StateOnline {
		d.log.Info("device online", attrs...)
		return
	}
	d.log.Warn("device "+e.State.String(), append(attrs, "err", e.Err)...)
}

// modelList is a list of model ids as the log shows it, "1,103,120".
func modelList(models []uint16) string {
	ids := make([]string, len(models))
	for i, m := range models {
		ids[i] = strconv.Itoa(int(m))
	}
	return strings.Join(ids, ",")
}

// run runs every component until ctx ends or one of them fails, then
// stops them all: the poller, grid control and the HTTP API first, the
// store last, so that what was polled is written. One errgroup owns the
// components: the first error ends the others, and run returns it (the
// start errors a component can have, newDaemon already met). hup delivers
// SIGHUP (config reload; see supervise).
func (d *daemon) run(ctx context.Context, hup <-chan os.Signal) error {
	for _, p := range d.plants {
		d.logEntry(plant.LogEntry{Time: d.now().UTC(), PlantID: p.ID, Level: plant.LevelInfo, Code: "GatewayStarted",
			Message: fmt.Sprintf("plantd %s started", versionString())})
	}
	g, gctx := errgroup.WithContext(ctx)
	// The store outlives the rest of the group: it stops once the
	// components that feed it have returned, and an early end of its
	// writer ends the group like any other failure.
	storeCtx, stopStore := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStore()
	g.Go(func() error {
		err := d.store.Run(storeCtx)
		if err == nil && storeCtx.Err() == nil {
			err = errors.New("store: writer stopped")
		}
		return err
	})
	var feeders sync.WaitGroup
	component := func(f func(context.Context) error) {
		feeders.Add(1)
		g.Go(func() error {
			defer feeders.Done()
			err := f(gctx)
			// A component stopped in the middle of its start (a SIGTERM
			// right after READY=1) returns the cancellation: that is a
			// stop, not a failure.
			if gctx.Err() != nil && errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		})
	}
	component(d.poller.Run)
	component(d.grid.Run)
	if d.chargePoints != nil {
		component(d.chargePoints.Run)
	}
	if d.homes != nil {
		component(d.homes.Run)
	}
	if d.inputs != nil {
		component(d.inputs.Run)
	}
	if d.eebus != nil {
		component(d.eebus.Run)
	}
	if d.plan != nil {
		component(d.plan.Run)
	}
	if d.tariffs != nil {
		component(d.tariffs.Run)
	}
	if d.forecast != nil {
		component(d.forecast.Run)
	}
	component(func(ctx context.Context) error { return d.api.Serve(ctx, d.ln) })
	if d.sunspec != nil {
		component(func(ctx context.Context) error { return d.sunspec.Serve(ctx, d.sunspecLn) })
	}
	for _, p := range d.proxies {
		component(func(ctx context.Context) error { return p.p.Serve(ctx, p.ln) })
	}
	component(func(ctx context.Context) error { d.supervise(ctx, hup); return nil })
	// The uplink writes the outbox synchronously (not through the store's
	// writer), so it stops with the poller, before the store closes.
	if d.up != nil {
		component(d.up.Run)
	}
	if d.ha != nil {
		component(d.ha.Run)
	}
	if d.reportEvery > 0 {
		component(func(ctx context.Context) error { d.report(ctx); return nil })
	}
	g.Go(func() error {
		feeders.Wait()
		stopStore()
		return nil
	})
	err := g.Wait()
	if errors.Is(d.store.Health(), store.ErrFileGone) {
		// Close writes the database back to its path, as long as a backup
		// takes: more than the unit's stop timeout on a large database
		// on an SD card, where systemd would kill plantd mid-copy.
		d.log.Warn("the database file is gone from its path: writing it back before the stop, the stop may take minutes")
		_, _ = sd.SdNotify(false, fmt.Sprintf("EXTEND_TIMEOUT_USEC=%d", writeBackTimeout.Microseconds()))
	}
	return errors.Join(err, d.pool.Close(), d.store.Close())
}

// writeBackTimeout is how long a stop may take while the store writes a
// deleted database file back (systemd's stop timeout is extended by it).
const writeBackTimeout = 30 * time.Minute

// plantsOf maps the config's plants onto package plant's.
func plantsOf(cfg *config.Config) ([]plant.Plant, error) {
	var plants []plant.Plant
	for _, p := range cfg.Plants {
		loc, err := p.Zone()
		if err != nil {
			return nil, fmt.Errorf("plant %s: %w", p.ID, err)
		}
		plants = append(plants, plant.Plant{ID: p.ID, Name: p.Name, Description: p.Description, Location: loc})
	}
	return plants, nil
}

// devicesOf maps every configured device onto package plant's, the
// disabled ones too: they stay in the API (isActive false, deactivatedAt,
// their history readable), count in no balance, plantWithBattery or
// calculatedAcNominalPower, and are never polled (pollerConfigs, the
// Modbus clients of grid control and the uplink take the enabled ones
// only). A disabled device's deactivatedAt is when plantd first saw it
// disabled (at a start or a reload), kept in the database so that it
// stays the same across restarts; enabling the device clears it.
func (d *daemon) devicesOf(ctx context.Context, cfg *config.Config) ([]plant.DeviceInfo, error) {
	var infos []plant.DeviceInfo
	measures := consumerMeters(cfg)
	for _, dc := range cfg.Devices {
		if dc.Kind != "" && !dc.Kind.Polled() {
			return nil, fmt.Errorf("device %s: %q is not the kind of a polled device", dc.ID, dc.Kind)
		}
		info := plant.DeviceInfo{ID: dc.ID, PlantID: dc.Plant, Name: dc.Name, Kind: dc.Kind, Measures: measures[dc.ID]}
		if dc.Enabled {
			d.reactivate(ctx, dc.ID)
		} else {
			info.DeactivatedAt = d.deactivatedAt(ctx, dc.ID)
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// deactivatedAt is when plantd first saw the device disabled: from the
// cache, else from the database, else now (written to the database).
func (d *daemon) deactivatedAt(ctx context.Context, id string) time.Time {
	if t, ok := d.deactivated[id]; ok {
		return t
	}
	t, ok, err := d.store.DeactivatedAt(ctx, id)
	if err != nil {
		d.log.Warn("reading when a disabled device was deactivated", "device", id, "err", err)
	}
	if !ok {
		t = time.UnixMilli(d.now().UnixMilli())
		if err := d.store.SetDeactivatedAt(ctx, id, t); err != nil {
			d.log.Warn("storing when a disabled device was deactivated (it is taken as now again at the next start)", "device", id, "err", err)
		}
		d.log.Info("device disabled in the config: not polled, listed as deactivated", "device", id, "deactivatedAt", t.UTC().Format(time.RFC3339))
	}
	d.deactivated[id] = t
	return t
}

// reactivate forgets a device's deactivation time once it is enabled.
func (d *daemon) reactivate(ctx context.Context, id string) {
	if _, ok := d.deactivated[id]; ok {
		delete(d.deactivated, id)
	} else if _, ok, err := d.store.DeactivatedAt(ctx, id); err != nil || !ok {
		return
	}
	if err := d.store.SetDeactivatedAt(ctx, id, time.Time{}); err != nil {
		d.log.Warn("clearing the deactivation of an enabled device", "device", id, "err", err)
	}
}

// pollerConfigs lists the enabled devices for the poller.
func pollerConfigs(cfg *config.Config) []poller.DeviceConfig {
	var out []poller.DeviceConfig
	for _, d := range cfg.Devices {
		if !d.Enabled || d.Kind == kind.Consumer {
			continue // consumers are polled by the home energy manager
		}
		ep := endpointOf(d)
		pc := poller.DeviceConfig{
			ID: d.ID, Address: ep.Address, Transport: ep.Transport, Serial: ep.Serial, Unit: byte(d.Unit), Kind: d.Kind, Template: d.Template,
			Interval: d.PollInterval, Timeout: d.Timeout, ConnectDelay: d.ConnectDelay,
		}
		if d.Base != nil {
			pc.Bases = []uint16{uint16(*d.Base)}
		}
		out = append(out, pc)
	}
	return out
}

// endpointOf is how a configured device is reached: Modbus TCP, RTU over
// TCP (framing rtu) or RTU on a serial line.
func endpointOf(d config.Device) modbus.EndpointConfig {
	ep := modbus.EndpointConfig{Address: d.Address(), Timeout: d.Timeout, ConnectDelay: d.ConnectDelay}
	switch {
	case d.Serial != nil:
		ep.Transport = modbus.TransportRTU
		ep.Serial = modbus.SerialConfig{Baud: d.Serial.Baud, DataBits: 8, Parity: d.Serial.Parity, StopBits: d.Serial.StopBits}
	case d.Framing == config.FramingRTU:
		ep.Transport = modbus.TransportRTUOverTCP
	}
	return ep
}

// maxPollInterval is the longest poll interval of the enabled devices (at
// least the default): how far ahead of the clock the store accepts a
// sample.
func maxPollInterval(cfg *config.Config) time.Duration {
	m := poller.DefaultInterval
	for _, pc := range pollerConfigs(cfg) {
		m = max(m, pc.Interval)
	}
	return m
}

// deviceConns gives grid control the Modbus client of each enabled device:
// the poller's endpoint (one socket per host:port), so that writes and
// polls of one device are serialised, as a control client, whose requests
// take the endpoint's turn before the polls waiting for it
// (modbus.Endpoint.ControlUnit): a limit's renewal waits for the request
// in flight, not for every poll queued on the bus. A config reload
// replaces the list (set).
type deviceConns struct {
	pool    *modbus.Pool
	mu      sync.RWMutex
	clients map[string]sunspec.ReadWriter
	at      map[string]deviceAddress
}

func newDeviceConns(cfg *config.Config, pool *modbus.Pool) *deviceConns {
	c := &deviceConns{pool: pool}
	c.set(cfg)
	return c
}

// set makes the clients of cfg's enabled devices the ones returned.
func (c *deviceConns) set(cfg *config.Config) {
	clients := map[string]sunspec.ReadWriter{}
	at := map[string]deviceAddress{}
	for _, pc := range pollerConfigs(cfg) {
		at[pc.ID] = deviceAddress{pc.Address, pc.Unit}
		timeout := pc.Timeout
		if timeout == 0 {
			timeout = modbus.DefaultTimeout
		}
		ep := c.pool.Endpoint(modbus.EndpointConfig{Address: pc.Address, Transport: pc.Transport, Serial: pc.Serial, Timeout: timeout, ConnectDelay: pc.ConnectDelay})
		clients[pc.ID] = ep.ControlUnit(pc.Unit, timeout)
	}
	c.mu.Lock()
	c.clients, c.at = clients, at
	c.mu.Unlock()
}

// deviceAddress is where a device is polled.
type deviceAddress struct {
	address string
	unit    byte
}

// where returns the address and unit a device is polled at (for the log).
func (c *deviceConns) where(id string) (string, byte) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	a := c.at[id]
	return a.address, a.unit
}

// get is the gridcontrol.Conns of the daemon.
func (c *deviceConns) get(id string) (sunspec.ReadWriter, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	rw, ok := c.clients[id]
	return rw, ok
}

// applyDevices makes the devices of next (a reloaded config) the ones
// plantd polls, controls and serves, without touching the devices that
// stay the same: the live cache learns the new ones first (so that their
// first samples are kept), the poller stops the removed ones and starts
// the new, then the live cache forgets the removed. Devices of a plant the
// running config does not have are refused: plants need a restart.
func (d *daemon) applyDevices(next *config.Config) (poller.Changes, error) {
	ctx := context.Background()
	consumersChanged(d.cfg, next, d.log)
	inputsChanged(d.cfg, next, d.log)
	proxiesChanged(d.cfg, next, d.log)
	running, err := d.devicesOf(ctx, d.cfg)
	if err != nil {
		return poller.Changes{}, err
	}
	infos, err := d.devicesOf(ctx, next)
	if err != nil {
		return poller.Changes{}, err
	}
	for _, in := range infos {
		if _, ok := d.live.Plant(in.PlantID); !ok {
			return poller.Changes{}, fmt.Errorf("device %s is in plant %s, which plantd was not started with", in.ID, in.PlantID)
		}
	}
	d.live.SetDevices(append(slices.Clone(infos), running...))
	d.conns.set(next)
	ch, err := d.poller.Update(pollerConfigs(next))
	if err != nil {
		d.live.SetDevices(running)
		d.conns.set(d.cfg)
		return poller.Changes{}, err
	}
	d.live.SetDevices(infos)
	// The poller discovers the changed devices again: their next samples
	// are logged as a first sample is.
	d.live.Restarted(ch.Changed...)
	return ch, nil
}

// report logs the live energy balance of every plant each reportEvery.
func (d *daemon) report(ctx context.Context) {
	t := time.NewTicker(d.reportEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, p := range d.plants {
			b, err := d.live.EnergyBalance(p.ID)
			if err != nil {
				continue
			}
			attrs := []any{"plant", p.ID}
			for _, f := range []struct {
				name string
				v    *float64
			}{
				{"pv_w", b.PVGenerationW}, {"consumption_w", b.TotalConsumptionW},
				{"grid_feed_in_w", b.GridFeedInW}, {"grid_purchase_w", b.GridConsumptionW},
				{"battery_charge_w", b.BatteryChargingW}, {"battery_discharge_w", b.BatteryDischargingW},
				{"battery_soc_pct", b.BatteryStateOfChargePct},
			} {
				if f.v != nil {
					attrs = append(attrs, f.name, math.Round(*f.v))
				}
			}
			if b.Error != nil {
				attrs = append(attrs, "incomplete", b.Error.Message)
			}
			d.log.Info("live energy balance", attrs...)
		}
	}
}
