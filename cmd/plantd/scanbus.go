package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"plantd/devices"

	"plantd/devices/template"
	"plantd/internal/termtext"
	"plantd/modbus"
	"plantd/modbus/serialline"
	"plantd/sunspec"
)

// busScan is "plantd scan --serial PATH" or "--rtu-over-tcp HOST:PORT": a
// sweep of unit ids on one RTU bus (and, with --baud auto, of the common
// rates), naming each device that answers and printing the config entry
// that polls it; with --values each found device's values, with --json
// all of it as one JSON document (busScanResult).
type busScan struct {
	ep       modbus.EndpointConfig
	units    []int
	timeout  time.Duration
	autoBaud bool
	// bases are the SunSpec base addresses tried (--base: one).
	bases  []uint16
	values bool
	json   bool
	// out gets the report; progress the "scanning" lines (out, or
	// stderr with --json, so that stdout is the JSON document alone).
	out, progress io.Writer
}

// busFound is one device a bus scan found.
type busFound struct {
	unit     int
	baud     int    // the rate it answered at (serial only)
	template string // the template that identified it ("": SunSpec or none)
	what     string
	entry    string
	// sunspec is the discovered SunSpec device (nil: none), tpl and regs
	// the template that matched and its registers as read.
	sunspec *sunspec.Device
	tpl     *template.Template
	regs    template.Registers
	// result is the SunSpec device as "plantd scan HOST" gives it (with
	// --values its points), points a template device's values (--values).
	result *scanResult
	points []scanPoint
}

// busScanResult is the stable JSON shape of a bus scan with --json.
type busScanResult struct {
	Address string `json:"address"`
	// Transport is rtu (a serial line) or rtu-over-tcp.
	Transport string      `json:"transport"`
	Devices   []busDevice `json:"devices"`
	// Error says why the scan could not run (the port held by another
	// process), Hint what to do.
	Error string `json:"error,omitempty"`
	Hint  string `json:"hint,omitempty"`
}

// busDevice is one device of a bus scan's --json.
type busDevice struct {
	Unit int `json:"unit"`
	// Baud is the rate it answered at (serial lines only).
	Baud        int    `json:"baud,omitempty"`
	Template    string `json:"template,omitempty"`
	Description string `json:"description"`
	ConfigEntry string `json:"configEntry"`
	// SunSpec is a SunSpec device as "plantd scan HOST --json" gives it
	// (with --values its models' points).
	SunSpec *scanResult `json:"sunspec,omitempty"`
	// Points are a template device's values (--values), in the units of
	// plantd's channels.
	Points []scanPoint `json:"points,omitempty"`
}

// autoRates are the rates --baud auto tries, the most common first.
var autoRates = []int{9600, 19200, 38400, 4800, 2400, 57600, 115200, 1200}

// parseUnits reads --units "1-247", "1,3,5" or "2-4,9".
func parseUnits(s string) ([]int, error) {
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 1 || b > 247 || a > b {
			return nil, fmt.Errorf("%q is not a unit list (1..247, as 1-247 or 1,3,5)", part)
		}
		for u := a; u <= b; u++ {
			out = append(out, u)
		}
	}
	return out, nil
}

// run sweeps the bus, prints what answers and returns the devices found.
// It stops at once when the port is held by another process (plantd's
// daemon): sweeping beside it would garble both's requests on the line.
func (b *busScan) run(ctx context.Context) ([]busFound, error) {
	rates := []int{b.ep.Serial.Baud}
	if b.autoBaud {
		rates = autoRates
	}
	for _, rate := range rates {
		ep := b.ep
		ep.Serial.Baud = rate
		if b.ep.Transport == modbus.TransportRTU {
			fmt.Fprintf(b.progress, "scanning %s at %d baud %d%s%d, units %s (%v per silent unit)\n", ep.Address, rate, 8,
				ep.Serial.Parity, ep.Serial.StopBits, unitRange(b.units), b.timeout)
		} else {
			fmt.Fprintf(b.progress, "scanning %s (RTU over TCP), units %s (%v per silent unit)\n", ep.Address, unitRange(b.units), b.timeout)
		}
		found, err := b.sweep(ctx, ep)
		if err != nil || len(found) > 0 || ctx.Err() != nil {
			return found, b.report(found, err)
		}
	}
	return nil, b.report(nil, nil)
}

// sweep asks every unit of the list on one endpoint.
func (b *busScan) sweep(ctx context.Context, ep modbus.EndpointConfig) ([]busFound, error) {
	pool := modbus.NewPool(slog.New(slog.DiscardHandler))
	defer pool.Close()
	e := pool.Endpoint(ep)
	var found []busFound
	for _, u := range b.units {
		if ctx.Err() != nil {
			break
		}
		cl := e.Unit(byte(u), b.timeout)
		f, ok, err := identify(ctx, cl, u, b.bases)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		f.baud = ep.Serial.Baud
		f.entry = configEntry(ep, u, f)
		if f.sunspec != nil {
			r := newScanResult(ep.Address, byte(u), f.sunspec)
			if b.values {
				readValues(ctx, cl, f.sunspec, &r)
			}
			f.result = &r
		}
		if f.tpl != nil && b.values {
			f.points = templatePoints(f.tpl, &f.regs)
		}
		found = append(found, f)
		if !b.json {
			b.printFound(f)
		}
	}
	if len(found) == 0 && !b.json {
		fmt.Fprintln(b.out, "no device answered")
	}
	return found, nil
}

