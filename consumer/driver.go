package consumer

import (
	"context"
	"errors"
	"plantd/plant"
	"time"
)

// Setpoint is what kind of output a driver takes: the decision gives a
// switch on or off, an SG-Ready state, or a charging current.
type Setpoint int

// The setpoint kinds.
const (
	// SetpointSwitch: Output.On (a relay, a Shelly).
	SetpointSwitch Setpoint = iota + 1
	// SetpointSGReady: Output.SGReady, 1..4 (an SG-Ready relay pair).
	SetpointSGReady
	// SetpointCurrent: Output.CurrentA on Output.Phases (an EV charger):
	// 0 A pauses charging, else at least the charger's minimum.
	SetpointCurrent
)

// Output is a consumer's setpoint, as commanded or read back. A plain
// switch uses On; an SG-Ready heat pump uses SGReady (1..4, see the SG
// constants) and On is then true for states 3 and 4 (the pump is asked to
// run); a charger uses CurrentA (A per phase) and Phases (1 or 3), and On
// is then true for a current above 0. Outputs compare with ==.
type Output struct {
	On       bool
	SGReady  int
	CurrentA float64
	Phases   int
}

// The SG-Ready states (plant.SGLocked..SGForced) under consumer's name,
// for the drivers, which do not import plant.
const (
	SGLocked    = plant.SGLocked
	SGNormal    = plant.SGNormal
	SGRecommend = plant.SGRecommend
	SGForced    = plant.SGForced
)

// Reading is one poll of a consumer's device.
type Reading struct {
	// Output is the output read back from the device (a charger: the
	// current plantd's last accepted profile allows).
	Output Output
	// PowerW and EnergyWh (lifetime) where the device measures them.
	PowerW    float64
	HasPower  bool
	EnergyWh  float64
	HasEnergy bool
	// Charger is a charger's session state; nil for other consumers.
	Charger *ChargerState
}

// ChargerState is what a charger tells of its connector and car.
type ChargerState struct {
	// Status is the connector's OCPP status (Available, Preparing,
	// Charging, SuspendedEV, SuspendedEVSE, Finishing, Faulted,
	// Unavailable); "" unknown.
	Status string
	// Plugged: a car is connected (any status but Available,
	// Unavailable, Faulted and "").
	Plugged bool
	// SoC is the car's state of charge (%) where the charger reports it.
	SoC    float64
	HasSoC bool
}

// Driver is the hardware of one consumer: a relay output of a Modbus I/O
// module, an SG-Ready relay pair, a Shelly plug, an OCPP charger (the
// drivers are in package consumer/drivers). A driver is used by one
// goroutine at a time (the consumer's own loop).
type Driver interface {
	// Read reads the output back and, where the device measures them,
	// power and lifetime energy.
	Read(ctx context.Context) (Reading, error)
	// Set puts the output in the given state and, where the device has
	// one, arms its watchdog: the device falls back to Fallback by itself
	// when plantd stops renewing it for the watchdog time. The loop calls
	// Set on every change and again at least every third of Watchdog()
	// while the output is not Fallback.
	Set(ctx context.Context, out Output) error
	// Watchdog is the device's fail-safe time (0: it has none, the output
	// stays where it was when plantd dies).
	Watchdog() time.Duration
	// Fallback is the output the device falls to by itself when plantd
	// goes quiet: off; SG-Ready: normal (2); a charger: its fallback
	// current.
	Fallback() Output
	// Close releases the driver's connections.
	Close() error
}

// ErrBadAnswer is the class of a device's answer that makes no sense (a
// Shelly's garbage JSON, a relay count that does not match): the poll
// fails with it wrapped, the consumer is marked stale/offline as any
// failing device.
var ErrBadAnswer = errors.New("consumer: device answer makes no sense")
