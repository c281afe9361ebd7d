package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"plantd/devices"
	"plantd/modbus"
)

// scanResult is the stable JSON shape of "plantd scan --json".
type scanResult struct {
	Address       string               `json:"address"`
	Unit          byte                 `json:"unit"`
	Base          uint16               `json:"base"`
	Kind          devices.Kind         `json:"kind"`
	Platform      devices.Platform     `json:"platform"`
	Manufacturer  string               `json:"manufacturer"`
	Model         string               `json:"model"`
	Serial        string               `json:"serial"`
	Version       string               `json:"version"`
	RatedPowerW   float64              `json:"ratedPowerW"`
	RatedEnergyWh float64              `json:"ratedEnergyWh,omitempty"`
	Capabilities  []devices.Capability `json:"capabilities"`
	Models        []scanModel          `json:"models"`
}

type scanModel struct {
	ID   uint16 `json:"id"`
	Name string `json:"name"`
	Addr uint16 `json:"addr"`
	Len  uint16 `json:"len"`
}

func runScan(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("scan", "HOST[:PORT] [--unit N] [--json] [--timeout D]", stderr)
	unit := fs.Uint("unit", 1, "Modbus unit id (1..247; gateways often use 1, 2, 126 or 240)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	timeout := fs.Duration("timeout", 3*time.Second, "timeout of each Modbus request")
	delay := fs.Duration("connect-delay", 0, "wait this long after connecting before the first request")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	if *unit > 255 {
		fmt.Fprintf(stderr, "plantd scan: --unit %d is not a Modbus unit id (0..255)\n", *unit)
		return exitUsage
	}
	addr, err := hostPort(pos[0], "502")
	if err != nil {
		fmt.Fprintf(stderr, "plantd scan: %v\n", err)
		return exitUsage
	}

	pool := modbus.NewPool(slog.New(slog.DiscardHandler))
	defer pool.Close()
	client := pool.Endpoint(modbus.EndpointConfig{Address: addr, Timeout: *timeout, ConnectDelay: *delay}).Unit(byte(*unit), *timeout)
	dev, err := devices.Discover(ctx, client)
	if err != nil {
		if errors.Is(err, devices.ErrNoSunSpec) {
			fmt.Fprintf(stderr, "plantd scan: %s unit %d answers Modbus but is not a SunSpec device: %v\n", addr, *unit, err)
		} else {
			fmt.Fprintf(stderr, "plantd scan: %s unit %d: %v\n", addr, *unit, err)
		}
		return exitFailure
	}
	res := newScanResult(addr, byte(*unit), dev)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "plantd scan: %v\n", err)
			return exitFailure
		}
		return exitOK
	}
	printScan(stdout, res)
	return exitOK
}

func newScanResult(addr string, unit byte, d *devices.Device) scanResult {
	res := scanResult{
		Address: addr, Unit: unit, Base: d.Base, Kind: d.Kind, Platform: d.Platform,
		Manufacturer: d.Manufacturer, Model: d.Model, Serial: d.Serial, Version: d.Version,
		RatedPowerW: d.RatedPowerW, RatedEnergyWh: d.RatedEnergyWh, Capabilities: d.Capabilities,
		Models: []scanModel{},
	}
	for _, m := range d.Models {
		name := "unknown"
		if def := devices.ModelByID(m.ID); def != nil {
			name = def.Name
		}
		res.Models = append(res.Models, scanModel{ID: m.ID, Name: name, Addr: m.Addr, Len: m.Len})
	}
	return res
}

func printScan(w io.Writer, r scanResult) {
	fmt.Fprintf(w, "%s unit %d: SunSpec device, map at base %d\n", r.Address, r.Unit, r.Base)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "  %-13s %s\n", k, v)
		}
	}
	row("kind", fmt.Sprintf("%s (%s platform)", r.Kind, r.Platform))
	row("manufacturer", r.Manufacturer)
	row("model", r.Model)
	row("serial", r.Serial)
	row("version", r.Version)
	if r.RatedPowerW > 0 {
		row("rated power", strconv.FormatFloat(r.RatedPowerW, 'f', -1, 64)+" W")
	}
	if r.RatedEnergyWh > 0 {
		row("rated energy", strconv.FormatFloat(r.RatedEnergyWh, 'f', -1, 64)+" Wh")
	}
	caps := make([]string, len(r.Capabilities))
	for i, c := range r.Capabilities {
		caps[i] = string(c)
	}
	if len(caps) == 0 {
		caps = []string{"none"}
	}
	row("capabilities", strings.Join(caps, ", "))
	fmt.Fprintf(w, "  models:\n")
	for _, m := range r.Models {
		fmt.Fprintf(w, "    %4d  %-24s at %5d, %3d registers\n", m.ID, m.Name, m.Addr, m.Len)
	}
}

// hostPort adds the default port to a host without one.
func hostPort(s, defaultPort string) (string, error) {
	if _, port, err := net.SplitHostPort(s); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%q: port %q is not a TCP port", s, port)
		}
		return s, nil
	}
	if s == "" || strings.Contains(s, " ") {
		return "", fmt.Errorf("%q is not a host or host:port", s)
	}
	return net.JoinHostPort(strings.Trim(s, "[]"), defaultPort), nil
}
