package gridcontrol

import (
	"context"
	"slices"
	"time"
)

// The control cycle changes the statuses of schedules (a window applied,
// failed, a recurring window moved on) and the audit of their writes; the
// store keeps them for the API and for a restart. Those writes go through
// the persister, off the cycle: the cycle never waits for the store on its
// way to the devices. A store that stalls (an SD card's fsync, the writer
// connection held by a long rollup) would otherwise hold back the renewal
// of every limit, and past the devices' reversion timeout they would
// revert to no limit; a FeedInLimit loop would stop regulating for as long
// (TestStoreStallKeepsLimit). What plantd must store before it writes a
// device (the control owned, claim) is still written first, in the cycle.
//
// The persister coalesces: a schedule changed several times before its
// write is written once, as it is then. Schedules are persisted in the
// order they were first queued. A schedule forgotten meanwhile is not
// written (persistMu orders the persister's writes with forget's deletes,
// so a deleted schedule never comes back).

// persistAll queues schedules for the persister, or writes them at once
// while it does not run (before Run, after it).
func (c *Controller) persistAll(ctx context.Context, scheds []*Schedule) {
	if len(scheds) == 0 {
		return
	}
	c.mu.Lock()
	running := c.persisting
	if running {
		for _, s := range scheds {
			if !slices.Contains(c.dirty, s) {
				c.dirty = append(c.dirty, s)
			}
		}
	}
	c.mu.Unlock()
	if !running {
		c.persistMu.Lock()
		defer c.persistMu.Unlock()
		c.writeSchedules(ctx, slices.Compact(scheds))
		return
	}
	select {
	case c.dirtyKick <- struct{}{}:
	default:
	}
}

// runPersister writes queued schedules until ctx ends, then what is
// still queued (with a bound: a store that hangs at shutdown does not
// keep plantd from stopping).
func (c *Controller) runPersister(ctx context.Context) {
	for {
		select {
		case <-c.dirtyKick:
			c.flushDirty(ctx)
		case <-ctx.Done():
			c.mu.Lock()
			c.persisting = false
			c.mu.Unlock()
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), persistOnStop)
			defer cancel()
			c.flushDirty(fctx)
			return
		}
	}
}

// persistOnStop bounds the last writes at shutdown.
const persistOnStop = 5 * time.Second

// flushDirty writes the queued schedules still held.
func (c *Controller) flushDirty(ctx context.Context) {
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	c.mu.Lock()
	batch := c.dirty
	c.dirty = nil
	c.mu.Unlock()
	c.writeSchedules(ctx, batch)
}

// writeSchedules writes schedules still held by their plant. c.persistMu
// is held.
func (c *Controller) writeSchedules(ctx context.Context, scheds []*Schedule) {
	for _, s := range scheds {
		c.mu.Lock()
		pc := c.plants[s.PlantID]
		held := pc != nil && slices.Contains(pc.scheds, s)
		c.mu.Unlock()
		if !held {
			continue
		}
		if err := c.persist(ctx, s); err != nil {
			c.log.Warn("store schedule status", "schedule", s.ScheduleID, "err", err)
		}
	}
}
