package sim

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"plantd/modbus"
)

// A relay board is the I/O module the home energy manager switches its
// loads with: a Modbus TCP bus coupler with a relay output terminal and a
// digital input terminal, modelled on Beckhoff's EK9000. It is no SunSpec
// device: it serves coils, discrete inputs and the coupler's watchdog
// registers, nothing else.

// RelayChannels is how many coils (relay outputs, 0..7) and discrete
// inputs (0..7) a relay board has.
const RelayChannels = 8

// The holding registers of a relay board: the communication watchdog of
// the Beckhoff EK9000 Modbus TCP bus coupler, at its addresses, as its
// documentation lists them ("Modbus interface",
// https://infosys.beckhoff.com/content/1033/ek9000/2743153419.html;
// "Modbus configuration",
// https://infosys.beckhoff.com/content/1033/ek9000/2743146507.html).
// Other addresses answer exception 2.
const (
	// RegWatchdogElapsed (read only) is the watchdog's current time in ms:
	// how long since it was last triggered while it runs (at most 65535),
	// 0 when it does not run.
	RegWatchdogElapsed uint16 = 0x1020
	// RegWatchdogTrips (read only) counts the fallbacks the watchdog
	// triggered ("number of triggered fallbacks").
	RegWatchdogTrips uint16 = 0x1021
	// RegWatchdogTime is the watchdog time in ms, 1..60000 (the manual's
	// maximum is one minute; default 1000).
	RegWatchdogTime uint16 = 0x1120
	// RegWatchdogReset is the watchdog reset register; the manual names it
	// only: the simulator counts a write to it as a trigger.
	RegWatchdogReset uint16 = 0x1121
	// RegWatchdogMode is the type of watchdog: WatchdogWriteTelegram,
	// WatchdogTelegram or WatchdogDisabled.
	RegWatchdogMode uint16 = 0x1122
	// RegFallbackMode is what the outputs do when the watchdog expires:
	// FallbackZero (the default) or FallbackFreeze. The EK9000's 2 (stop
	// the E-bus) has no meaning here and is refused with exception 3.
	RegFallbackMode uint16 = 0x1123
)

// Values of RegWatchdogMode and RegFallbackMode.
const (
	// WatchdogWriteTelegram: only writes to the coils trigger the watchdog.
	WatchdogWriteTelegram uint16 = 0
	// WatchdogTelegram: every request to the board triggers it (the
	// EK9000's factory setting).
	WatchdogTelegram uint16 = 1
	// WatchdogDisabled: no watchdog; the outputs stay as written. The
	// simulated board starts so (a real EK9000 ships with
	// WatchdogTelegram), so that a client that never configures it is
	// never surprised; plantd's driver sets it.
	WatchdogDisabled uint16 = 2

	FallbackZero   uint16 = 0
	FallbackFreeze uint16 = 1
)

// Watchdog limits and default; how many input reads a board keeps.
const (
	defaultWatchdogMs = 1000
	maxWatchdogMs     = 60000
	maxInputReads     = 32
)

// relayBoard is a relay board's state. Guarded by Plant.mu.
type relayBoard struct {
	coils  [RelayChannels]bool
	inputs [RelayChannels]bool
	// follow: a write of coil N sets input N (InputsFollowCoils).
	follow bool
	// reads are the wall times of the last maxInputReads reads of the
	// discrete inputs, oldest first.
	reads []time.Time

	wdTime, wdReset, wdMode, fallback uint16

	// running: the watchdog was started by a write to the coils and has
	// not expired or been disabled since; last is the wall time of its
	// last trigger and expireSim when it expires on the simulated clock.
	running   bool
	last      time.Time
	expireSim time.Time
	trips     uint64
	lastTrip  time.Time // wall time
}

func newRelayBoard() *relayBoard {
	return &relayBoard{wdTime: defaultWatchdogMs, wdMode: WatchdogDisabled, fallback: FallbackZero}
}

// timeout is the watchdog time.
func (b *relayBoard) timeout() time.Duration { return time.Duration(b.wdTime) * time.Millisecond }

