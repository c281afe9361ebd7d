package plant

import (
	"errors"
	"fmt"

	"plantd/sunspec"
)

// Health is the v2 health status of the live device list: Ok, Warning,
// Error, Off or NotAvailable, never empty.
type Health string

// The v2 health words.
const (
	HealthOk           Health = "Ok"
	HealthWarning      Health = "Warning"
	HealthError        Health = "Error"
	HealthOff          Health = "Off"
	HealthNotAvailable Health = "NotAvailable"
)

// HealthV1 is the v1 health status: Active or Inactive.
type HealthV1 string

// The v1 health words.
const (
	HealthActive   HealthV1 = "Active"
	HealthInactive HealthV1 = "Inactive"
)

// V1 maps a v2 word to v1: Ok and Warning are Active (the device works);
// Error, Off and NotAvailable are Inactive (it delivers nothing). The spec
// says Active became Ok and Inactive became Off; the other words are
// plantd's split of those two.
func (h Health) V1() HealthV1 {
	if h == HealthOk || h == HealthWarning {
		return HealthActive
	}
	return HealthInactive
}

// CommStatus is a device's communication status word.
type CommStatus string

// The communication status words.
const (
	// CommOk: the last polls succeeded.
	CommOk CommStatus = "Ok"
	// CommPartial: the device answers, but not reliably: the last poll
	// failed while its values are still fresh (stale), or fewer than
	// partialBelow of the recent polls succeeded.
	CommPartial CommStatus = "Partial"
	// CommTimedOut: the device is offline and its last poll timed out.
	CommTimedOut CommStatus = "TimedOut"
	// CommUnreachable: the device is offline for another reason (refused,
	// reset, exception, garbage), or was never polled.
	CommUnreachable CommStatus = "Unreachable"
)

// partialBelow is the success rate under which an online device counts as
// Partial (once minPollsForRate polls are known).
const (
	partialBelow    = 0.9
	minPollsForRate = 10
)

// commStatus derives the status word.
func commStatus(state CommState, lastErr error, rate float64, polls int) CommStatus {
	switch state {
	case StateOnline:
		if polls >= minPollsForRate && rate < partialBelow {
			return CommPartial
		}
		return CommOk
	case StateStale:
		return CommPartial
	case StateOffline:
		if isTimeout(lastErr) {
			return CommTimedOut
		}
	}
	return CommUnreachable
}

// isTimeout reports whether err is a request that got no answer in time:
// an error in its chain has a method Timeout() that returns true, as
// net.Error's timeouts, os.ErrDeadlineExceeded, context.DeadlineExceeded
// and plantd/modbus's ErrTimeout do. The domain tells a timeout this way,
// by its class, without knowing the transport.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// opState is what a device's SunSpec operating state says, ordered from
// the least to the most severe: the worst state point of a device wins.
type opState uint8

const (
	opUnknown  opState = iota // no state point implemented
	opRunning                 // starting, producing, throttled, connected
	opDegraded                // working with a limitation (SoC protection, storage warning)
	opOff                     // off, sleeping, standby, shutting down, disconnected
	opFault                   // the device reports a fault
)

// severity is what a device's event bits say.
type severity uint8

const (
	sevNone severity = iota
	sevWarning
	sevError
)

// stateSym maps one value of an enum state point.
type stateSym struct {
	Value int64
	Name  string // the SunSpec symbol (checked by TestStatusTables)
	Op    opState
}

// stateRule reads one enum point of a model.
type stateRule struct {
	Models []uint16
	Point  string
	Syms   []stateSym
}

// eventBit maps one bit of an event bitfield.
type eventBit struct {
	Bit  uint8
	Name string // the SunSpec symbol, or its suffix (checked by TestStatusTables)
	Sev  severity
}

// eventRule reads one bitfield point of a model.
type eventRule struct {
	Models []uint16
	Point  string
	Bits   []eventBit
}

// classicInverterStates is St of 101..113. THROTTLED is running: the limit
// is usually plantd's own grid-control command, not a problem.
var classicInverterStates = []stateSym{
	{1, "OFF", opOff},
	{2, "SLEEPING", opOff},
	{3, "STARTING", opRunning},
	{4, "MPPT", opRunning},
	{5, "THROTTLED", opRunning},
	{6, "SHUTTING_DOWN", opOff},
	{7, "FAULT", opFault},
	{8, "STANDBY", opOff},
}

