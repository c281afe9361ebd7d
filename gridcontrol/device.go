package gridcontrol

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"plantd/internal/backoff"
	"plantd/plant"
	"plantd/store"
	"plantd/sunspec"
)

// One inverter's controls: its default images, the state of each control
// plantd owns, and the writes with read-back that drive, renew and restore
// them (the limit's own rules are in limit.go).

// devCtl is the controller's state of one device.
type devCtl struct {
	id       string
	defaults map[uint16]*sunspec.Instance
	// defaultsStored is set once the defaults are in the store: an
	// untouched device's are dropped from memory (2.5 KB per inverter)
	// and loaded from the store again when a command needs them.
	defaultsStored bool
	ctl            map[control]*ctlState
	// rvrtIgnored is set once the device was seen not counting its
	// reversion timer down (warned once).
	rvrtIgnored bool
	// needsToggle is set once the device was seen applying a new limit
	// only after its enable went from 0 to 1 (kept in the store).
	needsToggle bool
	// notFollowing is set while the device's output stays above its
	// limit after the enable toggle (checkFollow).
	notFollowing bool
	// noRevertSaid is set once the plant log said that the device's
	// limits are written without a reversion time (limitRevert).
	noRevertSaid bool
	busy         bool
	// held is what plantd last wrote of each control it holds in a
	// polled model (tamper.go); polled is the device goroutine's buffer
	// for the poll it is compared with.
	held   map[control]*heldImage
	polled []uint16
	// plantID is the device's plant (for BatterySetpoints).
	plantID string
}

// ctlState is one control of a device.
type ctlState struct {
	owned bool
	// claimed: the store records the control owned and the first write
	// is under way (claim); held for a device proxy from then on.
	claimed   bool
	key       string  // the window last applied ("" for the fallback)
	pct       float64 // the limit last written (limit control)
	writtenAt time.Time
	failures  int
	nextTry   time.Time
	lastErr   string
	// rewrite is set when the device's latest poll showed the control's
	// points changed by someone else (checkHeld): written this cycle.
	rewrite bool
	// The limit control only:
	// known is set once pct is what the device holds: written by this
	// run of plantd, or read from the device after a restart.
	known bool
	// rising is set while a looser limit ramps; upAt is when the ramp
	// started or last stepped up.
	rising bool
	upAt   time.Time
	// changedAt is when the limit last changed (the follow check counts
	// the device's output from followGrace cycles after it); aboveSince
	// is the first sample since then with the output above the limit;
	// sampleAt the last sample the check looked at.
	changedAt, aboveSince, sampleAt time.Time
	// The battery control only: batW is the setpoint last written (W,
	// positive discharging), batWant what the window asked before a
	// FeedInLimit capped it; holdSoC the SoC an 802 hold keeps.
	batW, batWant, holdSoC float64
}

func (c *Controller) dev(id string) *devCtl {
	dc := c.devs[id]
	if dc == nil {
		dc = &devCtl{id: id, ctl: map[control]*ctlState{}}
		c.devs[id] = dc
	}
	return dc
}

// untouched reports whether the device's defaults are stored and plantd
// holds none of its controls; c.mu held.
func (dc *devCtl) untouched() bool {
	if !dc.defaultsStored || dc.busy {
		return false
	}
	for _, st := range dc.ctl {
		if st.owned {
			return false
		}
	}
	return true
}

// peek returns a copy of control k's state (the zero state when plantd
// never wrote it) without adding it: a device plantd never controlled
// keeps no state per control.
func (dc *devCtl) peek(k control) ctlState {
	if s := dc.ctl[k]; s != nil {
		return *s
	}
	return ctlState{}
}

func (dc *devCtl) state(k control) *ctlState {
	s := dc.ctl[k]
	if s == nil {
		s = &ctlState{}
		dc.ctl[k] = s
	}
	return s
}

