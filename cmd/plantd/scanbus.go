package main

import (
	"cmp"
	"context"
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
	"plantd/modbus"
)

// busScan is "plantd scan --serial PATH" or "--rtu-over-tcp HOST:PORT": a
// sweep of unit ids on one RTU bus (and, with --baud auto, of the common
// rates), naming each device that answers and printing the config entry
// that polls it.
type busScan struct {
	ep       modbus.EndpointConfig
	units    []int
	timeout  time.Duration
	autoBaud bool
	out      io.Writer
}

// busFound is one device a bus scan found.
type busFound struct {
	unit     int
	baud     int    // the rate it answered at (serial only)
	template string // the template that identified it ("": SunSpec or none)
	what     string
	entry    string
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

// run sweeps the bus and prints what answers; it returns the devices
// found.
func (b *busScan) run(ctx context.Context) []busFound {
	rates := []int{b.ep.Serial.Baud}
	if b.autoBaud {
		rates = autoRates
	}
	for _, rate := range rates {
		ep := b.ep
		ep.Serial.Baud = rate
		if b.ep.Transport == modbus.TransportRTU {
			fmt.Fprintf(b.out, "scanning %s at %d baud %d%s%d, units %s (%v per silent unit)\n", ep.Address, rate, 8,
				ep.Serial.Parity, ep.Serial.StopBits, unitRange(b.units), b.timeout)
		} else {
			fmt.Fprintf(b.out, "scanning %s (RTU over TCP), units %s (%v per silent unit)\n", ep.Address, unitRange(b.units), b.timeout)
		}
		found := b.sweep(ctx, ep)
		if len(found) > 0 || ctx.Err() != nil {
			return found
		}
	}
	return nil
}

// sweep asks every unit of the list on one endpoint.
func (b *busScan) sweep(ctx context.Context, ep modbus.EndpointConfig) []busFound {
	pool := modbus.NewPool(slog.New(slog.DiscardHandler))
	defer pool.Close()
	e := pool.Endpoint(ep)
	var found []busFound
	for _, u := range b.units {
		if ctx.Err() != nil {
			break
		}
		cl := e.Unit(byte(u), b.timeout)
		f, ok := identify(ctx, cl, u)
		if !ok {
			continue
		}
		f.baud = ep.Serial.Baud
		f.entry = configEntry(ep, u, f)
		fmt.Fprintf(b.out, "unit %d: %s\n  %s\n", u, f.what, f.entry)
		found = append(found, f)
	}
	if len(found) == 0 {
		fmt.Fprintln(b.out, "no device answered")
	}
	return found
}

// identify names the device at unit: a SunSpec device by its model 1,
// else a template device by the template's identification registers
// (the first template that matches, the most specific first). A unit that answers
// Modbus as neither is named as such, so that the installer knows the
// address is taken.
func identify(ctx context.Context, cl *modbus.Client, unit int) (busFound, bool) {
	dev, err := devices.DiscoverAt(ctx, cl, devices.Bases)
	switch {
	case err == nil:
		return busFound{unit: unit, what: fmt.Sprintf("SunSpec %s (%s %s, serial %s)", dev.Kind, dev.Manufacturer, dev.Model, dev.Serial)}, true
	case !errors.Is(err, devices.ErrNoSunSpec) && !errors.As(err, new(*modbus.ExceptionError)):
		return busFound{}, false // silent, or not Modbus
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
		return busFound{unit: unit, template: name, what: what + ")"}, true
	}
	return busFound{unit: unit, what: "answers Modbus, no SunSpec map and no template matches (a device plantd has no template for)"}, true
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
	b := &busScan{timeout: timeout, out: out}
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
		case err != nil || !slices.Contains(modbus.StandardBauds, rate):
			return nil, fmt.Errorf("--baud %s: want auto or a standard rate (%v)", f.baud, modbus.StandardBauds)
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
