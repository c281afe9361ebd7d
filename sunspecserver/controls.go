package sunspecserver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"plantd/devices"
	"plantd/gridcontrol"
	"plantd/modbus"
)

// The controls: one active power limit, shown by 123 (WMaxLimPct,
// WMaxLimPct_RvrtTms, WMaxLim_Ena) and 704 (WMaxLimPct, WMaxLimPctRvrtTms,
// WMaxLimPctEna) alike. A write to either becomes a schedule of grid
// control (opModMaxLimW in %): the master holds a window that ends
// RvrtTms after its write (24 h without RvrtTms), and every write
// renews it, so a master that stops renewing loses its limit. A write
// that changes nothing renews the window once a tenth of its length (at
// least a second) has passed since the last renewal: the same schedule
// goes on, its end moved (gridcontrol.Controller.Extend), so a master
// renewing every few seconds adds neither schedules nor log entries; the
// limit ends between 0.9 and 1 times RvrtTms after the master's last
// write. A renewal is not a new command: a newer window of the same role
// sent meanwhile (over HTTP, say) keeps precedence until it ends. A
// changed value or RvrtTms is a new window. Enable 0 cancels the window.

// noRevertWindow is the window of a limit written without RvrtTms.
const noRevertWindow = 24 * time.Hour

// limitTimeout bounds a write's trip through grid control.
const limitTimeout = 10 * time.Second

// control is the limit's state: the registers' meaning and the window
// that carries it.
type control struct {
	pct   float64 // WMaxLimPct, 0..100
	ena   bool    // WMaxLim_Ena / WMaxLimPctEna
	rvrtS uint32  // RvrtTms, s (0: none)

	held    string    // the schedule holding the limit, "" none
	heldEnd time.Time // the end of its window (grid control's clock)
	renewed time.Time // when it was submitted (grid control's clock)
}

func newControl() control { return control{pct: 100} }

// window is the length of the window a write makes.
func (c control) window() time.Duration {
	if c.rvrtS == 0 {
		return noRevertWindow
	}
	return time.Duration(c.rvrtS) * time.Second
}

// expire notes that the held window has ended: the limit reverted, the
// enable reads 0 again, as on a device whose reversion timer ran out.
func (c *control) expire(now time.Time) {
	if c.held != "" && !now.Before(c.heldEnd) {
		c.held, c.ena = "", false
	}
}

// store writes the state into both control models.
func (c control) store(img *image, now time.Time) error {
	ena := 0.0
	if c.ena {
		ena = 1
	}
	rem := 0.0
	if c.held != "" && c.rvrtS > 0 {
		rem = math.Ceil(max(0, c.heldEnd.Sub(now).Seconds()))
	}
	ctl, der := img.model(modelControls), img.model(modelDERCtl)
	return errors.Join(
		ctl.Set("WMaxLimPct", c.pct), ctl.Set("WMaxLim_Ena", ena), ctl.Set("WMaxLimPct_RvrtTms", float64(min(c.rvrtS, 0xFFFE))),
		der.Set("WMaxLimPct", c.pct), der.Set("WMaxLimPctEna", ena), der.Set("WMaxLimPctRvrtTms", float64(c.rvrtS)),
		der.Set("WMaxLimPctRvrtRem", rem),
	)
}

// decode reads the limit the registers of a control model hold after a
// write: an error when a value is out of range (exception 3).
func decode(inst *devices.Instance, c control) (control, error) {
	names := [3]string{"WMaxLimPct", "WMaxLimPct_RvrtTms", "WMaxLim_Ena"}
	if inst.Model.ID == modelDERCtl {
		names = [3]string{"WMaxLimPct", "WMaxLimPctRvrtTms", "WMaxLimPctEna"}
	}
	pct, err := inst.Value(names[0])
	if err != nil || !pct.OK || pct.Float < 0 || pct.Float > 100 {
		return c, fmt.Errorf("%d.%s = %v: %w: 0..100", inst.Model.ID, names[0], pct.Raw, errRange)
	}
	rv, err := inst.Value(names[1])
	if err != nil || !rv.OK {
		return c, fmt.Errorf("%d.%s = %v: %w: not a time", inst.Model.ID, names[1], rv.Raw, errRange)
	}
	ena, err := inst.Value(names[2])
	if err != nil || !ena.OK || ena.Raw > 1 {
		return c, fmt.Errorf("%d.%s = %v: %w: 0 (disabled) or 1 (enabled)", inst.Model.ID, names[2], ena.Raw, errRange)
	}
	c.pct, c.rvrtS, c.ena = pct.Float, uint32(rv.Raw), ena.Raw == 1
	return c, nil
}

