package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"
	"time"

	"plantd/plant/kind"
)

// Plant is a simulated PV plant: its devices, their physics and the Modbus
// TCP endpoints serving them. Create it with New, serve with Start, stop
// with Close.
type Plant struct {
	cfg   Config
	log   *slog.Logger
	loc   *time.Location
	wall0 time.Time // wall clock at New
	start time.Time // sim time at New

	mu         sync.Mutex // guards the simulation state below and every Device's image
	t          time.Time  // sim time the state is integrated to
	gen        uint64     // bumped whenever the state changes; images render on change
	env        weather    // at t
	bal        Balance    // at t
	devs       []*Device
	inverters  []*Device
	batteries  []*Device
	meters     []*Device
	sensors    []*Device
	relays     []*Device
	templates  []*Device // template devices (DeviceConfig.Template)
	loads      []*load   // switchable consumers (load.go, appliance.go, shelly.go)
	appliances []*appliance
	shellies   []*Shelly // simulated Shelly plugs (shelly.go)
	// chargePoints are the OCPP charge point twins (chargepoint.go).
	chargePoints []*ChargePoint
	eps          []*endpoint
	buses        []*serialBus // serial lines (serial.go)
	// Scenario hooks (SetLoadOffset, SetCloudFactor).
	loadOffsetW float64
	cloud       float64
	traceFile   *os.File  // Config.TraceFile while started
	traceErr    bool      // a trace file write failed (logged once)
	reads       ReadStats // Config.CountReads

	life    sync.Mutex // guards started and closed
	started bool
	closed  bool
	wg      sync.WaitGroup // every goroutine the plant starts
}

// Balance is the plant's power balance at one instant. The identity
// GridW = LoadW - PVW - BatteryW holds exactly.
type Balance struct {
	Time     time.Time // simulated time
	LoadW    float64   // consumption
	PVW      float64   // AC output of all inverters
	BatteryW float64   // all batteries, positive = discharging
	GridW    float64   // at the meter, positive = import from the grid
}

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("sim: plant closed")

// Integration steps.
const (
	maxStep      = time.Minute
	longGap      = 7 * 24 * time.Hour
	longGapSteps = 10080
)

