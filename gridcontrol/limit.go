package gridcontrol

import (
	"context"
	"fmt"
	"math"
	"time"

	"plantd/plant"
	"plantd/sunspec"
)

// The active-power limit of one inverter (123 or 704): where it starts
// after a restart, how it ramps, how it reverts when plantd dies, and
// whether the device's output follows it.

// quirkNeedsToggle is the store's name for a device that takes a new limit
// only when its enable goes from 0 to 1.
const quirkNeedsToggle = "limit-needs-enable-toggle"

// The follow check: samples of the device's output count once the device
// had followGrace cycles to respond to a new limit; an output above the
// limit on two such samples in a row makes plantd toggle the enable (once
// per device, then remembered); an output still above it notFollowCycles
// cycles after the toggle is a device that does not follow its limit.
const (
	followGrace     = 2
	notFollowCycles = 30
)

// reconcileLimit drives the active-power limit: tighter at once, looser by
// the ramp rate (the fallback too), never above the device's default (an
// installer's permanent limit stays), renewed at half the reversion
// timeout, restored exactly once the ramp reached the default. After a
// restart it starts from what the device holds, not from a guess.
func (c *Controller) reconcileLimit(ctx context.Context, pc *plantCtl, dc *devCtl, d plant.DeviceLive, rw sunspec.ReadWriter, ref sunspec.ModelRef, pl plantPlan, now time.Time) {
	c.mu.Lock()
	snap := dc.defaults[ref.ID]
	st := dc.peek(ctlLimit)
	c.mu.Unlock()
	if snap == nil || now.Before(st.nextTry) {
		return
	}
	if st.owned && !st.known {
		held, err := c.readHeldLimit(ctx, rw, ref)
		if err != nil {
			c.log.Warn("read the limit a device holds", "device", d.Info.ID, "err", err)
			return
		}
		c.mu.Lock()
		s := dc.state(ctlLimit)
		s.pct, s.known = held, true
		st = *s
		c.mu.Unlock()
		c.log.Info("limit the device holds, continued from", "device", d.Info.ID, "pct", held)
	}
	if st.owned {
		c.checkFollow(ctx, pc, dc, d, rw, ref, pl, now)
		c.mu.Lock()
		st = dc.peek(ctlLimit)
		c.mu.Unlock()
	}
	def := defaultLimitPct(snap)
	cur := st.pct
	if !st.owned {
		cur = def
	}
	limitPct := pl.limitPct
	if limitPct == nil && c.cfg.DefaultLimitPct != nil {
		// The configured default is held like a command, renewed.
		limitPct = c.cfg.DefaultLimitPct
	}
	if limitPct == nil && !st.owned && !st.claimed {
		return
	}
	target := def
	if limitPct != nil {
		target = math.Min(math.Max(*limitPct, 0), def)
	}
	next, rising, upAt := c.rampStep(st, cur, target, now)
	c.mu.Lock()
	s := dc.state(ctlLimit)
	s.rising, s.upAt = rising, upAt
	if rising {
		c.dueAt(upAt.Add(c.cfg.Cycle))
	}
	c.mu.Unlock()
	if limitPct == nil && next >= def {
		c.restoreControl(ctx, pc, dc, d, rw, ref, ctlLimit, now)
		return
	}
	renew := st.owned && (now.Sub(st.writtenAt) >= c.cfg.RevertTimeout/2 || st.rewrite)
	var by []window
	if pl.limitPct != nil {
		by = pl.limitBy
	}
	if st.owned && next == cur && !renew {
		if k := key(by); k != st.key && next == round1(target) {
			// A new window asks for the value the device holds: it is
			// in effect without a write (the reversion timer's renewal
			// still counts from the last write).
			c.mu.Lock()
			dc.state(ctlLimit).key = k
			pc.noteApplied(d.Info.ID, by, now)
			c.mu.Unlock()
		}
		return
	}
	c.writeLimit(ctx, pc, dc, d, rw, ref, snap, next, by, now)
}