// write stores a master's write into the controls: exception 1 when
// writes are off, 2 for a register that is not one of the limit's, 3 for
// a value out of range; then the limit goes to grid control (exception 4
// when it refuses). A refused write leaves the map as it was.
func (s *Server) write(req *modbus.Request) error {
	master := req.Client.String()
	by := gridcontrol.Origin{Door: gridcontrol.DoorModbus, Name: master, Role: s.cfg.Role, Channel: string(gridcontrol.DoorModbus) + ":" + master}
	if !s.cfg.Writes {
		s.log.Info("write refused", "client", req.Client.String(), "addr", req.Addr, "err", errNotPermitted)
		return modbus.Exception(modbus.ExceptionIllegalFunction)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	img := s.img
	off, ok := img.span(req.Addr, len(req.Regs))
	if !ok {
		return modbus.Exception(modbus.ExceptionIllegalDataAddress)
	}
	for i := range req.Regs {
		if !img.writable[off+i] {
			s.log.Info("write refused: read-only register", "client", req.Client.String(), "addr", int(req.Addr)+i)
			return modbus.Exception(modbus.ExceptionIllegalDataAddress)
		}
	}
	s.refreshLocked()
	var inst *devices.Instance
	for _, m := range img.models {
		if off >= m.off && off < m.off+len(m.inst.Regs) {
			inst = m.inst
		}
	}
	now := s.cfg.Now()
	s.scratch = append(s.scratch[:0], img.regs[off:off+len(req.Regs)]...)
	copy(img.regs[off:], req.Regs)
	next, err := decode(inst, s.ctl)
	if err == nil {
		err = s.apply(by, next, now)
	}
	if err != nil {
		copy(img.regs[off:], s.scratch)
		s.log.Info("write refused", "client", req.Client.String(), "addr", req.Addr, "err", err)
		var ve *gridcontrol.ValidationError
		if errors.Is(err, errRange) || (errors.As(err, &ve) && !ve.NotEligible) {
			return modbus.Exception(modbus.ExceptionIllegalDataValue)
		}
		// Not eligible (no inverter acts on the limit), or grid control
		// could not store it.
		return modbus.Exception(modbus.ExceptionServerDeviceFailure)
	}
	return s.ctl.store(img, now)
}

// errRange marks a value out of range.
var errRange = errors.New("value out of range")

// apply takes the new state of the limit to grid control: a new window
// when the limit is enabled and changed (or due for renewal), a cancel
// when it is disabled.
func (s *Server) apply(by gridcontrol.Origin, next control, now time.Time) error {
	cur := s.ctl
	ctx, cancel := context.WithTimeout(s.base(), limitTimeout)
	defer cancel()
	switch {
	case !next.ena:
		if cur.held != "" {
			err := s.grid.Cancel(ctx, s.cfg.PlantID, cur.held, by)
			if err != nil && !errors.Is(err, gridcontrol.ErrUnknownSchedule) {
				return fmt.Errorf("cancel schedule %s: %w", cur.held, err)
			}
			s.log.Info("limit lifted by the master", "client", by.Name, "schedule", cur.held)
		}
		next.held, next.heldEnd, next.renewed = "", time.Time{}, time.Time{}
	case cur.held != "" && next.pct == cur.pct && next.rvrtS == cur.rvrtS:
		if now.Sub(cur.renewed) < max(time.Second, next.window()/10) {
			break
		}
		// The same limit again: the held window goes on (no new
		// schedule, no log entry per renewal).
		end := now.Add(next.window())
		err := s.grid.Extend(ctx, s.cfg.PlantID, cur.held, end, by)
		if err == nil {
			next.renewed, next.heldEnd = now, end
			break
		}
		if !errors.Is(err, gridcontrol.ErrUnknownSchedule) {
			return fmt.Errorf("renew schedule %s: %w", cur.held, err)
		}
		// The window lapsed or was cancelled by someone else: a new one.
		if err := s.submit(ctx, by, &next, now); err != nil {
			return err
		}
	default:
		if err := s.submit(ctx, by, &next, now); err != nil {
			return err
		}
	}
	s.ctl = next
	return nil
}

// submit sends next's limit to grid control as a new window of
// next.window() from now and holds it in next.
func (s *Server) submit(ctx context.Context, by gridcontrol.Origin, next *control, now time.Time) error {
	pct := next.pct
	sc, err := s.grid.Submit(ctx, s.cfg.PlantID, by, []gridcontrol.Order{{Command: "opModMaxLimW", For: next.window(), Value: &pct, Unit: "%"}})
	if err != nil {
		return fmt.Errorf("limit %v %%: %w", next.pct, err)
	}
	next.held, next.renewed = sc.ScheduleID, now
	for _, cm := range sc.Commands {
		next.heldEnd = cm.End
	}
	s.log.Info("limit from the master", "client", by.Name, "pct", next.pct, "revertS", next.rvrtS, "schedule", sc.ScheduleID,
		"until", next.heldEnd.Format(time.RFC3339))
	return nil
}
