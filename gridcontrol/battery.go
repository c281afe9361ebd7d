package gridcontrol

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"plantd/config"
	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sunspec"
)

// Battery setpoints: the plan's (and later an installer's) charge and
// discharge power for a plant's batteries, a window of plantd's own
// command BatteryPower (not one of the spec's §2.5 commands: the API does
// not take it), held, renewed, re-asserted and restored as every other
// control (see the package doc, "Battery setpoints").

// CmdBatteryPower is plantd's battery setpoint command: value in W,
// positive discharging, negative charging (from the grid too), 0 holding
// (neither charging nor discharging); with unit UnitNoDischarge the value
// is 0 and the battery does not discharge but charges from PV as it
// would by itself.
const CmdBatteryPower = "BatteryPower"

// The units of a BatteryPower window: UnitBatteryW a setpoint (W, signed;
// 0 a full hold), UnitNoDischarge no discharge, PV charging free
// (SetBatteryNoDischarge). Stored windows of before UnitNoDischarge are
// all UnitBatteryW: a stored 0 W window is a full hold still.
const (
	UnitBatteryW    = "W"
	UnitNoDischarge = "noDischarge"
)

// ctlBattery is the battery's charge/discharge control: 124 StorCtl_Mod,
// InWRte, OutWRte, ChaGriSet and the InOutWRte timers, or 802's reserve
// bounds on a battery without 124.
const ctlBattery control = "battery"

// ValueBatteryW: a battery setpoint in W, signed (positive discharging).
const ValueBatteryW ValueKind = ValueCurve + 1

// DoorPlan is the site loop's day-ahead plan (issue 45): its battery
// setpoints are a channel of their own ("plan") with the standard role,
// below an installer's windows and a grid operator's.
const DoorPlan Door = "plan"

// PlanOrigin is the origin of the plan's setpoints: door plan, role
// standard, channel "plan"; name says which planner ("day-ahead").
func PlanOrigin(name string) Origin {
	return Origin{Door: DoorPlan, Name: name, Role: config.RoleStandard, Channel: string(DoorPlan)}
}

// batteryCommand describes BatteryPower for the code the spec's commands
// go through (eligibility, precedence, held points, restore). Models: 124
// first (a power setpoint), 802 where 124 is absent (reserve bounds: a
// hold only). Its windows have no order: across roles the higher role's
// governs (an installer's over the plan's).
var batteryCommand = Command{Name: CmdBatteryPower, Cap: sunspec.CapStorageControl, Value: ValueBatteryW,
	Models: []uint16{124, 802}, Control: ctlBattery}

// commandNamed is CommandByName with plantd's own battery command.
func commandNamed(n string) (Command, bool) {
	if n == CmdBatteryPower {
		return batteryCommand, true
	}
	return CommandByName(n)
}

// allCommands are the spec's commands and plantd's battery command.
func allCommands() []Command { return append(Commands[:len(Commands):len(Commands)], batteryCommand) }

// classifyBattery says what a device is to BatteryPower: an active
// battery, or a hybrid inverter with model 124, that has 124 or 802.
func classifyBattery(cmd Command, d plant.DeviceLive) verdict {
	sd := sunspecOf(d.Discovered)
	switch {
	case !d.Info.Active():
		return notInverter
	case sd == nil && d.Info.Kind == kind.Battery:
		if d.Comm.State == plant.StateOffline {
			return undiscoveredOffline
		}
		return undiscovered
	case sd == nil:
		return notInverter
	case d.Info.Kind == kind.Inverter:
		if _, ok := sd.Ref(124); !ok {
			return notInverter
		}
	case d.Info.Kind != kind.Battery:
		return notInverter
	}
	if _, ok := cmd.model(sd); !ok {
		return noModel
	}
	if !reachable(d) {
		return capableOffline
	}
	return capable
}

