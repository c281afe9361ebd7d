package gridcontrol

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"plantd/config"
	"plantd/plant"
	"plantd/sunspec"
)

// Schedules in and out: Submit validates a schedule against the plant's
// devices and stores it; Schedules lists them with each window's status;
// settle marks windows applied.

// newID returns a random schedule id.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// SubmitOption tunes one Submit.
type SubmitOption func(*submitOpts)

type submitOpts struct{ requireAll, skipCheck bool }

// RequireAll makes Submit all or nothing: a command that some active
// inverter of the plant would not act on now (another platform, no model
// that carries it, not discovered yet, offline, no grid meter) is refused
// as not eligible (NotEveryInverter), also when the eligibility check is
// skipped.
func RequireAll(on bool) SubmitOption { return func(o *submitOpts) { o.requireAll = on } }

// SkipEligibilityCheck stores the schedule without the eligibility check
// (the API's skipEligibilityCheck=true; an input's window, which holds
// even while an inverter is offline and reaches it when it is back).
func SkipEligibilityCheck(on bool) SubmitOption { return func(o *submitOpts) { o.skipCheck = on } }

// SubmitJSON parses a schedule body (the HTTP API's and the cloud's POST,
// ParseSchedule) and submits its commands. Errors as Submit's.
func (c *Controller) SubmitJSON(ctx context.Context, plantID string, by Origin, body []byte, opts ...SubmitOption) (Schedule, error) {
	cmds, err := ParseSchedule(body, c.now())
	if err != nil {
		return Schedule{}, err
	}
	return c.submit(ctx, plantID, by, cmds, opts)
}

// Submit is the one gate into grid control (DESIGN §6.1): every door
// hands its commands to it as Orders (or, for the HTTP API and the cloud,
// as a schedule body to SubmitJSON), with the Origin they came from. It
// checks the commands (ParseSchedule's rules), runs the eligibility check
// against the plant's devices unless SkipEligibilityCheck, stores the
// schedule and arms it. A command that only some of the plant's active
// inverters act on is accepted, its windows marked partial (with the
// share of rated power and the inverters that act and do not), and
// logged; with RequireAll it is refused. Errors: *ValidationError (the
// request), or the store's.
func (c *Controller) Submit(ctx context.Context, plantID string, by Origin, orders []Order, opts ...SubmitOption) (Schedule, error) {
	cmds, err := ordersToCommands(orders, c.now())
	if err != nil {
		return Schedule{}, err
	}
	return c.submit(ctx, plantID, by, cmds, opts)
}

