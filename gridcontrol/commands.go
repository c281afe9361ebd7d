package gridcontrol

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sunspec"
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

// The commands' names (spec §2.5), for code that names one.
const (
	CmdFeedInLimit  = "FeedInLimit"
	CmdDisconnect   = "OpModDisconnect"
	CmdMaxLimW      = "opModMaxLimW"
	CmdPFAbsorb     = "opModFixedPfAbsorbW"
	CmdPFInject     = "opModFixedPFInjectW"
	CmdFreqWatt     = "opModFreqWatt"
	CmdHfrtMustTrip = "opModHfrtMustTrip"
	CmdHvrtMustTrip = "opModHvrtMustTrip"
	CmdLfrtMustTrip = "opModLfrtMustTrip"
	CmdLvrtMustTrip = "opModLvrtMustTrip"
	CmdVoltVar      = "opModVoltVar"
	CmdVoltWatt     = "opModVoltWatt"
)

// Command describes one grid-control command of spec §2.5 / DESIGN §6:
// the one place that says, per command, which models carry it on each
// generation, what its value is and its range (Value; Axes for curves),
// which control on the device it drives (and so what plantd holds,
// renews, re-asserts and restores: controls.go, tamper.go), and its
// precedence (Value ValuePower: the most restrictive governs across
// roles and channels; otherwise the grid operator's window governs).
// Every window ends by restoring the control's default image read at
// first contact (the package doc).
type Command struct {
	Name string
	// Cap is the device capability the command needs.
	Cap sunspec.Capability
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
	// Control is the control on the device the command drives: the
	// limit for both limits (the lowest wins), one each for the connect
	// state and the power factors, the command's own for a curve.
	Control control
	// Axes are a curve command's axes with their units and plausible
	// ranges (nil for the others).
	Axes *curveAxes
}