// SetBatteryPower sets the plant's batteries to watts from now until
// until: positive discharges, negative charges (from the grid as well as
// from PV: 124 ChaGriSet GRID), 0 holds the state of charge (neither
// charging nor discharging: PV surplus is exported or held back). by is
// the origin (PlanOrigin for the plan). It is a window of its own channel:
// the newest of the channel governs, an installer's BatteryPower window
// governs over the plan's, and a FeedInLimit caps a discharge so that the
// export stays within it. The setpoint is shared among the batteries by
// their rated power. Calling it again with the same watts extends the
// window; another value (or SetBatteryNoDischarge) replaces it (the older
// window ends now). Stored: a restart holds it again from the first
// cycle. A battery with 802 and no 124 takes only a hold (its reserve
// bounds at its SoC); another value fails on it (no power setpoint in
// 802). ReleaseBatteryPower ends it.
func (c *Controller) SetBatteryPower(ctx context.Context, by Origin, plantID string, watts float64, until time.Time) (Schedule, error) {
	return c.setBattery(ctx, by, plantID, watts, UnitBatteryW, until)
}

// SetBatteryNoDischarge keeps the plant's batteries from discharging from
// now until until while they still charge from PV surplus (never from the
// grid): the plan's hold that saves the stored energy for a dearer hour
// without turning away PV a wrong forecast did not foresee. 124:
// StorCtl_Mod 2 (the discharge limit only), OutWRte 0, InWRte 100,
// ChaGriSet PV; 802: SoCRsvMin at the SoC of the window's first write,
// SocRsvMax as the battery had it (so on 802 what PV stores during the
// window may be used again within it; the energy it held at the first
// write is kept). It is a BatteryPower window of unit
// UnitNoDischarge with the same precedence, storage and replacement as
// SetBatteryPower's (a FeedInLimit has no discharge to cap).
func (c *Controller) SetBatteryNoDischarge(ctx context.Context, by Origin, plantID string, until time.Time) (Schedule, error) {
	return c.setBattery(ctx, by, plantID, 0, UnitNoDischarge, until)
}

// setBattery opens (or extends) by's BatteryPower window of watts in unit.
func (c *Controller) setBattery(ctx context.Context, by Origin, plantID string, watts float64, unit string, until time.Time) (Schedule, error) {
	now := c.now().UTC().Truncate(time.Millisecond)
	until = until.UTC().Truncate(time.Millisecond)
	switch {
	case math.IsNaN(watts) || math.IsInf(watts, 0) || math.Abs(watts) > 1e9:
		return Schedule{}, &ValidationError{Fields: []FieldError{{Field: "value", Message: fmt.Sprintf("%g W outside -1e9..1e9", watts)}}}
	case !until.After(now):
		return Schedule{}, &ValidationError{Fields: []FieldError{{Field: "end", Message: fmt.Sprintf("%s is not after now (%s)", until.Format(time.RFC3339), now.Format(time.RFC3339))}}}
	}
	watts = math.Round(watts)
	old := c.openBattery(plantID, by, now)
	for _, o := range old {
		if cm := o.sched.Commands[o.idx]; *cm.Value == watts && batteryUnit(&cm) == unit && !until.Before(cm.End) {
			if err := c.Extend(ctx, plantID, o.sched.ScheduleID, until, by); err != nil {
				return Schedule{}, err
			}
			return c.scheduleView(plantID, o.sched.ScheduleID)
		}
	}
	sc, err := c.submit(ctx, plantID, by, []ScheduledCmd{{Command: CmdBatteryPower, Start: now, End: until, Value: &watts, Unit: unit}}, nil)
	if err != nil {
		return Schedule{}, err
	}
	for _, o := range old {
		if err := c.Cancel(ctx, plantID, o.sched.ScheduleID, by); err != nil {
			c.log.Warn("end the battery setpoint replaced", "schedule", o.sched.ScheduleID, "err", err)
		}
	}
	c.trimBattery(ctx, plantID, by)
	c.st.Log(plant.LogEntry{Time: now, PlantID: plantID, Level: plant.LevelInfo, Code: "BatterySetpoint",
		Message: fmt.Sprintf("battery setpoint %s from %s until %s (schedule %s)", describeBattery(watts, unit), by, until.Format(time.RFC3339), sc.ScheduleID)})
	return sc, nil
}

// batteryUnit is a BatteryPower window's unit: UnitNoDischarge, else
// UnitBatteryW (what every window stored before the unit was known is).
func batteryUnit(cm *ScheduledCmd) string {
	if cm.Unit == UnitNoDischarge {
		return UnitNoDischarge
	}
	return UnitBatteryW
}

