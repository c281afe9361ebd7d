package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"plantd/config"
	"plantd/devices"
	"plantd/internal/termtext"
	"plantd/modbus"
	"plantd/plant/kind"
	"plantd/sunspec"
)

// scanResult is the stable JSON shape of "plantd scan --json".
type scanResult struct {
	Address       string               `json:"address"`
	Unit          byte                 `json:"unit"`
	Base          uint16               `json:"base"`
	Kind          kind.Kind            `json:"kind"`
	Platform      sunspec.Platform     `json:"platform"`
	Manufacturer  string               `json:"manufacturer"`
	Model         string               `json:"model"`
	Serial        string               `json:"serial"`
	Version       string               `json:"version"`
	RatedPowerW   float64              `json:"ratedPowerW"`
	RatedEnergyWh float64              `json:"ratedEnergyWh,omitempty"`
	Capabilities  []sunspec.Capability `json:"capabilities"`
	// KindReason says why a device is of kind unknown.
	KindReason string      `json:"kindReason,omitempty"`
	Models     []scanModel `json:"models"`
}

type scanModel struct {
	ID   uint16 `json:"id"`
	Name string `json:"name"`
	Addr uint16 `json:"addr"`
	Len  uint16 `json:"len"`
	// Points are the implemented points with their values (--values).
	Points []scanPoint `json:"points,omitempty"`
	// Error says why the model could not be read (--values).
	Error string `json:"error,omitempty"`
}

// scanPoint is one implemented point as --values prints it: the value in
// the point's units (scale factor applied), the symbol of an enum or the
// set bits of a bitfield, the text of a string.
type scanPoint struct {
	Name   string   `json:"name"`
	Value  *float64 `json:"value,omitempty"`
	Units  string   `json:"units,omitempty"`
	Text   string   `json:"text,omitempty"`
	Symbol []string `json:"symbols,omitempty"`
}

// scanError is what --json prints when the scan fails.
type scanError struct {
	Address string `json:"address"`
	Unit    uint   `json:"unit"`
	Error   string `json:"error"`
	// NoSunSpec is set when the device answers Modbus but has no SunSpec
	// map at the bases tried.
	NoSunSpec bool `json:"noSunSpec"`
	// Hint says what to try, when plantd knows ("" otherwise).
	Hint string `json:"hint"`
}

