package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"plantd/config"
	"plantd/consumer/consumerconfig"
	"plantd/consumer/drivers"
	"plantd/httpapi/oauth2/oauthconfig"
	"plantd/mqtt"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sim"
	"plantd/store"
	"plantd/tariffs/tariffconfig"

	"go.yaml.in/yaml/v3"
)

// defaultConfigPath is where packages install the config.
const defaultConfigPath = "/etc/plantd/plantd.yaml"

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", "[-c FILE]", stderr)
	path := fs.String("c", defaultConfigPath, "config file")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	// No config is an error, never the demo: an installer's typo must not
	// serve a simulated plant as if it were theirs.
	if _, err := os.Stat(*path); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "plantd: refusing to start: no config file at %s\n"+
			"Write one (packages install the documented example as /usr/share/doc/plantd/plantd.yaml.example)\n"+
			"or give its path with -c FILE. To try plantd without devices, run \"plantd demo\".\n", *path)
		return exitConfig
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintf(stderr, "plantd: refusing to start, the config has problems:\n%v\n", err)
		return exitConfig
	}
	if err := cfg.CheckSerialPorts(); err != nil {
		fmt.Fprintf(stderr, "plantd: refusing to start, a serial line is missing:\n%v\n", err)
		return exitConfig
	}
	setMemoryLimit(cfg) // not for the demo, whose process hosts the simulator and broker too
	beginStartupGC()    // ended by supervise once the first poll round ran
	// The executable's pages the process's own start brought in are given
	// back before the start-up too, not only after it (supervise): with
	// the file in the page cache, fault-around had mapped nearly all of it
	// by now, and start-up's peak was the whole binary plus the heap it
	// builds (codepages_linux.go). A failure here is logged by the second
	// call.
	_, _ = releaseCodePages()
	go adaptGOGC(ctx, 5*time.Second)
	return serve(ctx, cfg, *path, listeners{}, nil, stderr, 0, func() (*config.Config, error) { return config.Load(*path) })
}

// serve runs the daemon of a valid config (read from cfgPath, "" for the
// demo) until ctx ends; ln and sunspecLn, when set, are the HTTP and the
// SunSpec server's listeners bound already; report, when set, logs the live
// energy balance at that interval; reload, when set, reads the config
// again on SIGHUP.
func serve(ctx context.Context, cfg *config.Config, cfgPath string, lns listeners, now func() time.Time, stderr io.Writer, report time.Duration,
	reload func() (*config.Config, error)) int {
	// SIGHUP is taken from here on: before, it would end the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	logger, level := newLogger(cfg.Log, stderr)
	d, err := newDaemon(ctx, cfg, lns, now, logger)
	if err != nil {
		logger.Error("cannot start: " + err.Error())
		return failureStatus(err)
	}
	d.reportEvery, d.level, d.reload, d.configPath = report, level, reload, cfgPath
	if reload != nil {
		// For check-config --running, the unit's ExecReload.
		if err := writeRunningPlants(cfg); err != nil {
			logger.Warn("a reload cannot check the plants' names and time zones: " + err.Error())
		}
	}
	startPprof(ctx, logger)
	logger.Info("plantd running", "version", versionString(), "gateway", cfg.Gateway.ID,
		"plants", len(cfg.Plants), "devices", len(cfg.Devices))
	if len(cfg.Devices) == 0 {
		logger.Warn(noDevicesMessage(cfgPath))
	}
	if err := d.run(ctx, hup); err != nil {
		logger.Error("stop: " + err.Error())
		return failureStatus(err)
	}
	logger.Info("plantd stopped", "reason", context.Cause(ctx))
	return exitOK
}

// failureStatus is the exit status of a daemon that failed with err:
// exitConfig (78, which the unit does not restart) when its database can
// never be used as it is, damaged beyond serving or written by a newer
// plantd, so that systemd does not restart it every 5 s for ever (the
// log says what to do); exitFailure otherwise.
func failureStatus(err error) int {
	if errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrSchemaTooNew) {
		return exitConfig
	}
	return exitFailure
}

