package gridcontrol

import (
	"fmt"
	"slices"

	"plantd/devices"
	"plantd/devices/poller"
	"plantd/plant"
)

// ValueKind says what a command's value is.
type ValueKind int

// The value kinds of the commands.
const (
	// ValueNone: the command takes no value (OpModDisconnect).
	ValueNone ValueKind = iota
	// ValuePower: a limit in % of rated power (default) or in W.
	ValuePower
	// ValuePF: a displacement power factor in (0, 1].
	ValuePF
	// ValueCurve: a curve object in the units of the SunSpec model.
	ValueCurve
)

// Command describes one grid-control command of spec §2.5 / DESIGN §6.
type Command struct {
	Name string
	// Cap is the device capability the command needs.
	Cap devices.Capability
	// ClassicOnly: offered only for classic systems (OpModDisconnect).
	ClassicOnly bool
	// DEROnly: only the IEEE 1547 models carry it (PF while absorbing
	// active power: classic 123 has one PF setpoint).
	DEROnly bool
	// NeedsMeter: needs a grid meter (FeedInLimit controls the export).
	NeedsMeter bool
	Value      ValueKind
	// Models are the SunSpec models that carry the command, classic first.
	Models []uint16
}

// Commands is the table of grid-control commands, in spec order.
var Commands = []Command{
	{Name: "FeedInLimit", Cap: devices.CapPowerLimit, NeedsMeter: true, Value: ValuePower, Models: []uint16{123, 704}},
	{Name: "OpModDisconnect", Cap: devices.CapConnect, ClassicOnly: true, Value: ValueNone, Models: []uint16{123}},
	{Name: "opModMaxLimW", Cap: devices.CapPowerLimit, Value: ValuePower, Models: []uint16{123, 704}},
	{Name: "opModFixedPfAbsorbW", Cap: devices.CapPowerFactor, DEROnly: true, Value: ValuePF, Models: []uint16{704}},
	{Name: "opModFixedPFInjectW", Cap: devices.CapPowerFactor, Value: ValuePF, Models: []uint16{123, 704}},
	{Name: "opModFreqWatt", Cap: devices.CapFreqWatt, Value: ValueCurve, Models: []uint16{134, 127, 711}},
	{Name: "opModHfrtMustTrip", Cap: devices.CapHFRT, Value: ValueCurve, Models: []uint16{136, 710}},
	{Name: "opModHvrtMustTrip", Cap: devices.CapHVRT, Value: ValueCurve, Models: []uint16{130, 708}},
	{Name: "opModLfrtMustTrip", Cap: devices.CapLFRT, Value: ValueCurve, Models: []uint16{135, 709}},
	{Name: "opModLvrtMustTrip", Cap: devices.CapLVRT, Value: ValueCurve, Models: []uint16{129, 707}},
	{Name: "opModVoltVar", Cap: devices.CapVoltVar, Value: ValueCurve, Models: []uint16{126, 705}},
	{Name: "opModVoltWatt", Cap: devices.CapVoltWatt, Value: ValueCurve, Models: []uint16{132, 706}},
}

// CommandByName returns the command of that name (names are case-sensitive,
// as in the spec).
func CommandByName(n string) (Command, bool) {
	for _, c := range Commands {
		if c.Name == n {
			return c, true
		}
	}
	return Command{}, false
}

// model returns the first model of the command the device has.
func (c Command) model(d *devices.Device) (devices.ModelRef, bool) {
	for _, id := range c.Models {
		if ref, ok := d.Ref(id); ok {
			return ref, true
		}
	}
	return devices.ModelRef{}, false
}

// Reason is why a command is not supported.
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Eligibility is the result of the eligibility check for one command.
type Eligibility struct {
	Command  string   `json:"command"`
	Eligible bool     `json:"eligible"`
	Reasons  []Reason `json:"reasons,omitempty"`
	// Devices are the inverters that would carry the command.
	Devices []string `json:"devices,omitempty"`
}

// The reason codes of the eligibility check.
const (
	ReasonNoGridMeter     = "NoGridMeter"
	ReasonClassicOnly     = "NotOfferedOnNewerPlatform"
	ReasonDEROnly         = "NotOfferedOnClassicPlatform"
	ReasonNotDiscovered   = "DevicesNotDiscovered"
	ReasonNotSupported    = "NotSupportedByDevices"
	ReasonDevicesOffline  = "DevicesOffline"
	ReasonNoActiveDevices = "NoActiveInverter"
)