// reconcile brings the controls of one inverter to what the plan asks:
// first contact reads its defaults; then each control is written, ramped,
// renewed or restored.
func (c *Controller) reconcile(ctx context.Context, pc *plantCtl, dc *devCtl, d plant.DeviceLive, pl plantPlan, now time.Time) {
	rw, ok := c.conns(d.Info.ID)
	if !ok {
		return
	}
	if err := c.loadDefaults(ctx, dc, d, rw); err != nil {
		c.log.Warn("read control defaults", "device", d.Info.ID, "err", err)
		return
	}
	// What plantd holds, against the latest poll.
	c.checkHeld(ctx, d, dc, rw, now)
	// The limit.
	if ref, ok := firstRef(sunspecOf(d.Discovered), 704, 123); ok {
		c.reconcileLimit(ctx, pc, dc, d, rw, ref, pl, now)
	}
	// The other controls, one per command.
	for _, cmd := range Commands[1:] {
		k := cmd.Control
		if k == ctlLimit {
			continue
		}
		ref, ok := cmd.model(sunspecOf(d.Discovered))
		if !ok {
			continue
		}
		if cmd.DEROnly && sunspecOf(d.Discovered).Platform != sunspec.PlatformDER {
			continue
		}
		w, active := pl.act[cmd.Name]
		c.reconcileControl(ctx, pc, dc, d, rw, ref, cmd, k, w, active, now)
	}
	// The battery's setpoint (a battery, or a hybrid inverter with 124).
	if v := classifyBattery(batteryCommand, d); v == capable || v == capableOffline {
		c.reconcileBattery(ctx, pc, dc, d, rw, pl.battery, now)
	}
}

func firstRef(d *sunspec.Device, ids ...uint16) (sunspec.ModelRef, bool) {
	for _, id := range ids {
		if ref, ok := d.Ref(id); ok {
			return ref, true
		}
	}
	return sunspec.ModelRef{}, false
}