// inverterEvents is Evt1 of 101..113 and the first 16 bits of 701 Alrm.
// Errors stop production or need a technician; warnings are grid or
// environment conditions the inverter rides out.
var inverterEvents = []eventBit{
	{0, "GROUND_FAULT", sevError},
	{1, "DC_OVER_VOLT", sevError},
	{2, "AC_DISCONNECT", sevWarning},
	{3, "DC_DISCONNECT", sevWarning},
	{4, "GRID_DISCONNECT", sevWarning},
	{5, "CABINET_OPEN", sevWarning},
	{6, "MANUAL_SHUTDOWN", sevWarning},
	{7, "OVER_TEMP", sevWarning},
	{8, "OVER_FREQUENCY", sevWarning},
	{9, "UNDER_FREQUENCY", sevWarning},
	{10, "AC_OVER_VOLT", sevWarning},
	{11, "AC_UNDER_VOLT", sevWarning},
	{12, "BLOWN_STRING_FUSE", sevError},
	{13, "UNDER_TEMP", sevWarning},
	{14, "MEMORY_LOSS", sevError},
	{15, "HW_TEST_FAILURE", sevError},
}

// meterEvents is Evt of 201..214 (201 names the bits without the
// M_EVENT_ prefix of the others).
var meterEvents = []eventBit{
	{2, "Power_Failure", sevWarning},
	{3, "Under_Voltage", sevWarning},
	{4, "Low_PF", sevWarning},
	{5, "Over_Current", sevWarning},
	{6, "Over_Voltage", sevWarning},
	{7, "Missing_Sensor", sevError},
}

var meterModels = []uint16{201, 202, 203, 204, 211, 212, 213, 214}

// stateTable and eventTable are the hand-written health rules.
var stateTable = []stateRule{
	{Models: classicInverterModels, Point: "St", Syms: classicInverterStates},
	{Models: []uint16{701}, Point: "InvSt", Syms: []stateSym{
		{0, "OFF", opOff},
		{1, "SLEEPING", opOff},
		{2, "STARTING", opRunning},
		{3, "RUNNING", opRunning},
		{4, "THROTTLED", opRunning},
		{5, "SHUTTING_DOWN", opOff},
		{6, "FAULT", opFault},
		{7, "STANDBY", opOff},
	}},
	{Models: []uint16{701}, Point: "St", Syms: []stateSym{
		{0, "OFF", opOff},
		{1, "ON", opRunning},
	}},
	{Models: []uint16{701}, Point: "ConnSt", Syms: []stateSym{
		{0, "DISCONNECTED", opOff},
		{1, "CONNECTED", opRunning},
	}},
	// 802 State: STANDBY is a battery waiting for surplus or load, normal
	// operation, not Off (else every battery would flip to Off each
	// evening).
	{Models: []uint16{802}, Point: "State", Syms: []stateSym{
		{1, "DISCONNECTED", opOff},
		{2, "INITIALIZING", opRunning},
		{3, "CONNECTED", opRunning},
		{4, "STANDBY", opRunning},
		{5, "SOC PROTECTION", opDegraded},
		{6, "SUSPENDING", opOff},
		{99, "FAULT", opFault},
	}},
	{Models: []uint16{713}, Point: "Sta", Syms: []stateSym{
		{0, "OK", opRunning},
		{1, "WARNING", opDegraded},
		{2, "ERROR", opFault},
	}},
	{Models: []uint16{124}, Point: "ChaSt", Syms: []stateSym{
		{1, "OFF", opOff},
		{2, "EMPTY", opRunning},
		{3, "DISCHARGING", opRunning},
		{4, "CHARGING", opRunning},
		{5, "FULL", opRunning},
		{6, "HOLDING", opRunning},
		{7, "TESTING", opRunning},
	}},
}