func (c *Controller) submit(ctx context.Context, plantID string, by Origin, cmds []ScheduledCmd, opts []SubmitOption) (Schedule, error) {
	var o submitOpts
	for _, f := range opts {
		f(&o)
	}
	now := c.now()
	devs, err := c.live.DeviceStatuses(plantID)
	if err != nil {
		return Schedule{}, err
	}
	elig := assessAll(cmds, devs)
	var errs []FieldError
	if !o.skipCheck {
		errs = c.check(ctx, cmds, devs, elig)
	}
	if o.requireAll {
		errs = append(errs, wholePlant(cmds, elig, !o.skipCheck)...)
	}
	if len(errs) > 0 {
		return Schedule{}, &ValidationError{Fields: errs, NotEligible: true}
	}
	for i := range cmds {
		markCoverage(&cmds[i], elig[cmds[i].Command])
	}
	sc := Schedule{ScheduleID: newID(), PlantID: plantID, Commands: cmds, CreatedAt: now.UTC().Truncate(time.Millisecond), CreatedBy: by.String(), Role: by.Role, Channel: by.Channel}
	c.mu.Lock()
	pc := c.plants[plantID]
	if pc == nil {
		c.mu.Unlock()
		return Schedule{}, fmt.Errorf("grid control: unknown plant %s", plantID)
	}
	// Keep creation times strictly increasing, so that newest-wins is
	// decided by time even for two schedules in one millisecond.
	for _, o := range pc.scheds {
		if !sc.CreatedAt.After(o.CreatedAt) {
			sc.CreatedAt = o.CreatedAt.Add(time.Millisecond)
		}
	}
	limit := c.capacity(by.Role)
	drop, full := c.prunable(pc, now, 1, limit)
	c.mu.Unlock()
	if full {
		return Schedule{}, &ValidationError{Fields: []FieldError{{Field: "commands",
			Message: fmt.Sprintf("the plant holds %d schedules that have not ended yet (at most %d for the %s role): wait until some end, cancel some, or overwrite their commands", len(pc.scheds)-len(drop), limit, by.Role)}}}
	}
	c.forget(ctx, pc, drop)
	// The log line's summary is read now: once held, the schedule's
	// commands are the control loop's (it appends their writes' audit).
	names := map[string]int{}
	for _, cm := range cmds {
		names[cm.Command]++
	}
	var parts []string
	for _, cm := range allCommands() {
		if n := names[cm.Name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s ×%d", cm.Name, n))
		}
	}
	if err := c.persist(ctx, &sc); err != nil {
		return Schedule{}, err
	}
	c.mu.Lock()
	pc.hold(&sc)
	c.arm(pc)
	out := view(&sc, nil, activeAt(pc.scheds, now, pc.limitRatedW), now) // the newest: nothing supersedes it
	c.mu.Unlock()
	c.st.Log(plant.LogEntry{Time: now.UTC(), PlantID: plantID, Level: plant.LevelInfo, Code: "ScheduleAccepted",
		Message: fmt.Sprintf("schedule %s from %s accepted: %s", sc.ScheduleID, by, strings.Join(parts, ", "))})
	for _, cm := range allCommands() {
		if e, ok := elig[cm.Name]; ok && !e.whole() {
			c.st.Log(plant.LogEntry{Time: now.UTC(), PlantID: plantID, Level: plant.LevelWarning, Code: "CommandPartial",
				Message: fmt.Sprintf("schedule %s: %s", sc.ScheduleID, e.Describe())})
		}
	}
	c.wake()
	return out, nil
}

// operatorReserve is the share of MaxSchedules (1/operatorReserve) that
// only a grid operator's schedules may fill: the other roles' doors (the
// API's installers, a Modbus master, the cloud) cannot fill the plant's
// schedules so that a grid operator's next limit is refused.
const operatorReserve = 4

// capacity is how many schedules a plant may hold when a schedule of role
// is added: MaxSchedules for a grid operator, less operatorReserve's share
// for every other role.
func (c *Controller) capacity(role string) int {
	if config.RoleRank(role) >= config.RoleRank(config.RoleGridOperator) {
		return c.cfg.MaxSchedules
	}
	return c.cfg.MaxSchedules - c.cfg.MaxSchedules/operatorReserve
}

// prunable returns the schedules of a plant to drop (every window ended,
// cancelled or superseded more than KeepFinished ago; then the oldest
// finished ones while more than limit-room would be kept), and whether
// room cannot be made. Called with c.mu held.
func (c *Controller) prunable(pc *plantCtl, now time.Time, room, limit int) (drop []*Schedule, full bool) {
	sup := supersededSet(pc.scheds)
	finishedAt := func(s *Schedule) (time.Time, bool) {
		var last time.Time
		for i := range s.Commands {
			cm := &s.Commands[i]
			switch {
			case cm.Repeat != "" && !nextOccurrence(cm, now).IsZero():
				// A recurring window to come (plantd was down over the
				// last one: the cycle moves it on).
				return time.Time{}, false
			case sup[cm], cm.Cancelled:
				// Over (a window cancelled before its start keeps an
				// end in the future: its start), but listed until its
				// time has passed.
				last = maxTime(last, minTime(cm.End, now))
			case cm.End.After(now):
				return time.Time{}, false
			default:
				last = maxTime(last, cm.End)
			}
		}
		return last, true
	}
	var finished []*Schedule
	for _, s := range pc.scheds {
		at, ok := finishedAt(s)
		switch {
		case !ok:
		case now.Sub(at) > c.cfg.KeepFinished:
			drop = append(drop, s)
		default:
			finished = append(finished, s)
		}
	}
	// pc.scheds is in creation order: finished is oldest first.
	for len(pc.scheds)-len(drop)+room > limit && len(finished) > 0 {
		drop, finished = append(drop, finished[0]), finished[1:]
	}
	return drop, len(pc.scheds)-len(drop)+room > limit
}

