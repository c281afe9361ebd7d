package plant

import (
	"strings"
	"time"
)

// Sample is the outcome of one poll of one device: its readings in the
// domain's words, or the reason the poll failed. A poller
// (plantd/devices/poller) emits one Sample per device per poll and hands
// it to [Live.Apply]; the device layer (plantd/devices/channels) maps its
// points to channels, a status and a nameplate before, so that plant
// knows no SunSpec model.
type Sample struct {
	// Device is the configured device id.
	Device string
	// Time is when the poll's answer arrived (UTC).
	Time time.Time
	// Nameplate is what discovery learned of the device (identity, kind,
	// ratings, the channels it feeds); nil until the device was discovered
	// once. It is shared between samples and never modified: a new
	// discovery gives a new one.
	Nameplate *Nameplate
	// Discovered is the device layer's own description of the device (for
	// a SunSpec device its *sunspec.Device), which plant keeps for grid
	// control ([DeviceLive.Discovered]) and never looks into; nil until
	// discovered, set with Nameplate.
	Discovered Discovery
	// Readings are the channel values of the poll, in the channels' units
	// and signs (plant/doc.go), each plain channel at most once: the
	// device layer's mapping of its SunSpec models or its template's
	// points. Non-nil (perhaps empty) for every successful poll of a
	// polled device, nil otherwise. They are the poller's buffer, valid
	// until the sink returns.
	Readings []Reading
	// Status is what the device's state and event points said in this
	// poll (zero: nothing).
	Status DeviceStatus
	// Registers are the registers of the models the poll read (for a
	// SunSpec device: id and registers, header included), the poller's
	// buffers valid until the sink returns: Live copies those of the
	// control models (123, 704) for [Live.PolledRegs].
	Registers []ModelRegisters
	// Consumer is the reading of a consumer device (kind consumer, polled
	// by plantd/consumer instead of the SunSpec poller); nil for every
	// other device and when Err is set. Nameplate and Readings are then
	// nil.
	Consumer *ConsumerReading
	// Err is why the poll failed (unreachable, timeout, garbage answer,
	// exception); nil on success. A timeout is an error in whose chain
	// one has a method Timeout() that returns true (net.Error's timeouts,
	// context.DeadlineExceeded, plantd/modbus's ErrTimeout).
	Err error
	// State is the device's communication state after this poll.
	State CommState
	// Duration is how long the poll took on the wall clock (discovery and
	// a retry included).
	Duration time.Duration
}

// Discovery is the device layer's description of a discovered device, as
// plant carries it for the packages that speak the device's protocol
// (grid control type-asserts it to *sunspec.Device). plant only asks
// whether the device has a model; it imports nothing of the SunSpec layer.
type Discovery interface {
	Has(model uint16) bool
}

// ModelRegisters are one model's registers as a poll read them.
type ModelRegisters struct {
	Model uint16
	Regs  []uint16
}

// CommState is a device's communication state.
type CommState int

// The communication states. A device starts Unknown, is Online while polls
// succeed, Stale after a failed poll while its last values are younger than
// three poll intervals, and Offline after that or when it cannot be
// reached at all. The poller decides the state of each poll (it knows the
// intervals); [Live.Apply] finds the changes.
const (
	StateUnknown CommState = iota
	StateOnline
	StateStale
	StateOffline
)

var stateNames = [...]string{"unknown", "online", "stale", "offline"}

// String returns "online", "stale", "offline" or "unknown".
func (s CommState) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// SwitchingState is a consumer's output as the live device lists show it
// (switchingState): On or Off.
type SwitchingState string

// The switching states.
const (
	SwitchedOn  SwitchingState = "On"
	SwitchedOff SwitchingState = "Off"
)

// ConsumerMode is who decides a consumer's output: the surplus controller
// (Auto) or the installer (On, Off: held against surplus and must-run
// windows; a safety guard still applies). A charger has a fourth, MinPV;
// its modes carry evcc's words too: Now is On (the maximum current), PV
// is Auto (surplus only), MinPV charges at the minimum current always and
// more with surplus. A charger's Plan (evcc's plans) charges a target by
// a deadline in the day-ahead plan's cheapest slots and on surplus in the
// others; it is set with its target (ChargePlan), never by a word alone,
// so ParseConsumerMode does not accept it.
type ConsumerMode string

// The consumer modes.
const (
	ModeAuto  ConsumerMode = "Auto"
	ModeOn    ConsumerMode = "On"
	ModeOff   ConsumerMode = "Off"
	ModeMinPV ConsumerMode = "MinPV"
	ModePlan  ConsumerMode = "Plan"
)

// ParseConsumerMode accepts Auto, On, Off or MinPV, and a charger's Now
// (On) and PV (Auto), in any letter case.
func ParseConsumerMode(s string) (ConsumerMode, bool) {
	for _, m := range []ConsumerMode{ModeAuto, ModeOn, ModeOff, ModeMinPV} {
		if strings.EqualFold(s, string(m)) {
			return m, true
		}
	}
	switch {
	case strings.EqualFold(s, "Now"):
		return ModeOn, true
	case strings.EqualFold(s, "PV"):
		return ModeAuto, true
	}
	return "", false
}

// ConsumerReading is one poll of a consumer: its output and, where
// measured or estimated, its power and lifetime energy.
type ConsumerReading struct {
	// Switch is the output read back from the device.
	Switch SwitchingState
	// SGReady is an SG-Ready heat pump's operating state 1..4 (1 locked,
	// 2 normal, 3 recommended on, 4 forced on) read back from its two
	// relays; 0 for other consumers.
	SGReady int
	// PowerW is the consumption in W (≥ 0); HasPower false when unknown.
	PowerW   float64
	HasPower bool
	// EnergyWh is the lifetime energy counter in Wh; HasEnergy false when
	// unknown.
	EnergyWh  float64
	HasEnergy bool
	// Estimated is set when PowerW and EnergyWh come from the rated power
	// while on, not from a meter.
	Estimated bool
	// CurrentA is a charger's charging current per phase as plantd's
	// last accepted profile allows, on Phases; 0 for other consumers.
	CurrentA float64
	Phases   int
	// ChargerStatus is a charger's OCPP connector status ("" for other
	// consumers); VehicleSoC the car's state of charge (%) where the
	// charger reports it.
	ChargerStatus string
	VehicleSoC    float64
	HasVehicleSoC bool
}

// PollStats counts one device's polls: the SunSpec poller's and the home
// energy manager's, exported at /metrics.
type PollStats struct {
	ID        string
	State     CommState
	Polls     uint64 // polls attempted
	Successes uint64
	LastError string
	LastPoll  time.Time
	// LastDuration is how long the last poll took.
	LastDuration time.Duration
}