// printFound prints a found device and its config entry, with --values its
// values: a SunSpec device's as "plantd scan HOST --values" prints them,
// a template device's points in the units of plantd's channels.
func (b *busScan) printFound(f busFound) {
	fmt.Fprintf(b.out, "unit %d: %s\n  %s\n", f.unit, f.what, f.entry)
	if !b.values {
		return
	}
	if f.result != nil {
		printScan(indent{b.out}, *f.result)
	}
	for _, p := range f.points {
		val := p.Text
		if p.Value != nil {
			val = strconv.FormatFloat(*p.Value, 'g', 10, 64)
			if p.Units != "" {
				val += " " + p.Units
			}
		}
		fmt.Fprintf(b.out, "    %-28s %s\n", p.Name, termtext.Safe(val))
	}
}

// report prints, with --json, the scan's JSON document: the devices found
// (their values with --values), or err. It returns err.
func (b *busScan) report(found []busFound, err error) error {
	if !b.json {
		return err
	}
	res := busScanResult{Address: b.ep.Address, Transport: string(b.ep.Transport), Devices: []busDevice{}}
	if err != nil {
		res.Error, res.Hint = heldMessage(err), heldHint(err)
	}
	for _, f := range found {
		d := busDevice{Unit: f.unit, Template: f.template, Description: f.what, ConfigEntry: f.entry, SunSpec: f.result, Points: f.points}
		if b.ep.Transport == modbus.TransportRTU {
			d.Baud = f.baud
		}
		res.Devices = append(res.Devices, d)
	}
	enc := json.NewEncoder(b.out)
	enc.SetIndent("", "  ")
	if werr := enc.Encode(res); werr != nil && err == nil {
		return werr
	}
	return err
}

// templatePoints lists a template device's points with their values as
// read at identification (every block), in the units of plantd's
// channels (scale and unit factor applied).
func templatePoints(t *template.Template, regs *template.Registers) []scanPoint {
	var out []scanPoint
	for i := range t.Points {
		p := &t.Points[i]
		sp := scanPoint{Name: p.Name, Units: cmp.Or(p.BaseUnit, p.Unit)}
		if !p.Numeric() {
			text, ok := t.Text(p, regs)
			if !ok || text == "" {
				continue
			}
			sp.Text, sp.Units = text, ""
			out = append(out, sp)
			continue
		}
		v, ok := t.Value(p, regs)
		if !ok {
			continue
		}
		sp.Value = &v
		out = append(out, sp)
	}
	return out
}

// indent indents every line written through it by four spaces.
type indent struct{ w io.Writer }