// forcedBattery is the BatteryPower window in force that fixes the
// batteries' power (nil: none, or a no-discharge window, under which the
// batteries still take PV surplus by themselves): the FeedInLimit loop
// leaves the batteries carrying it out of its battery terms.
func forcedBattery(act map[string]window) *window {
	if w, ok := act[CmdBatteryPower]; ok && w.cmd.Value != nil && batteryUnit(w.cmd) == UnitBatteryW {
		return &w
	}
	return nil
}

// ReleaseBatteryPower ends by's battery setpoints on the plant now: the
// batteries get their own settings back (the default image read at first
// contact: their self-consumption) in the next cycle, unless another
// channel's setpoint holds them.
func (c *Controller) ReleaseBatteryPower(ctx context.Context, by Origin, plantID string) error {
	now := c.now().UTC().Truncate(time.Millisecond)
	old := c.openBattery(plantID, by, now)
	var errs []error
	for _, o := range old {
		errs = append(errs, c.Cancel(ctx, plantID, o.sched.ScheduleID, by))
	}
	if len(old) > 0 {
		c.st.Log(plant.LogEntry{Time: now, PlantID: plantID, Level: plant.LevelInfo, Code: "BatterySetpointReleased",
			Message: fmt.Sprintf("battery setpoint of %s released: the batteries go back to their own control", by)})
	}
	return errors.Join(errs...)
}

// openBattery returns by's BatteryPower windows on the plant that have not
// ended.
func (c *Controller) openBattery(plantID string, by Origin, now time.Time) []window {
	c.mu.Lock()
	defer c.mu.Unlock()
	pc := c.plants[plantID]
	if pc == nil {
		return nil
	}
	var out []window
	for _, s := range pc.scheds {
		if s.CreatedBy != by.String() || ownChannel(s) != by.Channel {
			continue
		}
		for i := range s.Commands {
			if cm := &s.Commands[i]; cm.Command == CmdBatteryPower && !cm.Cancelled && cm.End.After(now) && cm.Value != nil {
				out = append(out, window{sched: s, idx: i, cmd: cm})
			}
		}
	}
	return out
}

// isBattery reports whether a schedule holds battery setpoints (only
// SetBatteryPower makes those, one window each).
func isBattery(s *Schedule) bool {
	return len(s.Commands) > 0 && s.Commands[0].Command == CmdBatteryPower
}

// keepBattery is how many of a channel's finished battery setpoints stay
// listed (BatteryWindows): a plan that changes its setpoint every 15
// minutes would otherwise fill the plant's MaxSchedules with its own
// history and push the grid operator's out early.
const keepBattery = 16

// trimBattery drops by's finished battery setpoints but the newest
// keepBattery.
func (c *Controller) trimBattery(ctx context.Context, plantID string, by Origin) {
	now := c.now()
	c.mu.Lock()
	pc := c.plants[plantID]
	if pc == nil {
		c.mu.Unlock()
		return
	}
	var finished []*Schedule
	for _, s := range pc.scheds {
		if isBattery(s) && s.CreatedBy == by.String() && !s.Commands[0].End.After(now) {
			finished = append(finished, s)
		}
	}
	c.mu.Unlock()
	if len(finished) > keepBattery {
		c.forget(ctx, pc, finished[:len(finished)-keepBattery]) // oldest first
	}
}

// scheduleView is one schedule as Schedules lists it.
func (c *Controller) scheduleView(plantID, id string) (Schedule, error) {
	list, err := c.Schedules(plantID, BatteryWindows(true))
	if err != nil {
		return Schedule{}, err
	}
	for _, s := range list {
		if s.ScheduleID == id {
			return s, nil
		}
	}
	return Schedule{}, fmt.Errorf("grid control: schedule %s of plant %s: %w", id, plantID, ErrUnknownSchedule)
}

func describeBattery(w float64, unit string) string {
	switch {
	case unit == UnitNoDischarge:
		return "no discharge (charging from PV only)"
	case w > 0:
		return fmt.Sprintf("discharge %g W", w)
	case w < 0:
		return fmt.Sprintf("charge %g W", -w)
	}
	return "hold (0 W)"
}

// BatterySetpoint is the setpoint in force on one battery (for /metrics).
type BatterySetpoint struct {
	PlantID, DeviceID string
	// W is what plantd last wrote (positive discharging); WantW what the
	// window asks (the plant's setpoint shared by rating), which a
	// FeedInLimit may cap.
	W, WantW float64
}

