package sim

import (
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"plantd/plant/kind"
	"plantd/sunspec"
)

// Device is one simulated SunSpec device: its register image, its physics
// state and its fault. Its methods are safe for concurrent use.
type Device struct {
	plant *Plant
	cfg   DeviceConfig
	log   *slog.Logger
	ep    *endpoint
	fault atomic.Pointer[Fault] // nil: FaultNone

	// The fields below are guarded by plant.mu.

	base     uint16
	regs     []uint16 // the SunSpec map from the SunS marker to the end marker
	models   []slot
	writable []bool   // per register of regs: part of an RW point
	scratch  []uint16 // write rollback buffer
	measured []handle // blanked by FaultNotImplemented
	writes   []Write
	trace    traceRing
	// gen is the Plant.gen the image was last rendered at.
	gen uint64
	// overrides pin points to fixed bits (Override).
	overrides []override
	// frozenWh is the energy counter a FreezeCounter froze (-1: moving).
	frozenWh float64
	// Wall times of the last read and of the first read of the current
	// poll (Config.CountReads).
	lastRead, pollStart time.Time
	lastReadAddr        uint16

	inv   *inverter
	bat   *battery
	met   *meter
	wx    *sensor
	relay *relayBoard
	tpl   *tplDevice // a template device (DeviceConfig.Template)
}

// slot is one model of a device's map.
type slot struct {
	inst *sunspec.Instance
	off  int // index of its ID register in Device.regs
}

// ModelInfo locates one model in a device's map.
type ModelInfo struct {
	ID   uint16
	Addr uint16 // register address of the model's ID point
	Len  uint16 // L: registers after ID and L
}

// Write is one write a device accepted.
type Write struct {
	Time   time.Time // simulated time
	Unit   byte
	Addr   uint16
	Values []uint16
	// Points names the points the write touched, as "model.point"
	// ("123.WMaxLimPct"), or "model.group.point" inside repeating groups.
	Points []string
}

// maxWriteLog bounds the writes a device remembers.
const maxWriteLog = 256

// State is a device's simulated state at one instant; fields that do not
// apply to the device's kind are zero.
type State struct {
	Time time.Time // simulated time
	// PowerW is the device's active power: an inverter's AC output, the
	// meter's grid power (positive = import from the grid), a battery's
	// power (positive = discharging).
	PowerW float64
	// AvailableW is what an inverter's PV array could deliver now, within
	// the inverter's rating but before its power limit.
	AvailableW float64
	// LimitPct is an inverter's active power limit in % of WMax (100 when
	// no limit is enabled); LimitActive says whether one is enabled.
	LimitPct    float64
	LimitActive bool
	// RevertAt is when an inverter's power limit, or a battery's 124 storage
	// control, reverts (zero: never).
	RevertAt time.Time
	// EffectiveLimitPct is the active power limit in % of WMax acting on
	// an inverter now: the limit after its 123 RmpTms ramp, or 704 WSet
	// when enabled and lower; 100 when nothing limits. A disconnect (123
	// Conn 0) is not included: see Connected.
	EffectiveLimitPct float64
	// ReactiveVAr is an inverter's reactive power (positive: injected,
	// negative: absorbed).
	ReactiveVAr float64
	// Connected is false when an inverter was disconnected by a control
	// (123 Conn = 0) or a battery by 802 SetOp.
	Connected bool
	// Sleeping is true while an inverter sleeps for lack of sun.
	Sleeping bool
	// EnergyWh is an inverter's lifetime AC energy, the meter's imported
	// energy, a battery's charged energy.
	EnergyWh float64
	// ExportWh is the meter's exported energy, a battery's discharged
	// energy.
	ExportWh float64
	// SoCPct is a battery's state of charge.
	SoCPct float64
	// Weather at the plant (every kind).
	IrradianceWm2 float64
	AmbientC      float64
	ModuleC       float64
	WindMS        float64
}

// ID returns the device's id from the config.
func (d *Device) ID() string { return d.cfg.ID }

// Kind returns what the device is ("" for a relay board, which is no
// device of the plant's domain: its loads are).
func (d *Device) Kind() kind.Kind { return d.cfg.Kind }

// DER reports whether the device is an inverter with the DER (7xx) models.
func (d *Device) DER() bool { return d.cfg.DER }