func runScan(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("scan", "HOST[:PORT] [--unit N] [--base N] [--values] [--json] [--timeout D] [--connect-delay D]\n"+
		"       plantd scan --serial PATH [--baud N|auto] [--parity N|E|O] [--stop-bits 1|2] [--unit U | --units 1-247] [--base N] [--values] [--json] [--timeout D]\n"+
		"       plantd scan --rtu-over-tcp HOST[:PORT] [--unit U | --units 1-247] [--base N] [--values] [--json] [--timeout D] [--connect-delay D]", stderr)
	var bus scanBusFlags
	fs.StringVar(&bus.serial, "serial", "", "sweep the RS485 bus on this serial device (Modbus RTU) instead of scanning one TCP address")
	fs.StringVar(&bus.rtuOverTCP, "rtu-over-tcp", "", "sweep the RS485 bus behind this serial/Ethernet converter (RTU frames over TCP)")
	fs.StringVar(&bus.baud, "baud", "9600", "the serial line's rate, or auto to try the common rates in turn")
	fs.StringVar(&bus.parity, "parity", "N", "the serial line's parity: N, E or O")
	fs.IntVar(&bus.stopBits, "stop-bits", 1, "the serial line's stop bits: 1 or 2")
	fs.StringVar(&bus.units, "units", "", "the unit ids a bus sweep asks, as 1-247 or 1,3,5 (default 1-247)")
	unit := fs.Uint("unit", 1, "Modbus unit id, "+config.UnitRule+" (as the config's devices[].unit; gateways often use 1, 2, 126 or 240)")
	base := fs.Int("base", -1, "SunSpec base register (default: try 40000, 0, 50000 in turn)")
	values := fs.Bool("values", false, "read every model and print each implemented point with its value and units")
	asJSON := fs.Bool("json", false, "print the result as JSON (a failure too: {\"address\", \"unit\", \"error\", \"noSunSpec\", \"hint\"})")
	timeout := fs.Duration("timeout", 3*time.Second, "timeout of each Modbus request")
	delay := fs.Duration("connect-delay", 0, "wait this long after connecting before the first request")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	bases := devices.Bases
	if *base >= 0 {
		if *base > 65535-2 {
			fmt.Fprintf(stderr, "plantd scan: --base %d is not a register address (0..65533)\n", *base)
			return exitUsage
		}
		bases = []uint16{uint16(*base)}
	}
	if bus.serial != "" || bus.rtuOverTCP != "" {
		if len(pos) != 0 {
			fs.Usage()
			return exitUsage
		}
		unitGiven := uint(0)
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "unit" {
				unitGiven = *unit
			}
		})
		if !timeoutGiven(fs) {
			*timeout = 300 * time.Millisecond // a silent unit costs this
		}
		b, err := newBusScan(bus, unitGiven, *timeout, stdout)
		if err != nil {
			fmt.Fprintf(stderr, "plantd scan: %v\n", err)
			return exitUsage
		}
		b.bases, b.values, b.json, b.ep.ConnectDelay = bases, *values, *asJSON, *delay
		if *asJSON {
			b.progress = stderr
		}
		found, err := b.run(ctx)
		if err != nil {
			if !*asJSON {
				fmt.Fprintf(stderr, "plantd scan: %s\n", heldMessage(err))
				if hint := heldHint(err); hint != "" {
					fmt.Fprintf(stderr, "hint: %s\n", hint)
				}
			}
			return exitFailure
		}
		if len(found) == 0 {
			return exitFailure
		}
		return exitOK
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	target := pos[0]
	if *unit > 255 || !config.ValidUnit(int(*unit)) {
		fmt.Fprintf(stderr, "plantd scan: --unit %d is not a Modbus unit id (%s)\n", *unit, config.UnitRule)
		return exitUsage
	}
	addr, err := hostPort(target, "502")
	if err != nil {
		fmt.Fprintf(stderr, "plantd scan: %v\n", err)
		return exitUsage
	}

	pool := modbus.NewPool(slog.New(slog.DiscardHandler))
	defer pool.Close()
	client := pool.Endpoint(modbus.EndpointConfig{Address: addr, Timeout: *timeout, ConnectDelay: *delay}).Unit(byte(*unit), *timeout)
	dev, err := devices.DiscoverAt(ctx, client, bases)
	if err != nil {
		hint := scanHint(err, *unit, *timeout)
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			_ = enc.Encode(scanError{Address: addr, Unit: *unit, Error: err.Error(), NoSunSpec: errors.Is(err, devices.ErrNoSunSpec), Hint: hint})
			return exitFailure
		}
		if errors.Is(err, devices.ErrNoSunSpec) {
			fmt.Fprintf(stderr, "plantd scan: %s unit %d answers Modbus but is not a SunSpec device: %v\n", addr, *unit, err)
		} else {
			fmt.Fprintf(stderr, "plantd scan: %s unit %d: %v\n", addr, *unit, err)
		}
		if hint != "" {
			fmt.Fprintf(stderr, "hint: %s\n", hint)
		}
		return exitFailure
	}
	res := newScanResult(addr, byte(*unit), dev)
	if *values {
		readValues(ctx, client, dev, &res)
	}
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

// timeoutGiven reports whether --timeout was on the command line.
func timeoutGiven(fs *flag.FlagSet) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "timeout" })
	return given
}

// scanHint says what to try after a failed scan, for the failures whose
// cause plantd can tell ("" for the others).
func scanHint(err error, unit uint, timeout time.Duration) string {
	var exc *modbus.ExceptionError
	var merr *modbus.Error
	connect := errors.As(err, &merr) && merr.Op == modbus.OpConnect
	switch {
	case errors.As(err, &exc) && (exc.Code == modbus.ExceptionGatewayTargetDeviceFailedToRespond || exc.Code == modbus.ExceptionGatewayPathUnavailable):
		return fmt.Sprintf("a Modbus gateway answered, but no device behind it as unit %d: try the unit id set on the device "+
			"(--unit; often 1, 2, 3, 126 or 240, some devices answer only to 255), and check the device's wiring to the gateway", unit)
	case errors.Is(err, devices.ErrNoSunSpec):
		return "the device speaks Modbus but shows no SunSpec map: enable SunSpec (often \"SunSpec Modbus\" or \"Modbus TCP, SunSpec\") " +
			"in its settings, or try another unit id with --unit; if its manual names the map's address, try --base N"
	case connect && errors.Is(err, syscall.ECONNREFUSED):
		return "nothing accepts connections on that port: check the port (Modbus TCP is 502 by default) and that Modbus TCP is enabled on the device"
	case connect && errors.Is(err, modbus.ErrTimeout):
		return fmt.Sprintf("no answer to the connect within %v: check the host (is it on this network, and switched on?)", timeout)
	case errors.Is(err, modbus.ErrTimeout):
		return fmt.Sprintf("the port accepted the connection but sent no Modbus answer within %v: check that it is the device's Modbus TCP port "+
			"(502 by default; a web or other port never answers Modbus) and that Modbus TCP is enabled on the device; "+
			"a slow device may need --timeout 5s or --connect-delay 1s", timeout)
	case errors.Is(err, modbus.ErrMalformed):
		return "the port answered, but not in Modbus TCP: check that it is the device's Modbus TCP port (502 by default)"
	}
	return ""
}

