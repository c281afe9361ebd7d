package gridcontrol

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"plantd/plant"
	"plantd/sunspec"
)

// Held controls are re-asserted: every cycle the points plantd holds on a
// device are compared with the device's latest poll (plant.Live's copy of
// the control models 123 and 704, read by the poll anyway: no Modbus
// request of its own), and a difference is written again in the same
// cycle, logged once per episode (ControlTampered) and counted.

// heldPoints are, per control and model, the points plantd writes and then
// holds ("Group.Point": the point of the group's first occurrence). Only
// models the poll reads are listed: the curve models are not polled.
var heldPoints = map[control]map[uint16][]string{
	ctlLimit: {
		123: {"WMaxLimPct", "WMaxLimPct_RvrtTms", "WMaxLimPct_RmpTms", "WMaxLim_Ena"},
		704: {"WMaxLimPct", "WMaxLimPctEna", "WMaxLimPctRvrtTms", "WMaxLimPctRvrt", "WMaxLimPctEnaRvrt"},
	},
	ctlConnect: {123: {"Conn", "Conn_RvrtTms"}},
	ctlPFInj: {
		123: {"OutPFSet", "OutPFSet_RvrtTms", "OutPFSet_RmpTms", "OutPFSet_Ena"},
		704: {"PFWInj.PF", "PFWInjRvrt.PF", "PFWInjRvrtTms", "PFWInjEnaRvrt", "PFWInjEna"},
	},
	ctlPFAbs: {704: {"PFWAbs.PF", "PFWAbsRvrt.PF", "PFWAbsRvrtTms", "PFWAbsEnaRvrt", "PFWAbsEna"}},
	ctlBattery: {
		124: {"StorCtl_Mod", "InWRte", "OutWRte", "ChaGriSet", "InOutWRte_WinTms", "InOutWRte_RvrtTms", "InOutWRte_RmpTms"},
		802: {"SoCRsvMin", "SocRsvMax"},
	},
}

// regSpan is where a held point lies in its model's registers (header
// included, as plant.Live.PolledRegs returns them). A reversion time
// (timer) may read back lower than written: some devices count the
// timeout down in the register itself; a lower value is no difference
// (a device that reverts shows it in the setpoint and enable).
type regSpan struct {
	off, n int
	timer  bool
}

// heldImage is what plantd last wrote of one control on one model: the
// held points' registers as read back right after the write (cur), and
// those of the write before (prev), each with the number of the device's
// successful polls when it was written (plant.Live.PolledRegs).
//
// A poll that began before a write may read the registers from before it,
// and the poll applied next after a write may have begun before it; the
// one after that began after it (a device's polls never overlap). So a
// poll numbered at least curPoll+2 must show cur; one numbered
// prevPoll+2 or more but below curPoll+2 may show cur or prev; an older
// one is not judged. A ramp step, a renewal or the FeedInLimit loop's
// next value is therefore never taken for someone else's write, and what
// plantd wants during a ramp is the step it last wrote, not the target.
type heldImage struct {
	model uint16
	nregs int // the model's registers when written: a poll of another layout is not judged
	names []string
	spans []regSpan
	cur   []uint16 // the spans' registers, concatenated
	prev  []uint16 // nil: not judged below curPoll+2
	// curPoll and prevPoll are the device's successful polls when cur and
	// prev were written; judged is the last poll compared.
	curPoll, prevPoll, judged uint64
	// readAt is when (wall clock) the cycle last read the model itself,
	// the device's poll having brought nothing new (heldReadEvery).
	readAt time.Time
	// episode is set from the difference logged until a poll matches.
	episode bool
}

// newHeldImage lays out the held points of control k in inst (nil: the
// control has no held points in that model).
func newHeldImage(k control, inst *sunspec.Instance) *heldImage {
	names := heldPoints[k][inst.Model.ID]
	if len(names) == 0 {
		return nil
	}
	h := &heldImage{model: inst.Model.ID, nregs: len(inst.Regs)}
	for _, name := range names {
		gi, pt := &inst.Root, name
		if g, p, ok := strings.Cut(name, "."); ok {
			gs := inst.Root.Groups(g)
			if len(gs) == 0 {
				continue
			}
			gi, pt = &gs[0], p
		}
		i := gi.Group.PointIndex(pt)
		if i < 0 {
			continue
		}
		p := &gi.Group.Points[i]
		s := regSpan{off: gi.Offset + int(p.Offset), n: int(p.Size), timer: strings.HasSuffix(pt, "RvrtTms")}
		if s.off+s.n > len(inst.Regs) {
			continue
		}
		h.names, h.spans = append(h.names, name), append(h.spans, s)
	}
	if len(h.spans) == 0 {
		return nil
	}
	return h
}