// BatterySetpoints lists the batteries plantd holds a setpoint on now.
func (c *Controller) BatterySetpoints() []BatterySetpoint {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []BatterySetpoint
	for id, dc := range c.devs {
		st := dc.ctl[ctlBattery]
		if st == nil || !st.owned || st.key == "" {
			continue
		}
		out = append(out, BatterySetpoint{PlantID: dc.plantID, DeviceID: id, W: st.batW, WantW: st.batWant})
	}
	slices.SortFunc(out, func(a, b BatterySetpoint) int { return strings.Compare(a.DeviceID, b.DeviceID) })
	return out
}

// batteryPlan is what a BatteryPower window asks of each battery now.
type batteryPlan struct {
	w      window
	active bool
	// perDev is each carrying device's setpoint (W, positive
	// discharging), the plant's shared by rated power and capped by a
	// FeedInLimit; want the same before the cap.
	perDev, want map[string]float64
	// noDischarge: the window is UnitNoDischarge (perDev 0 each).
	noDischarge bool
}

// planBattery shares the active BatteryPower window among the batteries
// and caps a discharge that would export above a FeedInLimit in force:
// the batteries may discharge what they do now (what plantd last wrote,
// else their live power) plus the room the meter shows (limit + grid
// import), and no more than that while the FeedInLimit loop holds PV
// back (PV serves the house first: the battery's energy keeps, curtailed
// PV is lost).
func (c *Controller) planBattery(pc *plantCtl, act map[string]window, devs []plant.DeviceLive, rated float64, feedPct *float64) batteryPlan {
	w, ok := act[CmdBatteryPower]
	if !ok || w.cmd.Value == nil {
		return batteryPlan{}
	}
	bp := batteryPlan{w: w, active: true, perDev: map[string]float64{}, want: map[string]float64{},
		noDischarge: batteryUnit(w.cmd) == UnitNoDischarge}
	var ids []string
	var ratings []float64
	var sum float64
	for i := range devs {
		d := &devs[i]
		if v := classifyBattery(batteryCommand, *d); v != capable && v != capableOffline {
			continue
		}
		r := 0.0
		if sd := sunspecOf(d.Discovered); sd != nil {
			r = sd.RatedPowerW
		}
		ids, ratings, sum = append(ids, d.Info.ID), append(ratings, r), sum+r
	}
	total := *w.cmd.Value
	capW := math.Inf(1)
	if fw, ok := act[CmdFeedInLimit]; ok && total > 0 {
		limitW := *fw.cmd.Value
		if fw.cmd.Unit != "W" {
			limitW = *fw.cmd.Value / 100 * rated
		}
		c.mu.Lock()
		fs := pc.feed
		base, known := 0.0, len(ids) > 0
		for _, id := range ids {
			if dc := c.devs[id]; dc != nil && dc.peek(ctlBattery).owned && dc.peek(ctlBattery).key != "" {
				base += dc.peek(ctlBattery).batW
			} else {
				known = false
			}
		}
		c.mu.Unlock()
		if !known {
			base = 0
			for _, id := range ids {
				cha, _, _ := c.live.Value(id, plant.BatteryCharging)
				dis, _, _ := c.live.Value(id, plant.BatteryDischarging)
				base += math.Max(0, dis) - math.Max(0, cha)
			}
		}
		room := limitW + fs.gridW
		if !fs.gridOK {
			room = math.Min(0, room) // no meter this cycle: never more
		}
		if feedPct != nil && fs.pvHeld(*feedPct, rated) {
			room = math.Min(0, room)
		}
		capW = math.Max(0, base+room)
	}
	for i, id := range ids {
		share := 1 / float64(len(ids))
		if sum > 0 {
			share = ratings[i] / sum
		}
		want := math.Round(total * share)
		bp.want[id] = want
		bp.perDev[id] = math.Min(want, math.Floor(capW*share))
	}
	return bp
}