var eventTable = []eventRule{
	{Models: classicInverterModels, Point: "Evt1", Bits: inverterEvents},
	{Models: []uint16{701}, Point: "Alrm", Bits: append(append([]eventBit(nil), inverterEvents...),
		eventBit{16, "MANUFACTURER_ALRM", sevWarning})},
	// 701 ThrotSrc DERATED: the inverter limits itself (heat, grid), which
	// plantd did not ask for.
	{Models: []uint16{701}, Point: "ThrotSrc", Bits: []eventBit{
		{14, "DERATED", sevWarning},
	}},
	{Models: []uint16{160}, Point: "Evt", Bits: []eventBit{
		{0, "GROUND_FAULT", sevError},
		{1, "INPUT_OVER_VOLTAGE", sevError},
		{3, "DC_DISCONNECT", sevWarning},
		{5, "CABINET_OPEN", sevWarning},
		{6, "MANUAL_SHUTDOWN", sevWarning},
		{7, "OVER_TEMP", sevWarning},
		{12, "BLOWN_FUSE", sevError},
		{13, "UNDER_TEMP", sevWarning},
		{14, "MEMORY_LOSS", sevError},
		{15, "ARC_DETECTION", sevError},
		{20, "TEST_FAILED", sevError},
		{21, "INPUT_UNDER_VOLTAGE", sevWarning},
		{22, "INPUT_OVER_CURRENT", sevWarning},
	}},
	{Models: meterModels, Point: "Evt", Bits: meterEvents},
	// 802 Evt1: every *_ALARM and *_ERROR bit is an error, every
	// *_WARNING bit a warning.
	{Models: []uint16{802}, Point: "Evt1", Bits: []eventBit{
		{0, "COMMUNICATION_ERROR", sevWarning},
		{1, "OVER_TEMP_ALARM", sevError},
		{2, "OVER_TEMP_WARNING", sevWarning},
		{3, "UNDER_TEMP_ALARM", sevError},
		{4, "UNDER_TEMP_WARNING", sevWarning},
		{5, "OVER_CHARGE_CURRENT_ALARM", sevError},
		{6, "OVER_CHARGE_CURRENT_WARNING", sevWarning},
		{7, "OVER_DISCHARGE_CURRENT_ALARM", sevError},
		{8, "OVER_DISCHARGE_CURRENT_WARNING", sevWarning},
		{9, "OVER_VOLT_ALARM", sevError},
		{10, "OVER_VOLT_WARNING", sevWarning},
		{11, "UNDER_VOLT_ALARM", sevError},
		{12, "UNDER_VOLT_WARNING", sevWarning},
		{13, "UNDER_SOC_MIN_ALARM", sevError},
		{14, "UNDER_SOC_MIN_WARNING", sevWarning},
		{15, "OVER_SOC_MAX_ALARM", sevError},
		{16, "OVER_SOC_MAX_WARNING", sevWarning},
		{17, "VOLTAGE_IMBALANCE_WARNING", sevWarning},
		{18, "TEMPERATURE_IMBALANCE_ALARM", sevError},
		{19, "TEMPERATURE_IMBALANCE_WARNING", sevWarning},
		{20, "CONTACTOR_ERROR", sevError},
		{21, "FAN_ERROR", sevError},
		{22, "GROUND_FAULT", sevError},
		{23, "OPEN_DOOR_ERROR", sevError},
		{24, "CURRENT_IMBALANCE_WARNING", sevWarning},
		{25, "OTHER_ALARM", sevError},
		{26, "OTHER_WARNING", sevWarning},
		{28, "CONFIGURATION_ALARM", sevError},
		{29, "CONFIGURATION_WARNING", sevWarning},
	}},
}

// compiledState is a stateRule located in one model, with its reason
// strings made once.
type compiledState struct {
	model   uint16
	point   int
	values  []int64
	ops     []opState
	reasons []string // "St FAULT"
}

// compiledEvents is an eventRule located in one model.
type compiledEvents struct {
	model   uint16
	point   int
	errMask uint64
	warMask uint64
	reasons [64]string // per bit: "Evt1 GROUND_FAULT"
}

// status is the compiled health table.
type status struct {
	states []compiledState
	events []compiledEvents
}

