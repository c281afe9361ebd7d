package gridcontrol

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"plantd/config"
	"plantd/plant"
	"plantd/sunspec"
)

// Recurring windows: a command with a cron spec (repeat) is one window at
// a time, its Start and End the occurrence open now or the next one. When
// that window ends, the cycle (advance) files it under Finished with its
// status and audit and moves Start and End on to the next occurrence, so
// the timeline, precedence, ramps, reversion, statuses and logs treat
// every occurrence as an ordinary window. Memory is bounded: one window
// ahead per command, and the finished ones of KeepFinished (at most
// maxFinished).

// maxFinished bounds the finished occurrences kept per recurring command.
const maxFinished = 200

// maxAuditWrites bounds the writes kept per window and device kind of
// write: the first ones and, in the last slot, the latest.
const maxAuditWrites = 32

// periodSamples is how many occurrences the check of a duration against
// the spec's period looks at.
const periodSamples = 64

// parseRepeat checks a recurring command (repeat, duration, until, and
// start as the earliest start) and sets its first window.
func parseRepeat(c cmdIn, sc *ScheduledCmd, now time.Time, bad func(field, msg string)) {
	if c.End != "" {
		bad("end", "a recurring command takes duration (and optionally until), not end")
	}
	if c.Repeat == "" {
		bad("repeat", "required with duration or until: a cron spec of five fields (minute hour day-of-month month day-of-week), e.g. \"0 11 * * *\"")
		return
	}
	spec, err := parseSpec(c.Repeat)
	if err != nil {
		bad("repeat", err.Error())
		return
	}
	sc.Repeat, sc.Duration = c.Repeat, c.Duration
	d, err := time.ParseDuration(c.Duration)
	switch {
	case c.Duration == "":
		bad("duration", "required with repeat: the length of each window, a Go duration such as \"4h\" or \"30m\"")
		return
	case err != nil:
		bad("duration", fmt.Sprintf("%q is not a Go duration (such as 4h, 30m, 1h30m)", c.Duration))
		return
	case d < time.Second:
		bad("duration", fmt.Sprintf("%s: must be at least 1s", c.Duration))
		return
	}
	// Without start, the window open now counts.
	from := now.Add(-d)
	if c.Start != "" {
		t, ok := parseTime(c.Start, now, func(m string) { bad("start", m) })
		if !ok {
			return
		}
		from = t
	}
	if c.Until != "" {
		t, ok := parseTime(c.Until, now, func(m string) { bad("until", m) })
		if !ok {
			return
		}
		if !t.After(maxTime(from, now)) {
			bad("until", "must be after start and now")
			return
		}
		t = t.UTC()
		sc.Until = &t
	}
	// The first window: open at from, or the next one.
	start := firstOccurrence(spec, from, now, d)
	if start.IsZero() || (sc.Until != nil && !start.Before(*sc.Until)) {
		bad("repeat", fmt.Sprintf("%q names no start before until", c.Repeat))
		return
	}
	if p := period(spec, start); p > 0 && d > p {
		bad("duration", fmt.Sprintf("%s is longer than the period of %q (%s): windows of one command must not overlap", c.Duration, c.Repeat, p))
		return
	}
	sc.Start, sc.End = start, start.Add(d)
}

// recurSpec is a recurring command's cron spec (five fields, in UTC or
// its CRON_TZ zone) with plantd's rule for the days the zone's clock
// changes, for a spec that names particular hours: a start in the hour
// the clock skips (spring forward: 02:30 does not exist) is at the first
// valid time (the moment of the change, 03:00), once however many starts
// the skipped hour holds; a start in the hour the clock repeats (fall
// back: 02:30 happens twice) is at its first pass only. A spec of every
// hour (hour field *) runs on real time as robfig/cron has it: each
// repeated hour once more, no start in the skipped one.
type recurSpec struct {
	spec *cron.SpecSchedule
	// wall: the spec names particular hours, the rule above applies.
	wall bool
}