// Commands is the table of grid-control commands, in spec order.
var Commands = []Command{
	{Name: CmdFeedInLimit, Cap: sunspec.CapPowerLimit, NeedsMeter: true, Value: ValuePower, Models: []uint16{123, 704}, Control: ctlLimit},
	{Name: CmdDisconnect, Cap: sunspec.CapConnect, ClassicOnly: true, Value: ValueNone, Models: []uint16{123}, Control: ctlConnect},
	{Name: CmdMaxLimW, Cap: sunspec.CapPowerLimit, Value: ValuePower, Models: []uint16{123, 704}, Control: ctlLimit},
	{Name: CmdPFAbsorb, Cap: sunspec.CapPowerFactor, DEROnly: true, Value: ValuePF, Models: []uint16{704}, Control: ctlPFAbs},
	{Name: CmdPFInject, Cap: sunspec.CapPowerFactor, Value: ValuePF, Models: []uint16{123, 704}, Control: ctlPFInj},
	{Name: CmdFreqWatt, Cap: sunspec.CapFreqWatt, Value: ValueCurve, Models: []uint16{134, 127, 711}, Control: CmdFreqWatt,
		Axes: &curveAxes{x: curveAxis{name: "frequency", point: "x", unit: "Hz", min: 40, max: 70}, y: pctOfMax("active power")}},
	{Name: CmdHfrtMustTrip, Cap: sunspec.CapHFRT, Value: ValueCurve, Models: []uint16{136, 710}, Control: CmdHfrtMustTrip,
		Axes: &curveAxes{x: tripTime, y: tripHz}},
	{Name: CmdHvrtMustTrip, Cap: sunspec.CapHVRT, Value: ValueCurve, Models: []uint16{130, 708}, Control: CmdHvrtMustTrip,
		Axes: &curveAxes{x: tripTime, y: voltAxis("y", 100, 200)}},
	{Name: CmdLfrtMustTrip, Cap: sunspec.CapLFRT, Value: ValueCurve, Models: []uint16{135, 709}, Control: CmdLfrtMustTrip,
		Axes: &curveAxes{x: tripTime, y: tripHz}},
	{Name: CmdLvrtMustTrip, Cap: sunspec.CapLVRT, Value: ValueCurve, Models: []uint16{129, 707}, Control: CmdLvrtMustTrip,
		Axes: &curveAxes{x: tripTime, y: voltAxis("y", 0, 100)}},
	{Name: CmdVoltVar, Cap: sunspec.CapVoltVar, Value: ValueCurve, Models: []uint16{126, 705}, Control: CmdVoltVar,
		Axes: &curveAxes{x: voltAxis("x", 50, 150), y: pctOfMax("reactive power")}},
	{Name: CmdVoltWatt, Cap: sunspec.CapVoltWatt, Value: ValueCurve, Models: []uint16{132, 706}, Control: CmdVoltWatt,
		Axes: &curveAxes{x: voltAxis("x", 50, 150), y: pctOfMax("active power")}},
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
func (c Command) model(d *sunspec.Device) (sunspec.ModelRef, bool) {
	for _, id := range c.Models {
		if ref, ok := d.Ref(id); ok {
			return ref, true
		}
	}
	return sunspec.ModelRef{}, false
}

// Eligibility is the result of the eligibility check for one command.
type Eligibility struct {
	Command  string   `json:"command"`
	Eligible bool     `json:"eligible"`
	Reasons  []Reason `json:"reasons,omitempty"`
	// Devices are the inverters that would carry the command now (ids;
	// clients parse a list of strings here).
	Devices []string `json:"devices,omitempty"`
	// Partial is set when the command is eligible but some active
	// inverters will not act on it (Inverters says which and why).
	Partial bool `json:"partial,omitempty"`
	// Coverage is the share (0..1) of the active inverters' rated power
	// that acts on the command (absent when no rating is known).
	Coverage *float64 `json:"coverage,omitempty"`
	// Inverters are the plant's active inverters, each with whether it
	// acts on the command (Assess only).
	Inverters []InverterCoverage `json:"inverters,omitempty"`
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
	// ReasonNotEveryInverter: all or nothing was asked (requireAll) and
	// some active inverter does not act on the command.
	ReasonNotEveryInverter = "NotEveryInverter"
	// ReasonNoRevertToDefault (a note on an acting inverter): a limit on
	// model 123 cannot revert to the inverter's own default limit if
	// plantd dies (see the package doc).
	ReasonNoRevertToDefault = "NoReversionToDefault"
)

// verdict is what one device is to a command.
type verdict int

const (
	notInverter         verdict = iota // not an active inverter: not counted
	undiscovered                       // models unknown yet
	undiscoveredOffline                // models unknown, and not answering (an inverter asleep at night)
	platformMismatch                   // the platform rule of the command excludes it
	noModel                            // no model that carries the command
	capableOffline                     // carries it, not reachable now
	capable                            // carries it, reachable now
)

// classify says what a device is to a command.
func classify(cmd Command, d plant.DeviceLive) verdict {
	if cmd.Control == ctlBattery {
		return classifyBattery(cmd, d)
	}
	switch {
	case !d.Info.Active():
		return notInverter
	case sunspecOf(d.Discovered) == nil && (d.Info.Kind == kind.Inverter || d.Info.Kind == ""):
		// Not discovered yet: an inverter, or a device configured without
		// a kind (known only from discovery) that may be one. Offline (an
		// inverter asleep at night), it may carry the command when it
		// answers.
		if d.Comm.State == plant.StateOffline {
			return undiscoveredOffline
		}
		return undiscovered
	case d.Info.Kind != kind.Inverter:
		return notInverter
	case (cmd.ClassicOnly && sunspecOf(d.Discovered).Platform != sunspec.PlatformClassic) ||
		(cmd.DEROnly && sunspecOf(d.Discovered).Platform != sunspec.PlatformDER):
		return platformMismatch
	case !slices.Contains(sunspecOf(d.Discovered).Capabilities, cmd.Cap):
		return noModel
	}
	if _, ok := cmd.model(sunspecOf(d.Discovered)); !ok {
		return noModel
	}
	if !reachable(d) {
		return capableOffline
	}
	return capable
}

// Eligible checks one command against a plant's devices: the active
// inverters that expose a model carrying it, a grid meter where the command
// needs one, the platform rules of the spec. A command is eligible when at
// least one inverter can carry it now; offline inverters that could are
// named in a reason but do not make it ineligible (the command is applied
// when they are back). Assess adds which inverters act and which do not.
func Eligible(cmd Command, devs []plant.DeviceLive) Eligibility {
	res := Eligibility{Command: cmd.Name}
	var unknown, dark, offline, mismatch, inverters int
	meter := false
	for _, d := range devs {
		if d.Info.GridMeter() && d.Info.Active() && sunspecOf(d.Discovered) != nil && reachable(d) {
			meter = true
		}
		v := classify(cmd, d)
		if v != notInverter && v != undiscovered && v != undiscoveredOffline {
			inverters++
		}
		switch v {
		case undiscovered:
			unknown++
		case undiscoveredOffline:
			dark++
		case platformMismatch:
			mismatch++
		case capableOffline:
			offline++
		case capable:
			res.Devices = append(res.Devices, d.Info.ID)
		}
	}
	capableN := len(res.Devices)
	switch {
	case capableN > 0 && cmd.NeedsMeter && !meter:
		res.Devices = nil
		res.Reasons = append(res.Reasons, Reason{Code: ReasonNoGridMeter, Message: "the command needs an active grid meter that answers"})
	case capableN > 0:
		res.Eligible = true
		if offline > 0 {
			res.Reasons = append(res.Reasons, Reason{Code: ReasonDevicesOffline, Message: fmt.Sprintf("%d capable inverter(s) offline: applied when they are back", offline)})
		}
	case offline > 0:
		res.Reasons = append(res.Reasons, Reason{Code: ReasonDevicesOffline, Message: fmt.Sprintf("every capable inverter (%d) is offline", offline)})
	case mismatch > 0 && cmd.ClassicOnly:
		res.Reasons = append(res.Reasons, Reason{Code: ReasonClassicOnly, Message: "the command is offered only for classic systems"})
	case mismatch > 0:
		res.Reasons = append(res.Reasons, Reason{Code: ReasonDEROnly, Message: "only the IEEE 1547 (7xx) models carry the command"})
	case dark > 0:
		res.Reasons = append(res.Reasons, Reason{Code: ReasonDevicesOffline, Message: fmt.Sprintf("%d inverter(s) offline and not discovered yet", dark)})
	case unknown > 0:
		res.Reasons = append(res.Reasons, Reason{Code: ReasonNotDiscovered, Message: fmt.Sprintf("%d inverter(s) not discovered yet", unknown)})
	case inverters == 0 && cmd.Control == ctlBattery:
		res.Reasons = append(res.Reasons, Reason{Code: ReasonNoActiveDevices, Message: "the plant has no active battery (nor a hybrid inverter with model 124)"})
	case inverters == 0:
		res.Reasons = append(res.Reasons, Reason{Code: ReasonNoActiveDevices, Message: "the plant has no active inverter"})
	default:
		res.Reasons = append(res.Reasons, Reason{Code: ReasonNotSupported, Message: fmt.Sprintf("no active inverter exposes model %v", cmd.Models)})
	}
	return res
}

// Assess is Eligible with the answer per active inverter: whether it acts
// on the command (now, or when it is back if it is offline) and why not,
// the share of the plant's rated power that acts, and whether that is only
// part of the plant. A command the plant cannot carry at all is not
// partial: it is not eligible.
func Assess(cmd Command, devs []plant.DeviceLive) Eligibility {
	res := Eligible(cmd, devs)
	noMeter := !res.Eligible && len(res.Reasons) > 0 && res.Reasons[0].Code == ReasonNoGridMeter
	res.Inverters, res.Coverage = coverage(cmd, devs, noMeter)
	res.Partial = res.Eligible && !res.whole()
	return res
}

// coverage answers per active inverter whether it acts on the command
// (noMeter: the command lacks the grid meter it needs, so none does) and
// the share of their rated power that acts.
func coverage(cmd Command, devs []plant.DeviceLive, noMeter bool) ([]InverterCoverage, *float64) {
	var inverters []InverterCoverage
	var total, acting float64
	for _, d := range devs {
		v := classify(cmd, d)
		if v == notInverter {
			continue
		}
		ic := InverterCoverage{DeviceID: d.Info.ID}
		if sunspecOf(d.Discovered) != nil {
			ic.RatedPowerW = sunspecOf(d.Discovered).RatedPowerW
		}
		switch v {
		case undiscovered:
			ic.Reason = &Reason{Code: ReasonNotDiscovered, Message: "not discovered yet: its models are unknown"}
		case undiscoveredOffline:
			ic.Reason = &Reason{Code: ReasonDevicesOffline, Message: "offline and not discovered yet: whether it carries the command is known when it answers"}
		case platformMismatch:
			if cmd.ClassicOnly {
				ic.Reason = &Reason{Code: ReasonClassicOnly, Message: "a newer-platform (IEEE 1547, 7xx) inverter: the command is offered only for classic systems"}
			} else {
				ic.Reason = &Reason{Code: ReasonDEROnly, Message: "a classic inverter: only the IEEE 1547 (7xx) models carry the command"}
			}
		case noModel:
			ic.Reason = &Reason{Code: ReasonNotSupported, Message: fmt.Sprintf("exposes none of the models %v that carry the command", cmd.Models)}
		case capableOffline, capable:
			ic.Acts = !noMeter
			if _, der := sunspecOf(d.Discovered).Ref(704); ic.Acts && cmd.Cap == sunspec.CapPowerLimit && !der {
				ic.Note = &Reason{Code: ReasonNoRevertToDefault, Message: "model 123 reverts a limit to none, not to the inverter's default: where that default is a limit (an installer's, or the configured one), plantd writes windows without a reversion time, so a window's limit stays if plantd stops, until it runs again"}
			}
			if noMeter {
				ic.Reason = &Reason{Code: ReasonNoGridMeter, Message: "the command needs an active grid meter that answers"}
			} else if v == capableOffline {
				ic.Reason = &Reason{Code: ReasonDevicesOffline, Message: "offline now: the command is applied when it is back"}
			}
		}
		total += ic.RatedPowerW
		if ic.Acts {
			acting += ic.RatedPowerW
		}
		inverters = append(inverters, ic)
	}
	if total == 0 {
		return inverters, nil
	}
	share := math.Round(acting/total*1000) / 1000
	return inverters, &share
}

// AllOrNothing is the answer to a request that asks for every active
// inverter (on: requireAll): a command that is partial, or that an
// offline inverter would take only when it is back, is then not eligible,
// with reason NotEveryInverter first. Off, e is returned as it is.
func (e Eligibility) AllOrNothing(on bool) Eligibility {
	if !on || !e.Eligible || e.actsNowEverywhere() {
		return e
	}
	e.Eligible, e.Partial = false, false
	e.Reasons = append([]Reason{{Code: ReasonNotEveryInverter, Message: "not every active inverter acts on the command (all or nothing was asked): " + e.Describe()}}, e.Reasons...)
	return e
}

// Describe says in one line which share of the plant's rated power the
// command governs and which inverters do not act, for the plant log and
// for refusals of an all-or-nothing request.
func (e Eligibility) Describe() string {
	var acting, total float64
	var acts, later, not []string
	for _, ic := range e.Inverters {
		total += ic.RatedPowerW
		if ic.Acts {
			acting += ic.RatedPowerW
			if ic.Reason != nil {
				later = append(later, fmt.Sprintf("%s (%s)", ic.DeviceID, ic.Reason.Code))
				continue
			}
			acts = append(acts, ic.DeviceID)
			continue
		}
		why := "unknown"
		if ic.Reason != nil {
			why = ic.Reason.Code
		}
		not = append(not, fmt.Sprintf("%s (%s)", ic.DeviceID, why))
	}
	share := ""
	if total > 0 {
		share = fmt.Sprintf(" (%.0f %%)", acting/total*100)
	}
	s := fmt.Sprintf("%s governs %g of %g W%s of the plant's active inverters", e.Command, acting, total, share)
	if len(acts) > 0 {
		s += "; acting: " + strings.Join(acts, ", ")
	}
	if len(later) > 0 {
		s += "; acting once back: " + strings.Join(later, ", ")
	}
	if len(not) > 0 {
		s += "; not acting: " + strings.Join(not, ", ")
	}
	return s
}

// carriers returns the active inverters that carry the command, reachable
// now or not: the devices a window must reach before it counts as applied.
func carriers(cmd Command, devs []plant.DeviceLive) []string {
	var ids []string
	for _, d := range devs {
		if v := classify(cmd, d); v == capable || v == capableOffline {
			ids = append(ids, d.Info.ID)
		}
	}
	return ids
}

// reachable reports whether a device answered its last polls (online, or
// stale: one poll missed).
func reachable(d plant.DeviceLive) bool {
	return d.Comm.State == plant.StateOnline || d.Comm.State == plant.StateStale
}