// reconcileBattery drives a battery's control: written when its window
// starts or its share changes, renewed at half the reversion timeout,
// re-asserted, restored when no window holds it.
func (c *Controller) reconcileBattery(ctx context.Context, pc *plantCtl, dc *devCtl, d plant.DeviceLive, rw sunspec.ReadWriter, bp batteryPlan, now time.Time) {
	ref, ok := batteryCommand.model(sunspecOf(d.Discovered))
	if !ok {
		return
	}
	c.mu.Lock()
	snap := dc.defaults[ref.ID]
	st := dc.peek(ctlBattery)
	dc.plantID = d.Info.PlantID
	c.mu.Unlock()
	if snap == nil || now.Before(st.nextTry) {
		return
	}
	target, mine := bp.perDev[d.Info.ID]
	if !bp.active || !mine {
		if st.owned || st.claimed {
			c.restoreControl(ctx, pc, dc, d, rw, ref, ctlBattery, now)
		}
		return
	}
	ws := []window{bp.w}
	wk := key(ws)
	rvrt := c.cfg.RevertTimeout.Seconds()
	renewDue := ref.ID == 124 && now.Sub(st.writtenAt) >= c.cfg.RevertTimeout/2
	if st.owned && wk == st.key && !st.rewrite && !renewDue && math.Abs(st.batW-target) < batteryDeadband(snap) {
		return
	}
	err := c.claim(ctx, dc, d, ctlBattery)
	au := &auditor{renew: renewPoints(ctlBattery)}
	what := fmt.Sprintf("model %d battery %s", ref.ID, describeBattery(target, batteryUnit(bp.w.cmd)))
	var after *sunspec.Instance
	// An 802 hold keeps the SoC of the window's first write (NaN: read it
	// now).
	holdSoC := st.holdSoC
	if wk != st.key || !st.owned {
		holdSoC = math.NaN()
	}
	if err == nil {
		after, err = sunspec.WriteModelRenew(ctx, rw, ref, renewPoints(ctlBattery), nil, au.edit(func(inst *sunspec.Instance) error {
			return editBattery(inst, snap, target, bp.noDischarge, rvrt, &holdSoC)
		}))
	}
	var aw *AuditWrite
	if err == nil {
		aw = au.write(d.Info.ID, ref.ID, what, after, c.now())
		c.noteHeld(dc, d.Info.ID, ctlBattery, after, st.rewrite)
	}
	want := bp.want[d.Info.ID]
	c.outcome(ctx, pc, dc, d, ctlBattery, wk, ws, what, wk != st.key || !st.owned, err, now, aw, func(s *ctlState) { s.batW, s.batWant, s.holdSoC = target, want, holdSoC })
}

// batteryDeadband is the change of a battery's share that is written
// (a FeedInLimit's cap moves it every cycle): half a percent of 124's
// WChaMax, less than the register's step at InOutWRte_SF 0 (1 %), at
// least 1 W.
func batteryDeadband(snap *sunspec.Instance) float64 {
	if v, err := snap.Float("WChaMax"); err == nil && v > 0 {
		return math.Max(1, v/200)
	}
	return 1
}