// allHours is the hour field of a spec of every hour.
const allHours = 1<<24 - 1

// specParser is robfig/cron's standard five fields, without its
// descriptors (@every, @daily...).
var specParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// descriptorSpecs are the five-field forms of robfig/cron's descriptors,
// for the error that refuses them.
var descriptorSpecs = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

// parseSpec parses a recurring command's spec: five fields (minute hour
// day-of-month month day-of-week), optionally after CRON_TZ=<zone>; no
// descriptor. Without a zone the spec is in UTC, whatever the zone of the
// times it is asked about. The error is the repeat field's message.
func parseSpec(text string) (recurSpec, error) {
	fields := text
	if strings.HasPrefix(text, "TZ=") || strings.HasPrefix(text, "CRON_TZ=") {
		zone, rest, ok := strings.Cut(text, " ")
		if !ok {
			return recurSpec{}, fmt.Errorf("%q has a zone (%s) but no fields: give five after it (minute hour day-of-month month day-of-week), e.g. %q", text, zone, zone+" 0 11 * * *")
		}
		fields = strings.TrimSpace(rest)
	}
	if d, _, _ := strings.Cut(fields, " "); strings.HasPrefix(d, "@") {
		msg := fmt.Sprintf("%q is a descriptor; repeat takes a cron spec of five fields only (minute hour day-of-month month day-of-week, optionally after CRON_TZ=<zone>)", text)
		if five, ok := descriptorSpecs[d]; ok {
			return recurSpec{}, fmt.Errorf("%s: for %s write %q", msg, d, five)
		}
		return recurSpec{}, fmt.Errorf("%s, e.g. \"*/15 * * * *\" for every 15 minutes", msg)
	}
	s, err := specParser.Parse(text)
	if err != nil {
		return recurSpec{}, fmt.Errorf("%q is not a cron spec of five fields (minute hour day-of-month month day-of-week, optionally after CRON_TZ=<zone>): %w", text, err)
	}
	ss, ok := s.(*cron.SpecSchedule)
	if !ok {
		return recurSpec{}, fmt.Errorf("%q is not a cron spec of five fields (minute hour day-of-month month day-of-week)", text)
	}
	if ss.Location == time.Local {
		utc := *ss
		utc.Location = time.UTC
		ss = &utc
	}
	return recurSpec{spec: ss, wall: ss.Hour&allHours != allHours}, nil
}

// Next is the first start strictly after t (zero: none within five
// years), in UTC.
func (r recurSpec) Next(t time.Time) time.Time {
	n := r.spec.Next(t)
	if !r.wall {
		return n.UTC()
	}
	for !n.IsZero() && r.repeated(n) {
		n = r.spec.Next(n)
	}
	// A change before n that skipped a start: at the change.
	limit := n
	if limit.IsZero() {
		limit = t.AddDate(5, 0, 0)
	}
	x := t.In(r.spec.Location)
	for {
		_, change := x.ZoneBounds()
		if change.IsZero() || change.After(limit) {
			return n.UTC()
		}
		if r.skipsStart(change) {
			return change.UTC()
		}
		x = change
	}
}

// repeated says whether n is the second pass of a wall-clock time, in the
// hour after the clock went back.
func (r recurSpec) repeated(n time.Time) bool {
	n = n.In(r.spec.Location)
	from, _ := n.ZoneBounds()
	if from.IsZero() {
		return false
	}
	_, off := from.Zone()
	_, before := from.Add(-time.Second).Zone()
	back := time.Duration(before-off) * time.Second
	return back > 0 && n.Before(from.Add(back))
}

// skipsStart says whether the clock change at change moves the clock
// forward over a wall-clock time the spec names.
func (r recurSpec) skipsStart(change time.Time) bool {
	_, off := change.Zone()
	_, before := change.Add(-time.Second).Zone()
	if off <= before {
		return false
	}
	// The skipped wall-clock times exist on the clock as it was before.
	old := *r.spec
	old.Location = time.FixedZone("", before)
	first := old.Next(change.Add(-time.Second))
	return !first.IsZero() && first.Before(change.Add(time.Duration(off-before)*time.Second))
}

