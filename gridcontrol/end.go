package gridcontrol

import (
	"context"
	"fmt"
	"time"

	"plantd/plant"
)

// EndSchedule ends a schedule's windows now: every window still open ends
// at the controller's clock, one not yet started starts and ends now (it
// never opens), and the schedule stays listed (done). Every other schedule keeps its
// windows: one that this schedule superseded or overrode governs again at
// once, from the next control cycle on. It is how a signal that came and
// went (a grid operator's ripple-control contact, package gridinput) lifts
// the limit it set without sending a window of its own, which, being the
// newest of its role, would overwrite the role's older windows for its
// whole span. by names who ends it, for the plant log. An unknown plant or
// schedule is an error; a schedule already over is left as it is.
func (c *Controller) EndSchedule(ctx context.Context, plantID, scheduleID string, by Origin) error {
	now := c.now().UTC().Truncate(time.Millisecond)
	c.mu.Lock()
	pc := c.plants[plantID]
	if pc == nil {
		c.mu.Unlock()
		return fmt.Errorf("grid control: unknown plant %s", plantID)
	}
	var sc *Schedule
	for _, s := range pc.scheds {
		if s.ScheduleID == scheduleID {
			sc = s
		}
	}
	if sc == nil {
		c.mu.Unlock()
		return fmt.Errorf("grid control: plant %s: unknown schedule %s", plantID, scheduleID)
	}
	changed := false
	for i := range sc.Commands {
		cm := &sc.Commands[i]
		if !cm.End.After(now) {
			continue
		}
		if cm.Start.After(now) {
			cm.Start = now
		}
		cm.End = now
		changed = true
	}
	if changed {
		pc.pendingEdge = now
		c.arm(pc)
	}
	c.mu.Unlock()
	if !changed {
		return nil
	}
	if err := c.persist(ctx, sc); err != nil {
		return err
	}
	c.st.Log(plant.LogEntry{Time: now, PlantID: plantID, Level: plant.LevelInfo, Code: "ScheduleEnded",
		Message: fmt.Sprintf("schedule %s ended by %s", scheduleID, by)})
	c.wake()
	return nil
}