// Label is the device's kind as the simulator shows it: "der-inverter"
// for a DER inverter, "relay" for a relay board, "template sdm630" for a
// template device, else its kind.
func (d *Device) Label() string { return d.cfg.model() }

// Unit returns the Modbus unit id the device answers to.
func (d *Device) Unit() byte { return d.cfg.Unit }

// Endpoint returns the name of the device's endpoint ("" when it has a port
// of its own).
func (d *Device) Endpoint() string { return d.cfg.Endpoint }

// Addr returns host:port of the device's Modbus TCP endpoint; "" before
// Start.
func (d *Device) Addr() string { return d.ep.address() }

// Serial returns the device's serial number (model 1 SN).
func (d *Device) Serial() string { return serialOf(d.cfg.ID) }

// Base returns the register address of the SunS marker.
func (d *Device) Base() uint16 { return d.base }

// Models lists the models of the device's map in chain order.
func (d *Device) Models() []ModelInfo {
	out := make([]ModelInfo, len(d.models))
	for i, s := range d.models {
		out[i] = ModelInfo{ID: s.inst.Model.ID, Addr: s.inst.Addr, Len: uint16(len(s.inst.Regs) - 2)}
	}
	return out
}

// SetFault injects a fault into the device (Fault{} clears it). It takes
// effect for the next request; FaultOffline also closes the endpoint's open
// connections when every device on it is offline.
func (d *Device) SetFault(f Fault) {
	f = f.normalized()
	var old Fault
	if f.Kind == FaultNone {
		if p := d.fault.Swap(nil); p != nil {
			old = *p
		}
	} else if p := d.fault.Swap(&f); p != nil {
		old = *p
	}
	if old != f {
		d.log.Info("fault", "fault", f.String(), "was", old.String())
	}
	d.plant.mu.Lock()
	d.plant.gen++ // FaultNotImplemented changes the image
	d.plant.mu.Unlock()
	d.ep.faultChanged()
}

// Fault returns the device's current fault.
func (d *Device) Fault() Fault {
	if p := d.fault.Load(); p != nil {
		return *p
	}
	return Fault{}
}

// faultKind is the hot-path read of the fault kind.
func (d *Device) faultKind() FaultKind {
	if p := d.fault.Load(); p != nil {
		return p.Kind
	}
	return FaultNone
}

// Writes returns the writes the device accepted, oldest first (the last
// 256).
func (d *Device) Writes() []Write {
	d.plant.mu.Lock()
	defer d.plant.mu.Unlock()
	out := make([]Write, len(d.writes))
	for i, w := range d.writes {
		w.Values = slices.Clone(w.Values)
		w.Points = slices.Clone(w.Points)
		out[i] = w
	}
	return out
}

// State returns the device's state at the current simulated time.
func (d *Device) State() State {
	p := d.plant
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advanceLocked(p.simNow())
	s := State{
		Time:          p.t,
		IrradianceWm2: p.env.ghi,
		AmbientC:      p.env.ambientC,
		ModuleC:       p.env.moduleC,
		WindMS:        p.env.windMS,
	}
	switch {
	case d.inv != nil:
		v := d.inv
		s.PowerW, s.AvailableW = v.acW, v.availW
		s.LimitPct, s.LimitActive = 100, v.limEna
		if v.limEna {
			s.LimitPct = v.limPct
		}
		s.RevertAt = v.limRvrt.at
		s.EffectiveLimitPct = v.effectiveLimitPct(p.t)
		s.ReactiveVAr = v.varW
		s.Connected = v.connected
		s.Sleeping = v.sleeping
		s.EnergyWh = v.energyWh
	case d.bat != nil:
		b := d.bat
		s.PowerW, s.SoCPct, s.Connected = b.w, b.soc, b.connected
		s.RevertAt = b.rvrt.at
		s.EnergyWh, s.ExportWh = b.chargedWh, b.dischargedWh
	case d.met != nil:
		s.PowerW, s.EnergyWh, s.ExportWh = d.met.w, d.met.impWh, d.met.expWh
		s.Connected = true
	default:
		s.Connected = true
	}
	return s
}

// serialOf makes a device's serial number from its id.
func serialOf(id string) string { return "SIM-" + id }