// period is the shortest time between two starts of a spec: over the
// periodSamples starts from start, and around each change of its zone's
// clock within a year of start, where the gaps are shorter or longer than
// on other days (zero: a single start).
func period(r recurSpec, start time.Time) time.Duration {
	var shortest, longest time.Duration
	walk := func(t, end time.Time, samples int) {
		for i := 0; i < samples && !t.IsZero() && (end.IsZero() || !t.After(end)); i++ {
			n := r.Next(t)
			if n.IsZero() {
				return
			}
			g := n.Sub(t)
			if shortest == 0 || g < shortest {
				shortest = g
			}
			longest = max(longest, g)
			t = n
		}
	}
	walk(start, time.Time{}, periodSamples)
	// Around each change, from the start before it: gaps with it are at
	// most longest (the gaps seen) and a change's hour longer.
	reach := longest + 3*time.Hour
	x := start.In(r.spec.Location)
	for {
		_, change := x.ZoneBounds()
		if change.IsZero() || change.After(start.AddDate(1, 0, 0)) || longest == 0 {
			return shortest
		}
		from := r.Next(maxTime(start, change.Add(-reach)).Add(-time.Nanosecond))
		walk(from, change.Add(reach), changeSamples)
		x = change
	}
}

// changeSamples bounds the starts period looks at around one clock
// change.
const changeSamples = 512

// firstOccurrence is the first start at or after from of a window of
// length d still open at now (zero: none).
func firstOccurrence(spec recurSpec, from, now time.Time, d time.Duration) time.Time {
	// Next answers the first start strictly after its argument.
	after := maxTime(from.Add(-time.Nanosecond), now.Add(-d))
	return spec.Next(after).UTC()
}

// repeatOf parses a stored recurring command's spec and duration (a
// descriptor stored before they were refused parses to none: the command
// keeps its current window and starts no further one).
func repeatOf(cm *ScheduledCmd) (recurSpec, time.Duration, bool) {
	spec, err := parseSpec(cm.Repeat)
	if err != nil {
		return recurSpec{}, 0, false
	}
	d, err := time.ParseDuration(cm.Duration)
	if err != nil || d <= 0 {
		return recurSpec{}, 0, false
	}
	return spec, d, true
}

// nextOccurrence is the start of the occurrence of cm after its current
// one that is still open after now (zero: none, or past until).
func nextOccurrence(cm *ScheduledCmd, now time.Time) time.Time {
	spec, d, ok := repeatOf(cm)
	if !ok || cm.Cancelled {
		return time.Time{}
	}
	after := maxTime(cm.Start, now.Add(-d))
	n := spec.Next(after)
	if n.IsZero() || (cm.Until != nil && !n.Before(*cm.Until)) {
		return time.Time{}
	}
	return n.UTC()
}

// upcoming are up to n windows of cm after its current one.
func upcoming(cm *ScheduledCmd, n int) []Occurrence {
	spec, d, ok := repeatOf(cm)
	if !ok || cm.Cancelled {
		return nil
	}
	var out []Occurrence
	t := cm.Start
	for len(out) < n {
		t = spec.Next(t)
		if t.IsZero() || (cm.Until != nil && !t.Before(*cm.Until)) {
			break
		}
		t = t.UTC()
		out = append(out, Occurrence{Start: t, End: t.Add(d)})
	}
	return out
}