// editBattery sets a battery's setpoint of w W (positive discharging) on
// its 124 or 802 image, or with noDischarge (w 0) keeps it from
// discharging. 124 (as Fronius GEN24 and the SunSpec storage clients of
// evcc and OpenEMS drive it): StorCtl_Mod 3 (both limits on) bounds the
// power between InWRte % charging and OutWRte % discharging (of
// WChaMax); a negative OutWRte is a charge the battery must take, a
// negative InWRte a discharge it must give. So a discharge of p % is
// InWRte -p, OutWRte p; a charge InWRte p, OutWRte -p with ChaGriSet GRID
// (the grid may feed it); a hold both 0. No discharge is StorCtl_Mod 2
// (bit 1, DISCHARGE: the discharge limit only) with OutWRte 0, InWRte 100
// (not applied with bit 0 off; a full rate for a battery that applies it
// anyway) and ChaGriSet PV: the battery takes PV surplus as it would by
// itself, never the grid. InOutWRte_RvrtTms makes the battery go back to
// its own control when plantd stops renewing; WinTms and RmpTms 0: at
// once. 802 has no power setpoint: a hold sets SoCRsvMin and SocRsvMax to
// *holdSoC, which a NaN asks to be read from the image (the window's
// first write) and set to the SoC there; no discharge sets SoCRsvMin so
// and SocRsvMax back to the battery's own (snap's), so PV may fill it;
// another value is refused (errUnsupported).
func editBattery(inst, snap *sunspec.Instance, w float64, noDischarge bool, rvrtS float64, holdSoC *float64) error {
	if inst.Model.ID == 802 {
		if w != 0 {
			return fmt.Errorf("model 802 has no power setpoint, only reserve bounds (a hold): %g W: %w", w, errUnsupported)
		}
		if math.IsNaN(*holdSoC) {
			soc, err := inst.Float("SoC")
			if err != nil {
				return fmt.Errorf("model 802 SoC: %w", err)
			}
			*holdSoC = soc
		}
		top := *holdSoC
		if noDischarge {
			v, err := snap.Float("SocRsvMax")
			if err != nil {
				return fmt.Errorf("model 802 SocRsvMax of the battery's own settings: %w", err)
			}
			top = v
		}
		return setEach(inst, []sunspec.PointValue{{Point: "SoCRsvMin", Value: *holdSoC}, {Point: "SocRsvMax", Value: top}})
	}
	maxW, err := snap.Float("WChaMax")
	if err != nil || maxW <= 0 {
		return fmt.Errorf("model 124 WChaMax unknown (%v): %w", err, errUnsupported)
	}
	p := math.Max(-100, math.Min(100, w/maxW*100))
	in, out, mode := -p, p, uint64(3) // both limits
	grid := rawOf(snap, "ChaGriSet")
	switch {
	case noDischarge:
		in, out, mode, grid = 100, 0, 2, 0 // the discharge limit only; PV
	case w < 0:
		grid = 1 // GRID
	}
	if err := setEach(inst, []sunspec.PointValue{{Point: "InWRte", Value: in}, {Point: "OutWRte", Value: out},
		{Point: "InOutWRte_RvrtTms", Value: rvrtS}}); err != nil {
		return err
	}
	for _, n := range []string{"InOutWRte_WinTms", "InOutWRte_RmpTms"} {
		if err := setIf(inst, n, 0); err != nil {
			return err
		}
	}
	if err := inst.SetRaw("StorCtl_Mod", mode); err != nil {
		return err
	}
	if has(inst, "ChaGriSet") {
		return inst.SetRaw("ChaGriSet", grid)
	}
	return nil
}

// rawOf is a point's raw value in an image (0 when it is not there).
func rawOf(inst *sunspec.Instance, name string) uint64 {
	v, err := inst.Value(name)
	if err != nil || !v.OK {
		return 0
	}
	return v.Raw
}

// stopGrace bounds the restores at a clean stop.
const stopGrace = 5 * time.Second

// releaseBatteries restores, at a clean stop, every battery plantd holds a
// setpoint on: a battery is not left forcing a charge or discharge until
// its reversion timer runs out (802's reserve bounds have none). The
// window stays stored: a restart holds it again from its first cycle. A
// process killed writes nothing: then the batteries' own timers revert
// 124 (InOutWRte_RvrtTms).
func (c *Controller) releaseBatteries(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, stopGrace)
	defer cancel()
	c.mu.Lock()
	var ids []string
	for id, dc := range c.devs {
		if st := dc.peek(ctlBattery); st.owned || st.claimed {
			ids = append(ids, id)
		}
	}
	c.mu.Unlock()
	now := c.now()
	for _, id := range ids {
		d, ok := c.deviceLive(id)
		if !ok || sunspecOf(d.Discovered) == nil {
			continue
		}
		rw, ok := c.conns(id)
		if !ok {
			continue
		}
		ref, ok := batteryCommand.model(sunspecOf(d.Discovered))
		if !ok {
			continue
		}
		c.mu.Lock()
		dc, pc := c.devs[id], c.plants[d.Info.PlantID]
		loaded := dc.defaults[ref.ID] != nil
		c.mu.Unlock()
		if pc == nil || !loaded {
			continue
		}
		c.restoreControl(ctx, pc, dc, d, rw, ref, ctlBattery, now)
	}
}

// deviceLive finds a device in the live state.
func (c *Controller) deviceLive(id string) (plant.DeviceLive, bool) {
	for _, p := range c.live.Plants() {
		devs, err := c.live.DeviceStatuses(p.ID)
		if err != nil {
			continue
		}
		for _, d := range devs {
			if d.Info.ID == id {
				return d, true
			}
		}
	}
	return plant.DeviceLive{}, false
}