// note records a write of the control read back as inst, poll being the
// device's successful polls after it. dropPrev forgets the write before:
// after an enable toggle, whose off state a poll may have caught, no poll
// up to the second after it is judged.
func (h *heldImage) note(inst *sunspec.Instance, poll uint64, dropPrev bool) {
	next := h.prev[:0]
	if dropPrev || h.cur == nil {
		h.prev = nil
	} else {
		h.prev, h.prevPoll = h.cur, h.curPoll
	}
	for _, s := range h.spans {
		next = append(next, inst.Regs[s.off:s.off+s.n]...)
	}
	h.cur, h.curPoll, h.nregs = next, poll, len(inst.Regs)
}

// differs compares a poll's registers with the image: the index of the
// first held point that shows neither value plantd may have in force
// then (-1: none), and whether the poll could be judged at all.
func (h *heldImage) differs(regs []uint16, poll uint64) (int, bool) {
	if len(regs) != h.nregs || regs[0] != h.model {
		return -1, false
	}
	either := poll < h.curPoll+2
	if either && (h.prev == nil || poll < h.prevPoll+2) {
		return -1, false
	}
	at := 0
	for i, s := range h.spans {
		got := regs[s.off : s.off+s.n]
		if !s.holds(got, h.cur[at:at+s.n]) && (!either || !s.holds(got, h.prev[at:at+s.n])) {
			return i, true
		}
		at += s.n
	}
	return -1, true
}

// holds reports whether a point's registers got show the value written:
// equal, or for a timer not above it (big-endian unsigned registers).
func (s regSpan) holds(got, written []uint16) bool {
	if !s.timer {
		return slices.Equal(got, written)
	}
	return slices.Compare(got, written) <= 0
}

// describe names every held point of regs that differs from cur, with the
// value found and the value wanted in the point's units.
func (h *heldImage) describe(regs []uint16) string {
	m := sunspec.ModelByID(h.model)
	want := slices.Clone(regs)
	at := 0
	for _, s := range h.spans {
		copy(want[s.off:s.off+s.n], h.cur[at:at+s.n])
		at += s.n
	}
	found, err1 := sunspec.NewInstance(m, 0, slices.Clone(regs))
	wanted, err2 := sunspec.NewInstance(m, 0, want)
	var parts []string
	for i, s := range h.spans {
		if s.holds(regs[s.off:s.off+s.n], want[s.off:s.off+s.n]) {
			continue
		}
		f, w := "?", "?"
		if err1 == nil && err2 == nil {
			f, w = pointValue(found, h.names[i]), pointValue(wanted, h.names[i])
		}
		parts = append(parts, fmt.Sprintf("%s found %s, wanted %s", h.names[i], f, w))
	}
	return strings.Join(parts, "; ")
}

// pointValue formats a held point ("Group.Point" or a top-level one).
func pointValue(inst *sunspec.Instance, name string) string {
	var v float64
	var err error
	if g, p, ok := strings.Cut(name, "."); ok {
		gs := inst.Root.Groups(g)
		if len(gs) == 0 {
			return "?"
		}
		v, err = inst.FloatIn(&gs[0], p)
	} else {
		v, err = inst.Float(name)
	}
	if err != nil {
		return "not implemented"
	}
	return fmt.Sprintf("%g", v)
}

