package drivers

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"plantd/consumer"
)

// RelayConfig is one relay output of a Modbus TCP I/O module.
type RelayConfig struct {
	// Coil is the output's coil address on the module (0-based, as on
	// the wire).
	Coil uint16
	// Watchdog is the fail-safe time the driver arms in the module on its
	// first Set (0: the driver leaves the module's watchdog alone, and
	// the output stays where it is when plantd dies).
	Watchdog time.Duration
	// Profile locates the module's watchdog registers; the zero value
	// means EK9000Watchdog.
	Profile WatchdogProfile
}

// Relay drives one relay output (a coil) of a Modbus TCP I/O module: Read
// reads the coil with function 1, Set switches it with function 5. The
// module measures neither power nor energy.
type Relay struct {
	c    ModbusClient
	coil uint16
	wd   *watchdog
	bits []bool // read buffer
}

var _ consumer.Driver = (*Relay)(nil)

// NewRelay returns the driver of cfg.Coil on the module behind c (a
// client of the daemon's modbus.Pool, which owns the connection).
func NewRelay(c ModbusClient, cfg RelayConfig) (*Relay, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: relay: no modbus client", ErrConfig)
	}
	wd, err := newWatchdog(c, profileOrDefault(cfg.Profile), cfg.Watchdog)
	if err != nil {
		return nil, fmt.Errorf("relay coil %d: %w", cfg.Coil, err)
	}
	return &Relay{c: c, coil: cfg.Coil, wd: wd}, nil
}

// profileOrDefault is p, or the EK9000's for the zero value.
func profileOrDefault(p WatchdogProfile) WatchdogProfile {
	if p == (WatchdogProfile{}) {
		return EK9000Watchdog()
	}
	return p
}

// Read reads the coil back, then the watchdog's registers once armed.
func (r *Relay) Read(ctx context.Context) (consumer.Reading, error) {
	bits, err := r.c.ReadCoils(ctx, r.coil, 1, r.bits)
	if err != nil {
		return consumer.Reading{}, coilError("read", r.name(), err)
	}
	r.bits = bits
	if err := r.wd.check(ctx); err != nil {
		return consumer.Reading{}, err
	}
	return consumer.Reading{Output: consumer.Output{On: bits[0]}}, nil
}

// Set arms the watchdog if needed, then switches the coil (out.On).
func (r *Relay) Set(ctx context.Context, out consumer.Output) error {
	if out.SGReady != 0 {
		return fmt.Errorf("set %s: SG-Ready state %d on a plain relay", r.name(), out.SGReady)
	}
	if err := r.wd.arm(ctx); err != nil {
		return fmt.Errorf("%s: %w", r.name(), err)
	}
	if err := r.c.WriteCoil(ctx, r.coil, out.On); err != nil {
		return coilError("set", r.name(), err)
	}
	return nil
}

// Watchdog returns the configured fail-safe time.
func (r *Relay) Watchdog() time.Duration { return r.wd.time }

// Close does nothing: the pool owns the connection.
func (r *Relay) Close() error { return nil }

func (r *Relay) name() string { return "coil " + strconv.Itoa(int(r.coil)) }

// Fallback is off: the module's watchdog clears the coil.
func (r *Relay) Fallback() consumer.Output { return consumer.Output{} }
