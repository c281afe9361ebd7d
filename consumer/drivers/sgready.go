package drivers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"plantd/consumer"
)

// SGReadyConfig is an SG-Ready heat pump on two relay outputs of a
// Modbus TCP I/O module: contact A (the utility lock) and contact B (the
// switch-on recommendation).
type SGReadyConfig struct {
	// CoilA and CoilB are the coil addresses of the contacts (0-based);
	// adjacent coils are written with one request.
	CoilA, CoilB uint16
	// Watchdog and Profile are as in RelayConfig. The module's fallback
	// opens both contacts: state 2, normal operation.
	Watchdog time.Duration
	Profile  WatchdogProfile
}

// SGReady drives an SG-Ready heat pump's contact pair: Set writes both
// coils (function 15 when adjacent, else function 5 twice), Read decodes
// them into the state. The module measures neither power nor energy.
type SGReady struct {
	c      ModbusClient
	a, b   uint16
	wd     *watchdog
	bits   []bool
	single bool // the coils are too far apart for one read
}

var _ consumer.Driver = (*SGReady)(nil)

// ErrSGState is wrapped by SGReady.Set for a state outside 1..4.
var ErrSGState = errors.New("consumer: SG-Ready state outside 1..4")

// sgContacts are the contacts (A, B) of the states 1..4.
var sgContacts = [5][2]bool{
	consumer.SGLocked:    {true, false},
	consumer.SGNormal:    {false, false},
	consumer.SGRecommend: {false, true},
	consumer.SGForced:    {true, true},
}

// sgState is the state of the contacts (A, B).
func sgState(a, b bool) int {
	switch {
	case a && !b:
		return consumer.SGLocked
	case !a && !b:
		return consumer.SGNormal
	case !a && b:
		return consumer.SGRecommend
	default:
		return consumer.SGForced
	}
}

// NewSGReady returns the driver of the contact pair on the module behind
// c (a client of the daemon's modbus.Pool).
func NewSGReady(c ModbusClient, cfg SGReadyConfig) (*SGReady, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: SG-Ready: no modbus client", ErrConfig)
	}
	if cfg.CoilA == cfg.CoilB {
		return nil, fmt.Errorf("%w: SG-Ready: contacts A and B on the same coil %d", ErrConfig, cfg.CoilA)
	}
	wd, err := newWatchdog(c, profileOrDefault(cfg.Profile), cfg.Watchdog)
	if err != nil {
		return nil, fmt.Errorf("SG-Ready coils %d, %d: %w", cfg.CoilA, cfg.CoilB, err)
	}
	lo, hi := min(cfg.CoilA, cfg.CoilB), max(cfg.CoilA, cfg.CoilB)
	return &SGReady{c: c, a: cfg.CoilA, b: cfg.CoilB, wd: wd, single: hi-lo >= 16}, nil
}

// Read reads both contacts (one request unless they are far apart), then
// the watchdog's registers once armed.
func (s *SGReady) Read(ctx context.Context) (consumer.Reading, error) {
	a, b, err := s.readContacts(ctx)
	if err != nil {
		return consumer.Reading{}, coilError("read", s.name(), err)
	}
	if err := s.wd.check(ctx); err != nil {
		return consumer.Reading{}, err
	}
	st := sgState(a, b)
	return consumer.Reading{Output: consumer.Output{SGReady: st, On: st >= consumer.SGRecommend}}, nil
}

func (s *SGReady) readContacts(ctx context.Context) (a, b bool, err error) {
	if s.single {
		bits, err := s.c.ReadCoils(ctx, s.a, 1, s.bits)
		if err != nil {
			return false, false, err
		}
		a = bits[0]
		bits, err = s.c.ReadCoils(ctx, s.b, 1, bits)
		if err != nil {
			return false, false, err
		}
		s.bits = bits
		return a, bits[0], nil
	}
	lo, hi := min(s.a, s.b), max(s.a, s.b)
	bits, err := s.c.ReadCoils(ctx, lo, hi-lo+1, s.bits)
	if err != nil {
		return false, false, err
	}
	s.bits = bits
	return bits[s.a-lo], bits[s.b-lo], nil
}

// Set puts the pump in out.SGReady (1..4); 0 takes the state from out.On:
// on is SGRecommend, off SGNormal. It arms the watchdog if needed. Two
// separate writes go in the order that never passes through the lock or
// forced operation on the way to another state.
func (s *SGReady) Set(ctx context.Context, out consumer.Output) error {
	st := out.SGReady
	if st == 0 {
		st = consumer.SGNormal
		if out.On {
			st = consumer.SGRecommend
		}
	}
	if st < consumer.SGLocked || st > consumer.SGForced {
		return fmt.Errorf("set %s: %w: %d", s.name(), ErrSGState, out.SGReady)
	}
	if err := s.wd.arm(ctx); err != nil {
		return fmt.Errorf("%s: %w", s.name(), err)
	}
	want := sgContacts[st]
	var err error
	switch {
	case s.b == s.a+1:
		err = s.c.WriteCoils(ctx, s.a, want[:])
	case s.a == s.b+1:
		err = s.c.WriteCoils(ctx, s.b, []bool{want[1], want[0]})
	default:
		// Between the writes the pump sees (A new, B old) or (A old, B
		// new), whatever the state was. Closing A (states 1, 4) goes
		// last: (A old, B new) is then 1 or 2 on the way to 1, 3 or 4 on
		// the way to 4. Opening A (states 2, 3) goes first: (A new, B old)
		// is 2 or 3. So no switch passes through the lock or forced
		// operation on the way to another state.
		if want[0] {
			err = s.writeTwo(ctx, s.b, want[1], s.a, want[0])
		} else {
			err = s.writeTwo(ctx, s.a, want[0], s.b, want[1])
		}
	}
	if err != nil {
		return coilError("set", s.name(), err)
	}
	return nil
}

func (s *SGReady) writeTwo(ctx context.Context, c1 uint16, v1 bool, c2 uint16, v2 bool) error {
	if err := s.c.WriteCoil(ctx, c1, v1); err != nil {
		return err
	}
	return s.c.WriteCoil(ctx, c2, v2)
}

// Watchdog returns the configured fail-safe time.
func (s *SGReady) Watchdog() time.Duration { return s.wd.time }

// Close does nothing: the pool owns the connection.
func (s *SGReady) Close() error { return nil }

func (s *SGReady) name() string { return fmt.Sprintf("SG-Ready coils A %d, B %d", s.a, s.b) }

// Fallback is normal operation (2): the module's watchdog clears both
// contacts.
func (s *SGReady) Fallback() consumer.Output { return consumer.Output{SGReady: consumer.SGNormal} }
