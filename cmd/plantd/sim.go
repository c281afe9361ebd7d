package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"

	"plantd/devices/sim"
)

func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("sim", "[--listen ADDR] [--speed N]", stderr)
	listen := fs.String("listen", sim.DefaultListen, "HOST to bind free ports on, or HOST:PORT to use PORT, PORT+1, ... for the devices in turn")
	speed := fs.Float64("speed", 1, "simulated seconds per real second (e.g. 60 runs a day in 24 minutes)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	cfg := sim.DefaultConfig()
	cfg.Speed = *speed
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
	logger := slog.New(slog.NewTextHandler(stderr, nil))
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
	fmt.Fprintf(stdout, "try: plantd scan %s\n", plant.Devices()[0].Addr())
	<-ctx.Done()
	return exitOK
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