func (in indent) Write(p []byte) (int, error) {
	var b strings.Builder
	for l := range strings.Lines(string(p)) {
		b.WriteString("    " + l)
	}
	if _, err := io.WriteString(in.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// heldMessage is the message of a port another process holds: "/dev/ttyUSB0
// is held by plantd (pid 812)" (err's own for another error).
func heldMessage(err error) string {
	var held *modbus.PortHeldError
	if errors.As(err, &held) {
		return held.Error()
	}
	return err.Error()
}

// heldHint says what to do about a port another process holds ("" for
// another error).
func heldHint(err error) string {
	var held *modbus.PortHeldError
	if !errors.As(err, &held) {
		return ""
	}
	if held.Command == "plantd" {
		return "plantd's daemon polls this bus; a sweep beside it would garble both's requests on the line: stop it " +
			"(sudo systemctl stop plantd), scan, then start it again (sudo systemctl start plantd); its devices' values are in its API meanwhile"
	}
	return "stop the program that has the port open, then scan again"
}

// identify names the device at unit: a SunSpec device by its model 1
// (at bases), else a template device by the template's identification
// registers (the first template that matches, the most specific first).
// A unit that answers Modbus as neither is named as such, so that the
// installer knows the address is taken. The error is that of a port
// another process holds: the sweep ends.
func identify(ctx context.Context, cl *modbus.Client, unit int, bases []uint16) (busFound, bool, error) {
	dev, err := devices.DiscoverAt(ctx, cl, bases)
	switch {
	case errors.Is(err, modbus.ErrPortHeld):
		return busFound{}, false, err
	case err == nil:
		return busFound{unit: unit, sunspec: dev, what: fmt.Sprintf("SunSpec %s (%s %s, serial %s)", dev.Kind, dev.Manufacturer, dev.Model, dev.Serial)}, true, nil
	case !errors.Is(err, devices.ErrNoSunSpec) && !errors.As(err, new(*modbus.ExceptionError)):
		return busFound{}, false, nil // silent, or not Modbus
	}
	for _, t := range candidates() {
		name := t.Name
		var regs template.Registers
		if t.Read(ctx, cl, &regs, true) != nil || t.Check(&regs) != nil {
			continue
		}
		pl := t.Plate(&regs)
		what := fmt.Sprintf("template %s (%s %s %s", name, t.Kind, pl.Manufacturer, pl.Model)
		if pl.Serial != "" {
			what += ", serial " + pl.Serial
		}
		return busFound{unit: unit, template: name, tpl: t, regs: regs, what: what + ")"}, true, nil
	}
	return busFound{unit: unit, what: "answers Modbus, no SunSpec map and no template matches (a device plantd has no template for)"}, true, nil
}

// candidates are the templates a scan tries, the most specific
// identification first (the most conditions), so that a three-phase
// SDM630 is not taken for an SDM120 whose one condition it also meets.
func candidates() []*template.Template {
	all, _ := template.All()
	out := slices.Clone(all)
	slices.SortStableFunc(out, func(a, b *template.Template) int {
		return cmp.Or(cmp.Compare(len(b.Identify), len(a.Identify)), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// configEntry is the devices[] entry that polls a found device.
func configEntry(ep modbus.EndpointConfig, unit int, f busFound) string {
	id := fmt.Sprintf("dev%d", unit)
	tpl := ""
	if f.template != "" {
		id, tpl = fmt.Sprintf("%s-%d", f.template, unit), ", template: "+f.template
	}
	if ep.Transport == modbus.TransportRTU {
		return fmt.Sprintf("- {id: %s, serial: {port: %s, baud: %d, parity: %s, stopBits: %d}, unit: %d%s}",
			id, ep.Address, f.baud, ep.Serial.Parity, ep.Serial.StopBits, unit, tpl)
	}
	host, port, _ := net.SplitHostPort(ep.Address)
	return fmt.Sprintf("- {id: %s, host: %s, port: %s, framing: rtu, unit: %d%s}", id, host, port, unit, tpl)
}

func unitRange(us []int) string {
	if len(us) == 1 {
		return strconv.Itoa(us[0])
	}
	return fmt.Sprintf("%d..%d (%d)", us[0], us[len(us)-1], len(us))
}

// scanBusFlags are the bus scan's flags of "plantd scan".
type scanBusFlags struct {
	serial, rtuOverTCP, baud, parity, units string
	stopBits                                int
}

// newBusScan checks the bus scan's flags; unit is --unit when given
// (0: not given).
func newBusScan(f scanBusFlags, unit uint, timeout time.Duration, out io.Writer) (*busScan, error) {
	b := &busScan{timeout: timeout, out: out, progress: out, bases: devices.Bases}
	switch {
	case f.serial != "" && f.rtuOverTCP != "":
		return nil, errors.New("give --serial or --rtu-over-tcp, not both")
	case f.serial != "":
		b.ep = modbus.EndpointConfig{Address: f.serial, Transport: modbus.TransportRTU}
		if f.parity != "N" && f.parity != "E" && f.parity != "O" {
			return nil, fmt.Errorf("--parity %q: want N, E or O", f.parity)
		}
		if f.stopBits != 1 && f.stopBits != 2 {
			return nil, fmt.Errorf("--stop-bits %d: want 1 or 2", f.stopBits)
		}
		b.ep.Serial = modbus.SerialConfig{DataBits: 8, Parity: f.parity, StopBits: f.stopBits}
		switch rate, err := strconv.Atoi(f.baud); {
		case f.baud == "auto":
			b.autoBaud = true
		case err != nil || !slices.Contains(serialline.StandardBauds, rate):
			return nil, fmt.Errorf("--baud %s: want auto or a standard rate (%v)", f.baud, serialline.StandardBauds)
		default:
			b.ep.Serial.Baud = rate
		}
	default:
		addr, err := hostPort(f.rtuOverTCP, "502")
		if err != nil {
			return nil, fmt.Errorf("--rtu-over-tcp: %w", err)
		}
		b.ep = modbus.EndpointConfig{Address: addr, Transport: modbus.TransportRTUOverTCP}
	}
	b.ep.Timeout = timeout
	switch {
	case unit != 0 && f.units != "":
		return nil, errors.New("give --unit or --units, not both")
	case unit != 0:
		if unit > 247 {
			return nil, fmt.Errorf("--unit %d: a device on a bus has an address 1..247", unit)
		}
		b.units = []int{int(unit)}
	default:
		spec := f.units
		if spec == "" {
			spec = "1-247"
		}
		us, err := parseUnits(spec)
		if err != nil {
			return nil, fmt.Errorf("--units: %w", err)
		}
		b.units = us
	}
	return b, nil
}