// noDevicesMessage is the first-run message of a config without devices
// (the package installs one): the log line at start and on reload, and
// the start of STATUS=.
func noDevicesMessage(cfgPath string) string {
	if cfgPath == "" {
		cfgPath = "the config file"
	}
	return "no devices configured: run `plantd scan HOST` to find a device, add it under devices: in " + cfgPath +
		" (examples in /usr/share/doc/plantd/plantd.yaml.example), then `systemctl reload plantd`"
}

// newLogger returns the daemon's logger and its level, which a config
// reload may change.
func newLogger(l config.Log, w io.Writer) (*slog.Logger, *slog.LevelVar) {
	level := new(slog.LevelVar)
	level.Set(l.SlogLevel())
	opts := &slog.HandlerOptions{Level: level}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), level
	}
	return slog.New(slog.NewTextHandler(w, opts)), level
}

func runCheckConfig(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("check-config", "[--user NAME] [--running] FILE\n\nValidates FILE without starting: prints every problem as FILE:LINE: field: message and exits 78,\nor says it is valid and exits 0. Run as root, it also checks that the service user can reach\nthe config and every file it names (else each problem with its fix, exit 78).", stderr)
	running := fs.Bool("running", false, "also refuse a changed plant name or time zone against the plantd running on this config's database (the unit's ExecReload: a reload does not apply them, exit 1)")
	userName := fs.String("user", "", "the service user whose access root's check-config checks (default "+serviceUser+", the unit's User=; skipped when there is no such user)")
	file, code, ok := parseOneArg(fs, args)
	if !ok {
		return code
	}
	cfg, err := config.Load(file)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitConfig
	}
	if ok, err := checkServiceAccess(cfg, file, *userName, stderr); err != nil {
		fmt.Fprintf(stderr, "plantd check-config: %v\n", err)
		return exitUsage
	} else if !ok {
		return exitConfig
	}
	if *running {
		if ok, err := checkRunning(cfg, file, stderr); err != nil {
			fmt.Fprintf(stderr, "plantd check-config: %v\n", err)
			return exitFailure
		} else if !ok {
			return exitFailure
		}
	}
	fmt.Fprintf(stdout, "%s: ok (%s, %s)\n", file, count(len(cfg.Plants), "plant"), count(len(cfg.Devices), "device"))
	return exitOK
}

