package gridcontrol

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sunspec"
)

// The FeedInLimit loop: the grid meter's power and the inverters' output,
// read once per cycle, give the limit that keeps the export at the
// command's value.

// feedIn runs one cycle of the FeedInLimit loop and returns the limit in %
// of rated power for the inverters taking part: from the meter's grid
// power and the inverters' output read now, the PV power that keeps the
// export at the limit, shared by rated power. Without an answer from the
// meter the last limit holds for MeterGrace, then the limit steps down to
// the export limit itself (as if consumption were 0): never open.
//
// forced is the BatteryPower setpoint in force (nil: none): the batteries
// carrying it do not follow the meter, so they are left out of the
// loop's battery terms, and a hold or discharge stops what they charge
// now: PV is lowered by that in the same cycle, not a cycle after the
// export showed it.
func (c *Controller) feedIn(ctx context.Context, pc *plantCtl, w window, devs []plant.DeviceLive, ids []string, rated float64, now time.Time, forced *window) float64 {
	limitW := *w.cmd.Value
	if w.cmd.Unit != "W" {
		limitW = *w.cmd.Value / 100 * rated
	}
	floor := 0.0
	if rated > 0 && limitW > 0 {
		floor = math.Min(100, limitW/rated*100) // the limit as if consumption were 0
	}
	c.mu.Lock()
	fs := pc.feed
	c.mu.Unlock()
	if !fs.active {
		fs = feedState{active: true, pct: floor, lastMeterOK: now}
	}
	gridW, meterErr := c.readMeter(ctx, devs)
	pvW, pvErr := c.readPV(ctx, devs, ids)
	switch {
	case meterErr != nil || pvErr != nil:
		fs.gridOK = false
		err := errors.Join(meterErr, pvErr)
		if now.Sub(fs.lastMeterOK) >= c.cfg.MeterGrace {
			if !fs.meterLost {
				c.st.Log(plant.LogEntry{Time: now.UTC(), PlantID: pc.id, Level: plant.LevelWarning, Code: "FeedInLimitMeterLost",
					Message: fmt.Sprintf("FeedInLimit: no grid power for %s (%v): inverters held at the export limit itself (%.1f %%)", c.cfg.MeterGrace, err, floor)})
			}
			fs.meterLost = true
			fs.pct = math.Min(fs.pct, floor)
		}
	case rated > 0:
		// export = pv - load; keep pv at load + limit, where
		// load = pv + grid (grid > 0 import, SunSpec meter sign). A
		// battery in self-consumption mode holds the meter at 0: its
		// discharge is load PV could serve, and while it could charge
		// faster PV is raised by the room it has (at most a tenth of the
		// rating per cycle); a raise that shows as export instead (the
		// battery did not take it) stops the raises for batteryFullHold,
		// doubled for each refusal in a row up to 16 times.
		demand, probe := pvW+gridW, 0.0
		fs.gridW, fs.pvW, fs.gridOK = gridW, pvW, true
		bat := c.battery(devs, forced)
		if forced != nil && *forced.cmd.Value >= 0 {
			demand -= bat.forcedChargeW
		}
		if bat.ok {
			demand += bat.dischargeW
			if fs.probeW > 0 {
				if -gridW > limitW+math.Max(100, 0.01*rated) {
					fs.refused = min(fs.refused+1, 5)
					fs.fullUntil = now.Add(batteryFullHold << (fs.refused - 1))
				} else {
					fs.refused = 0
				}
			}
			if !now.Before(fs.fullUntil) {
				probe = bat.room(0.1 * rated)
			}
		}
		fs.probeW = probe
		want := (demand + probe + limitW) / rated * 100
		fs.pct = math.Min(100, math.Max(0, want))
		if limitW > 0 && fs.pct < 0.1 {
			fs.pct = 0.1 // 0 % only when the command asks for it
		}
		if fs.meterLost {
			c.st.Log(plant.LogEntry{Time: now.UTC(), PlantID: pc.id, Level: plant.LevelInfo, Code: "FeedInLimitMeterBack", Message: "FeedInLimit: grid meter answers again"})
		}
		fs.meterLost = false
		fs.lastMeterOK = now
	}
	c.mu.Lock()
	pc.feed = fs
	c.mu.Unlock()
	return fs.pct
}