// forget removes schedules from the plant and the store.
func (c *Controller) forget(ctx context.Context, pc *plantCtl, drop []*Schedule) {
	if len(drop) == 0 {
		return
	}
	c.mu.Lock()
	pc.scheds = slices.DeleteFunc(pc.scheds, func(s *Schedule) bool { return slices.Contains(drop, s) })
	c.mu.Unlock()
	// After the persister's write of one of them, never before it.
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	for _, s := range drop {
		if err := c.st.DeleteSchedule(ctx, s.ScheduleID); err != nil {
			c.log.Warn("delete finished schedule", "schedule", s.ScheduleID, "err", err)
		}
	}
	c.log.Debug("finished schedules dropped", "plant", pc.id, "count", len(drop))
}

// persist stores a schedule with its statuses: a copy taken under c.mu,
// so the store encodes it while the cycle goes on. Called without c.mu.
func (c *Controller) persist(ctx context.Context, sc *Schedule) error {
	c.mu.Lock()
	snap := sc.Clone()
	c.mu.Unlock()
	if err := c.st.PutSchedule(ctx, snap); err != nil {
		return fmt.Errorf("grid control: store schedule %s: %w", snap.ScheduleID, err)
	}
	return nil
}

// assessAll is the eligibility of every command a schedule names, with
// the answer of each active inverter (Assess).
func assessAll(cmds []ScheduledCmd, devs []plant.DeviceLive) map[string]Eligibility {
	elig := map[string]Eligibility{}
	for _, sc := range cmds {
		if _, ok := elig[sc.Command]; !ok {
			cmd, _ := commandNamed(sc.Command)
			elig[sc.Command] = Assess(cmd, devs)
		}
	}
	return elig
}

// whole reports whether every active inverter of the plant acts on the
// command (and the plant has one).
func (e Eligibility) whole() bool {
	for _, ic := range e.Inverters {
		if !ic.Acts {
			return false
		}
	}
	return len(e.Inverters) > 0
}

// actsNowEverywhere reports whether every active inverter of the plant
// acts on the command now: whole, and none of them only once it is back
// online.
func (e Eligibility) actsNowEverywhere() bool {
	for _, ic := range e.Inverters {
		if !ic.Acts || ic.Reason != nil {
			return false
		}
	}
	return len(e.Inverters) > 0
}

// wholePlant lists the windows of commands that not every active inverter
// acts on, for an all-or-nothing request; a command the eligibility check
// (when it ran: checked) already refused is not named twice.
func wholePlant(cmds []ScheduledCmd, elig map[string]Eligibility, checked bool) []FieldError {
	var out []FieldError
	for i, sc := range cmds {
		e := elig[sc.Command]
		if e.actsNowEverywhere() || (checked && !e.Eligible) {
			continue
		}
		f := fmt.Sprintf("commands[%d].command", i)
		msg := sc.Command + ": not every active inverter acts on it (all or nothing was asked): " + e.Describe()
		if len(e.Inverters) == 0 {
			msg = sc.Command + ": the plant has no active inverter"
		}
		out = append(out, FieldError{Field: f, Message: msg, Code: ReasonNotEveryInverter})
	}
	return out
}

// markCoverage marks a window partial, with its coverage, when some active
// inverter does not act on its command, and clears the mark otherwise.
func markCoverage(sc *ScheduledCmd, e Eligibility) {
	if e.whole() {
		sc.Partial, sc.Coverage, sc.Inverters = false, nil, nil
		return
	}
	sc.Partial, sc.Coverage, sc.Inverters = true, e.Coverage, e.Inverters
}