func newScanResult(addr string, unit byte, d *sunspec.Device) scanResult {
	res := scanResult{
		Address: addr, Unit: unit, Base: d.Base, Kind: d.Kind, Platform: d.Platform,
		Manufacturer: d.Manufacturer, Model: d.Model, Serial: d.Serial, Version: d.Version,
		RatedPowerW: d.RatedPowerW, RatedEnergyWh: d.RatedEnergyWh, Capabilities: d.Capabilities,
		Models: []scanModel{},
	}
	for _, m := range d.Models {
		name := "unknown"
		if def := sunspec.ModelByID(m.ID); def != nil {
			name = def.Name
		}
		res.Models = append(res.Models, scanModel{ID: m.ID, Name: name, Addr: m.Addr, Len: m.Len})
	}
	if d.Kind == kind.Unknown {
		res.KindReason = "no model that makes an inverter (101-103, 111-113, 701), meter (201-204, 211-214), battery (124, 713, 802) or weather sensor (302, 303, 307, 308): the device offers only what its capabilities say"
	}
	return res
}

// readValues reads every model of the device and fills in its implemented
// points.
func readValues(ctx context.Context, r sunspec.Reader, d *sunspec.Device, res *scanResult) {
	for i, m := range d.Models {
		if sunspec.ModelByID(m.ID) == nil {
			res.Models[i].Error = "model definition unknown to plantd"
			continue
		}
		inst, err := sunspec.ReadModel(ctx, r, m)
		if err != nil {
			res.Models[i].Error = err.Error()
			continue
		}
		res.Models[i].Points = scanPoints(inst, &inst.Root, "")
	}
}

// scanPoints lists the implemented points of gi and its sub-groups, named
// like "curve[2].V1" inside repeating groups.
func scanPoints(inst *sunspec.Instance, gi *sunspec.GroupInstance, prefix string) []scanPoint {
	var out []scanPoint
	for i := range gi.Group.Points {
		p := &gi.Group.Points[i]
		if p.Type == sunspec.TypePad || p.Type == sunspec.TypeSunssf || (prefix == "" && (p.Name == "ID" || p.Name == "L")) {
			continue
		}
		sp := scanPoint{Name: prefix + p.Name, Units: p.Units}
		if p.Type == sunspec.TypeString {
			if sp.Text = inst.StringIn(gi, p.Name); sp.Text == "" {
				continue
			}
			out = append(out, sp)
			continue
		}
		v := inst.ValueAt(gi, i)
		if !v.OK {
			continue
		}
		f := v.Float
		sp.Value = &f
		for _, sym := range p.Symbols {
			switch p.Type {
			case sunspec.TypeEnum16, sunspec.TypeEnum32:
				if int64(v.Raw) == sym.Value {
					sp.Symbol = append(sp.Symbol, sym.Name)
				}
			case sunspec.TypeBitfield16, sunspec.TypeBitfield32:
				if v.Raw&(1<<uint(sym.Value)) != 0 {
					sp.Symbol = append(sp.Symbol, sym.Name)
				}
			}
		}
		out = append(out, sp)
	}
	for k, occ := range gi.Sub {
		for j := range occ {
			name := gi.Group.Groups[k].Name
			if len(occ) > 1 || gi.Group.Groups[k].Repeat != sunspec.RepeatOnce {
				name = fmt.Sprintf("%s[%d]", name, j+1)
			}
			out = append(out, scanPoints(inst, &occ[j], prefix+name+".")...)
		}
	}
	return out
}

func printScan(w io.Writer, r scanResult) {
	fmt.Fprintf(w, "%s unit %d: SunSpec device, map at base %d\n", r.Address, r.Unit, r.Base)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "  %-13s %s\n", k, termtext.Safe(v))
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
	row("why unknown", r.KindReason)
	fmt.Fprintf(w, "  models:\n")
	for _, m := range r.Models {
		fmt.Fprintf(w, "    %4d  %-24s at %5d, %3d registers\n", m.ID, m.Name, m.Addr, m.Len)
		if m.Error != "" {
			fmt.Fprintf(w, "          (values not read: %s)\n", m.Error)
		}
		for _, p := range m.Points {
			val := p.Text
			if p.Value != nil {
				val = strconv.FormatFloat(*p.Value, 'g', 10, 64)
				if p.Units != "" {
					val += " " + p.Units
				}
				if len(p.Symbol) > 0 {
					val += " (" + strings.Join(p.Symbol, ", ") + ")"
				}
			}
			fmt.Fprintf(w, "          %-28s %s\n", p.Name, termtext.Safe(val))
		}
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