// startBroker starts the demo's embedded MQTT broker; tests replace it.
var startBroker = mqtt.StartBroker

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("demo", "[--speed N] [--start HH:MM] [--interval D] [--listen ADDR] [--db FILE] [--mqtt ADDR|off] [--broker URL] [--sunspec ADDR|off] [--ocpp ADDR|off] [--battery-soc PCT] [--sim-listen HOST[:PORT]] [--tariffs FILE] [--sky F]", stderr)
	speed := fs.Float64("speed", 1, "simulated seconds per real second; the daemon (live values, database) runs on the simulated clock")
	interval := fs.Duration("interval", 2*time.Second, "poll interval of the demo devices")
	listen := fs.String("listen", "127.0.0.1:8080", "HTTP API address (port 0 picks a free one)")
	dbPath := fs.String("db", "plantd.db", "SQLite database file")
	mqttAddr := fs.String("mqtt", "127.0.0.1:1883", `embedded MQTT broker address (the next free port when taken; port 0 picks one; "off": none)`)
	brokerURL := fs.String("broker", "", "publish to this MQTT broker (tcp://host:port) instead of an embedded one; several URLs separated by commas: the nodes of one cluster (mqtt.brokers)")
	sunspecAddr := fs.String("sunspec", "127.0.0.1:1502", `SunSpec Modbus TCP server address, writes enabled (a free port when taken; "off": none)`)
	batterySoC := fs.Float64("battery-soc", 0, "the battery's state of charge at the start, % (5..100; default 50; 100: full, it takes no charge)")
	ocppAddr := fs.String("ocpp", "127.0.0.1:8887", `OCPP central system address the simulated wallbox connects to (a free port when taken; "off": no wallbox)`)
	simListen := fs.String("sim-listen", sim.DefaultListen, "the simulated devices: HOST to bind free ports on, or HOST:PORT to use PORT, PORT+1, ... for the devices in turn, then the Shelly plug (as plantd sim --listen)")
	startAt := fs.String("start", "", `simulated start time: "HH:MM" today in the plant's time zone (Europe/Berlin), or "YYYY-MM-DDTHH:MM" (default: now); e.g. --start 10:00 shows daylight at night`)
	tariffsPath := fs.String("tariffs", "", "a YAML file with a tariffs: section (plant: demo by default), and optionally the demo plant's battery: section and more tokens: (as in plantd.yaml): the day-ahead plan runs on the simulated clock (scripts/plan-days)")
	sky := fs.Float64("sky", 1, "the simulated irradiance as a fraction of the simulator's own sky (0..1; 0.15: a dull winter's day)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !(*sky >= 0 && *sky <= 1) {
		fmt.Fprintf(stderr, "plantd demo: --sky %v: want 0..1\n", *sky)
		return exitUsage
	}
	var extra *demoExtra
	if *tariffsPath != "" {
		var err error
		if extra, err = readDemoExtra(*tariffsPath); err != nil {
			fmt.Fprintf(stderr, "plantd demo: --tariffs: %v\n", err)
			return exitUsage
		}
	}
	// The HTTP port first: when it is taken, that is the one thing to say
	// (before the banner and its token), and no database is created.
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "plantd demo: HTTP API: %v (another plantd or demo running? choose another port with --listen)\n", err)
		return exitFailure
	}
	defer ln.Close()
	*listen = ln.Addr().String()
	sunspecLn, err := demoSunSpecListener(*sunspecAddr)
	if err != nil {
		fmt.Fprintf(stderr, "plantd demo: SunSpec server: %v (choose another address with --sunspec)\n", err)
		return exitFailure
	}
	if sunspecLn != nil {
		defer sunspecLn.Close()
	}
	if *batterySoC != 0 && !(*batterySoC >= 5 && *batterySoC <= 100) {
		fmt.Fprintf(stderr, "plantd demo: --battery-soc %v: want 5..100 (%%)\n", *batterySoC)
		return exitUsage
	}
	simCfg := sim.DemoConfig()
	simCfg.Speed = *speed
	simHost, simPort, err := splitListen(*simListen)
	if err != nil {
		fmt.Fprintf(stderr, "plantd demo: --sim-listen %q: %v\n", *simListen, err)
		return exitUsage
	}
	simCfg.Listen = simHost
	if simPort > 0 {
		assignPorts(&simCfg, simPort)
	}
	for i := range simCfg.Devices {
		if simCfg.Devices[i].Kind == kind.Battery {
			simCfg.Devices[i].SoCPct = *batterySoC
		}
	}
	var ocppLn net.Listener // the central system's, bound here: the twin needs its port
	if *ocppAddr != "off" {
		if ocppLn, err = listenOrFree(*ocppAddr); err != nil {
			fmt.Fprintf(stderr, "plantd demo: OCPP central system: %v (choose another address with --ocpp)\n", err)
			return exitFailure
		}
		defer ocppLn.Close()
		*ocppAddr = ocppLn.Addr().String()
		simCfg.ChargePoints = []sim.ChargePointConfig{demoWallbox("ws://" + *ocppAddr + config.Default().OCPP.Path)}
	}
	if *startAt != "" {
		t, err := parseDemoStart(*startAt, time.Now())
		if err != nil {
			fmt.Fprintf(stderr, "plantd demo: --start: %v\n", err)
			return exitUsage
		}
		simCfg.Start = t
	}
	plantSim, err := sim.New(simCfg, slog.New(slog.DiscardHandler))
	if err == nil {
		plantSim.SetCloudFactor(*sky)
		err = plantSim.Start()
	}
	if err != nil {
		fmt.Fprintf(stderr, "plantd demo: simulator: %v\n", err)
		return exitFailure
	}
	defer plantSim.Close()

	*interval = demoInterval(*interval, *speed, stderr)
	cfg := demoConfig(plantSim, simCfg, *interval)
	cfg.HTTP.Listen, cfg.Database.Path = *listen, *dbPath
	if *ocppAddr != "off" {
		cfg.OCPP.Listen = *ocppAddr
	}
	// The wallbox twin connects to the daemon's central system and
	// retries until it answers; it stops with the demo.
	twinCtx, stopTwins := context.WithCancel(ctx)
	var twins sync.WaitGroup
	for _, cp := range plantSim.ChargePoints() {
		twins.Go(func() { _ = cp.Run(twinCtx) })
	}
	defer func() { stopTwins(); twins.Wait() }()
	token, err := demoToken()
	if err != nil {
		fmt.Fprintf(stderr, "plantd demo: %v\n", err)
		return exitFailure
	}
	cfg.Tokens = []config.Token{{Name: "demo", SHA256: config.TokenHash(token), Role: config.RoleInstaller}}
	extra.apply(cfg)
	// A client of the cloud API gets its token with client_credentials:
	// client "demo" with the demo token as its secret; it may use the
	// authorization_code flow too, redirected to demoRedirectURI (the
	// owner approves with plantd consent). "demo2" is the same for a
	// second program run alongside: the rate limit is per client, and
	// two programs on one client take each other's requests (429).
	for _, id := range []string{"demo", "demo2"} {
		cfg.OAuthClients = append(cfg.OAuthClients, oauthconfig.Client{ClientID: id, SecretSHA256: config.TokenHash(token),
			Role: config.RoleInstaller, RedirectURIs: []string{demoRedirectURI}})
	}
	broker, noBroker, err := demoUplink(cfg, *brokerURL, *mqttAddr, *interval)
	if err != nil {
		fmt.Fprintf(stderr, "plantd demo: %v\n", err)
		return exitFailure
	}
	if broker != nil {
		defer broker.Close()
	}
	// Home Assistant's discovery goes to the same broker (its own
	// connection and topics: docs/home-assistant.md).
	if urls := cfg.MQTT.BrokerURLs(); len(urls) > 0 {
		cfg.Local.MQTT.Broker = urls[0]
	}
	if sunspecLn != nil {
		// The demo's direct marketer may limit the plant: writes on, from
		// this machine only (writes need an allow-list), installer role.
		m := &cfg.ModbusServer
		m.Listen, m.Plant, m.Writes = sunspecLn.Addr().String(), "demo", true
		m.Allow = []string{"127.0.0.0/8", "::1"}
	}
	if err := cfg.Validate(); err != nil && extra != nil {
		fmt.Fprintf(stderr, "plantd demo: the config with --tariffs %s has problems:\n%v\n", *tariffsPath, err)
		return exitUsage
	} else if err != nil {
		fmt.Fprintf(stderr, "plantd demo: internal config error:\n%v\n", err)
		return exitFailure
	}
	demoBanner{sim: plantSim, cfg: cfg, interval: *interval, speed: simCfg.Speed, listen: *listen, db: *dbPath, token: token,
		broker: broker, noBroker: noBroker, sunspec: sunspecLn}.print(stdout)
	fmt.Fprintln(stdout, "The live energy balance is logged every 10 s. Ctrl-C stops it.")
	return serve(ctx, cfg, "", listeners{HTTP: ln, SunSpec: sunspecLn, OCPP: ocppLn}, plantSim.Now, stderr, 10*time.Second, nil)
}