// batteryFullHold is how long the FeedInLimit loop stops raising PV for a
// battery after a raise showed as export (the battery took no more), the
// first time; each refusal in a row doubles it, up to 8 minutes.
const batteryFullHold = 30 * time.Second

// batteryNow is what a plant's batteries do now, from the live state.
type batteryNow struct {
	ok                  bool // a battery gave its charging and discharging
	chargeW, dischargeW float64
	// forcedChargeW is what the batteries left out (forced) charge now,
	// those that have not taken the setpoint yet.
	forcedChargeW float64
	soc           float64 // %, the plain mean
	socOK         bool
	ratedW        float64 // their rated power; 0 when one's is unknown
}

// room is how much more the batteries could charge now, at most step: 0
// when full (SoC 99 % or more), step when their rating is unknown.
func (b batteryNow) room(step float64) float64 {
	switch {
	case b.socOK && b.soc >= 99:
		return 0
	case b.ratedW <= 0:
		return step
	}
	return math.Max(0, math.Min(step, b.ratedW-b.chargeW))
}

// battery reads the batteries of a plant (battery devices and hybrid
// inverters with battery channels) from the live state; forced (a
// BatteryPower window in force, or nil) leaves out those that carry it,
// adding to forcedChargeW the charging of those not written to yet: once
// written, a battery holds its setpoint whatever its last poll said.
func (c *Controller) battery(devs []plant.DeviceLive, forced *window) batteryNow {
	var b batteryNow
	var socSum float64
	var n int
	unrated := false
	for i := range devs {
		d := &devs[i]
		if (d.Info.Kind != kind.Battery && d.Info.Kind != kind.Inverter) || !d.Info.Active() || !reachable(*d) {
			continue
		}
		cha, _, okC := c.live.Value(d.Info.ID, plant.BatteryCharging)
		dis, _, okD := c.live.Value(d.Info.ID, plant.BatteryDischarging)
		if !okC || !okD {
			continue
		}
		if v := classifyBattery(batteryCommand, *d); forced != nil && (v == capable || v == capableOffline) {
			if !c.setpointTaken(d.Info.ID, key([]window{*forced})) {
				b.forcedChargeW += math.Max(0, cha)
			}
			continue
		}
		b.ok = true
		b.chargeW += math.Max(0, cha)
		b.dischargeW += math.Max(0, dis)
		if soc, _, ok := c.live.Value(d.Info.ID, plant.BatteryStateOfCharge); ok {
			socSum += soc
			n++
		}
		if d.Info.Kind == kind.Battery && sunspecOf(d.Discovered) != nil && sunspecOf(d.Discovered).RatedPowerW > 0 {
			b.ratedW += sunspecOf(d.Discovered).RatedPowerW
		} else {
			unrated = true
		}
	}
	if n > 0 {
		b.soc, b.socOK = socSum/float64(n), true
	}
	if unrated {
		b.ratedW = 0
	}
	return b
}

// meterModels and inverterModels hold the total active power W.
var (
	meterModels    = []uint16{203, 204, 201, 202, 213, 214, 211, 212}
	inverterModels = []uint16{701, 103, 102, 101, 113, 112, 111}
)