// compileStatus locates the points of the health tables.
func compileStatus() (*status, error) {
	st := &status{}
	for _, r := range stateTable {
		for _, mid := range r.Models {
			def := sunspec.ModelByID(mid)
			if def == nil {
				return nil, fmt.Errorf("state table: unknown model %d", mid)
			}
			pi := def.PointIndex(r.Point)
			if pi < 0 {
				return nil, fmt.Errorf("state table: model %d has no point %q", mid, r.Point)
			}
			cs := compiledState{model: mid, point: pi}
			for _, s := range r.Syms {
				cs.values = append(cs.values, s.Value)
				cs.ops = append(cs.ops, s.Op)
				cs.reasons = append(cs.reasons, r.Point+" "+s.Name)
			}
			st.states = append(st.states, cs)
		}
	}
	for _, r := range eventTable {
		for _, mid := range r.Models {
			def := sunspec.ModelByID(mid)
			if def == nil {
				return nil, fmt.Errorf("event table: unknown model %d", mid)
			}
			pi := def.PointIndex(r.Point)
			if pi < 0 {
				return nil, fmt.Errorf("event table: model %d has no point %q", mid, r.Point)
			}
			ce := compiledEvents{model: mid, point: pi}
			for _, b := range r.Bits {
				if b.Bit >= 64 {
					return nil, fmt.Errorf("event table: model %d point %s: bit %d", mid, r.Point, b.Bit)
				}
				switch b.Sev {
				case sevError:
					ce.errMask |= 1 << b.Bit
				case sevWarning:
					ce.warMask |= 1 << b.Bit
				}
				ce.reasons[b.Bit] = r.Point + " " + b.Name
			}
			st.events = append(st.events, ce)
		}
	}
	return st, nil
}

// deviceStatus is what the state and event points of one sample say.
type deviceStatus struct {
	op       opState
	opReason string
	sev      severity
	evReason string
}

// evaluate reads the state and event points of a sample's models. The
// worst state and the most severe event win; the reason names the first
// point and symbol that decided.
func (st *status) evaluate(models []*sunspec.Instance) deviceStatus {
	var ds deviceStatus
	present := newModelSet(models)
	for i := range st.states {
		cs := &st.states[i]
		if !present.has(cs.model) {
			continue
		}
		inst := findModel(models, cs.model)
		if inst == nil {
			continue
		}
		v := inst.ValueAt(&inst.Root, cs.point)
		if !v.OK {
			continue
		}
		for j, val := range cs.values {
			if int64(v.Raw) == val {
				if cs.ops[j] > ds.op {
					ds.op, ds.opReason = cs.ops[j], cs.reasons[j]
				}
				break
			}
		}
	}
	for i := range st.events {
		ce := &st.events[i]
		if !present.has(ce.model) {
			continue
		}
		inst := findModel(models, ce.model)
		if inst == nil {
			continue
		}
		v := inst.ValueAt(&inst.Root, ce.point)
		if !v.OK {
			continue
		}
		sev, mask := sevNone, uint64(0)
		switch {
		case v.Raw&ce.errMask != 0:
			sev, mask = sevError, v.Raw&ce.errMask
		case v.Raw&ce.warMask != 0:
			sev, mask = sevWarning, v.Raw&ce.warMask
		}
		if sev > ds.sev {
			ds.sev = sev
			for b := 0; b < 64; b++ {
				if mask&(1<<b) != 0 {
					ds.evReason = ce.reasons[b]
					break
				}
			}
		}
	}
	return ds
}

// health derives the v2 health word and its reason. Precedence, first
// match wins: not active (deactivated) → Off; no communication (offline,
// never polled) → NotAvailable; fault state or error event → Error; off,
// sleeping, standby → Off; warning event, degraded state or stale
// communication → Warning; else Ok.
func health(active bool, state CommState, ds deviceStatus) (Health, string) {
	switch {
	case !active:
		return HealthOff, "deactivated"
	case state == StateOffline:
		return HealthNotAvailable, "offline"
	case state == StateUnknown:
		return HealthNotAvailable, "no data yet"
	case ds.op == opFault:
		return HealthError, ds.opReason
	case ds.sev == sevError:
		return HealthError, ds.evReason
	case ds.op == opOff:
		return HealthOff, ds.opReason
	case ds.sev == sevWarning:
		return HealthWarning, ds.evReason
	case ds.op == opDegraded:
		return HealthWarning, ds.opReason
	case state == StateStale:
		return HealthWarning, "stale"
	}
	return HealthOk, ""
}