// demoUplink points the demo's uplink at brokerURL or, unless mqttAddr is
// "off", at an embedded broker it starts on loopback (the demo's cloud,
// where mosquitto_sub shows what plantd publishes). noBroker: this build
// has no embedded broker (the packaged binary), the demo runs without an
// uplink.
func demoUplink(cfg *config.Config, brokerURL, mqttAddr string, interval time.Duration) (broker *mqtt.Broker, noBroker bool, err error) {
	switch {
	case strings.Contains(brokerURL, ","):
		cfg.MQTT.Brokers = strings.Split(brokerURL, ",")
	case brokerURL != "":
		cfg.MQTT.Broker = brokerURL
	case mqttAddr == "off":
		return nil, false, nil
	default:
		broker, err = startBroker(mqttAddr, true, nil)
		if errors.Is(err, mqtt.ErrNoBroker) {
			return nil, true, nil
		}
		if err != nil {
			return nil, false, err
		}
		cfg.MQTT.Broker = "tcp://" + broker.Addr()
	}
	cfg.MQTT.RemoteControl = true
	cfg.MQTT.LiveInterval = max(time.Second, min(interval, time.Hour))
	return broker, false, nil
}

// demoBanner is what plantd demo tells at its start: what runs where and
// how to try it.
type demoBanner struct {
	sim      *sim.Plant
	cfg      *config.Config
	interval time.Duration
	speed    float64
	listen   string
	db       string
	token    string
	broker   *mqtt.Broker
	noBroker bool
	sunspec  net.Listener
}

