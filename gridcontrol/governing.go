package gridcontrol

import (
	"fmt"
	"math"
	"time"
)

// LimitInForce is the active-power limit that governs a plant now, as
// the control cycle writes it to the inverters taking limits: the lower
// of the governing opModMaxLimW window and the FeedInLimit loop's output
// limit (plan), whoever sent it. Package sunspecserver shows it in its
// 123/704 points.
type LimitInForce struct {
	// Pct is the limit in % of the rated power of the inverters taking
	// limits (a limit in W converted with the rating the last cycle
	// found; 100 while none is known, as the cycle does).
	Pct float64
	// Command is the command that governs: opModMaxLimW or FeedInLimit
	// (then Pct is the loop's latest output limit, or the export limit
	// itself before the loop's first cycle).
	Command string
	// ScheduleID, CreatedBy, Role and Channel are the governing
	// schedule's (Schedule's fields; Role read from CreatedBy for
	// schedules stored before it).
	ScheduleID, CreatedBy, Role, Channel string
	// End is when the governing window ends.
	End time.Time
}

// GoverningLimit returns the active-power limit in force at plantID now;
// ok is false when no limit window is open.
func (c *Controller) GoverningLimit(plantID string) (lim LimitInForce, ok bool, err error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	pc := c.plants[plantID]
	if pc == nil {
		return LimitInForce{}, false, fmt.Errorf("grid control: unknown plant %s", plantID)
	}
	act := activeAt(pc.scheds, now, pc.limitRatedW)
	take := func(pct float64, w window) {
		if ok && pct >= lim.Pct {
			return
		}
		lim = LimitInForce{Pct: pct, Command: w.cmd.Command, ScheduleID: w.sched.ScheduleID, CreatedBy: w.sched.CreatedBy,
			Role: roleOf(w.sched), Channel: ownChannel(w.sched), End: w.cmd.End}
		ok = true
	}
	if w, found := act[CmdMaxLimW]; found && w.cmd.Value != nil {
		pct := *w.cmd.Value
		if w.cmd.Unit == "W" {
			pct = pctOfRated(pct, pc.limitRatedW)
		}
		take(pct, w)
	}
	if w, found := act[CmdFeedInLimit]; found && w.cmd.Value != nil {
		pct := pc.feed.pct
		if !pc.feed.active {
			// Before the loop's first cycle: where it starts (feedIn's
			// floor, as if the plant consumed nothing).
			pct = *w.cmd.Value
			if w.cmd.Unit == "W" {
				pct = pctOfRated(pct, pc.limitRatedW)
			}
			pct = math.Min(100, pct)
		}
		take(pct, w)
	}
	return lim, ok, nil
}