// controlModels are the models whose defaults plantd keeps.
func controlModels() []uint16 {
	var ids []uint16
	for _, cm := range allCommands() {
		for _, id := range cm.Models {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// storedDefault lays out the stored default image of ref's model; nil when
// none is stored or it no longer fits the model where discovery found it.
func storedDefault(stored map[uint16]store.ControlDefault, ref sunspec.ModelRef) *sunspec.Instance {
	sd, ok := stored[ref.ID]
	if !ok || sd.Addr != ref.Addr || len(sd.Regs) != int(ref.Len)+2 {
		return nil
	}
	inst, err := sunspec.NewInstance(sunspec.ModelByID(ref.ID), sd.Addr, sd.Regs)
	if err != nil {
		return nil
	}
	return inst
}

// loadDefaults makes sure the device's default images are known: from the
// store, or read now at first contact and stored.
func (c *Controller) loadDefaults(ctx context.Context, dc *devCtl, d plant.DeviceLive, rw sunspec.ReadWriter) error {
	c.mu.Lock()
	loaded := dc.defaults != nil
	c.mu.Unlock()
	if loaded {
		return nil
	}
	stored, err := c.st.ControlDefaults(ctx, d.Info.ID)
	if err != nil {
		return err
	}
	defs := map[uint16]*sunspec.Instance{}
	var read []uint16
	for _, id := range controlModels() {
		ref, ok := sunspecOf(d.Discovered).Ref(id)
		if !ok {
			continue
		}
		if inst := storedDefault(stored, ref); inst != nil {
			defs[id] = inst
			continue
		}
		inst, err := sunspec.ReadModel(ctx, rw, ref)
		if err != nil {
			return fmt.Errorf("read default of model %d: %w", id, err)
		}
		if err := c.st.PutControlDefault(ctx, store.ControlDefault{DeviceID: d.Info.ID, Model: id, Addr: ref.Addr, Regs: inst.Regs, Read: c.now().UTC()}); err != nil {
			return err
		}
		defs[id] = inst
		read = append(read, id)
	}
	if len(read) > 0 {
		c.log.Info("control defaults read at first contact", "device", d.Info.ID, "models", fmt.Sprint(read))
	}
	c.mu.Lock()
	dc.defaults, dc.defaultsStored = defs, true
	c.mu.Unlock()
	return nil
}

// key names the windows that set a control.
func key(ws []window) string {
	var parts []string
	for _, w := range ws {
		k := fmt.Sprintf("%s/%d", w.sched.ScheduleID, w.idx)
		if cm := &w.sched.Commands[w.idx]; cm.Repeat != "" {
			// Each occurrence is a window of its own.
			k += "@" + cm.Start.UTC().Format(time.RFC3339)
		}
		parts = append(parts, k)
	}
	return strings.Join(parts, ",")
}

// reconcileControl drives a control other than the limit: written when its
// window starts, renewed at half the reversion timeout, restored when no
// window holds it.
func (c *Controller) reconcileControl(ctx context.Context, pc *plantCtl, dc *devCtl, d plant.DeviceLive, rw sunspec.ReadWriter, ref sunspec.ModelRef, cmd Command, k control, w window, active bool, now time.Time) {
	c.mu.Lock()
	snap := dc.defaults[ref.ID]
	st := dc.peek(k)
	owned, claimed, prevKey, writtenAt, nextTry, rewrite := st.owned, st.claimed, st.key, st.writtenAt, st.nextTry, st.rewrite
	c.mu.Unlock()
	if snap == nil || now.Before(nextTry) {
		return
	}
	if !active {
		// A claimed control whose first write failed may still have
		// reached the device (a timed-out write): it is restored too,
		// which also ends its hold for a device proxy.
		if owned || claimed {
			c.restoreControl(ctx, pc, dc, d, rw, ref, k, now)
		}
		return
	}
	ws := []window{w}
	wk := key(ws)
	renew := has(snap, "RvrtTms") || has(snap, "Conn_RvrtTms") || has(snap, "OutPFSet_RvrtTms") || has(snap, "PFWInjRvrtTms")
	if owned && wk == prevKey && !rewrite && (!renew || now.Sub(writtenAt) < c.cfg.RevertTimeout/2) {
		return
	}
	rvrt := c.cfg.RevertTimeout.Seconds()
	err := c.claim(ctx, dc, d, k)
	au := &auditor{renew: renewPoints(k)}
	var after *sunspec.Instance
	var what string
	switch {
	case err != nil:
		what = fmt.Sprintf("model %d (%s)", ref.ID, k)
	case cmd.Value == ValueNone:
		what = fmt.Sprintf("model %d Conn = disconnected", ref.ID)
		after, err = sunspec.WriteModelRenew(ctx, rw, ref, renewPoints(k), nil, au.edit(func(inst *sunspec.Instance) error { return editDisconnect(inst, rvrt) }))
	case cmd.Value == ValuePF:
		what = fmt.Sprintf("model %d PF %g (%s)", ref.ID, *w.cmd.Value, k)
		after, err = sunspec.WriteModelRenew(ctx, rw, ref, renewPoints(k), nil, au.edit(func(inst *sunspec.Instance) error { return editPF(inst, snap, k, *w.cmd.Value, rvrt) }))
	case cmd.Value == ValueCurve:
		what = fmt.Sprintf("model %d curve (%d points, %d params)", ref.ID, len(w.cmd.Curve.Points), len(w.cmd.Curve.Params))
		if w.cmd.Unit == "V" {
			what = fmt.Sprintf("model %d curve (%d points in V, %d params)", ref.ID, len(w.cmd.Curve.Points), len(w.cmd.Curve.Params))
		}
		lay := curveLayouts[ref.ID]
		// The curve as this device takes it (volts converted).
		var cv *Curve
		cv, err = deviceCurve(ctx, rw, sunspecOf(d.Discovered), ref, w.cmd)
		if err == nil && lay.der && (wk != prevKey || !owned) {
			_, err = sunspec.WriteModel(ctx, rw, ref, func(inst *sunspec.Instance) error { return editCurve(inst, cv, rvrt, false) })
		}
		if err == nil {
			after, err = adopt(ctx, rw, ref, renewPoints(k), au.edit(func(inst *sunspec.Instance) error { return editCurve(inst, cv, rvrt, true) }))
		}
	}
	var aw *AuditWrite
	if err == nil {
		aw = au.write(d.Info.ID, ref.ID, what, after, c.now())
		c.noteHeld(dc, d.Info.ID, k, after, rewrite)
	}
	c.outcome(ctx, pc, dc, d, k, wk, ws, what, wk != prevKey || !owned, err, now, aw, nil)
}

// adopt writes a 7xx adopt request (with what edit sets beside it): the
// request is written even when it holds the same index already, since
// writing it is what makes the device adopt, and a device that answers
// the adoption failed is a refusal. The renew points are written even when
// unchanged (see renewPoints).
func adopt(ctx context.Context, rw sunspec.ReadWriter, ref sunspec.ModelRef, renew []string, edit func(*sunspec.Instance) error) (*sunspec.Instance, error) {
	after, err := sunspec.WriteModelRenew(ctx, rw, ref, renew, []string{"AdptCrvReq", "AdptCtlReq"}, edit)
	if err != nil {
		return nil, err
	}
	for _, rslt := range []string{"AdptCrvRslt", "AdptCtlRslt"} {
		if v, err := after.Float(rslt); err == nil && v == 2 {
			return nil, fmt.Errorf("model %d: %s FAILED: %w", ref.ID, rslt, sunspec.ErrReadBack)
		}
	}
	return after, nil
}

// restoreControl writes a control's default back and releases it.
func (c *Controller) restoreControl(ctx context.Context, pc *plantCtl, dc *devCtl, d plant.DeviceLive, rw sunspec.ReadWriter, ref sunspec.ModelRef, k control, now time.Time) {
	// Restoring gives the hold up: the default's writes are not compared.
	c.forgetHeld(dc, k)
	c.mu.Lock()
	snap := dc.defaults[ref.ID]
	c.mu.Unlock()
	var note string
	var err error
	if curveLayouts[ref.ID].der {
		note, err = restoreDER(ctx, rw, ref, snap)
	} else {
		_, err = sunspec.WriteModel(ctx, rw, ref, func(inst *sunspec.Instance) error { return restore(inst, snap, k) })
	}
	if err != nil {
		c.outcome(ctx, pc, dc, d, k, "", nil, fmt.Sprintf("model %d default", ref.ID), true, err, now, nil, nil)
		return
	}
	c.mu.Lock()
	st := dc.state(k)
	*st = ctlState{}
	c.stats.Restores++
	c.mu.Unlock()
	if err := c.st.SetControlOwned(ctx, d.Info.ID, string(k), false); err != nil {
		c.log.Warn("record control released", "device", d.Info.ID, "control", k, "err", err)
	}
	c.st.Log(plant.LogEntry{Time: now.UTC(), PlantID: d.Info.PlantID, DeviceID: d.Info.ID, Level: plant.LevelInfo, Code: "GridControlRestored",
		Message: fmt.Sprintf("device %s: %s restored to its default (model %d), read back ok", d.Info.ID, k, ref.ID)})
	if note != "" {
		c.st.Log(plant.LogEntry{Time: now.UTC(), PlantID: d.Info.PlantID, DeviceID: d.Info.ID, Level: plant.LevelWarning, Code: "GridControlRestoreNote",
			Message: fmt.Sprintf("device %s: %s (model %d): %s", d.Info.ID, k, ref.ID, note)})
	}
}

// writeRetry is the wait before a failed write is tried again: 1, 2, 4 …
// 30 s after consecutive failures.
var writeRetry = backoff.Exp{First: time.Second, Max: 30 * time.Second}

// outcome records a write: success makes the control owned (persisted
// before anything else is written, so a crash still restores it), marks
// the windows applied (late if so) and logs changes; failure backs off and,
// after FailAfter attempts, marks the windows failed with the reason.
func (c *Controller) outcome(ctx context.Context, pc *plantCtl, dc *devCtl, d plant.DeviceLive, k control, wk string, ws []window, what string, changed bool, err error, now time.Time, aw *AuditWrite, ok func(*ctlState)) {
	var persist []*Schedule
	c.mu.Lock()
	st := dc.state(k)
	if err != nil {
		c.stats.WriteErrors++
		st.failures++
		wait := writeRetry.Wait(st.failures, 0)
		st.nextTry = now.Add(wait)
		first := st.lastErr != err.Error()
		st.lastErr = err.Error()
		failed := IsRefusal(err) && (st.failures >= c.cfg.FailAfter || errors.Is(err, errUnsupported))
		if failed {
			for _, w := range ws {
				cm := &w.sched.Commands[w.idx]
				if cm.Status != StatusFailed {
					cm.Status, cm.Reason = StatusFailed, fmt.Sprintf("device %s refused %s: %v", d.Info.ID, what, err)
					persist = append(persist, w.sched)
				}
			}
		}
		c.mu.Unlock()
		if first || failed {
			c.st.Log(plant.LogEntry{Time: now.UTC(), PlantID: d.Info.PlantID, DeviceID: d.Info.ID, Level: plant.LevelError, Code: "GridControlWriteFailed",
				Message: fmt.Sprintf("device %s: %s failed (attempt %d, next in %s): %v", d.Info.ID, what, st.failures, wait, err)})
		}
		c.log.Warn("grid control write failed", "device", d.Info.ID, "control", k, "attempt", st.failures, "err", err)
		c.persistAll(ctx, persist)
		return
	}
	c.stats.Writes++
	if !pc.pendingEdge.IsZero() {
		c.stats.Edges++
		c.stats.EdgeToWrite = append(c.stats.EdgeToWrite, c.now().Sub(pc.pendingEdge))
		if len(c.stats.EdgeToWrite) > 1000 {
			c.stats.EdgeToWrite = c.stats.EdgeToWrite[1:]
		}
		pc.pendingEdge = time.Time{}
	}
	st.owned, st.key, st.writtenAt, st.failures, st.nextTry, st.lastErr, st.rewrite = true, wk, now, 0, time.Time{}, "", false
	if ok != nil {
		ok(st)
	}
	var by []string
	for _, w := range ws {
		cm := &w.sched.Commands[w.idx]
		by = append(by, fmt.Sprintf("%s of schedule %s by %s", cm.Command, w.sched.ScheduleID, w.sched.CreatedBy))
	}
	pc.noteApplied(d.Info.ID, ws, now)
	if aw != nil && changed {
		// The audit keeps the writes that changed the control's source or
		// value, not every renewal.
		persist = append(persist, noteWrite(ws, *aw)...)
	}
	c.mu.Unlock()
	if changed {
		src := "fallback ramp to the default"
		if len(by) > 0 {
			src = strings.Join(by, "; ")
		}
		c.st.Log(plant.LogEntry{Time: now.UTC(), PlantID: d.Info.PlantID, DeviceID: d.Info.ID, Level: plant.LevelInfo, Code: "GridControlWrite",
			Message: fmt.Sprintf("device %s: %s (%s), read back ok", d.Info.ID, what, src)})
	}
	c.persistAll(ctx, persist)
}

// claim records in the store that plantd owns control k of the device
// before its first write, so that a restart after a crash right after the
// write still restores it. A shutdown in progress does not cancel it.
func (c *Controller) claim(ctx context.Context, dc *devCtl, d plant.DeviceLive, k control) error {
	c.mu.Lock()
	owned := dc.peek(k).owned
	c.mu.Unlock()
	if owned {
		return nil
	}
	if err := c.st.SetControlOwned(context.WithoutCancel(ctx), d.Info.ID, string(k), true); err != nil {
		return fmt.Errorf("record the control owned before writing it: %w", err)
	}
	c.mu.Lock()
	dc.state(k).claimed = true
	c.mu.Unlock()
	return nil
}

// noteApplied records that device id took the windows ws at now (those
// not yet applied everywhere; settle marks them applied). c.mu held.
func (pc *plantCtl) noteApplied(id string, ws []window, now time.Time) {
	for _, w := range ws {
		if w.sched.Commands[w.idx].AppliedAt != nil {
			continue
		}
		wk := key([]window{w})
		if pc.applied[wk] == nil {
			pc.applied[wk] = map[string]time.Time{}
		}
		if _, ok := pc.applied[wk][id]; !ok {
			pc.applied[wk][id] = now
		}
	}
}

// IsRefusal reports whether a write error is the device refusing (a
// Modbus exception or a read-back that differs) rather than a link fault.
func IsRefusal(err error) bool {
	_, exception := sunspec.IsException(err)
	return exception || errors.Is(err, sunspec.ErrReadBack) || errors.Is(err, errUnsupported)
}