func (b demoBanner) print(stdout io.Writer) {
	fmt.Fprintf(stdout, "plantd demo: a simulated plant on 127.0.0.1, polled every %v over Modbus TCP\n", b.interval)
	for _, d := range b.sim.Devices() {
		fmt.Fprintf(stdout, "  %-9s %-33s %s unit %d\n", d.ID(), demoKindWords[d.Label()], d.Addr(), d.Unit())
	}
	for _, sh := range b.sim.Shellies() {
		fmt.Fprintf(stdout, "  %-9s %-33s %s\n", sh.ID(), "smart plug (Shelly Gen2 HTTP RPC)", sh.URL())
	}
	names := demoConsumerNames
	if len(b.sim.ChargePoints()) > 0 {
		names = append(slices.Clip(names), "wallbox")
		fmt.Fprintf(stdout, "  %-9s %-33s ws://%s%s/wallbox\n", "wallbox", "EV charger (OCPP 1.6J twin, a car at 40 %)", b.cfg.OCPP.Listen, b.cfg.OCPP.Path)
	}
	fmt.Fprintf(stdout, "consumers: %s (home energy manager: GET /gateway/v1/consumers)\n", strings.Join(names, ", "))
	fmt.Fprintf(stdout, "simulated clock: %s (%s), %g× real time\n", b.sim.Now().In(b.sim.Location()).Format("2006-01-02 15:04:05 MST"),
		b.sim.Location(), b.speed)
	fmt.Fprintf(stdout, "HTTP API on http://%s, database %s\n", b.listen, b.db)
	fmt.Fprintf(stdout, "demo token (installer role): %s\n", b.token)
	fmt.Fprintf(stdout, "OAuth2 client_credentials: client_id demo (a second program: demo2, its own rate limit), client_secret the demo token\n")
	fmt.Fprintf(stdout, "OAuth2 authorization_code: redirect_uri %s; approve with PLANTD_TOKEN=<demo token> plantd consent list|approve --url http://%s\n", demoRedirectURI, b.listen)
	fmt.Fprintf(stdout, "try: curl -H 'Authorization: Bearer %s' http://%s/live/v1/plants/demo/measurements/sets/EnergyBalance\n", b.token, b.listen)
	ws, we := demoWindow(b.speed)
	fmt.Fprintf(stdout, "grid control, a 40 %% limit from 10 s to 2 min of real time from now (window times relative to the simulated clock): "+
		"curl -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '%s' http://%s/gridcontrol/v1/plants/demo/schedules\n",
		b.token, demoLimitBody(ws, we), b.listen)
	if b.noBroker {
		fmt.Fprintln(stdout, "MQTT: off, this build has no embedded broker (the packages leave it out); --broker tcp://HOST:PORT publishes to one")
	}
	if b.broker != nil {
		host, port, _ := splitListen(b.broker.Addr())
		fmt.Fprintf(stdout, "MQTT broker (embedded) on %s, gateway %s; watch it: mosquitto_sub -h %s -p %d -t 'plantd/#' -v\n",
			b.broker.Addr(), b.cfg.Gateway.ID, host, port)
	}
	if l := b.cfg.Local.MQTT; l.Broker != "" {
		fmt.Fprintf(stdout, "Home Assistant: MQTT discovery on %s under %s/, states under %s/%s/ (point Home Assistant's MQTT integration at this broker)\n",
			l.Broker, l.DiscoveryPrefix, l.Prefix, b.cfg.Gateway.ID)
	}
	if b.sunspec != nil {
		host, port, _ := splitListen(b.sunspec.Addr().String())
		fmt.Fprintf(stdout, "SunSpec server (the plant as one SunSpec device, Modbus TCP unit %d, writes on from 127.0.0.0/8 and ::1) on %s; read it: mbpoll -m tcp -a %d -r 40001 -c 10 -p %d %s\n",
			b.cfg.ModbusServer.UnitID, b.sunspec.Addr(), b.cfg.ModbusServer.UnitID, port, host)
	}
}