// coilAt reports whether coil i is on at simulated time t, counting a
// watchdog expiry that no request has noticed yet.
func (b *relayBoard) coilAt(i int, t time.Time) bool {
	if !b.coils[i] {
		return false
	}
	return !(b.running && b.fallback == FallbackZero && !t.Before(b.expireSim))
}

// nextEvent is the simulated instant the watchdog expires after t (zero:
// none), so the plant integrates the loads to it exactly.
func (b *relayBoard) nextEvent(t time.Time) time.Time {
	if b.running && b.expireSim.After(t) {
		return b.expireSim
	}
	return time.Time{}
}

// trigger restarts a running watchdog's time at the wall time now.
func (p *Plant) triggerLocked(b *relayBoard, now time.Time) {
	b.last = now
	b.expireSim = p.simAt(now.Add(b.timeout()))
}

// expireLocked applies a watchdog expiry that happened before now: the
// fallback at the expiry's time, counted. Every request to the board and
// every look at it calls it first, so nothing needs to tick.
func (p *Plant) expireLocked(d *Device, now time.Time) {
	b := d.relay
	if !b.running || now.Sub(b.last) < b.timeout() {
		return
	}
	at := b.last.Add(b.timeout())
	b.running = false
	b.trips++
	b.lastTrip = at
	if b.fallback == FallbackZero {
		b.coils = [RelayChannels]bool{}
	}
	d.log.Info("relay watchdog expired", "timeout", b.timeout(), "last_trigger", b.last, "fallback", b.fallback, "trips", b.trips)
}

// relayRequestLocked brings the plant and the board to the wall time now
// before a request: the plant integrated with the outputs as they were,
// an expiry applied, and in telegram mode the watchdog triggered.
func (p *Plant) relayRequestLocked(d *Device, now time.Time) {
	p.advanceLocked(p.simAt(now))
	p.expireLocked(d, now)
	if b := d.relay; b.running && b.wdMode == WatchdogTelegram {
		p.triggerLocked(b, now)
	}
}

