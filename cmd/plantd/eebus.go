package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"plantd/config"
	"plantd/eebus"
	"plantd/gridcontrol"
	"plantd/httpapi"
	"plantd/metrics"
	"plantd/plant"
	"plantd/sunspec"
)

// runEEBus is "plantd eebus ski": plantd's EEBus SKI, for the installer
// to register with the grid operator's control box. The certificate is
// made (and kept) now if the daemon has not made it yet.
func runEEBus(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("eebus", "ski [-c FILE]", stderr)
	path := fs.String("c", defaultConfigPath, "config file")
	what, code, ok := parseOneArg(fs, args)
	if !ok {
		return code
	}
	if what != "ski" {
		fs.Usage()
		return exitUsage
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintf(stderr, "plantd: the config has problems:\n%v\n", err)
		return exitConfig
	}
	dir := eebusStateDir(cfg)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		fmt.Fprintf(stderr, "plantd eebus: %v\n", err)
		return exitFailure
	}
	c, err := eebus.LoadOrCreateCert(dir, cfg.EEBus.SerialOr(cfg.Gateway.ID))
	if err != nil {
		fmt.Fprintf(stderr, "plantd eebus: %v\n", err)
		return exitFailure
	}
	ski, err := eebus.SKI(c)
	if err != nil {
		fmt.Fprintf(stderr, "plantd eebus: %v\n", err)
		return exitFailure
	}
	fmt.Fprintln(stdout, ski)
	return exitOK
}

// eebusStateDir is where the EEBus certificate and failsafe values are
// kept: the database's directory (the unit's StateDirectory).
func eebusStateDir(cfg *config.Config) string { return filepath.Dir(cfg.Database.Path) }

// newEEBus makes the EEBus service when the config enables it: grid
// control is its gate, the energy manager (when there are consumers)
// takes the consumption limit.
func (d *daemon) newEEBus(cfg *config.Config, logger *slog.Logger) (*eebus.Service, error) {
	e := cfg.EEBus
	if !e.Enabled {
		return nil, nil
	}
	dir := eebusStateDir(cfg)
	serial := e.SerialOr(cfg.Gateway.ID)
	c, err := eebus.LoadOrCreateCert(dir, serial)
	if err != nil {
		return nil, err
	}
	spec := eebus.Spec{PlantID: e.Plant, Cert: c, StateDir: dir, Port: e.Port, Brand: e.Brand, Model: e.Model, Serial: serial,
		Trusted: e.TrustedSKIs(), Interfaces: e.Interfaces, HeartbeatTimeout: e.HeartbeatTimeout,
		Failsafe:          eebus.Failsafe{ConsumptionW: e.Failsafe.ConsumptionW, ProductionW: e.Failsafe.ProductionW, Duration: e.Failsafe.Duration},
		ProductionCommand: e.ProductionCommand}
	for _, dc := range cfg.Devices {
		if dc.Plant == e.Plant && dc.Consumer != nil && dc.Consumer.IsControllable() {
			spec.ConsumptionNominalW += dc.Consumer.RatedPower
		}
	}
	deps := eebus.Deps{Gate: d.grid, Log: func(le plant.LogEntry) { d.logEntry(le) },
		ProductionNominal: func() float64 { return d.limitRatedW(e.Plant) }}
	if d.homes != nil {
		deps.Consumers = d.homes
	}
	return eebus.New(spec, deps, logger.With("component", "eebus"))
}

// limitRatedW is the rated power of a plant's inverters that take a
// power limit as grid control chooses them (FeedInLimit's, else
// opModMaxLimW's), summed from what their discovery read (120 WRtg, 702
// WMaxRtg); 0 before any was discovered. It is the production nominal
// maximum the EEBus control box is told and a limit above it refused.
func (d *daemon) limitRatedW(plantID string) float64 {
	devs, err := d.live.AppendDeviceStatuses(nil, plantID)
	if err != nil {
		return 0
	}
	var ids []string
	for _, name := range []string{gridcontrol.CmdFeedInLimit, gridcontrol.CmdMaxLimW} {
		if cmd, ok := gridcontrol.CommandByName(name); ok && len(ids) == 0 {
			ids = gridcontrol.Eligible(cmd, devs).Devices
		}
	}
	sum := 0.0
	for _, dv := range devs {
		if sd, ok := dv.Discovered.(*sunspec.Device); ok && slices.Contains(ids, dv.Info.ID) {
			sum += sd.RatedPowerW
		}
	}
	return sum
}

// eebusAPI is the EEBus service as the API's EEBus.
type eebusAPI struct {
	s     *eebus.Service
	plant string
}

func (a eebusAPI) EEBusState() httpapi.EEBusState {
	st := a.s.Status()
	out := httpapi.EEBusState{PlantID: a.plant, SKI: st.SKI, ControlBox: st.ControlBox, Connected: st.Connected, Failsafe: st.Failsafe,
		ConsumptionLimitW: st.ConsumptionLimitW, ProductionLimitW: st.ProductionLimitW, ProductionWindow: st.ProductionWindow}
	if !st.LastHeartbeat.IsZero() {
		t := st.LastHeartbeat
		out.LastHeartbeat = &t
	}
	return out
}

// eebusCollector is the EEBus door in /metrics.
type eebusCollector struct{ s *eebus.Service }

func (c eebusCollector) Collect(w *metrics.Writer) {
	st := c.s.Status()
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	w.Gauge("plantd_eebus_connected", "1 while the trusted control box is connected over EEBus.", b(st.Connected))
	w.Gauge("plantd_eebus_failsafe", "1 while the EEBus failsafe limits apply (at start until the box speaks, or after its heartbeat was lost).", b(st.Failsafe))
	for _, l := range []struct {
		kind string
		w    *float64
	}{{"consumption", st.ConsumptionLimitW}, {"production", st.ProductionLimitW}} {
		v := -1.0
		if l.w != nil {
			v = *l.w
		}
		w.Gauge("plantd_eebus_limit_watts", "The control box's limit in force in W, by kind (consumption: LPC on the controllable consumers; production: LPP), -1 for none.", v, "kind", l.kind)
	}
	w.Counter("plantd_eebus_limits_total", "Limits taken from the control box (LPC and LPP writes and ends).", float64(st.Limits))
	w.Counter("plantd_eebus_limits_refused_total", "Limits refused (negative, above the nominal maximum, a negative duration).", float64(st.Refused))
	w.Counter("plantd_eebus_failsafe_total", "Times the control box's heartbeat was lost and the failsafe applied.", float64(st.Failsafes))
}

// eebusLimit is the EEBus service as Home Assistant's §14a sensor.
type eebusLimit struct {
	s     *eebus.Service
	plant string
}

func (l eebusLimit) ConsumptionLimit14aW(plantID string) (float64, bool, bool) {
	if plantID != l.plant {
		return 0, false, false
	}
	st := l.s.Status()
	if st.ConsumptionLimitW == nil {
		return 0, false, true
	}
	return *st.ConsumptionLimitW, true, true
}

// EEBusItem is the EEBus state as the MQTT uplink's live item for its
// plant: the API's eebus member with the time it was taken.
func (a eebusAPI) EEBusItem(plantID string) (any, bool) {
	if plantID != a.plant {
		return nil, false
	}
	st := a.EEBusState()
	if st.LastHeartbeat != nil {
		st.LastHeartbeatUtc = st.LastHeartbeat.UTC().Format(time.RFC3339Nano)
	}
	return struct {
		Time string `json:"time"`
		httpapi.EEBusState
	}{time.Now().UTC().Format(time.RFC3339Nano), st}, true
}