// rampStep returns the limit to write now on the way from cur to target
// and the ramp's state. A tighter limit applies at once. A looser one
// starts a ramp: nothing moves at the moment the target rises, then the
// limit climbs one cycle's worth of the rate (RampPctPerSecond × Cycle) at
// a time, each step at least a cycle after the last, so that the rise
// over any interval of a cycle or more stays within the rate.
func (c *Controller) rampStep(st ctlState, cur, target float64, now time.Time) (next float64, rising bool, upAt time.Time) {
	if target <= cur {
		return round1(target), false, time.Time{}
	}
	if !st.rising || st.upAt.IsZero() {
		return cur, true, now
	}
	if now.Sub(st.upAt) < c.cfg.Cycle {
		return cur, true, st.upAt
	}
	step := c.cfg.RampPctPerSecond * c.cfg.Cycle.Seconds()
	// Rounded down, so rounding never adds to a step.
	next = math.Min(target, math.Floor((cur+step)*10+1e-9)/10)
	return next, next < target, now
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

// dueAt asks the run loop to wake at t (a ramp's next step). c.mu held.
func (c *Controller) dueAt(t time.Time) {
	if c.due.IsZero() || t.Before(c.due) {
		c.due = t
	}
}

// readHeldLimit reads the limit in effect on the device by its registers:
// WMaxLimPct when enabled, else 100.
func (c *Controller) readHeldLimit(ctx context.Context, rw sunspec.ReadWriter, ref sunspec.ModelRef) (float64, error) {
	inst, err := sunspec.ReadModel(ctx, rw, ref)
	if err != nil {
		return 0, fmt.Errorf("model %d: %w", ref.ID, err)
	}
	return defaultLimitPct(inst), nil
}

// limitRevert is the reversion timeout written with a limit. A 704 device
// reverts to the values plantd programs (the default), so it always gets
// the configured timeout. A 123 device reverts to "no limit": where its
// default is a limit (an installer's permanent one, or the configured
// default), a reversion would loosen the plant beyond it, so the limit is
// written without a reversion time and stays as written if plantd dies,
// until plantd runs again (the safe side); the plant log says so once.
func (c *Controller) limitRevert(ref sunspec.ModelRef, def float64) float64 {
	if ref.ID == 123 && def < 100 {
		return 0
	}
	return c.cfg.RevertTimeout.Seconds()
}

// fallbackPct is the limit a device falls back to when no window holds it:
// its own default, or the configured default where that is tighter.
func (c *Controller) fallbackPct(snap *sunspec.Instance) float64 {
	def := defaultLimitPct(snap)
	if c.cfg.DefaultLimitPct != nil {
		def = math.Min(def, math.Max(0, *c.cfg.DefaultLimitPct))
	}
	return def
}

// writeLimit writes a limit and records the outcome.
func (c *Controller) writeLimit(ctx context.Context, pc *plantCtl, dc *devCtl, d plant.DeviceLive, rw sunspec.ReadWriter, ref sunspec.ModelRef, snap *sunspec.Instance, pct float64, by []window, now time.Time) {
	fallback := c.fallbackPct(snap)
	rvrt := c.limitRevert(ref, fallback)
	var rem float64 = -1
	err := c.claim(ctx, dc, d, ctlLimit)
	au := &auditor{renew: renewPoints(ctlLimit)}
	var after *sunspec.Instance
	if err == nil {
		after, err = sunspec.WriteModelRenew(ctx, rw, ref, renewPoints(ctlLimit), nil, au.edit(func(inst *sunspec.Instance) error {
			if v, err := inst.Float("WMaxLimPctRvrtRem"); err == nil {
				rem = v
			}
			return editLimit(inst, snap, fallback, pct, rvrt)
		}))
	}
	var aw *AuditWrite
	if err == nil {
		aw = au.write(d.Info.ID, ref.ID, fmt.Sprintf("model %d WMaxLimPct %g %%", ref.ID, pct), after, c.now())
	}
	c.mu.Lock()
	st := dc.state(ctlLimit)
	prevPct, wasOwned, prevAt, toggle, rewrite := st.pct, st.owned && st.known, st.writtenAt, dc.needsToggle, st.rewrite
	c.mu.Unlock()
	changed := !wasOwned || pct != prevPct
	toggled := false
	if err == nil && toggle && (changed || rewrite) {
		// A device that takes a value only on the enable's edge takes
		// the rewrite of a foreign value only so, too.
		var on *sunspec.Instance
		if on, err = c.toggleEnable(ctx, rw, ref); err == nil {
			after, toggled = on, true
		}
	}
	if err == nil {
		// After a toggle, or a rewrite of someone else's value, the poll
		// that may straddle the write is not judged: it may show the
		// enable off or that value.
		c.noteHeld(dc, d.Info.ID, ctlLimit, after, toggled || rewrite)
	}
	c.mu.Lock()
	firstNoRvrt := err == nil && rvrt == 0 && !dc.noRevertSaid
	if firstNoRvrt {
		dc.noRevertSaid = true
	}
	c.mu.Unlock()
	if firstNoRvrt {
		c.st.Log(plant.LogEntry{Time: now.UTC(), PlantID: d.Info.PlantID, DeviceID: d.Info.ID, Level: plant.LevelWarning, Code: "LimitWithoutReversion",
			Message: fmt.Sprintf("device %s: model 123 reverts a limit to none, not to its default of %g %%; its limits are written without a reversion time, so if plantd stops inside a window the device keeps that window's limit until plantd runs again", d.Info.ID, fallback)})
	}
	// A device that takes RvrtTms but does not count it down: the
	// remaining time still at (or above) the full timeout long after the
	// last write.
	if err == nil && wasOwned && rvrt > 0 && rem >= 0 && !prevAt.IsZero() && now.Sub(prevAt) >= 5*time.Second && rem >= rvrt-1 {
		c.mu.Lock()
		first := !dc.rvrtIgnored
		dc.rvrtIgnored = true
		c.mu.Unlock()
		if first {
			c.st.Log(plant.LogEntry{Time: now.UTC(), PlantID: d.Info.PlantID, DeviceID: d.Info.ID, Level: plant.LevelWarning, Code: "ReversionIgnored",
				Message: fmt.Sprintf("device %s accepts WMaxLimPctRvrtTms but does not count it down (RvrtRem %g s after %s): if plantd stops, it may keep its limit", d.Info.ID, rem, now.Sub(prevAt).Round(time.Second))})
			c.log.Warn("device ignores its reversion timeout", "device", d.Info.ID, "rvrtRem", rem)
		}
	}
	what := fmt.Sprintf("model %d WMaxLimPct %g %%", ref.ID, pct)
	// The plant log gets each new source of the limit (a window, the
	// fallback ramp); every step is in the debug log.
	c.mu.Lock()
	newSource := !st.owned || st.key != key(by)
	c.mu.Unlock()
	c.log.Debug("limit written", "device", d.Info.ID, "model", ref.ID, "pct", pct, "previous", prevPct, "err", err)
	if aw != nil && changed && !newSource {
		// A new value for the same windows (the FeedInLimit loop): in
		// the audit too.
		c.mu.Lock()
		persist := noteWrite(by, *aw)
		c.mu.Unlock()
		c.persistAll(ctx, persist)
	}
	c.outcome(ctx, pc, dc, d, ctlLimit, key(by), by, what, newSource, err, now, aw, func(st *ctlState) {
		if st.rising && pct > prevPct {
			// The next step counts from when this one reached the
			// device (read back), not from when the cycle began: a
			// slower write must not bring two steps closer together.
			st.upAt = c.now()
		}
		st.pct, st.known = pct, true
		if changed {
			// The output is judged from when the write reached the
			// device, not from when the cycle began: a slow write (or
			// a store that held the cycle) must not shorten the
			// device's time to respond.
			st.changedAt, st.aboveSince = c.now(), time.Time{}
		}
	})
}

// toggleEnable writes the limit's enable 0 then 1, for devices that take a
// new value only on that edge. The limit is off for one Modbus round trip,
// far shorter than any inverter's power response.
func (c *Controller) toggleEnable(ctx context.Context, rw sunspec.ReadWriter, ref sunspec.ModelRef) (*sunspec.Instance, error) {
	if _, err := sunspec.WriteModel(ctx, rw, ref, func(inst *sunspec.Instance) error { return editEnable(inst, false) }); err != nil {
		return nil, fmt.Errorf("toggle the limit's enable off: %w", err)
	}
	on, err := sunspec.WriteModel(ctx, rw, ref, func(inst *sunspec.Instance) error { return editEnable(inst, true) })
	if err != nil {
		return nil, fmt.Errorf("toggle the limit's enable on: %w", err)
	}
	return on, nil
}

// checkFollow compares, every cycle while plantd holds the limit, the
// device's output (its latest poll) with the limit last written: the
// register reading back right proves only that the value arrived, not
// that the device acts on it. An output above the limit on two fresh
// samples in a row is a device that takes a new limit only when its
// enable goes from 0 to 1: the enable is toggled, the device remembered
// (in the store, so a restart toggles from its first write), and a warning
// goes to the plant log. An output still above the limit notFollowCycles
// after that is a device that does not follow its limit: an error in the
// plant log, the limit's windows failed, the device counted in /metrics
// and named by the eligibility check until it follows again.
func (c *Controller) checkFollow(ctx context.Context, pc *plantCtl, dc *devCtl, d plant.DeviceLive, rw sunspec.ReadWriter, ref sunspec.ModelRef, pl plantPlan, now time.Time) {
	rated := sunspecOf(d.Discovered).RatedPowerW
	w, sampled, ok := c.live.Value(d.Info.ID, plant.ActivePower)
	c.mu.Lock()
	st := dc.state(ctlLimit)
	fresh := ok && rated > 0 && !st.changedAt.IsZero() && sampled.After(st.changedAt.Add(followGrace*c.cfg.Cycle)) && sampled.After(st.sampleAt)
	if !fresh {
		c.mu.Unlock()
		return
	}
	st.sampleAt = sampled
	pct := st.pct
	allowed := pct/100*rated*1.02 + 20
	if w <= allowed {
		st.aboveSince = time.Time{}
		recovered := dc.notFollowing
		dc.notFollowing = false
		c.mu.Unlock()
		if recovered {
			c.st.Log(plant.LogEntry{Time: now.UTC(), PlantID: d.Info.PlantID, DeviceID: d.Info.ID, Level: plant.LevelInfo, Code: "LimitFollowedAgain",
				Message: fmt.Sprintf("device %s follows its %g %% limit again (%.0f W)", d.Info.ID, pct, w)})
		}
		return
	}
	if st.aboveSince.IsZero() {
		st.aboveSince = sampled
		c.mu.Unlock()
		return
	}
	known, since, already := dc.needsToggle, st.aboveSince, dc.notFollowing
	c.mu.Unlock()
	if !known {
		on, err := c.toggleEnable(ctx, rw, ref)
		if err != nil {
			c.log.Warn("toggle the limit's enable", "device", d.Info.ID, "err", err)
			return
		}
		// A poll may have caught the enable off: none up to the second
		// after the toggle is compared with what plantd holds.
		c.noteHeld(dc, d.Info.ID, ctlLimit, on, true)
		c.mu.Lock()
		dc.needsToggle = true
		st.changedAt, st.aboveSince = c.now(), time.Time{}
		c.mu.Unlock()
		if err := c.st.SetDeviceQuirk(ctx, d.Info.ID, quirkNeedsToggle, true); err != nil {
			c.log.Warn("record device quirk", "device", d.Info.ID, "err", err)
		}
		c.st.Log(plant.LogEntry{Time: now.UTC(), PlantID: d.Info.PlantID, DeviceID: d.Info.ID, Level: plant.LevelWarning, Code: "LimitNeedsEnableToggle",
			Message: fmt.Sprintf("device %s produced %.0f W under a %g %% limit (the register read back right): it applies a new limit only when its enable goes from 0 to 1; plantd toggles it with every change from now on", d.Info.ID, w, pct)})
		c.log.Warn("device needs the limit's enable toggled", "device", d.Info.ID, "w", w, "limitPct", pct)
		return
	}
	if already || sampled.Sub(since) < notFollowCycles*c.cfg.Cycle {
		return
	}
	// A device that knows the toggle and still does not follow.
	reason := fmt.Sprintf("device %s does not follow its limit: %.0f W for %s under %g %% of %.0f W, the enable toggled", d.Info.ID, w, sampled.Sub(since).Round(time.Second), pct, rated)
	var persist []*Schedule
	c.mu.Lock()
	dc.notFollowing = true
	for _, win := range pl.limitBy {
		cm := &win.sched.Commands[win.idx]
		if cm.Status != StatusFailed {
			cm.Status, cm.Reason = StatusFailed, reason
			persist = append(persist, win.sched)
		}
	}
	c.mu.Unlock()
	c.st.Log(plant.LogEntry{Time: now.UTC(), PlantID: d.Info.PlantID, DeviceID: d.Info.ID, Level: plant.LevelError, Code: "LimitNotFollowed", Message: reason})
	c.log.Error("device does not follow its limit", "device", d.Info.ID, "w", w, "limitPct", pct)
	c.persistAll(ctx, persist)
}