// check runs the eligibility check of every command and the checks that
// depend on the devices (rated power, curve points and parameters, as the
// devices' control models first read report them).
func (c *Controller) check(ctx context.Context, cmds []ScheduledCmd, devs []plant.DeviceLive, elig map[string]Eligibility) []FieldError {
	var errs []FieldError
	for i, sc := range cmds {
		cmd, _ := commandNamed(sc.Command)
		e := elig[cmd.Name]
		f := fmt.Sprintf("commands[%d]", i)
		if !e.Eligible {
			errs = append(errs, FieldError{Field: f + ".command", Code: e.Reasons[0].Code, Message: fmt.Sprintf("%s not eligible: %s: %s", cmd.Name, e.Reasons[0].Code, e.Reasons[0].Message)})
			continue
		}
		switch cmd.Value {
		case ValuePower:
			if sc.Unit == "W" {
				if rated := ratedOf(devs, e.Devices); rated > 0 && *sc.Value > rated {
					errs = append(errs, FieldError{Field: f + ".value", Message: fmt.Sprintf("%s: %g W exceeds the rated power of the plant's inverters (%g W)", cmd.Name, *sc.Value, rated)})
				}
			}
		case ValueCurve:
			if field, msg := c.checkCurve(ctx, cmd, &cmds[i], devs, e.Devices); msg != "" {
				errs = append(errs, FieldError{Field: f + ".curve" + field, Message: cmd.Name + ": " + msg})
			}
		}
	}
	return errs
}

// checkCurve tries a curve on the default image of every device that
// carries it (from memory, else from the store, else read from the device
// now when plantd has not yet), in volts converted with the device's
// reference voltage. It returns what is wrong, and the field below
// "curve" that it concerns (".points[j]" or "").
func (c *Controller) checkCurve(ctx context.Context, cmd Command, sc *ScheduledCmd, devs []plant.DeviceLive, ids []string) (string, string) {
	for _, d := range devs {
		if !slices.Contains(ids, d.Info.ID) || sunspecOf(d.Discovered) == nil {
			continue
		}
		ref, ok := cmd.model(sunspecOf(d.Discovered))
		if !ok {
			continue
		}
		c.mu.Lock()
		var snap *sunspec.Instance
		if dc := c.devs[d.Info.ID]; dc != nil {
			snap = dc.defaults[ref.ID]
		}
		c.mu.Unlock()
		if snap == nil {
			// A quiet inverter's defaults are in the store only.
			if stored, err := c.st.ControlDefaults(ctx, d.Info.ID); err == nil {
				snap = storedDefault(stored, ref)
			}
		}
		if snap == nil {
			rw, ok := c.conns(d.Info.ID)
			if !ok {
				continue
			}
			inst, err := sunspec.ReadModel(ctx, rw, ref)
			if err != nil {
				continue // offline now: checked when written
			}
			snap = inst
		}
		cv := sc.Curve
		if sc.Unit == "V" {
			rw, ok := c.conns(d.Info.ID)
			if !ok {
				continue
			}
			var err error
			if cv, err = deviceCurve(ctx, rw, sunspecOf(d.Discovered), ref, sc); err != nil {
				if pe := (*pointError)(nil); errors.As(err, &pe) {
					return fmt.Sprintf(".points[%d]", pe.j), fmt.Sprintf("device %s (model %d): %s", d.Info.ID, ref.ID, pe.msg)
				}
				if IsRefusal(err) {
					return "", fmt.Sprintf("device %s (model %d): %v", d.Info.ID, ref.ID, err)
				}
				continue // offline now: checked when written
			}
		}
		try := &sunspec.Instance{Model: snap.Model, Addr: snap.Addr, Regs: slices.Clone(snap.Regs), Root: snap.Root}
		if err := editCurve(try, cv, c.cfg.RevertTimeout.Seconds(), false); err != nil {
			return "", fmt.Sprintf("device %s (model %d): %v", d.Info.ID, ref.ID, err)
		}
		if err := editCurve(try, cv, c.cfg.RevertTimeout.Seconds(), true); err != nil {
			return "", fmt.Sprintf("device %s (model %d): %v", d.Info.ID, ref.ID, err)
		}
	}
	return "", ""
}

