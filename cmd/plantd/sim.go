package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"plantd/devices/template"
	"plantd/eebus"
	"plantd/eebus/controlbox"
	"plantd/eebus/eebusconfig"
	"plantd/plant/kind"
	"plantd/sim"
)

func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("sim", "[--listen ADDR] [--speed N] [--trace FILE] [--ignore-revert IDS] [--needs-enable-toggle IDS] [--ignores-limit IDS] [--devices N [--gateways G] [--report EVERY]] [--serial PATH [--baud N]] [--ocpp URL [--ocpp-password P]] [--controlbox SKI@HOST:PORT]", stderr)
	listen := fs.String("listen", sim.DefaultListen, "HOST to bind free ports on, or HOST:PORT to use PORT, PORT+1, ... for the devices in turn, then the Shelly plug")
	speed := fs.Float64("speed", 1, "simulated seconds per real second (e.g. 60 runs a day in 24 minutes)")
	trace := fs.String("trace", "", "append every Modbus write the devices receive to `FILE`, one JSON object per line")
	nDevices := fs.Int("devices", 0, "serve a scale-test plant of `N` devices (a meter and N-1 string inverters) instead of the demo plant")
	gateways := fs.Int("gateways", 0, "with --devices: put the devices as unit ids behind `G` gateway addresses (0: one address each)")
	report := fs.Duration("report", 0, "print the reads the devices answered, the polls they came in and the poll jitter every `EVERY` (e.g. 10s)")
	serial := fs.String("serial", "", "serve the meter (unit 1) and one device of each template (units 2, 3, ...) as Modbus RTU on the serial device `PATH` (e.g. one end of a socat pty pair)")
	baud := fs.Int("baud", sim.DefaultBaud, "with --serial: the line's rate `N` (answers are paced at it, 11 bits a byte)")
	ocppURL := fs.String("ocpp", "", "connect a wallbox twin (OCPP 1.6J charge point \"wallbox\", 16 A on 3 phases, a car at 40 %) to the central system at `URL` (ws://HOST:8887/ocpp); its limits are logged")
	ocppPassword := fs.String("ocpp-password", "", "with --ocpp: the wallbox's basic-auth password")
	controlBox := fs.String("controlbox", "", "run a grid operator's control box over EEBus (eebus-go's Energy Guard LPC and LPP) that trusts plantd's `SKI@HOST:PORT` (plantd eebus ski, eebus.port) and dials it; it prints its own SKI for eebus.trusted and takes commands on stdin: lpc|lpp <W> [<duration>], lpc|lpp end, raw lpc|lpp <n> <scale> [<end>], failsafe lpc|lpp <W>, failsafe duration <d>, nominal lpc|lpp, heartbeat stop|start")
	var ignoreRevert, needsToggle, ignoresLimit, adoptClears idList
	fs.Var(&ignoreRevert, "ignore-revert", "inverters (`IDS`, comma-separated) that accept reversion times but never revert")
	fs.Var(&needsToggle, "needs-enable-toggle", "inverters (`IDS`, comma-separated) that take a new power limit only when its enable goes 0 then 1")
	fs.Var(&ignoresLimit, "ignores-limit", "inverters (`IDS`, comma-separated) that accept a power limit but never limit their output")
	fs.Var(&adoptClears, "adopt-clears-request", "DER inverters (`IDS`, comma-separated) that set a 7xx adopt request (AdptCrvReq, AdptCtlReq) back to 0 once they acted on it")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	cfg := sim.DemoConfig()
	if *nDevices > 0 {
		var err error
		if cfg, err = sim.ScaleConfig(*nDevices, *gateways); err != nil {
			fmt.Fprintf(stderr, "plantd sim: --devices %d --gateways %d: %v\n", *nDevices, *gateways, err)
			return exitUsage
		}
	} else if *gateways != 0 {
		fmt.Fprintln(stderr, "plantd sim: --gateways needs --devices")
		return exitUsage
	}
	baudSet := false
	fs.Visit(func(f *flag.Flag) { baudSet = baudSet || f.Name == "baud" })
	switch {
	case *serial != "" && *nDevices > 0:
		fmt.Fprintln(stderr, "plantd sim: --serial serves the demo plant's meter; not with --devices")
		return exitUsage
	case *serial == "" && baudSet:
		fmt.Fprintln(stderr, "plantd sim: --baud needs --serial")
		return exitUsage
	case *serial != "":
		// The demo's meter as unit 1 and one device of each template
		// (units 2, 3, ...), as an RS485 bus of a real site.
		on := []string{serialMeter}
		for i, name := range template.Names() {
			cfg.Devices = append(cfg.Devices, sim.DeviceConfig{ID: name, Template: name, Unit: byte(2 + i)})
			on = append(on, name)
		}
		cfg.Serial = []sim.SerialConfig{{Path: *serial, Baud: *baud, Devices: on}}
	}
	switch {
	case *ocppURL != "" && *nDevices > 0:
		fmt.Fprintln(stderr, "plantd sim: --ocpp adds the wallbox to the demo plant; not with --devices")
		return exitUsage
	case *ocppURL == "" && *ocppPassword != "":
		fmt.Fprintln(stderr, "plantd sim: --ocpp-password needs --ocpp")
		return exitUsage
	case *ocppURL != "":
		cfg.ChargePoints = []sim.ChargePointConfig{{ID: "wallbox", URL: *ocppURL, Password: *ocppPassword}}
	}
	cfg.CountReads = *report > 0
	cfg.Speed = *speed
	cfg.TraceFile = *trace
	if err := applyQuirks(&cfg, []quirkFlag{
		{"--ignore-revert", ignoreRevert, func(d *sim.DeviceConfig) { d.IgnoreRevert = true }},
		{"--needs-enable-toggle", needsToggle, func(d *sim.DeviceConfig) { d.NeedsEnableToggle = true }},
		{"--ignores-limit", ignoresLimit, func(d *sim.DeviceConfig) { d.IgnoresLimit = true }},
		{"--adopt-clears-request", adoptClears, func(d *sim.DeviceConfig) { d.AdoptClearsRequest = true }},
	}); err != nil {
		fmt.Fprintf(stderr, "plantd sim: %v\n", err)
		return exitUsage
	}
	host, port, err := splitListen(*listen)
	if err != nil {
		fmt.Fprintf(stderr, "plantd sim: --listen %q: %v\n", *listen, err)
		return exitUsage
	}
	cfg.Listen = host
	if port > 0 {
		assignPorts(&cfg, port)
	}
	level := slog.LevelInfo
	if *nDevices > 0 {
		level = slog.LevelWarn // not a line per device at start
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("component", "sim")
	plant, err := sim.New(cfg, logger)
	if err != nil {
		fmt.Fprintf(stderr, "plantd sim: %v\n", err)
		return exitUsage
	}
	if err := plant.Start(); err != nil {
		fmt.Fprintf(stderr, "plantd sim: %v\n", err)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return exitConfig // a serial device that is not there
		}
		return exitFailure
	}
	defer plant.Close()
	printSimBanner(stdout, plant, *serial, *baud, *trace)
	var twins sync.WaitGroup
	for _, cp := range plant.ChargePoints() {
		fmt.Fprintf(stdout, "%-10s %-19s %s/%s (OCPP 1.6J, connecting)\n", cp.ID(), "charger", *ocppURL, cp.ID())
		twins.Go(func() {
			if err := cp.Run(ctx); err != nil {
				logger.Error("wallbox twin", "err", err)
			}
		})
	}
	defer twins.Wait()
	if *controlBox != "" {
		box, err := startControlBox(*controlBox)
		if err != nil {
			fmt.Fprintf(stderr, "plantd sim: --controlbox %q: %v\n", *controlBox, err)
			return exitUsage
		}
		defer box.Stop()
		fmt.Fprintf(stdout, "%-10s %-19s SKI %s (EEBus, dialing %s); commands on stdin\n", "controlbox", "control box", box.SKI(), *controlBox)
		twins.Go(func() {
			if err := controlbox.Serve(ctx, box, os.Stdin, stdout, 30*time.Second); err != nil {
				logger.Error("control box", "err", err)
			}
		})
	}
	if *report > 0 {
		reportReads(ctx, plant, *report, stdout)
	}
	<-ctx.Done()
	return exitOK
}

