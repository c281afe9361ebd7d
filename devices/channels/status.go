package channels

import (
	"fmt"

	"plantd/plant"
	"plantd/sunspec"
)

// This file reads a device's health from its SunSpec models: which value
// of which state point and which bit of which event point says what
// (plant.OpState, plant.Severity). plant decides the health word from
// them (plant/doc.go, Health).

// Short names for the domain's states, so the tables read as before.
const (
	opUnknown  = plant.OpUnknown
	opRunning  = plant.OpRunning
	opDegraded = plant.OpDegraded
	opOff      = plant.OpOff
	opFault    = plant.OpFault
	sevNone    = plant.SeverityNone
	sevWarning = plant.SeverityWarning
	sevError   = plant.SeverityError
)

// stateSym maps one value of an enum state point.
type stateSym struct {
	Value int64
	Name  string // the SunSpec symbol (checked by TestStatusTables)
	Op    plant.OpState
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
	Sev  plant.Severity
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
	ops     []plant.OpState
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

// evaluate reads the state and event points of a sample's models. The
// worst state and the most severe event win; the reason names the first
// point and symbol that decided.
func (st *status) evaluate(models []*sunspec.Instance, r *route) plant.DeviceStatus {
	var ds plant.DeviceStatus
	for _, sp := range r.states {
		cs := &st.states[sp.row]
		inst := models[sp.model]
		v := inst.ValueAt(&inst.Root, cs.point)
		if !v.OK {
			continue
		}
		for j, val := range cs.values {
			if int64(v.Raw) == val {
				if cs.ops[j] > ds.Op {
					ds.Op, ds.OpReason = cs.ops[j], cs.reasons[j]
				}
				break
			}
		}
	}
	for _, sp := range r.events {
		ce := &st.events[sp.row]
		inst := models[sp.model]
		v := inst.ValueAt(&inst.Root, ce.point)
		if !v.OK {
			continue
		}
		sev, mask := plant.SeverityNone, uint64(0)
		switch {
		case v.Raw&ce.errMask != 0:
			sev, mask = sevError, v.Raw&ce.errMask
		case v.Raw&ce.warMask != 0:
			sev, mask = sevWarning, v.Raw&ce.warMask
		}
		if sev > ds.Event {
			ds.Event = sev
			for b := 0; b < 64; b++ {
				if mask&(1<<b) != 0 {
					ds.EventReason = ce.reasons[b]
					break
				}
			}
		}
	}
	return ds
}