// limitDevices are the inverters that take the active-power limit now
// (FeedInLimit and opModMaxLimW share it).
func limitDevices(devs []plant.DeviceLive) []string {
	if ids := Eligible(Commands[0], devs).Devices; len(ids) > 0 {
		return ids
	}
	return Eligible(Commands[2], devs).Devices
}

// ratedOf sums the rated power of the named devices. ids most often come
// from Eligible over the same devs, so in devs' order: one walk over both
// then matches them, where a search of ids per device took 1,000 × 1,000
// string comparisons a control cycle at 1,000 devices (5 % of the daemon's
// CPU, scripts/scale 1000 50). Other ids are matched through a set.
func ratedOf(devs []plant.DeviceLive, ids []string) float64 {
	sum, j := 0.0, 0
	for _, d := range devs {
		if j < len(ids) && ids[j] == d.Info.ID {
			j++
			if sp := sunspecOf(d.Discovered); sp != nil {
				sum += sp.RatedPowerW
			}
		}
	}
	if j == len(ids) {
		return sum
	}
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	sum = 0
	for _, d := range devs {
		if sp := sunspecOf(d.Discovered); sp != nil && want[d.Info.ID] {
			sum += sp.RatedPowerW
		}
	}
	return sum
}

// ListOption tunes Schedules.
type ListOption func(*listOpts)

type listOpts struct{ finished, battery bool }

// IncludeFinished lists, beside each window, the audit of what was
// written (Writes) and, for recurring commands, the finished windows
// (Finished) with theirs: the API's include=finished.
func IncludeFinished(on bool) ListOption { return func(o *listOpts) { o.finished = on } }

// BatteryWindows lists the battery setpoints' schedules (BatteryPower,
// SetBatteryPower) instead of the spec's: those are plantd's own and not
// listed otherwise, so that the API's schedules keep the spec's commands
// and roles (DESIGN §4).
func BatteryWindows(on bool) ListOption { return func(o *listOpts) { o.battery = on } }