// demoSunSpecListener binds the demo's SunSpec server: addr, or a free
// port on its host when addr is taken; nil for "off".
func demoSunSpecListener(addr string) (net.Listener, error) {
	if addr == "off" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		host, _, _ := net.SplitHostPort(addr)
		ln, err = net.Listen("tcp", net.JoinHostPort(host, "0"))
	}
	return ln, err
}

// demoWindow is the window of the banner's grid-control example, relative
// to the simulated clock ("+" and a duration, which POST schedules
// resolves against the clock plantd runs on): 10 s to 2 min of real time
// from the request, scaled by the demo's speed, so that at --speed 288
// the limit still holds for two real minutes.
func demoWindow(speed float64) (start, end string) {
	if speed <= 0 {
		speed = 1
	}
	rel := func(d time.Duration) string { return "+" + time.Duration(float64(d)*speed).Round(time.Second).String() }
	return rel(10 * time.Second), rel(2 * time.Minute)
}

// demoLimitBody is the body of the banner's grid-control example: a
// schedule body as a client posts it, encoded, never assembled as text.
func demoLimitBody(start, end string) string {
	type cmd struct {
		Command string  `json:"command"`
		Start   string  `json:"start"`
		End     string  `json:"end"`
		Value   float64 `json:"value"`
		Unit    string  `json:"unit"`
	}
	b, _ := json.Marshal(struct {
		Commands []cmd `json:"commands"`
	}{[]cmd{{Command: "opModMaxLimW", Start: start, End: end, Value: 40, Unit: "%"}}})
	return string(b)
}

// demoKindWords names the demo's devices in the banner as README does.
var demoKindWords = map[string]string{ // by the simulator's label
	"inverter":     "inverter (SunSpec 1xx models)",
	"der-inverter": "inverter (SunSpec DER 7xx models)",
	"meter":        "meter",
	"battery":      "battery",
	"sensor":       "weather sensor",
	"relay":        "relay board (coils, EK9000 watchdog)",
	"io-module":    "I/O module (inputs follow coils)",
}

// demoRedirectURI is the redirect URI of the demo's OAuth2 client.
const demoRedirectURI = "http://127.0.0.1:8765/callback"

// maxDemoGap is the most simulated time between two polls of the demo: the
// store spreads an energy over at most 15 minutes between samples, and a
// battery's charge and discharge change within minutes.
const maxDemoGap = 5 * time.Minute

// demoInterval scales the poll interval with the speed so that polls stay
// at most maxDemoGap of simulated time apart (at --speed 600 every 0.5 s),
// never below the config's minimum of 250 ms; above that speed it warns.
func demoInterval(interval time.Duration, speed float64, stderr io.Writer) time.Duration {
	if speed <= 0 {
		return interval
	}
	if limit := time.Duration(float64(maxDemoGap) / speed); interval > limit {
		// Rounded down: rounded to the nearest millisecond, 300 s / 288 =
		// 1.0417 s became 1.042 s, 300.1 s of simulated time, and warned.
		interval = max(limit.Truncate(time.Millisecond), 250*time.Millisecond)
	}
	if gap := time.Duration(float64(interval) * speed); gap > maxDemoGap {
		fmt.Fprintf(stderr, "plantd demo: at --speed %g polls are %v of simulated time apart (more than %v): energies may be spread coarsely\n",
			speed, gap.Round(time.Second), maxDemoGap)
	}
	return interval
}

