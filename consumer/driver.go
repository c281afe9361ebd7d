package consumer

import (
	"context"
	"errors"
	"time"
)

// Output is a consumer's output as commanded or read back: a plain switch
// uses On; an SG-Ready heat pump uses SGReady (1..4, see the SG constants)
// and On is then true for states 3 and 4 (the pump is asked to run).
type Output struct {
	On      bool
	SGReady int
}

// The SG-Ready operating states (Bundesverband Wärmepumpe's label): the
// two relay contacts (A, B) give 1 = (1, 0) utility lock, 2 = (0, 0)
// normal, 3 = (0, 1) switch-on recommended, 4 = (1, 1) switch-on forced.
const (
	SGLocked    = 1
	SGNormal    = 2
	SGRecommend = 3
	SGForced    = 4
)

// Reading is one poll of a consumer's device.
type Reading struct {
	// Output is the output read back from the device.
	Output Output
	// PowerW and EnergyWh (lifetime) where the device measures them.
	PowerW    float64
	HasPower  bool
	EnergyWh  float64
	HasEnergy bool
}

// Driver is the hardware of one consumer: a relay output of a Modbus I/O
// module, an SG-Ready relay pair, a Shelly plug. A driver is used by one
// goroutine at a time (the consumer's own loop).
type Driver interface {
	// Read reads the output back and, where the device measures them,
	// power and lifetime energy.
	Read(ctx context.Context) (Reading, error)
	// Set puts the output in the given state and, where the device has
	// one, arms its watchdog: the device falls back to its safe state
	// (off; SG-Ready: normal) by itself when plantd stops renewing it for
	// the watchdog time. The loop calls Set on every change and again at
	// least every third of Watchdog() while the output is not safe.
	Set(ctx context.Context, out Output) error
	// Watchdog is the device's fail-safe time (0: it has none, the output
	// stays where it was when plantd dies).
	Watchdog() time.Duration
	// Close releases the driver's connections.
	Close() error
}

// ErrBadAnswer is the class of a device's answer that makes no sense (a
// Shelly's garbage JSON, a relay count that does not match): the poll
// fails with it wrapped, the consumer is marked stale/offline as any
// failing device.
var ErrBadAnswer = errors.New("consumer: device answer makes no sense")
