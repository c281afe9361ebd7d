package sunspecserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"time"

	"plantd/gridcontrol"
	"plantd/modbus"
	"plantd/sunspec"
)

// The controls: the active power limit, shown by 123 (WMaxLimPct,
// WMaxLimPct_RvrtTms, WMaxLim_Ena) and 704 (WMaxLimPct,
// WMaxLimPctRvrtTms, WMaxLimPctEna) alike.
//
// Each master (client address) has its own state of the limit and is a
// precedence channel of its own in grid control ("modbus:<address>"): a
// write to either model becomes a schedule of that channel
// (opModMaxLimW in %), a window that ends RvrtTms after the write (24 h
// without RvrtTms), and every write renews it, so a master that stops
// renewing loses its limit. A write that changes nothing renews the
// window once a tenth of its length (at least a second) has passed since
// the last renewal: the same schedule goes on, its end moved
// (gridcontrol.Controller.Extend), so a master renewing every few seconds
// adds neither schedules nor log entries; the limit ends between 0.9 and
// 1 times RvrtTms after the master's last write. A changed value or
// RvrtTms is a new window of the master's channel. Enable 0 cancels the
// master's own window and nothing else. The channels combine in grid
// control by the most restrictive limit, so no master loosens another's
// or anyone else's limit.
//
// A write is decoded against the writing master's own state (its last
// WMaxLimPct, RvrtTms and enable), so the usual sequence RvrtTms, then
// WMaxLimPct, then the enable works per master. Reads show the limit in
// force on the plant (gridcontrol.Controller.GoverningLimit), whoever set
// it, the same for every master; only RvrtTms reads back as the reading
// master wrote it, and the holder model says whose limit it is (see
// holder.go).

// noRevertWindow is the window of a limit written without RvrtTms.
const noRevertWindow = 24 * time.Hour

// limitTimeout bounds a write's trip through grid control.
const limitTimeout = 10 * time.Second

// The bound on the masters' states: at most maxMasters are kept; a
// master's state without a window is forgotten forgetAfter after its last
// write (longer than the modbus server's idle close: its connection is
// gone by then), one with a window once the window has ended and as long
// again has passed.
const (
	maxMasters  = 64
	forgetAfter = 10 * time.Minute
)

// errTooManyMasters refuses a new master's write while maxMasters states
// hold windows.
var errTooManyMasters = errors.New("too many masters hold limits")

// control is a master's state of the limit: the registers' meaning as it
// wrote them and the window that carries it.
type control struct {
	pct   float64 // WMaxLimPct, 0..100
	ena   bool    // WMaxLim_Ena / WMaxLimPctEna
	rvrtS uint32  // RvrtTms, s (0: none)

	held    string    // the master's schedule holding the limit, "" none
	heldEnd time.Time // the end of its window (grid control's clock)
	renewed time.Time // when it was submitted (grid control's clock)

	wrote time.Time // wall time of the master's last write
}

func newControl() control { return control{pct: 100} }

// window is the length of the window a write makes.
func (c control) window() time.Duration {
	if c.rvrtS == 0 {
		return noRevertWindow
	}
	return time.Duration(c.rvrtS) * time.Second
}

// expire notes that the held window has ended: the master's enable is 0
// again, as on a device whose reversion timer ran out.
func (c *control) expire(now time.Time) {
	if c.held != "" && !now.Before(c.heldEnd) {
		c.held, c.ena = "", false
	}
}

// storeOwn writes the master's own state into both control models, for
// decoding its write on top of it.
func (c control) storeOwn(img *image) error {
	ena := 0.0
	if c.ena {
		ena = 1
	}
	ctl, der := img.model(modelControls), img.model(modelDERCtl)
	return errors.Join(
		ctl.Set("WMaxLimPct", c.pct), ctl.Set("WMaxLim_Ena", ena), ctl.Set("WMaxLimPct_RvrtTms", float64(min(c.rvrtS, 0xFFFE))),
		der.Set("WMaxLimPct", c.pct), der.Set("WMaxLimPctEna", ena), der.Set("WMaxLimPctRvrtTms", float64(c.rvrtS)),
	)
}

// inForce is the limit in force on the plant as the map shows it.
type inForce struct {
	ok  bool
	lim gridcontrol.LimitInForce
}

// publish writes the limit in force into both control models and the
// holder model: WMaxLimPct (rounded to the whole per cent of
// WMaxLimPct_SF 0) and the enable 1 while a limit governs, else 100 and
// 0; RvrtRem the seconds until its window ends; RvrtTms 0 (each master
// reads its own: overlay).
func (f inForce) publish(img *image, now time.Time) error {
	pct, ena, rem := 100.0, 0.0, 0.0
	if f.ok {
		pct, ena = math.Round(math.Min(100, math.Max(0, f.lim.Pct))), 1
		rem = math.Min(math.Ceil(math.Max(0, f.lim.End.Sub(now).Seconds())), math.MaxUint32-1)
	}
	ctl, der := img.model(modelControls), img.model(modelDERCtl)
	return errors.Join(
		ctl.Set("WMaxLimPct", pct), ctl.Set("WMaxLim_Ena", ena), ctl.Set("WMaxLimPct_RvrtTms", 0),
		der.Set("WMaxLimPct", pct), der.Set("WMaxLimPctEna", ena), der.Set("WMaxLimPctRvrtTms", 0),
		der.Set("WMaxLimPctRvrtRem", rem), f.storeHolder(img),
	)
}