// demoConfig is the config of the demo: one plant, the simulated devices.
func demoConfig(p *sim.Plant, sc sim.Config, interval time.Duration) *config.Config {
	cfg := config.Default()
	lat, lon := sc.Latitude, sc.Longitude
	pl := config.NewPlant()
	pl.ID, pl.Name, pl.Timezone = "demo", "plantd demo plant", sc.TimeZone
	pl.Location = config.Location{Latitude: &lat, Longitude: &lon}
	cfg.Plants = []config.Plant{pl}
	for _, d := range p.Devices() {
		if d.Label() == "relay" || d.Label() == "io-module" {
			continue // no SunSpec device: the consumers and inputs below
		}
		host, port, _ := splitListen(d.Addr())
		dev := config.NewDevice()
		dev.ID, dev.Plant, dev.Name = d.ID(), "demo", d.ID()
		dev.Host, dev.Port, dev.Unit = host, port, int(d.Unit())
		dev.PollInterval = interval
		cfg.Devices = append(cfg.Devices, dev)
	}
	cfg.Devices = append(cfg.Devices, demoConsumers(p, interval)...)
	cfg.Inputs = demoInputs(p)
	// Grid control runs on the simulated clock, and the simulated
	// inverters' reversion timers too: at --speed N a timeout of 60 s
	// would expire N times faster than the 1 s control cycle renews it.
	// Scale the timeouts with the speed (the register holds at most
	// 65535 s).
	if sc.Speed > 1 {
		g := &cfg.GridControl
		g.ReversionTimeout = min(time.Duration(float64(g.ReversionTimeout)*sc.Speed).Truncate(time.Second), 65535*time.Second)
		g.MeterLossGrace = min(time.Duration(float64(g.MeterLossGrace)*sc.Speed), time.Hour)
	}
	return cfg
}

// demoExtra is what plantd demo --tariffs adds to the demo's config: the
// tariffs (for the demo plant unless they name it), the demo plant's
// battery: section (gridCharge, reserveSoc, ...; a key left out keeps its
// default) and more tokens (a grid operator's, say), each as in
// plantd.yaml; cfg.Validate checks them.
type demoExtra struct {
	Tariffs *tariffconfig.Config   `yaml:"tariffs"`
	Battery consumerconfig.Battery `yaml:"battery"`
	Tokens  []config.Token         `yaml:"tokens"`
}

// readDemoExtra reads the file of --tariffs strictly (an unknown key is an
// error); it needs a tariffs: section.
func readDemoExtra(path string) (*demoExtra, error) {
	data, err := config.ReadFile(path)
	if err != nil {
		return nil, err
	}
	x := demoExtra{Battery: config.NewPlant().Battery}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&x); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if x.Tariffs == nil {
		return nil, fmt.Errorf("%s: no tariffs: section", path)
	}
	if x.Tariffs.Plant == "" {
		x.Tariffs.Plant = "demo"
	}
	return &x, nil
}

// apply puts x into the demo's cfg (nothing for a nil x).
func (x *demoExtra) apply(cfg *config.Config) {
	if x == nil {
		return
	}
	cfg.Tariffs, cfg.Plants[0].Battery = x.Tariffs, x.Battery
	cfg.Tokens = append(cfg.Tokens, x.Tokens...)
}

// demoConsumerNames are the demo's consumers, in priority order.
var demoConsumerNames = []string{"heater", "heatpump", "plug"}

