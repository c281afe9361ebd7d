package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"

	"plantd/devices/sim"
)

func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("sim", "[--listen ADDR] [--speed N] [--trace FILE] [--ignore-revert IDS] [--needs-enable-toggle IDS]", stderr)
	listen := fs.String("listen", sim.DefaultListen, "HOST to bind free ports on, or HOST:PORT to use PORT, PORT+1, ... for the devices in turn")
	speed := fs.Float64("speed", 1, "simulated seconds per real second (e.g. 60 runs a day in 24 minutes)")
	trace := fs.String("trace", "", "append every Modbus write the devices receive to `FILE`, one JSON object per line")
	var ignoreRevert, needsToggle idList
	fs.Var(&ignoreRevert, "ignore-revert", "inverters (`IDS`, comma-separated) that accept reversion times but never revert")
	fs.Var(&needsToggle, "needs-enable-toggle", "inverters (`IDS`, comma-separated) that take a new power limit only when its enable goes 0 then 1")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	cfg := sim.DefaultConfig()
	cfg.Speed = *speed
	cfg.TraceFile = *trace
	for _, m := range []struct {
		flag string
		ids  idList
		set  func(*sim.DeviceConfig)
	}{
		{"--ignore-revert", ignoreRevert, func(d *sim.DeviceConfig) { d.IgnoreRevert = true }},
		{"--needs-enable-toggle", needsToggle, func(d *sim.DeviceConfig) { d.NeedsEnableToggle = true }},
	} {
		for _, id := range m.ids {
			i := slices.IndexFunc(cfg.Devices, func(d sim.DeviceConfig) bool { return d.ID == id })
			if i < 0 || (cfg.Devices[i].Kind != sim.KindInverter && cfg.Devices[i].Kind != sim.KindDERInverter) {
				fmt.Fprintf(stderr, "plantd sim: %s %q: not a simulated inverter (inv1, inv2)\n", m.flag, id)
				return exitUsage
			}
			m.set(&cfg.Devices[i])
		}
	}
	host, port, err := splitListen(*listen)
	if err != nil {
		fmt.Fprintf(stderr, "plantd sim: --listen %q: %v\n", *listen, err)
		return exitUsage
	}
	cfg.Listen = host
	if port > 0 {
		for i := range cfg.Devices {
			cfg.Devices[i].Port = port + i
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil)).With("component", "sim")
	plant, err := sim.New(cfg, logger)
	if err != nil {
		fmt.Fprintf(stderr, "plantd sim: %v\n", err)
		return exitUsage
	}
	if err := plant.Start(); err != nil {
		fmt.Fprintf(stderr, "plantd sim: %v\n", err)
		return exitFailure
	}
	defer plant.Close()
	fmt.Fprintln(stdout, "simulated plant (SunSpec Modbus TCP, map at base 40000); Ctrl-C stops it")
	fmt.Fprintf(stdout, "%-6s %-13s %-22s %s\n", "device", "kind", "address", "unit")
	for _, d := range plant.Devices() {
		fmt.Fprintf(stdout, "%-6s %-13s %-22s %d\n", d.ID(), d.Kind(), d.Addr(), d.Unit())
	}
	if *trace != "" {
		fmt.Fprintf(stdout, "writes traced to %s\n", *trace)
	}
	fmt.Fprintf(stdout, "try: plantd scan %s\n", plant.Devices()[0].Addr())
	<-ctx.Done()
	return exitOK
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