// Eligible checks one command against a plant's devices: the active
// inverters that expose a model carrying it, a grid meter where the command
// needs one, the platform rules of the spec. A command is eligible when at
// least one inverter can carry it now; offline inverters that could are
// named in a reason but do not make it ineligible (the command is applied
// when they are back).
func Eligible(cmd Command, devs []plant.DeviceLive) Eligibility {
	res := Eligibility{Command: cmd.Name}
	var unknown, dark, offline, platformMismatch, inverters int
	meter := false
	for _, d := range devs {
		if !d.Info.Active() {
			continue
		}
		if d.Info.Kind == plant.KindMeter && d.Discovered != nil && reachable(d) {
			meter = true
		}
		if d.Discovered == nil && (d.Info.Kind == plant.KindInverter || d.Info.Kind == "") {
			// Not discovered yet: an inverter, or a device configured
			// without a kind (known only from discovery) that may be one.
			// Offline (an inverter asleep at night): it may carry the
			// command when it answers.
			if d.Comm.State == poller.StateOffline {
				dark++
			} else {
				unknown++
			}
			continue
		}
		if d.Info.Kind != plant.KindInverter {
			continue
		}
		inverters++
		if (cmd.ClassicOnly && d.Discovered.Platform != devices.PlatformClassic) ||
			(cmd.DEROnly && d.Discovered.Platform != devices.PlatformDER) {
			platformMismatch++
			continue
		}
		if !slices.Contains(d.Discovered.Capabilities, cmd.Cap) {
			continue
		}
		if _, ok := cmd.model(d.Discovered); !ok {
			continue
		}
		if !reachable(d) {
			offline++
			continue
		}
		res.Devices = append(res.Devices, d.Info.ID)
	}
	capable := len(res.Devices)
	switch {
	case capable > 0 && cmd.NeedsMeter && !meter:
		res.Devices = nil
		res.Reasons = append(res.Reasons, Reason{Code: ReasonNoGridMeter, Message: "the command needs an active grid meter that answers"})
	case capable > 0:
		res.Eligible = true
		if offline > 0 {
			res.Reasons = append(res.Reasons, Reason{Code: ReasonDevicesOffline, Message: fmt.Sprintf("%d capable inverter(s) offline: applied when they are back", offline)})
		}
	case offline > 0:
		res.Reasons = append(res.Reasons, Reason{Code: ReasonDevicesOffline, Message: fmt.Sprintf("every capable inverter (%d) is offline", offline)})
	case platformMismatch > 0 && cmd.ClassicOnly:
		res.Reasons = append(res.Reasons, Reason{Code: ReasonClassicOnly, Message: "the command is offered only for classic systems"})
	case platformMismatch > 0:
		res.Reasons = append(res.Reasons, Reason{Code: ReasonDEROnly, Message: "only the IEEE 1547 (7xx) models carry the command"})
	case dark > 0:
		res.Reasons = append(res.Reasons, Reason{Code: ReasonDevicesOffline, Message: fmt.Sprintf("%d inverter(s) offline and not discovered yet", dark)})
	case unknown > 0:
		res.Reasons = append(res.Reasons, Reason{Code: ReasonNotDiscovered, Message: fmt.Sprintf("%d inverter(s) not discovered yet", unknown)})
	case inverters == 0:
		res.Reasons = append(res.Reasons, Reason{Code: ReasonNoActiveDevices, Message: "the plant has no active inverter"})
	default:
		res.Reasons = append(res.Reasons, Reason{Code: ReasonNotSupported, Message: fmt.Sprintf("no active inverter exposes model %v", cmd.Models)})
	}
	return res
}

// carriers returns the active inverters that carry the command, reachable
// now or not: the devices a window must reach before it counts as applied.
func carriers(cmd Command, devs []plant.DeviceLive) []string {
	var ids []string
	for _, d := range devs {
		if d.Info.Kind != plant.KindInverter || !d.Info.Active() || d.Discovered == nil {
			continue
		}
		if (cmd.ClassicOnly && d.Discovered.Platform != devices.PlatformClassic) || (cmd.DEROnly && d.Discovered.Platform != devices.PlatformDER) {
			continue
		}
		if _, ok := cmd.model(d.Discovered); ok && slices.Contains(d.Discovered.Capabilities, cmd.Cap) {
			ids = append(ids, d.Info.ID)
		}
	}
	return ids
}

// reachable reports whether a device answered its last polls (online, or
// stale: one poll missed).
func reachable(d plant.DeviceLive) bool {
	return d.Comm.State == poller.StateOnline || d.Comm.State == poller.StateStale
}