// New builds a plant from cfg (see Config for the defaults) without
// binding any port. logger may be nil.
func New(cfg Config, logger *slog.Logger) (*Plant, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	loc, err := time.LoadLocation(c.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("%w: time zone %q: %v", ErrConfig, c.TimeZone, err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Plant{cfg: c, log: logger, loc: loc}
	p.wall0 = c.Now()
	p.start = c.Start
	if p.start.IsZero() {
		p.start = p.wall0
	}
	p.t = p.start
	p.cloud = 1

	eps := map[string]*endpoint{}
	var meterMaxW float64 = 4000 // the load's peak
	for _, dc := range c.Devices {
		if dc.Template != "" {
			continue // template devices mirror the balance, they are not in it
		}
		switch dc.Kind {
		case kind.Inverter, kind.Battery:
			meterMaxW += dc.RatedW
		}
	}
	for _, lc := range c.Loads {
		meterMaxW += lc.maxW()
	}
	for _, cc := range c.ChargePoints {
		meterMaxW += cc.maxW()
	}
	onBus := p.newSerialBuses()
	for _, dc := range c.Devices {
		name := dc.endpointName()
		ep := eps[name]
		if b := onBus[dc.ID]; b != nil {
			ep = b.ep
		} else if ep == nil {
			ep = newEndpoint(p, name)
			if dc.RTUOverTCP {
				ep.rtu = newRTUFront(ep, dc.Baud)
			}
			eps[name] = ep
			p.eps = append(p.eps, ep)
		}
		if dc.Port != 0 {
			ep.port = dc.Port
		}
		d := &Device{plant: p, cfg: dc, ep: ep, log: p.log.With("device", dc.ID), frozenWh: -1}
		switch {
		case dc.Template != "":
			d.tpl, err = newTemplateDevice(d)
			p.templates = append(p.templates, d)
		case dc.Kind == "": // Relay, checked by withDefaults
			d.relay = newRelayBoard()
			d.relay.follow = dc.InputsFollowCoils
			p.relays = append(p.relays, d)
		case dc.Kind == kind.Inverter:
			d.inv, err = newInverter(d)
			p.inverters = append(p.inverters, d)
		case dc.Kind == kind.Battery:
			d.bat, err = newBattery(d)
			p.batteries = append(p.batteries, d)
		case dc.Kind == kind.Meter:
			d.met, err = newMeter(d, meterMaxW)
			p.meters = append(p.meters, d)
		case dc.Kind == kind.Sensor:
			d.wx, err = newSensor(d)
			p.sensors = append(p.sensors, d)
		}
		if err != nil {
			return nil, fmt.Errorf("sim: device %s: %w", dc.ID, err)
		}
		ep.units[dc.Unit] = d
		ep.devs = append(ep.devs, d)
		p.devs = append(p.devs, d)
	}
	p.addAppliancesLocked()
	p.addShellies()
	p.addChargePointsLocked()
	p.flowsLocked(p.t)
	return p, nil
}

// Devices returns the plant's devices in config order.
func (p *Plant) Devices() []*Device { return append([]*Device(nil), p.devs...) }

// Device returns the device with the id, or nil.
func (p *Plant) Device(id string) *Device {
	for _, d := range p.devs {
		if d.cfg.ID == id {
			return d
		}
	}
	return nil
}

// Location returns the plant's time zone.
func (p *Plant) Location() *time.Location { return p.loc }

// Now returns the current simulated time.
func (p *Plant) Now() time.Time { return p.simNow() }

// Balance returns the plant's power balance at the current simulated time.
func (p *Plant) Balance() Balance {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advanceLocked(p.simNow())
	return p.bal
}

// Start binds every endpoint (on Config.Listen, port 0 unless a device
// configures one) and serves them until Close.
func (p *Plant) Start() error {
	p.life.Lock()
	defer p.life.Unlock()
	if p.closed {
		return ErrClosed
	}
	if p.started {
		return errors.New("sim: plant already started")
	}
	if p.cfg.TraceFile != "" {
		f, err := os.OpenFile(p.cfg.TraceFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("sim: trace file: %w", err)
		}
		p.mu.Lock()
		p.traceFile = f
		p.mu.Unlock()
	}
	for i, ep := range p.eps {
		if err := ep.start(p.cfg.Listen); err != nil {
			for _, e := range p.eps[:i+1] {
				e.close()
			}
			p.wg.Wait()
			p.closeTrace()
			return fmt.Errorf("sim: start endpoint of %s: %w", ep.devs[0].cfg.ID, err)
		}
	}
	if err := p.startShellies(); err != nil {
		for _, e := range p.eps {
			e.close()
		}
		p.wg.Wait()
		p.closeTrace()
		return err
	}
	if err := p.startSerial(); err != nil {
		for _, e := range p.eps {
			e.close()
		}
		p.closeShellies()
		p.wg.Wait()
		p.closeTrace()
		return err
	}
	p.started = true
	for _, d := range p.devs {
		d.log.Info("simulated device serving", "kind", d.cfg.model(), "addr", d.Addr(), "unit", d.cfg.Unit)
	}
	return nil
}

// Close stops every endpoint, closes every connection and waits for the
// plant's goroutines to end. It is safe to call more than once.
func (p *Plant) Close() error {
	p.life.Lock()
	if p.closed {
		p.life.Unlock()
		return nil
	}
	p.closed = true
	p.life.Unlock()
	for _, ep := range p.eps {
		ep.close()
	}
	p.closeShellies()
	p.closeSerial()
	p.wg.Wait()
	p.closeTrace()
	return nil
}

// closeTrace closes the trace file, if open.
func (p *Plant) closeTrace() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.traceFile != nil {
		_ = p.traceFile.Close()
		p.traceFile = nil
	}
}

// SetLoadOffset adds w watts (negative: removes them, down to no load) to
// the plant's consumption, as a load step; the meter shows it from the
// next read on.
func (p *Plant) SetLoadOffset(w float64) {
	if math.IsNaN(w) || math.IsInf(w, 0) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advanceLocked(p.simNow())
	p.loadOffsetW = w
	p.flowsLocked(p.t)
}

// SetCloudFactor scales the irradiance by f (clamped to 0..1; 1 is the
// model's own sky), as a passing cloud; inverters, meter and sensor show
// it from the next read on.
func (p *Plant) SetCloudFactor(f float64) {
	if math.IsNaN(f) {
		return
	}
	f = math.Max(0, math.Min(1, f))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advanceLocked(p.simNow())
	p.cloud = f
	p.flowsLocked(p.t)
}

// Run starts the plant, serves until ctx ends, then closes it. It returns
// nil on cancellation.
func (p *Plant) Run(ctx context.Context) error {
	if err := p.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	return p.Close()
}

// simNow maps the wall clock to simulated time.
func (p *Plant) simNow() time.Time { return p.simAt(p.cfg.Now()) }

// simAt maps a wall time to simulated time.
func (p *Plant) simAt(wall time.Time) time.Time {
	el := wall.Sub(p.wall0)
	if p.cfg.Speed == 1 {
		return p.start.Add(el)
	}
	return p.start.Add(time.Duration(float64(el) * p.cfg.Speed))
}

// advanceLocked integrates the plant from p.t to target in steps of at most
// a minute (coarser across gaps longer than a week), stopping at every
// control reversion and ramp end so they take effect at their exact time. A target before
// p.t (a clock that went back) changes nothing.
func (p *Plant) advanceLocked(target time.Time) {
	if r := p.cfg.Resolution; r > 0 {
		target = target.Truncate(r)
	}
	if !target.After(p.t) {
		return
	}
	step := maxStep
	if total := target.Sub(p.t); total > longGap {
		step = total / longGapSteps
	}
	for p.t.Before(target) {
		end := p.t.Add(step)
		if end.After(target) {
			end = target
		}
		for _, d := range p.inverters {
			if ev := d.inv.nextEvent(p.t); !ev.IsZero() && ev.Before(end) {
				end = ev
			}
		}
		if ev := p.nextLoadEvent(p.t); !ev.IsZero() && ev.Before(end) {
			end = ev
		}
		for _, d := range p.relays {
			if ev := d.relay.nextEvent(p.t); !ev.IsZero() && ev.Before(end) {
				end = ev
			}
		}
		for _, d := range p.batteries {
			if ev := d.bat.rvrt.at; !ev.IsZero() && ev.After(p.t) && ev.Before(end) {
				end = ev
			}
		}
		dt := end.Sub(p.t)
		p.flowsLocked(p.t.Add(dt / 2))
		h := dt.Hours()
		for _, d := range p.inverters {
			d.inv.energyWh += d.inv.acW * h
		}
		for _, d := range p.batteries {
			d.bat.integrate(h)
		}
		for _, d := range p.meters {
			d.met.integrate(h)
		}
		for _, d := range p.templates {
			d.tpl.integrate(d, p, h)
		}
		p.integrateLoads(h)
		p.t = end
		for _, d := range p.inverters {
			d.inv.revert(d, end)
		}
		for _, d := range p.batteries {
			d.bat.revert(d, end)
		}
	}
	p.flowsLocked(target)
}

// flowsLocked computes the weather and every device's power at t from the
// current state: inverters follow the sun and their limits, batteries
// absorb the surplus or cover the deficit, the meter sees the rest.
func (p *Plant) flowsLocked(t time.Time) {
	p.env = p.environment(t)
	load := math.Max(0, p.loadW(t)+p.loadOffsetW) + p.loadsW(t)
	var pv, q float64
	for _, d := range p.inverters {
		d.inv.compute(t, &p.env)
		pv += d.inv.acW
		q += d.inv.varW
	}
	net := pv - load
	var bat float64
	for _, d := range p.batteries {
		w := d.bat.dispatch(net)
		net += w
		bat += w
	}
	grid := load - pv - bat
	for _, d := range p.meters {
		if m := d.met.measures; m != nil { // a sub-meter: resistive enough
			d.met.w, d.met.varW = m.w, 0
			continue
		}
		d.met.w = grid
		d.met.varW = 0.2*load - q
	}
	p.bal = Balance{Time: t, LoadW: load, PVW: pv, BatteryW: bat, GridW: grid}
	p.gen++
}

// renderLocked brings the device's image up to the plant's state.
func (p *Plant) renderLocked(d *Device) {
	if d.gen == p.gen {
		return
	}
	d.gen = p.gen
	switch {
	case d.inv != nil:
		d.inv.render(d, p.t, &p.env)
	case d.bat != nil:
		d.bat.render(d, p.t)
	case d.met != nil:
		d.met.render(d, &p.env)
	case d.wx != nil:
		d.wx.render(d, &p.env)
	case d.tpl != nil:
		d.tpl.render(d, p)
	}
	if d.faultKind() == FaultNotImplemented {
		for _, h := range d.measured {
			d.ni(h)
		}
	}
	d.applyOverrides()
}