// advance moves every recurring command of a plant whose window ended by
// now on to its next occurrence, filing the ended one (with its status,
// application and writes) under Finished; windows missed while plantd
// was down are not replayed. It returns the schedules changed and the log
// entries to write. c.mu is held.
func (c *Controller) advance(pc *plantCtl, now time.Time) ([]*Schedule, []plant.LogEntry) {
	var changed []*Schedule
	var logs []plant.LogEntry
	var sup map[*ScheduledCmd]bool
	for _, s := range pc.scheds {
		for i := range s.Commands {
			cm := &s.Commands[i]
			if cm.Repeat == "" || now.Before(cm.End) {
				continue
			}
			next := nextOccurrence(cm, now)
			if next.IsZero() {
				continue // the last one: it stays, done
			}
			if sup == nil {
				sup = supersededSet(pc.scheds)
			}
			occ := Occurrence{Start: cm.Start, End: cm.End, Status: StatusDone, Reason: cm.Reason, AppliedAt: cm.AppliedAt, Late: cm.Late, Writes: cm.Writes}
			switch {
			case sup[cm]:
				occ.Status = StatusSuperseded
			case cm.Status == StatusFailed:
				occ.Status = StatusFailed
			case occ.AppliedAt == nil && occ.Reason == "":
				occ.Reason = "not applied: no inverter took it while it was open (plantd not running, the inverters not reachable, or another window governed)"
			}
			cm.Finished = append(cm.Finished, occ)
			// Keep the finished windows of KeepFinished, at most maxFinished.
			drop := 0
			for drop < len(cm.Finished) && (now.Sub(cm.Finished[drop].End) > c.cfg.KeepFinished || len(cm.Finished)-drop > maxFinished) {
				drop++
			}
			cm.Finished = cm.Finished[drop:]
			_, d, _ := repeatOf(cm)
			cm.Start, cm.End = next, next.Add(d)
			cm.Status, cm.OverriddenBy, cm.Reason, cm.AppliedAt, cm.Late, cm.Writes = "", "", "", nil, false, nil
			changed = append(changed, s)
			applied := "not applied"
			if occ.AppliedAt != nil {
				applied = "applied at " + occ.AppliedAt.UTC().Format(time.RFC3339)
			}
			logs = append(logs, plant.LogEntry{Time: now.UTC(), PlantID: pc.id, Level: plant.LevelInfo, Code: "RecurringWindowEnded",
				Message: fmt.Sprintf("schedule %s: %s window %s to %s ended (%s, %s, %d writes); next %s to %s",
					s.ScheduleID, cm.Command, occ.Start.UTC().Format(time.RFC3339), occ.End.UTC().Format(time.RFC3339), occ.Status, applied, len(occ.Writes),
					cm.Start.UTC().Format(time.RFC3339), cm.End.UTC().Format(time.RFC3339))})
		}
	}
	if len(changed) > 0 {
		c.arm(pc)
	}
	return changed, logs
}

// Cancel ends a schedule now: its open windows end now, pending ones
// (and every later occurrence of a recurring command) never start; the
// controls go back to the next window or the default as at any window's
// end. The schedule stays listed, its windows marked cancelled, for the
// audit. A credential cancels schedules of its role or of a lower one.
// It is also how a signal that came and went (a grid operator's
// ripple-control contact, package gridinput) lifts the limit it set
// without sending a window of its own, which, being the newest of its
// channel, would overwrite older windows for its whole span. A schedule
// already over is left as it is.
// Errors: ErrUnknownSchedule, ErrNotPermitted, or the store's.
func (c *Controller) Cancel(ctx context.Context, plantID, scheduleID string, by Origin) error {
	now := c.now().UTC().Truncate(time.Millisecond)
	c.mu.Lock()
	pc, sc, err := c.scheduleFor(plantID, scheduleID, by, "cancel")
	if err != nil {
		c.mu.Unlock()
		return err
	}
	n := 0
	for i := range sc.Commands {
		cm := &sc.Commands[i]
		if !cm.End.After(now) {
			if cm.Repeat != "" && !cm.Cancelled {
				cm.Cancelled = true // no further occurrence
				n++
			}
			continue
		}
		cm.End = maxTime(cm.Start, now)
		cm.Cancelled = true
		cm.Reason = fmt.Sprintf("cancelled by %s at %s", by, now.Format(time.RFC3339))
		n++
	}
	if n > 0 {
		pc.pendingEdge = now // the write it causes counts as an edge's
		c.arm(pc)
	}
	c.mu.Unlock()
	if n == 0 {
		return nil
	}
	if err := c.persist(ctx, sc); err != nil {
		return err
	}
	c.st.Log(plant.LogEntry{Time: now, PlantID: plantID, Level: plant.LevelInfo, Code: "ScheduleCancelled",
		Message: fmt.Sprintf("schedule %s cancelled by %s: %d windows ended or dropped", scheduleID, by, n)})
	c.wake()
	return nil
}