// decode reads the limit the registers of a control model hold after a
// write: an error when a value is out of range (exception 3).
func decode(inst *sunspec.Instance, c control) (control, error) {
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

// write stores a master's write into its own state of the limit:
// exception 1 when writes are off, 2 for a register that is not one of
// the limit's, 3 for a value out of range, 6 when maxMasters others hold
// windows; then the limit goes to grid control as the master's channel
// (exception 4 when it refuses). A refused write leaves the master's
// state as it was. The map shows the limit in force again afterwards.
func (s *Server) write(req *modbus.Request) error {
	master := req.Client.String()
	by := gridcontrol.Origin{Door: gridcontrol.DoorModbus, Name: master, Role: s.cfg.Role, Channel: string(gridcontrol.DoorModbus) + ":" + master}
	if !s.cfg.Writes {
		s.refusals.Log(slog.LevelInfo, req.Client.String(), "writes-off", "write refused", "addr", req.Addr, "err", errNotPermitted)
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
			s.refusals.Log(slog.LevelInfo, req.Client.String(), "read-only", "write refused: read-only register", "addr", int(req.Addr)+i)
			return modbus.Exception(modbus.ExceptionIllegalDataAddress)
		}
	}
	s.refreshLocked()
	var inst *sunspec.Instance
	for _, m := range img.models {
		if off >= m.off && off < m.off+len(m.inst.Regs) {
			inst = m.inst
		}
	}
	now, wall := s.cfg.Now(), time.Now()
	cur, err := s.masterLocked(req.Client, now, wall)
	if err != nil {
		s.refusals.Log(slog.LevelInfo, req.Client.String(), "masters-full", "write refused", "addr", req.Addr, "err", err, "masters", len(s.masters))
		return modbus.Exception(modbus.ExceptionServerDeviceBusy)
	}
	cur.expire(now)
	// The master's own view of the limit, its write on top of it; the map
	// shows the limit in force again below, whatever the outcome.
	err = cur.storeOwn(img)
	copy(img.regs[off:], req.Regs)
	var next control
	if err == nil {
		next, err = decode(inst, *cur)
	}
	if err == nil {
		err = s.apply(by, cur, next, now)
	}
	cur.wrote = wall
	if cur.held == "" && !cur.ena && cur.pct == 100 && cur.rvrtS == 0 {
		delete(s.masters, req.Client) // nothing to remember
	}
	s.publishLocked(now)
	if err != nil {
		s.refusals.Log(slog.LevelInfo, req.Client.String(), "refused", "write refused", "addr", req.Addr, "err", err)
		var ve *gridcontrol.ValidationError
		if errors.Is(err, errRange) || (errors.As(err, &ve) && !ve.NotEligible) {
			return modbus.Exception(modbus.ExceptionIllegalDataValue)
		}
		// Not eligible (no inverter acts on the limit), or grid control
		// could not store it.
		return modbus.Exception(modbus.ExceptionServerDeviceFailure)
	}
	return nil
}

// masterLocked returns the state of a master, a new one when it has
// none: first the states of masters gone (forgetLocked), then, with
// maxMasters still kept, the one written least recently of those holding
// no window makes room; errTooManyMasters when every one holds a window.
func (s *Server) masterLocked(a netip.Addr, now, wall time.Time) (*control, error) {
	if c, ok := s.masters[a]; ok {
		return c, nil
	}
	s.forgetLocked(now, wall)
	if len(s.masters) >= maxMasters {
		var oldest netip.Addr
		for m, c := range s.masters {
			if c.held == "" && (!oldest.IsValid() || c.wrote.Before(s.masters[oldest].wrote)) {
				oldest = m
			}
		}
		if !oldest.IsValid() {
			return nil, fmt.Errorf("%w: %d (at most %d)", errTooManyMasters, len(s.masters), maxMasters)
		}
		delete(s.masters, oldest)
	}
	c := newControl()
	c.wrote = wall
	s.masters[a] = &c
	return &c, nil
}

// forgetLocked drops the states of masters that hold no window and wrote
// nothing for forgetAfter.
func (s *Server) forgetLocked(now, wall time.Time) {
	for m, c := range s.masters {
		c.expire(now)
		if c.held == "" && wall.Sub(c.wrote) >= forgetAfter {
			delete(s.masters, m)
		}
	}
}

// errRange marks a value out of range.
var errRange = errors.New("value out of range")

// apply takes the master's new state of the limit to grid control: a new
// window of its channel when the limit is enabled and changed (ending the
// window it replaces), its window extended when the same limit is due for
// renewal, a cancel of its own window when it is disabled; on success
// *cur becomes next.
func (s *Server) apply(by gridcontrol.Origin, cur *control, next control, now time.Time) error {
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
		// The window lapsed or was cancelled over the API: a new one.
		if err := s.submit(ctx, by, &next, now); err != nil {
			return err
		}
	default:
		if err := s.submit(ctx, by, &next, now); err != nil {
			return err
		}
		// The master's register holds one value: the new window
		// replaces the old one, which is ended now (after the new one
		// is held, so the channel is never without its window).
		// Otherwise it would show through once the new one ends (a
		// shorter RvrtTms) and after an enable 0, and a master
		// writing value after value would fill the plant's schedules.
		if cur.held != "" {
			err := s.grid.Cancel(ctx, s.cfg.PlantID, cur.held, by)
			if err != nil && !errors.Is(err, gridcontrol.ErrUnknownSchedule) {
				s.log.Warn("the master's previous window not ended", "client", by.Name, "schedule", cur.held, "err", err)
			}
		}
	}
	next.wrote = cur.wrote
	*cur = next
	return nil
}

// submit sends next's limit to grid control as a new window of
// next.window() from now and holds it in next.
func (s *Server) submit(ctx context.Context, by gridcontrol.Origin, next *control, now time.Time) error {
	pct := next.pct
	sc, err := s.grid.Submit(ctx, s.cfg.PlantID, by, []gridcontrol.Order{{Command: gridcontrol.CmdMaxLimW, For: next.window(), Value: &pct, Unit: "%"}})
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
