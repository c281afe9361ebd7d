package drivers

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// WatchdogProfile says where a Modbus relay module keeps its
// communication watchdog: the holding registers a driver writes to arm it
// (the time, then the mode) and reads back to see it is still armed.
type WatchdogProfile struct {
	// Name names the module in errors ("EK9000").
	Name string
	// TimeReg holds the watchdog time in TimeUnit (1..MaxTime).
	TimeReg  uint16
	TimeUnit time.Duration
	MaxTime  time.Duration
	// EnableReg is the register that enables the watchdog, and
	// EnableValue the value that does.
	EnableReg   uint16
	EnableValue uint16
}

// EK9000Watchdog is the communication watchdog of Beckhoff's EK9000
// Modbus TCP bus coupler (its documentation, "Modbus interface",
// https://infosys.beckhoff.com/content/1033/ek9000/2743153419.html, and
// "Modbus configuration", .../2743146507.html): 0x1120 the watchdog time
// in ms (at most one minute), 0x1122 the type of watchdog (0 write
// telegram, 1 telegram, 2 disabled). The profile sets the write telegram
// watchdog: only writes to the outputs retrigger it, so an output stays
// on only while plantd keeps commanding it, not while anything merely
// polls the module. Once armed, the coupler's fallback (0x1123, default
// 0) sets every output to zero when the time passes without a write.
func EK9000Watchdog() WatchdogProfile {
	return WatchdogProfile{
		Name:     "EK9000",
		TimeReg:  0x1120,
		TimeUnit: time.Millisecond,
		MaxTime:  time.Minute,
		// 0x1122 = 0: write telegram watchdog.
		EnableReg:   0x1122,
		EnableValue: 0,
	}
}

// ErrConfig is wrapped by the errors of the driver constructors for an
// invalid setting.
var ErrConfig = errors.New("consumer: invalid driver config")

// watchdog arms a module's watchdog for a driver. A module's watchdog is
// the module's, shared by every output on it: drivers of outputs on one
// module must agree on its time.
type watchdog struct {
	c       ModbusClient
	profile WatchdogProfile
	time    time.Duration // 0: leave the module's watchdog alone
	units   uint16        // time in the profile's unit
	// armed: the driver wrote the profile since it started, or since a
	// read showed it lost (a module that restarted with its defaults).
	armed bool
	regs  []uint16 // read buffer
}

// newWatchdog checks the time against the profile.
func newWatchdog(c ModbusClient, p WatchdogProfile, d time.Duration) (*watchdog, error) {
	w := &watchdog{c: c, profile: p, time: d}
	if d == 0 {
		return w, nil
	}
	if p.TimeUnit <= 0 || p.MaxTime < p.TimeUnit {
		return nil, fmt.Errorf("%w: watchdog profile %q: time unit %v, max %v", ErrConfig, p.Name, p.TimeUnit, p.MaxTime)
	}
	if d < p.TimeUnit || d > p.MaxTime || d%p.TimeUnit != 0 {
		return nil, fmt.Errorf("%w: watchdog %v: want a multiple of %v within %v..%v (%s)",
			ErrConfig, d, p.TimeUnit, p.TimeUnit, p.MaxTime, p.Name)
	}
	n := d / p.TimeUnit
	if n > 0xFFFF {
		return nil, fmt.Errorf("%w: watchdog %v: %d units do not fit a register", ErrConfig, d, n)
	}
	w.units = uint16(n)
	return w, nil
}

// arm writes the watchdog time and then its mode, unless armed. The
// module starts the watchdog with the next write to its outputs, which
// the caller makes right after.
func (w *watchdog) arm(ctx context.Context) error {
	if w.time == 0 || w.armed {
		return nil
	}
	if err := w.c.WriteRegisters(ctx, w.profile.TimeReg, []uint16{w.units}); err != nil {
		return fmt.Errorf("arm %s watchdog: time: %w", w.profile.Name, err)
	}
	if err := w.c.WriteRegisters(ctx, w.profile.EnableReg, []uint16{w.profile.EnableValue}); err != nil {
		return fmt.Errorf("arm %s watchdog: enable: %w", w.profile.Name, err)
	}
	w.armed = true
	return nil
}

// check reads the watchdog registers back once armed and forgets the
// arming when they changed (the module restarted, someone reconfigured
// it), so that the next Set arms it again. One read when the registers
// are close, else two.
func (w *watchdog) check(ctx context.Context) error {
	if w.time == 0 || !w.armed {
		return nil
	}
	lo, hi := min(w.profile.TimeReg, w.profile.EnableReg), max(w.profile.TimeReg, w.profile.EnableReg)
	var timeV, enableV uint16
	if span := int(hi) - int(lo) + 1; span <= 8 {
		regs, err := w.c.ReadHoldingRegisters(ctx, lo, uint16(span), w.regs)
		if err != nil {
			return fmt.Errorf("read %s watchdog: %w", w.profile.Name, err)
		}
		w.regs = regs
		timeV, enableV = regs[w.profile.TimeReg-lo], regs[w.profile.EnableReg-lo]
	} else {
		for _, r := range []struct {
			reg uint16
			v   *uint16
		}{{w.profile.TimeReg, &timeV}, {w.profile.EnableReg, &enableV}} {
			regs, err := w.c.ReadHoldingRegisters(ctx, r.reg, 1, w.regs)
			if err != nil {
				return fmt.Errorf("read %s watchdog: %w", w.profile.Name, err)
			}
			w.regs = regs
			*r.v = regs[0]
		}
	}
	if timeV != w.units || enableV != w.profile.EnableValue {
		w.armed = false
	}
	return nil
}

// coilError names the coil of a failed request: exception 2 means the
// module has no such coil.
func coilError(op string, coils string, err error) error {
	if isIllegalDataAddress(err) {
		return fmt.Errorf("%s %s: the module has no such coil: %w", op, coils, err)
	}
	return fmt.Errorf("%s %s: %w", op, coils, err)
}