// Extend moves the end of a schedule's open windows to end, as a master
// that renews its limit asks (a Modbus master rewriting its setpoint
// before its reversion time, package sunspecserver): the window goes on
// with its value, ramps and reversion, and the schedule list and the
// plant log do not grow with every renewal. It never shortens a window
// (Cancel ends one) and does not apply to recurring commands. The same
// role rule as Cancel's applies. It is persisted, so a restart keeps the
// end of the last renewal.
// Errors: ErrUnknownSchedule (also for a schedule with no open window
// left: the caller sends a new one), ErrNotPermitted, or the store's.
func (c *Controller) Extend(ctx context.Context, plantID, scheduleID string, end time.Time, by Origin) error {
	now := c.now().UTC().Truncate(time.Millisecond)
	end = end.UTC().Truncate(time.Millisecond)
	c.mu.Lock()
	pc, sc, err := c.scheduleFor(plantID, scheduleID, by, "extend")
	if err != nil {
		c.mu.Unlock()
		return err
	}
	open := 0
	for i := range sc.Commands {
		cm := &sc.Commands[i]
		if cm.Repeat != "" || cm.Cancelled || !cm.End.After(now) {
			continue
		}
		open++
		if end.After(cm.End) {
			cm.End = end
		}
	}
	if open > 0 {
		c.arm(pc) // the window's end moved: the timer fires at the new one
	}
	c.mu.Unlock()
	if open == 0 {
		return fmt.Errorf("grid control: schedule %s of plant %s has no open window to extend: %w", scheduleID, plantID, ErrUnknownSchedule)
	}
	return c.persist(ctx, sc)
}

// scheduleFor finds a plant's schedule that by may change (verb: cancel,
// extend): one of by's role or a lower one, since an installer never
// lifts a grid operator's window. c.mu is held.
func (c *Controller) scheduleFor(plantID, scheduleID string, by Origin, verb string) (*plantCtl, *Schedule, error) {
	pc := c.plants[plantID]
	if pc == nil {
		return nil, nil, fmt.Errorf("grid control: unknown plant %s", plantID)
	}
	for _, sc := range pc.scheds {
		if sc.ScheduleID != scheduleID {
			continue
		}
		if config.RoleRank(by.Role) < config.RoleRank(roleOf(sc)) {
			return nil, nil, fmt.Errorf("grid control: schedule %s is a %s's, %s may not %s it: %w", scheduleID, roleOf(sc), by, verb, ErrNotPermitted)
		}
		if ch := ownChannel(sc); ch != by.Channel {
			switch {
			case strings.HasPrefix(ch, string(DoorInput)+":"), strings.HasPrefix(ch, string(DoorEEBus)+":"):
				return nil, nil, &InputHeldError{ScheduleID: scheduleID, Holder: sc.CreatedBy}
			case by.Channel != "":
				// A master ends and renews only its own windows, an
				// input only its own; the API's people may end a
				// master's (within their role).
				return nil, nil, fmt.Errorf("grid control: schedule %s is %s's, %s may not %s it: %w", scheduleID, sc.CreatedBy, by, verb, ErrNotPermitted)
			}
		}
		return pc, sc, nil
	}
	return nil, nil, fmt.Errorf("grid control: schedule %s of plant %s: %w", scheduleID, plantID, ErrUnknownSchedule)
}