// relayCoils serves functions 1, 5 and 15.
func (p *Plant) relayCoils(d *Device, req *modbus.Request) ([]bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.Now()
	p.relayRequestLocked(d, now)
	b := d.relay
	inside := int(req.Addr)+int(req.Quantity) <= RelayChannels
	if !req.IsWrite() {
		if !inside {
			return nil, errIllegalAddress
		}
		return append([]bool(nil), b.coils[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
	}
	values := make([]uint16, len(req.Bits))
	points := make([]TracePoint, len(req.Bits))
	for i, on := range req.Bits {
		if on {
			values[i] = 1
		}
		points[i] = TracePoint{Name: "coil[" + strconv.Itoa(int(req.Addr)+i) + "]", Value: float64(values[i]),
			Raw: uint64(values[i]), Implemented: true}
	}
	if !inside {
		err := fmt.Errorf("exception 2: coils %d+%d outside 0..%d", req.Addr, req.Quantity, RelayChannels-1)
		p.relayWriteLocked(d, req.Addr, values, points, err)
		return nil, errIllegalAddress
	}
	copy(b.coils[req.Addr:], req.Bits)
	if b.follow {
		for i, on := range req.Bits {
			if n := int(req.Addr) + i; b.inputs[n] != on {
				b.inputs[n] = on
				d.log.Info("input", "input", n, "on", on, "from", "coil")
			}
		}
	}
	if b.wdMode != WatchdogDisabled {
		// A write to the process data starts the watchdog, and triggers
		// it in either mode.
		b.running = true
		p.triggerLocked(b, now)
	}
	p.relayWriteLocked(d, req.Addr, values, points, nil)
	p.flowsLocked(p.t) // the loads switch now
	return nil, nil
}

// relayInputs serves function 2.
func (p *Plant) relayInputs(d *Device, req *modbus.Request) ([]bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.Now()
	p.relayRequestLocked(d, now)
	if int(req.Addr)+int(req.Quantity) > RelayChannels {
		return nil, errIllegalAddress
	}
	b := d.relay
	if len(b.reads) == maxInputReads {
		b.reads = append(b.reads[:0], b.reads[1:]...)
	}
	b.reads = append(b.reads, now)
	return append([]bool(nil), b.inputs[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}

// relayTouch counts a request the board does not serve (input registers)
// as a telegram.
func (p *Plant) relayTouch(d *Device) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.relayRequestLocked(d, p.cfg.Now())
}

// relayRegisterNames names the watchdog registers in the trace.
var relayRegisterNames = map[uint16]string{
	RegWatchdogElapsed: "WatchdogElapsed",
	RegWatchdogTrips:   "WatchdogTrips",
	RegWatchdogTime:    "WatchdogTime",
	RegWatchdogReset:   "WatchdogReset",
	RegWatchdogMode:    "WatchdogMode",
	RegFallbackMode:    "FallbackMode",
}

// relayRegisters serves functions 3, 6 and 16 on the watchdog registers:
// a request must lie inside 0x1020..0x1021 or 0x1120..0x1123; writes only
// inside the second block, with values in range (exception 3 otherwise).
func (p *Plant) relayRegisters(d *Device, req *modbus.Request) ([]uint16, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.Now()
	p.relayRequestLocked(d, now)
	b := d.relay
	end := int(req.Addr) + int(req.Quantity)
	status := int(req.Addr) >= int(RegWatchdogElapsed) && end <= int(RegWatchdogTrips)+1
	config := int(req.Addr) >= int(RegWatchdogTime) && end <= int(RegFallbackMode)+1
	if !req.IsWrite() {
		if !status && !config {
			return nil, errIllegalAddress
		}
		out := make([]uint16, req.Quantity)
		for i := range out {
			out[i] = b.register(req.Addr+uint16(i), now)
		}
		return out, nil
	}
	points := make([]TracePoint, len(req.Regs))
	for i, v := range req.Regs {
		points[i] = TracePoint{Name: relayRegisterNames[req.Addr+uint16(i)], Value: float64(v), Raw: uint64(v), Implemented: true}
	}
	if !config {
		p.relayWriteLocked(d, req.Addr, req.Regs, points, fmt.Errorf("exception 2: registers %d+%d are not writable", req.Addr, req.Quantity))
		return nil, errIllegalAddress
	}
	for i, v := range req.Regs {
		if err := checkRelayRegister(req.Addr+uint16(i), v); err != nil {
			p.relayWriteLocked(d, req.Addr, req.Regs, points, fmt.Errorf("exception 3: %w", err))
			return nil, errIllegalValue
		}
	}
	reset := false
	for i, v := range req.Regs {
		switch req.Addr + uint16(i) {
		case RegWatchdogTime:
			b.wdTime = v
		case RegWatchdogReset:
			b.wdReset, reset = v, true
		case RegWatchdogMode:
			b.wdMode = v
		case RegFallbackMode:
			b.fallback = v
		}
	}
	switch {
	case b.wdMode == WatchdogDisabled:
		b.running = false
	case reset && b.running:
		p.triggerLocked(b, now)
	case b.running:
		// A new time counts from the last trigger (now in telegram
		// mode), and may have run out already.
		b.expireSim = p.simAt(b.last.Add(b.timeout()))
		p.expireLocked(d, now)
	}
	p.relayWriteLocked(d, req.Addr, req.Regs, points, nil)
	p.flowsLocked(p.t)
	return nil, nil
}

// checkRelayRegister checks a value written to a watchdog register.
func checkRelayRegister(addr, v uint16) error {
	switch {
	case addr == RegWatchdogTime && (v < 1 || v > maxWatchdogMs):
		return fmt.Errorf("WatchdogTime = %d: outside 1..%d ms", v, maxWatchdogMs)
	case addr == RegWatchdogMode && v > WatchdogDisabled:
		return fmt.Errorf("WatchdogMode = %d: want 0 (write telegram), 1 (telegram) or 2 (disabled)", v)
	case addr == RegFallbackMode && v > FallbackFreeze:
		return fmt.Errorf("FallbackMode = %d: want 0 (set to zero) or 1 (freeze)", v)
	}
	return nil
}

// register is the value of a watchdog register at wall time now.
func (b *relayBoard) register(addr uint16, now time.Time) uint16 {
	switch addr {
	case RegWatchdogElapsed:
		if !b.running {
			return 0
		}
		return uint16(min(now.Sub(b.last).Milliseconds(), 0xFFFF))
	case RegWatchdogTrips:
		return uint16(min(b.trips, 0xFFFF))
	case RegWatchdogTime:
		return b.wdTime
	case RegWatchdogReset:
		return b.wdReset
	case RegWatchdogMode:
		return b.wdMode
	case RegFallbackMode:
		return b.fallback
	}
	return 0
}

// relayWriteLocked records a write to a relay board, accepted (refused
// nil) or refused: in the trace, and an accepted one in Device.Writes.
func (p *Plant) relayWriteLocked(d *Device, addr uint16, values []uint16, points []TracePoint, refused error) {
	e := TraceEntry{
		Device: d.cfg.ID, Unit: d.cfg.Unit, SimTime: p.t, WallTime: p.cfg.Now(),
		Addr: addr, Count: len(values), Points: points, LimitPct: 100, Connected: true,
	}
	if refused != nil {
		e.Error = refused.Error()
		d.log.Info("write refused", "addr", addr, "err", refused)
		p.addTraceLocked(d, e)
		return
	}
	names := make([]string, len(points))
	for i, pt := range points {
		names[i] = pt.Name
	}
	if len(d.writes) == maxWriteLog {
		d.writes = append(d.writes[:0], d.writes[1:]...)
	}
	d.writes = append(d.writes, Write{Time: p.t, Unit: d.cfg.Unit, Addr: addr, Values: append([]uint16(nil), values...), Points: names})
	d.log.Info("write", "addr", addr, "count", len(values), "points", names)
	p.addTraceLocked(d, e)
}

// RelayState is a relay board's state at one instant.
type RelayState struct {
	// Coils are the relay outputs, Inputs the discrete inputs.
	Coils  [RelayChannels]bool
	Inputs [RelayChannels]bool
	// WatchdogTime, WatchdogMode and FallbackMode are the watchdog
	// registers' settings.
	WatchdogTime time.Duration
	WatchdogMode uint16
	FallbackMode uint16
	// WatchdogRunning: a write to the coils started the watchdog and it
	// has neither expired nor been disabled since.
	WatchdogRunning bool
	// Trips counts the watchdog's expiries (RegWatchdogTrips), LastTrip is
	// the wall time of the last one (zero: none).
	Trips    uint64
	LastTrip time.Time
	// InputReads are the wall times of the last 32 reads of the discrete
	// inputs (function 2), oldest first: when a client saw an input (the
	// detection part of an input edge's latency).
	InputReads []time.Time
}

// ErrNotRelay is returned by the relay board methods of a device that is
// not one.
var ErrNotRelay = errors.New("sim: not a relay board")

// Relay returns the state of a relay board at the current wall time (a
// watchdog expiry since the last request is applied first); false when
// the device is not a relay board.
func (d *Device) Relay() (RelayState, bool) {
	b := d.relay
	if b == nil {
		return RelayState{}, false
	}
	p := d.plant
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.Now()
	p.advanceLocked(p.simAt(now))
	p.expireLocked(d, now)
	return RelayState{
		Coils: b.coils, Inputs: b.inputs,
		WatchdogTime: b.timeout(), WatchdogMode: b.wdMode, FallbackMode: b.fallback,
		WatchdogRunning: b.running, Trips: b.trips, LastTrip: b.lastTrip,
		InputReads: append([]time.Time(nil), b.reads...),
	}, true
}

// SetInput sets discrete input i (0..7) of a relay board, as the contact
// wired to it would (a ripple-control receiver's relay, a heat pump's
// fault contact); clients read it from the next request on.
func (d *Device) SetInput(i int, on bool) error {
	if d.relay == nil {
		return fmt.Errorf("%w: device %s", ErrNotRelay, d.cfg.ID)
	}
	if i < 0 || i >= RelayChannels {
		return fmt.Errorf("sim: device %s: input %d outside 0..%d", d.cfg.ID, i, RelayChannels-1)
	}
	p := d.plant
	p.mu.Lock()
	defer p.mu.Unlock()
	if d.relay.inputs[i] != on {
		d.relay.inputs[i] = on
		d.log.Info("input", "input", i, "on", on)
	}
	return nil
}