// noteHeld records a successful write of control k read back as inst
// (see heldImage.note); a control without held points in inst's model is
// not tracked.
func (c *Controller) noteHeld(dc *devCtl, deviceID string, k control, inst *sunspec.Instance, dropPrev bool) {
	if inst == nil {
		return
	}
	_, poll := c.live.PolledRegs(deviceID, 0, nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	h := dc.held[k]
	if h == nil || h.model != inst.Model.ID || h.nregs != len(inst.Regs) {
		if h = newHeldImage(k, inst); h == nil {
			delete(dc.held, k)
			return
		}
		if dc.held == nil {
			dc.held = map[control]*heldImage{}
		}
		dc.held[k] = h
	}
	h.note(inst, poll, dropPrev)
}

// watchHeld wakes the control cycle when a device's latest poll shows a
// control plantd holds changed: it looks every quarter of a cycle, so
// that the rewrite follows the poll that saw it within that, not within a
// cycle. The cycle's own check (checkHeld) then judges, logs and writes.
// It runs on the system's clock, as the poller does whose samples it
// looks at (the controller's clock has one waiter, the run loop).
func (c *Controller) watchHeld(ctx context.Context) {
	var buf []uint16
	tick := time.NewTicker(max(c.cfg.Cycle/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if c.heldDiffers(&buf) {
			c.wake()
		}
	}
}

// heldDiffers reports whether some device's latest poll, not yet judged
// by its cycle, shows a held control changed.
func (c *Controller) heldDiffers(buf *[]uint16) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, dc := range c.devs {
		for _, h := range dc.held {
			regs, poll := c.live.PolledRegs(id, h.model, *buf)
			if regs == nil {
				continue
			}
			*buf = regs
			if poll == h.judged {
				continue
			}
			if i, ok := h.differs(regs, poll); ok && i >= 0 {
				return true
			}
		}
	}
	return false
}

// forgetHeld stops comparing control k (plantd restores it).
func (c *Controller) forgetHeld(dc *devCtl, k control) {
	c.mu.Lock()
	delete(dc.held, k)
	c.mu.Unlock()
}

// heldReadEvery bounds the reads of a held model the cycle makes itself
// (wall clock): a cycle that finds no poll of the device newer than the
// one it judged last reads the model, at most once per heldReadEvery. So
// a device polled every second or faster costs no request of its own,
// and one polled slower (the default poll is 5 s) is still looked at
// every second while plantd holds a control on it, not every poll.
const heldReadEvery = time.Second

// checkHeld compares the device's latest poll with every control plantd
// holds there (run by the device's reconcile, before its controls are
// driven); when no poll came since the last one judged, it reads the held
// model itself (heldReadEvery). A control whose points differ is marked
// for a write in this cycle (ctlState.rewrite); the first difference of
// an episode goes to the plant log (ControlTampered) and the counters;
// the episode ends at the first poll or read that matches again.
func (c *Controller) checkHeld(ctx context.Context, d plant.DeviceLive, dc *devCtl, rw sunspec.ReadWriter, now time.Time) {
	var ks [8]control
	var hs [8]*heldImage
	n := 0
	c.mu.Lock()
	for k, h := range dc.held {
		if n < len(hs) {
			ks[n], hs[n] = k, h
			n++
		}
	}
	c.mu.Unlock()
	for i := range n {
		k, h := ks[i], hs[i]
		regs, poll := c.live.PolledRegs(d.Info.ID, h.model, dc.polled)
		var at int
		switch {
		case regs != nil && poll != h.judged:
			dc.polled = regs
			var judged bool
			if at, judged = h.differs(regs, poll); !judged {
				continue
			}
			c.mu.Lock()
			h.judged = poll // read by watchHeld
			c.mu.Unlock()
		default:
			// No new poll: read the model, at most once per
			// heldReadEvery. The read comes after every write of
			// plantd's (this goroutine wrote them), so it must show the
			// latest.
			if wall := time.Now(); wall.Sub(h.readAt) >= heldReadEvery {
				h.readAt = wall
				if regs = c.readHeld(ctx, d, rw, h.model); regs == nil {
					continue
				}
				var judged bool
				if at, judged = h.differs(regs, h.curPoll+2); !judged {
					continue // another layout than the one written
				}
			} else {
				continue
			}
		}
		if at < 0 {
			if h.episode {
				h.episode = false
				c.log.Info("held control reads back as written again", "device", d.Info.ID, "control", k, "model", h.model)
			}
			continue
		}
		first := !h.episode
		h.episode = true
		c.mu.Lock()
		st := dc.state(k)
		st.rewrite = true
		if k == ctlLimit {
			// The output follows the foreign value for a while: the follow
			// check counts again from the rewrite.
			st.changedAt, st.aboveSince = now, time.Time{}
		}
		if first {
			if c.stats.Tampered == nil {
				c.stats.Tampered = map[string]uint64{}
			}
			c.stats.Tampered[d.Info.ID]++
		}
		c.mu.Unlock()
		if !first {
			continue
		}
		what := h.describe(regs)
		c.log.Warn("held control changed by someone else, written again", "device", d.Info.ID, "control", k, "model", h.model, "points", what)
		c.st.Log(plant.LogEntry{Time: now.UTC(), PlantID: d.Info.PlantID, DeviceID: d.Info.ID, Level: plant.LevelWarning, Code: "ControlTampered",
			Message: fmt.Sprintf("device %s: %s held by plantd changed by another writer (or the device itself), model %d: %s; written again", d.Info.ID, k, h.model, what)})
	}
}

// readHeld reads a held model from the device for checkHeld (nil on
// failure, which the next poll or read makes good), counting the read.
func (c *Controller) readHeld(ctx context.Context, d plant.DeviceLive, rw sunspec.ReadWriter, model uint16) []uint16 {
	ref, ok := sunspecOf(d.Discovered).Ref(model)
	if !ok {
		return nil
	}
	inst, err := sunspec.ReadModel(ctx, rw, ref)
	c.mu.Lock()
	c.stats.HeldReads++
	c.mu.Unlock()
	if err != nil {
		c.log.Debug("read a held model", "device", d.Info.ID, "model", model, "err", err)
		return nil
	}
	return inst.Regs
}