// demoConsumers are the demo house's switchable consumers (sim.DemoConfig):
// the heater on the relay board's coil 0 with its own meter, the SG-Ready
// heat pump on coils 2 and 3 (estimated from its rated power, with a
// boost at 13:00), and the Shelly plug (a dishwasher that must have run
// 2 h by 18:00). The guards are short, so that the demo shows them work
// within minutes; the times are on the simulated clock.
func demoConsumers(p *sim.Plant, interval time.Duration) []config.Device {
	io := p.Device("io")
	plug := p.Shelly("plug")
	if io == nil || plug == nil {
		return nil
	}
	mk := func(id, name, addr string, c *consumerconfig.Config) config.Device {
		host, port, _ := splitListen(addr)
		d := config.NewDevice()
		d.ID, d.Plant, d.Name, d.Kind = id, "demo", name, kind.Consumer
		d.Host, d.Port, d.Unit, d.PollInterval = host, port, int(io.Unit()), interval
		d.Consumer = c
		return d
	}
	heater := consumerconfig.New()
	heater.Driver, heater.Coil, heater.RatedPower, heater.Meter, heater.Priority = drivers.NameRelay, 0, 3000, "heatmeter", 1
	heater.MinOnTime, heater.MinOffTime, heater.Watchdog = 2*time.Minute, time.Minute, 30*time.Second
	pump := consumerconfig.New()
	pump.Driver, pump.Coil, pump.RatedPower, pump.Priority = drivers.NameSGReady, 2, 1600, 2
	pump.MinOnTime, pump.MinOffTime, pump.MaxSwitchesPerHour, pump.Watchdog = 10*time.Minute, 5*time.Minute, 3, 30*time.Second
	pump.MustRun = []consumerconfig.MustRun{{At: "0 13 * * *", For: 30 * time.Minute}}
	dish := consumerconfig.New()
	dish.Driver, dish.RatedPower, dish.Priority = drivers.NameShelly, 1200, 3
	dish.MinOnTime, dish.MinOffTime, dish.Watchdog = 2*time.Minute, time.Minute, 30*time.Second
	dish.MustRun = []consumerconfig.MustRun{{By: "0 18 * * *", For: 2 * time.Hour}}
	devs := []config.Device{
		mk("heater", "Immersion heater", io.Addr(), heater),
		mk("heatpump", "Heat pump", io.Addr(), pump),
		mk("plug", "Dishwasher plug", plug.Addr(), dish),
	}
	if cp := p.ChargePoint("wallbox"); cp != nil {
		// The car charges on PV surplus (PV mode) after the others; its
		// delays are on the simulated clock, its profile's validity on
		// the wall clock.
		car := consumerconfig.New()
		car.Driver, car.ChargePointID, car.Priority, car.Mode = drivers.NameOCPP, cp.ID(), 4, plant.ModeAuto
		car.MinOnTime, car.MinOffTime = 2*time.Minute, time.Minute
		drivers.Defaults(&car.Settings)
		car.RatedPower = car.MaxCurrent * float64(car.Phases) * drivers.NominalVoltage
		d := mk("wallbox", "Wallbox", "", car)
		d.Host, d.Port = "", 0
		devs = append(devs, d)
	}
	return devs
}

// demoWallbox is the demo's wallbox twin: 16 A on three phases, a 60 kWh
// car at 40 %, meter values every 2 s (wall clock).
func demoWallbox(url string) sim.ChargePointConfig {
	return sim.ChargePointConfig{ID: "wallbox", URL: url, MeterInterval: 2 * time.Second}
}

// listenOrFree binds addr, or a free port on its host when addr is taken.
func listenOrFree(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	host, _, serr := net.SplitHostPort(addr)
	if serr != nil {
		return nil, err
	}
	return net.Listen("tcp", net.JoinHostPort(host, "0"))
}

// demoToken makes the bearer token the demo prints at start.
func demoToken() (string, error) { return newSecret(24) }

// parseDemoStart reads the --start of plantd demo: "HH:MM" today (as of
// now) in the demo plant's time zone, or a local date and time
// "YYYY-MM-DDTHH:MM" there, or RFC 3339.
func parseDemoStart(s string, now time.Time) (time.Time, error) {
	loc, err := time.LoadLocation(sim.DefaultTimeZone)
	if err != nil {
		return time.Time{}, err
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02T15:04", s, loc); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("15:04", s, loc); err == nil {
		y, m, d := now.In(loc).Date()
		return time.Date(y, m, d, t.Hour(), t.Minute(), 0, 0, loc), nil
	}
	return time.Time{}, fmt.Errorf("%q: want HH:MM, YYYY-MM-DDTHH:MM or an RFC 3339 time", s)
}

// count says "1 plant", "5 devices".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