// quirkFlag is a flag that gives simulated inverters a quirk.
type quirkFlag struct {
	flag string
	ids  idList
	set  func(*sim.DeviceConfig)
}

// applyQuirks gives the inverters each flag names its quirk.
func applyQuirks(cfg *sim.Config, flags []quirkFlag) error {
	for _, m := range flags {
		for _, id := range m.ids {
			i := slices.IndexFunc(cfg.Devices, func(d sim.DeviceConfig) bool { return d.ID == id })
			if i < 0 || cfg.Devices[i].Kind != kind.Inverter {
				return fmt.Errorf("%s %q: not a simulated inverter (inv1, inv2)", m.flag, id)
			}
			m.set(&cfg.Devices[i])
		}
	}
	return nil
}

// assignPorts gives the endpoints port, port+1, ... in the order they
// first appear (devices behind one gateway share its port), then the
// Shelly plugs theirs; a device on a serial line (cfg.Serial) has none.
func assignPorts(cfg *sim.Config, port int) {
	onSerial := map[string]bool{}
	for _, s := range cfg.Serial {
		for _, id := range s.Devices {
			onSerial[id] = true
		}
	}
	ports := map[string]int{}
	for i := range cfg.Devices {
		d := &cfg.Devices[i]
		if onSerial[d.ID] {
			continue
		}
		key := "dev:" + d.ID
		if d.Endpoint != "" {
			key = "ep:" + d.Endpoint
		}
		if _, ok := ports[key]; !ok {
			ports[key] = port + len(ports)
		}
		d.Port = ports[key]
	}
	for i := range cfg.Shellies {
		cfg.Shellies[i].Port = port + len(ports)
		ports["shelly:"+cfg.Shellies[i].ID] = cfg.Shellies[i].Port
	}
}