// readMeter reads the grid power (W, import > 0) of the plant's first
// answering meter.
func (c *Controller) readMeter(ctx context.Context, devs []plant.DeviceLive) (float64, error) {
	var errs []error
	for _, d := range devs {
		if !d.Info.GridMeter() || !d.Info.Active() || sunspecOf(d.Discovered) == nil {
			continue
		}
		w, err := c.readW(ctx, d, meterModels)
		if err == nil {
			return w, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return 0, errors.New("no grid meter")
	}
	return 0, errors.Join(errs...)
}

// readPV reads the output of the inverters taking part, in parallel.
func (c *Controller) readPV(ctx context.Context, devs []plant.DeviceLive, ids []string) (float64, error) {
	var mu sync.Mutex
	var sum float64
	var errs []error
	var wg sync.WaitGroup
	for _, d := range devs {
		if !slices.Contains(ids, d.Info.ID) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := c.readW(ctx, d, inverterModels)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			sum += math.Max(0, w)
		}()
	}
	wg.Wait()
	return sum, errors.Join(errs...)
}

// readW reads the total active power of a device from the first of models
// it has.
func (c *Controller) readW(ctx context.Context, d plant.DeviceLive, models []uint16) (float64, error) {
	rw, ok := c.conns(d.Info.ID)
	if !ok {
		return 0, fmt.Errorf("device %s: no connection", d.Info.ID)
	}
	ref, ok := firstRef(sunspecOf(d.Discovered), models...)
	if !ok {
		return 0, fmt.Errorf("device %s: no model with W", d.Info.ID)
	}
	inst, err := sunspec.ReadModel(ctx, rw, ref)
	if err != nil {
		return 0, fmt.Errorf("device %s: %w", d.Info.ID, err)
	}
	w, err := inst.Float("W")
	if err != nil {
		return 0, fmt.Errorf("device %s model %d: %w", d.Info.ID, ref.ID, err)
	}
	return w, nil
}

// surplus is what the cycle tells the home energy manager: the grid
// meter's power and the batteries' from the live state, and the PV a
// FeedInLimit holds back. The inverters count as held back when their
// output is within 10 % (and 100 W) of the limit; what they would give
// beyond it is not known, so their rated power above their output is the
// bound (the manager tries one consumer at a time on it), and no more
// than an opModMaxLimW cap allows (capPct; nil: none): PV a cap holds
// back stays held back whatever a consumer draws, so it is no surplus.
func (c *Controller) surplus(devs []plant.DeviceLive, limitDevs []string, rated float64, limitPct, capPct *float64, now time.Time) plant.Surplus {
	s := plant.Surplus{Time: now}
	if b := c.battery(devs, nil); b.ok {
		s.BatteryOK, s.BatteryChargeW, s.BatteryDischargeW = true, b.chargeW, b.dischargeW
		s.BatterySoCPct, s.BatterySoCOK = b.soc, b.socOK
	}
	for i := range devs {
		d := &devs[i]
		if !d.Info.GridMeter() || !d.Info.Active() || !reachable(*d) {
			continue
		}
		if w, _, ok := c.live.Value(d.Info.ID, plant.ActivePower); ok {
			s.GridW, s.GridOK = w, true
			break
		}
	}
	if limitPct == nil || *limitPct >= 100 || rated <= 0 {
		return s
	}
	var pv float64
	for _, id := range limitDevs {
		if w, _, ok := c.live.Value(id, plant.PVGeneration); ok {
			pv += w
		}
	}
	limitW := *limitPct / 100 * rated
	if pv >= 0.9*limitW-100 && limitW >= 100 {
		ceil := rated
		if capPct != nil {
			ceil = math.Min(ceil, *capPct/100*rated)
		}
		s.CurtailedW = math.Max(0, ceil-pv)
	}
	return s
}

// pvHeld reports whether the loop holds the inverters' output back: their
// output read this cycle is within 10 % (and 100 W) of the limit pct of
// rated (as surplus judges it).
func (fs feedState) pvHeld(pct, rated float64) bool {
	limitW := pct / 100 * rated
	return pct < 100 && limitW >= 100 && fs.pvW >= 0.9*limitW-100
}

// setpointTaken reports whether the battery took the window wk's setpoint
// (written and read back).
func (c *Controller) setpointTaken(id, wk string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	dc := c.devs[id]
	if dc == nil {
		return false
	}
	st := dc.peek(ctlBattery)
	return st.owned && st.key == wk
}