// ErrUnknownSchedule: no such schedule on the plant.
var ErrUnknownSchedule = errors.New("unknown schedule")

// ErrNotPermitted: the schedule is of a role above the caller's, or of
// another channel (another Modbus master's).
var ErrNotPermitted = errors.New("not permitted")

// ErrHeldByInput: the schedule is a grid operator's input's, which ends
// it when its contacts release (InputHeldError says which).
var ErrHeldByInput = errors.New("held by an input")

// InputHeldError refuses to end or extend an input's window from any
// other origin: the window lives while the input's contacts demand it
// (package gridinput), so a DELETE cannot lift a limit a closed contact
// still signals. A control box's window over EEBus (package eebus) is
// held the same way, while the box's limit stands.
type InputHeldError struct {
	ScheduleID string
	// Holder is the schedule's CreatedBy: "input:<id>/<contacts> (role)".
	Holder string
}

func (e *InputHeldError) Error() string {
	if strings.HasPrefix(e.Holder, string(DoorEEBus)+":") {
		return fmt.Sprintf("grid control: schedule %s is held by %s: it ends when the control box ends its limit", e.ScheduleID, e.Holder)
	}
	return fmt.Sprintf("grid control: schedule %s is held by %s: it ends when the input's contacts release it", e.ScheduleID, e.Holder)
}

// Is makes errors.Is(err, ErrHeldByInput) true.
func (e *InputHeldError) Is(target error) bool { return target == ErrHeldByInput }

// noteWrite files a write in the audit of the windows it applied and
// returns the schedules to store: those it added a write to (one that
// only replaced the latest in the last slot is stored with the next
// change of the schedule, so that a FeedInLimit loop does not write the
// store every cycle). c.mu is held.
func noteWrite(ws []window, aw AuditWrite) []*Schedule {
	var persist []*Schedule
	for _, w := range ws {
		cm := &w.sched.Commands[w.idx]
		if len(cm.Writes) >= maxAuditWrites {
			cm.Writes[len(cm.Writes)-1] = aw
			continue
		}
		cm.Writes = append(cm.Writes, aw)
		persist = append(persist, w.sched)
	}
	return persist
}

// auditor records what a write sets: wrap its edit with edit, then read
// the points back from the instance the write read back.
type auditor struct {
	renew  []string
	points []AuditPoint
}

// edit wraps a write's edit: the top-level points whose registers the
// edit changed, and the renew points, with the values to be written.
func (a *auditor) edit(edit func(*sunspec.Instance) error) func(*sunspec.Instance) error {
	return func(inst *sunspec.Instance) error {
		before := slices.Clone(inst.Regs)
		if err := edit(inst); err != nil {
			return err
		}
		a.points = a.points[:0]
		g := inst.Model.Group
		for j := range g.Points {
			p := &g.Points[j]
			from := inst.Root.Offset + int(p.Offset)
			to := from + int(p.Size)
			if to > len(inst.Regs) {
				continue
			}
			if slices.Equal(before[from:to], inst.Regs[from:to]) && !slices.Contains(a.renew, p.Name) {
				continue
			}
			v, err := inst.Float(p.Name)
			if err != nil {
				continue
			}
			a.points = append(a.points, AuditPoint{Point: p.Name, Value: v})
		}
		return nil
	}
}

// write is the audit record of the write, its points read back from after
// (nil: the write read back nothing).
func (a *auditor) write(deviceID string, model uint16, what string, after *sunspec.Instance, at time.Time) *AuditWrite {
	aw := &AuditWrite{DeviceID: deviceID, Model: model, What: what, ReadBackAt: at.UTC(), Points: slices.Clone(a.points)}
	if after != nil {
		for i := range aw.Points {
			if v, err := after.Float(aw.Points[i].Point); err == nil {
				aw.Points[i].ReadBack = &v
			}
		}
	}
	return aw
}