// printSimBanner prints what the simulator serves where.
func printSimBanner(stdout io.Writer, plant *sim.Plant, serial string, baud int, trace string) {
	fmt.Fprintln(stdout, "simulated plant (SunSpec Modbus TCP, map at base 40000); Ctrl-C stops it")
	if serial != "" {
		fmt.Fprintf(stdout, "serial line %s: Modbus RTU at %d baud 8N1, answers paced at 11 bits a byte\n", serial, baud)
	}
	fmt.Fprintf(stdout, "%-10s %-19s %-22s %s\n", "device", "kind", "address", "unit")
	for _, d := range plant.Devices() {
		if path := d.Bus(); path != "" {
			fmt.Fprintf(stdout, "%-10s %-19s %-22s %d (RTU %d baud)\n", d.ID(), d.Label(), path, d.Unit(), baud)
			continue
		}
		fmt.Fprintf(stdout, "%-10s %-19s %-22s %d\n", d.ID(), d.Label(), d.Addr(), d.Unit())
	}
	for _, sh := range plant.Shellies() {
		fmt.Fprintf(stdout, "%-10s %-19s %-22s (HTTP RPC)\n", sh.ID(), "shelly", sh.Addr())
	}
	if trace != "" {
		fmt.Fprintf(stdout, "writes traced to %s\n", trace)
	}
	fmt.Fprintf(stdout, "try: plantd scan %s\n", plant.Devices()[0].Addr())
}

// serialMeter is the demo device --serial puts on the serial line.
const serialMeter = "meter"

// reportReads prints the plant's read statistics every period until ctx
// ends: reads and polls per second, reads per poll, and the poll interval
// as the devices saw it (median, and the deviation from it at p50, p99 and
// max: the client's poll jitter).
func reportReads(ctx context.Context, plant *sim.Plant, every time.Duration, w io.Writer) {
	t := time.NewTicker(every)
	defer t.Stop()
	plant.TakeReadStats()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s := plant.TakeReadStats()
		perPoll := 0.0
		if s.Polls > 0 {
			perPoll = float64(s.Reads) / float64(s.Polls)
		}
		line := fmt.Sprintf("reads/s %.0f polls/s %.1f reads/poll %.2f", float64(s.Reads)/every.Seconds(), float64(s.Polls)/every.Seconds(), perPoll)
		if len(s.Gaps) > 0 {
			slices.Sort(s.Gaps)
			med := s.Gaps[len(s.Gaps)/2]
			dev := make([]time.Duration, len(s.Gaps))
			for i, g := range s.Gaps {
				dev[i] = (g - med).Abs()
			}
			slices.Sort(dev)
			q := func(f float64) float64 { return dev[int(f*float64(len(dev)-1))].Seconds() * 1000 }
			line += fmt.Sprintf(" interval %.1fms jitter_ms p50 %.2f p99 %.2f max %.2f", med.Seconds()*1000, q(0.5), q(0.99), q(1))
		}
		fmt.Fprintln(w, line)
	}
}

// idList is a flag of device ids, comma-separated, repeatable.
type idList []string

func (l *idList) String() string { return strings.Join(*l, ",") }

func (l *idList) Set(s string) error {
	for _, id := range strings.Split(s, ",") {
		if id = strings.TrimSpace(id); id != "" {
			*l = append(*l, id)
		}
	}
	return nil
}

// splitListen accepts HOST or HOST:PORT.
func splitListen(s string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		return s, 0, nil
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not a TCP port", portStr)
	}
	return host, port, nil
}

// startControlBox starts the simulator's control box for
// "SKI@HOST:PORT": it trusts plantd's SKI and dials plantd there, and
// listens itself on a free port.
func startControlBox(arg string) (*controlbox.Box, error) {
	ski, addr, ok := strings.Cut(arg, "@")
	if !ok {
		return nil, errors.New("want SKI@HOST:PORT")
	}
	ski, ok = eebusconfig.NormalizeSKI(ski)
	if !ok {
		return nil, fmt.Errorf("%q is not a SKI (40 hex digits)", ski)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	// The box's certificate is kept, so its SKI in plantd's eebus.trusted
	// holds across runs.
	dir, err := os.UserCacheDir()
	if err != nil {
		return nil, err
	}
	dir = filepath.Join(dir, "plantd", "controlbox")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	c, err := eebus.LoadOrCreateCert(dir, "controlbox")
	if err != nil {
		return nil, err
	}
	box, err := controlbox.New(controlbox.Spec{Port: port, Trust: ski, PeerAddr: addr, Cert: &c})
	if err != nil {
		return nil, err
	}
	box.Start()
	return box, nil
}
