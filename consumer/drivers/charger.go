package drivers

import (
	"context"
	"fmt"
	"time"

	"plantd/consumer"
)

// ChargerConfig is one OCPP charger as its driver drives it.
type ChargerConfig struct {
	// ID is the charge point's identity at the central system.
	ID string
	// Phases it charges on (1 or 3).
	Phases int
	// Fallback is the current (A) of the default profile the central
	// system installs at connection: what the charger charges with when
	// plantd goes quiet.
	Fallback float64
	// Validity is how long each current plantd sets holds (the
	// profile's validTo); the manager renews it every third of it.
	Validity time.Duration
}

// Charger drives an EV charger through the OCPP central system: Read is
// the state the charger last reported (no request), Set sets the current
// with a charging profile valid for Validity, above the fallback profile
// the central system installed, so the charger falls back by itself when
// plantd stops renewing it.
type Charger struct {
	cps ChargePoints
	cfg ChargerConfig
}

var _ consumer.Driver = (*Charger)(nil)

// NewCharger returns the driver of one charger of cps.
func NewCharger(cps ChargePoints, cfg ChargerConfig) (*Charger, error) {
	switch {
	case cps == nil:
		return nil, fmt.Errorf("%w: charger %s: no central system", ErrConfig, cfg.ID)
	case cfg.ID == "":
		return nil, fmt.Errorf("%w: charger without a charge point id", ErrConfig)
	case cfg.Phases != 1 && cfg.Phases != 3:
		return nil, fmt.Errorf("%w: charger %s: %d phases (want 1 or 3)", ErrConfig, cfg.ID, cfg.Phases)
	case cfg.Validity <= 0:
		return nil, fmt.Errorf("%w: charger %s: profile validity %v", ErrConfig, cfg.ID, cfg.Validity)
	}
	return &Charger{cps: cps, cfg: cfg}, nil
}

// Read returns the charger's last reported state.
func (c *Charger) Read(context.Context) (consumer.Reading, error) {
	r, err := c.cps.Reading(c.cfg.ID)
	if err != nil {
		return consumer.Reading{}, fmt.Errorf("charger %s: %w", c.cfg.ID, err)
	}
	return r, nil
}

// Set sets the charging current (0 A pauses).
func (c *Charger) Set(ctx context.Context, out consumer.Output) error {
	phases := out.Phases
	if phases == 0 {
		phases = c.cfg.Phases
	}
	if err := c.cps.SetCurrent(ctx, c.cfg.ID, out.CurrentA, phases); err != nil {
		return fmt.Errorf("charger %s: set %.1f A on %d phases: %w", c.cfg.ID, out.CurrentA, phases, err)
	}
	return nil
}

// Watchdog is the profile's validity.
func (c *Charger) Watchdog() time.Duration { return c.cfg.Validity }

// Fallback is the default profile's current.
func (c *Charger) Fallback() consumer.Output {
	return consumer.Output{On: c.cfg.Fallback > 0, CurrentA: c.cfg.Fallback, Phases: c.cfg.Phases}
}

// Close does nothing: the central system owns the connection.
func (c *Charger) Close() error { return nil }