// Schedules returns a plant's schedules with the status of every command,
// oldest first; a recurring command with its next windows (Next). The
// battery setpoints' schedules are listed only with BatteryWindows.
func (c *Controller) Schedules(plantID string, opts ...ListOption) ([]Schedule, error) {
	var o listOpts
	for _, f := range opts {
		f(&o)
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	pc := c.plants[plantID]
	if pc == nil {
		return nil, fmt.Errorf("grid control: unknown plant %s", plantID)
	}
	out := make([]Schedule, 0, len(pc.scheds))
	sup := supersededSet(pc.scheds)
	gov := activeAt(pc.scheds, now, pc.limitRatedW)
	for _, s := range pc.scheds {
		if isBattery(s) != o.battery {
			continue
		}
		v := view(s, sup, gov, now)
		if o.finished {
			for i := range v.Commands {
				cm := &v.Commands[i]
				cm.Writes = slices.Clone(s.Commands[i].Writes)
				cm.Finished = slices.Clone(s.Commands[i].Finished)
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// ErrNoRating: a limit in W holds, and no inverter carrying limits has
// told its rating yet, so it has no value in %.
var ErrNoRating = errors.New("no inverter rating known yet")

// FeedInLimitPct returns the feed-in limit in force at plantID now, in %
// of the rated power of the inverters carrying limits (Home Assistant's
// number shows it): the FeedInLimit window that governs (activeAt), 100
// when none holds. A limit in W is converted with the rating the last
// control cycle found (100 when the rating fell below it since it was
// accepted), or fails with ErrNoRating.
func (c *Controller) FeedInLimitPct(plantID string) (float64, error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	pc := c.plants[plantID]
	if pc == nil {
		return 0, fmt.Errorf("grid control: unknown plant %s", plantID)
	}
	w, ok := activeAt(pc.scheds, now, pc.limitRatedW)[CmdFeedInLimit]
	switch {
	case !ok || w.cmd.Value == nil:
		return 100, nil
	case w.cmd.Unit != "W":
		return *w.cmd.Value, nil
	case pc.limitRatedW <= 0:
		return 0, ErrNoRating
	}
	return min(*w.cmd.Value*100/pc.limitRatedW, 100), nil
}

// view is a copy of a schedule with each command's status at now: an open
// window other than the one that governs its command (gov, activeAt's
// answer at now) is overridden, naming the governing schedule. c.mu is
// held.
func view(s *Schedule, sup map[*ScheduledCmd]bool, gov map[string]window, now time.Time) Schedule {
	v := *s
	v.Commands = slices.Clone(s.Commands)
	for i := range v.Commands {
		cm := &v.Commands[i]
		// The audit only with include=finished (Schedules).
		cm.Writes, cm.Finished = nil, nil
		if cm.Repeat != "" {
			cm.Next = upcoming(cm, 3)
		}
		switch {
		case sup[&s.Commands[i]]:
			cm.Status = StatusSuperseded
		case cm.Status == StatusFailed:
		case cm.Cancelled && !cm.End.After(cm.Start):
			// Cancelled before it began: its end was moved to its start,
			// it will never run (Reason names who cancelled it).
			cm.Status = StatusDone
		case now.Before(cm.Start):
			cm.Status = StatusPending
		case now.Before(cm.End):
			cm.Status = StatusActive
			if w, ok := gov[cm.Command]; ok && w.cmd != &s.Commands[i] {
				cm.Status, cm.OverriddenBy = StatusOverridden, w.sched.ScheduleID
			}
		default:
			cm.Status = StatusDone
		}
	}
	return v
}

// settle marks the open windows applied once every inverter that carries
// their command took them (late when that was more than LateAfter after
// the start, or after the schedule came if it came later, naming the
// devices that were late).
func (c *Controller) settle(ctx context.Context, pc *plantCtl, act map[string]window, devs []plant.DeviceLive) (pending bool) {
	var persist []*Schedule
	var logs []plant.LogEntry
	c.mu.Lock()
	open := map[string]bool{}
	for _, w := range act {
		cm := &w.sched.Commands[w.idx]
		wk := key([]window{w})
		open[wk] = true
		if cm.AppliedAt != nil || cm.Status == StatusFailed {
			continue
		}
		cmd, _ := commandNamed(cm.Command)
		got := pc.applied[wk]
		var last time.Time
		var late []string
		all := true
		// A window sent after its start (or a recurring one posted in
		// the middle of an occurrence) is due when it came.
		due := maxTime(cm.Start, w.sched.CreatedAt)
		for _, id := range carriers(cmd, devs) {
			at, ok := got[id]
			if !ok {
				all = false
				break
			}
			last = maxTime(last, at)
			if at.Sub(due) > c.cfg.LateAfter {
				late = append(late, fmt.Sprintf("%s %s late", id, at.Sub(due).Round(time.Second)))
			}
		}
		if !all || last.IsZero() {
			pending = true
			continue
		}
		t := last.UTC()
		cm.AppliedAt = &t
		// What the window governs as applied: the plant may have changed
		// since it was accepted (an inverter discovered, added, retired).
		e := Eligibility{Command: cmd.Name}
		e.Inverters, e.Coverage = coverage(cmd, devs, false)
		if was := cm.Partial; was || !e.whole() {
			markCoverage(cm, e)
			if !cm.Partial || !was {
				logs = append(logs, plant.LogEntry{Time: t, PlantID: pc.id, Level: plant.LevelWarning, Code: "CommandPartial",
					Message: fmt.Sprintf("schedule %s: applied: %s", w.sched.ScheduleID, e.Describe())})
			}
		}
		if len(late) > 0 {
			cm.Late = true
			cm.Reason = fmt.Sprintf("applied more than %s after it was due (its start, or its arrival if later): %s", c.cfg.LateAfter, strings.Join(late, ", "))
		}
		persist = append(persist, w.sched)
	}
	for wk := range pc.applied {
		if !open[wk] {
			delete(pc.applied, wk)
		}
	}
	c.mu.Unlock()
	for _, e := range logs {
		c.st.Log(e)
	}
	c.persistAll(ctx, persist)
	return pending
}
