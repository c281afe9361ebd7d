package sim

import (
	"math"
	"time"

	"plantd/sunspec"
)

// The grid controls of an inverter: what a write to 123, 704 or a curve
// model does to the simulated device, the ramps and the reversion timers.
// Everything here is guarded by Plant.mu.

// secs converts seconds to a duration.
func secs(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }

// rvrtTimer is the reversion timer of one control.
type rvrtTimer struct {
	on  bool      // started by a write with RvrtTms > 0 while enabled
	at  time.Time // expiry; zero while off, or always with IgnoreRevert
	tms float64   // RvrtTms it started with
}

// start (re)starts the timer at now for tms seconds; tms <= 0 stops it.
// With ignore the timer is accepted but never expires.
func (r *rvrtTimer) start(now time.Time, tms float64, ignore bool) {
	*r = rvrtTimer{}
	if tms <= 0 || math.IsNaN(tms) {
		return
	}
	r.on, r.tms = true, tms
	if !ignore {
		r.at = now.Add(secs(tms))
	}
}

func (r *rvrtTimer) stop() { *r = rvrtTimer{} }

// follow starts the timer for tms seconds while its control is on, and
// stops it when not: what a write of the control's enable or reversion
// time does.
func (r *rvrtTimer) follow(on bool, now time.Time, tms float64, ignore bool) {
	if !on {
		r.stop()
		return
	}
	r.start(now, tms, ignore)
}

// due reports whether the timer expires at or before t.
func (r *rvrtTimer) due(t time.Time) bool { return !r.at.IsZero() && !t.Before(r.at) }

// rem is the RvrtRem to show at t: whole seconds left, or the frozen
// RvrtTms of a device that ignores reversion.
func (r *rvrtTimer) rem(t time.Time) float64 {
	switch {
	case !r.on:
		return 0
	case r.at.IsZero():
		return r.tms
	}
	return math.Max(0, math.Ceil(r.at.Sub(t).Seconds()))
}

// ramp is a value moving linearly from one setting to the next.
type ramp struct {
	from, to float64
	t0       time.Time
	dur      time.Duration
}

// at is the ramp's value at t.
func (r *ramp) at(t time.Time) float64 {
	if r.dur <= 0 || !t.Before(r.t0.Add(r.dur)) {
		return r.to
	}
	if !t.After(r.t0) {
		return r.from
	}
	return r.from + (r.to-r.from)*float64(t.Sub(r.t0))/float64(r.dur)
}

// set starts a ramp from the value at t to target over dur (at once when
// dur <= 0). Setting the target it already moves to changes nothing.
func (r *ramp) set(t time.Time, target float64, dur time.Duration) {
	if target == r.to {
		return
	}
	*r = ramp{from: r.at(t), to: target, t0: t, dur: dur}
}

// retime gives the ramp in progress at t a new duration, from its start.
// A ramp that started at t (also one that jumped at once) takes it too, so
// a setpoint and its ramp time take effect together whatever the order of
// their writes at one instant; a ramp that already ended stays ended.
func (r *ramp) retime(t time.Time, dur time.Duration) {
	if r.from == r.to || dur == r.dur {
		return
	}
	if t.Equal(r.t0) || (r.dur > 0 && t.Before(r.t0.Add(r.dur))) {
		r.dur = dur
	}
}

// jump sets the value at once.
func (r *ramp) jump(v float64) { *r = ramp{from: v, to: v} }

// end is when the ramp reaches its target (zero when it has no duration).
func (r *ramp) end() time.Time {
	if r.dur <= 0 {
		return time.Time{}
	}
	return r.t0.Add(r.dur)
}

// pfRatio is the reactive to active power ratio of a signed power factor
// (negative absorbs reactive power); 0 for a power factor of 1.
func pfRatio(pf float64) float64 {
	if pf == 0 || math.IsNaN(pf) || math.Abs(pf) > 1 {
		return 0
	}
	return math.Copysign(math.Tan(math.Acos(math.Abs(pf))), pf)
}

// curveCtl is the reversion timer of a curve model's header.
type curveCtl struct {
	model uint16
	der   bool   // 705, 706, 711: Ena and RvrtRem; else legacy ModEna
	rem   handle // 7xx RvrtRem
	timer rvrtTimer
}

// curveModels are the curve models with a reversion timer in their header.
var curveModels = []uint16{126, 129, 130, 132, 134, 135, 136, 705, 706, 711}

// initControls reads every control from the image as built.
func (v *inverter) initControls(d *Device) {
	v.connected, v.pf = true, 1
	if v.der {
		c := d.inst(704)
		v.wmax = floatOr(d.inst(702), "WMax", v.ratedW)
		v.limEna = rawOr(c, "WMaxLimPctEna", 0) == 1
		v.limPct = floatOr(c, "WMaxLimPct", 100)
		v.decodeWSet(c)
		v.pfEna, v.pf = decodePF(c, "PFWInjEna", "PFWInj")
		v.pfAbsEna, v.pfAbs = decodePF(c, "PFWAbsEna", "PFWAbs")
	} else {
		c := d.inst(123)
		v.wmax = floatOr(d.inst(121), "WMax", v.ratedW)
		v.limEna = rawOr(c, "WMaxLim_Ena", 0) == 1
		v.limPct = floatOr(c, "WMaxLimPct", 100)
		v.connected = rawOr(c, "Conn", 1) != 0
		v.pfEna = rawOr(c, "OutPFSet_Ena", 0) == 1
		v.pf = classicPF(c)
	}
	v.lim.jump(v.limTarget())
	v.pfRamp.jump(v.pfTarget())
	for _, id := range curveModels {
		s := d.slot(id)
		if s == nil {
			continue
		}
		cc := curveCtl{model: id, der: id >= 700}
		if cc.der {
			b := &builder{d: d}
			cc.rem = b.handle(id, "RvrtRem")
			if b.err != nil {
				continue
			}
		}
		v.curves = append(v.curves, cc)
	}
}

// classicPF is 123 OutPFSet, or 1 when it is not a power factor.
func classicPF(c *sunspec.Instance) float64 {
	pf := floatOr(c, "OutPFSet", 1)
	if pf == 0 || math.Abs(pf) > 1 || math.IsNaN(pf) {
		return 1
	}
	return pf
}

// decodePF reads a 704 power factor control: its enable and the signed
// power factor of its group (under-excited: negative).
func decodePF(c *sunspec.Instance, ena, group string) (bool, float64) {
	on := rawOr(c, ena, 0) == 1
	pf := 1.0
	if g := c.Root.Groups(group); len(g) == 1 {
		if x, err := c.FloatIn(&g[0], "PF"); err == nil && x > 0 && x <= 1 {
			pf = x
		}
		if ext, err := c.FloatIn(&g[0], "Ext"); err == nil && ext == 1 {
			pf = -pf
		}
	}
	return on, pf
}

// decodeWSet reads 704 WSet: enable, and the setpoint in % of WMax from
// WSetPct (WSetMod W_MAX_PCT) or WSet (WATTS).
func (v *inverter) decodeWSet(c *sunspec.Instance) {
	v.wsetEna = rawOr(c, "WSetEna", 0) == 1
	pct := 100.0
	if rawOr(c, "WSetMod", 0) == 1 {
		if w, err := c.Float("WSet"); err == nil && v.wmax > 0 {
			pct = w / v.wmax * 100
		}
	} else if x, err := c.Float("WSetPct"); err == nil {
		pct = x
	}
	v.wsetPct = math.Max(0, math.Min(100, pct))
}

// limTarget is the power limit in % of WMax the limit ramp moves to.
func (v *inverter) limTarget() float64 {
	if v.limEna {
		return math.Max(0, math.Min(100, v.limPct))
	}
	return 100
}

// pfTarget is the reactive to active power ratio the PF ramp moves to.
func (v *inverter) pfTarget() float64 {
	if v.pfEna {
		return pfRatio(v.pf)
	}
	return 0
}

// effectiveLimitPct is the active power limit in % of WMax acting at t:
// the limit after its ramp, and 704 WSet when enabled, whichever is lower.
func (v *inverter) effectiveLimitPct(t time.Time) float64 {
	e := v.lim.at(t)
	if v.der && v.wsetEna {
		e = math.Min(e, v.wsetPct)
	}
	return e
}

// touchesGroup reports whether a write touched a point inside a top-level
// group of the model.
func touchesGroup(touched []pointRef, model uint16, group string) bool {
	for _, r := range touched {
		if r.model == model && r.gi != &r.inst.Root && r.gi.Group.Name == group {
			return true
		}
	}
	return false
}

// afterWrite applies the controls a write touched at now: limits, power
// factor, WSet, connection and curve headers, their ramps and their
// reversion timers. limWasEna is the limit's enable register before the
// write (NeedsEnableToggle latches a new setpoint on its rising edge).
func (v *inverter) afterWrite(d *Device, touched []pointRef, now time.Time) {
	ign := d.cfg.IgnoreRevert
	if v.der {
		v.afterWriteDER(d, touched, now, ign)
	} else {
		v.afterWriteClassic(d, touched, now, ign)
	}
	v.afterWriteCurves(d, touched, now, ign)
}

// setLimit applies a written limit setpoint and enable. With
// NeedsEnableToggle a new setpoint is taken only when the enable goes from
// 0 to 1; otherwise at once.
func (v *inverter) setLimit(d *Device, ena bool, pct float64, now time.Time, rmp time.Duration) {
	rising := ena && !v.limEnaReg
	if !d.cfg.NeedsEnableToggle || rising {
		v.limPct = pct
	}
	v.limEnaReg, v.limEna = ena, ena && !d.cfg.IgnoresLimit
	v.lim.set(now, v.limTarget(), rmp)
}

func (v *inverter) afterWriteClassic(d *Device, touched []pointRef, now time.Time, ign bool) {
	c := d.inst(123)
	v.wmax = floatOr(d.inst(121), "WMax", v.ratedW)
	if touches(touched, 123, "WMaxLimPct", "WMaxLim_Ena", "WMaxLimPct_RvrtTms", "WMaxLimPct_RmpTms") {
		ena := rawOr(c, "WMaxLim_Ena", 0) == 1
		rmp := secs(floatOr(c, "WMaxLimPct_RmpTms", 0))
		v.setLimit(d, ena, floatOr(c, "WMaxLimPct", 100), now, rmp)
		if touches(touched, 123, "WMaxLimPct_RmpTms") {
			v.lim.retime(now, rmp)
		}
		if touches(touched, 123, "WMaxLimPct", "WMaxLim_Ena", "WMaxLimPct_RvrtTms") {
			v.limRvrt.follow(ena, now, floatOr(c, "WMaxLimPct_RvrtTms", 0), ign)
		}
	}
	if touches(touched, 123, "OutPFSet", "OutPFSet_Ena", "OutPFSet_RvrtTms", "OutPFSet_RmpTms") {
		v.pfEna = rawOr(c, "OutPFSet_Ena", 0) == 1
		v.pf = classicPF(c)
		rmp := secs(floatOr(c, "OutPFSet_RmpTms", 0))
		v.pfRamp.set(now, v.pfTarget(), rmp)
		if touches(touched, 123, "OutPFSet_RmpTms") {
			v.pfRamp.retime(now, rmp)
		}
		if touches(touched, 123, "OutPFSet", "OutPFSet_Ena", "OutPFSet_RvrtTms") {
			v.pfRvrt.follow(v.pfEna, now, floatOr(c, "OutPFSet_RvrtTms", 0), ign)
		}
	}
	if touches(touched, 123, "Conn", "Conn_RvrtTms") {
		v.connected = rawOr(c, "Conn", 1) != 0
		v.connRvrt.follow(!v.connected, now, floatOr(c, "Conn_RvrtTms", 0), ign)
	}
}

func (v *inverter) afterWriteDER(d *Device, touched []pointRef, now time.Time, ign bool) {
	c := d.inst(704)
	v.wmax = floatOr(d.inst(702), "WMax", v.ratedW)
	if touches(touched, 704, "WMaxLimPctEna", "WMaxLimPct", "WMaxLimPctRvrtTms") {
		ena := rawOr(c, "WMaxLimPctEna", 0) == 1
		v.setLimit(d, ena, floatOr(c, "WMaxLimPct", 100), now, 0)
		v.limRvrt.follow(ena, now, floatOr(c, "WMaxLimPctRvrtTms", 0), ign)
	}
	if touches(touched, 704, "WSetEna", "WSetMod", "WSet", "WSetPct", "WSetRvrtTms") {
		v.decodeWSet(c)
		v.wsetRvrt.follow(v.wsetEna, now, floatOr(c, "WSetRvrtTms", 0), ign)
	}
	if touches(touched, 704, "PFWInjEna", "PFWInjRvrtTms") || touchesGroup(touched, 704, "PFWInj") {
		v.pfEna, v.pf = decodePF(c, "PFWInjEna", "PFWInj")
		v.pfRamp.set(now, v.pfTarget(), 0)
		v.pfRvrt.follow(v.pfEna, now, floatOr(c, "PFWInjRvrtTms", 0), ign)
	}
	if touches(touched, 704, "PFWAbsEna", "PFWAbsRvrtTms") || touchesGroup(touched, 704, "PFWAbs") {
		v.pfAbsEna, v.pfAbs = decodePF(c, "PFWAbsEna", "PFWAbs")
		v.pfAbsRvrt.follow(v.pfAbsEna, now, floatOr(c, "PFWAbsRvrtTms", 0), ign)
	}
}

// afterWriteCurves starts or stops the reversion timers of the curve
// models a write touched, and answers 7xx adopt requests.
func (v *inverter) afterWriteCurves(d *Device, touched []pointRef, now time.Time, ign bool) {
	for i := range v.curves {
		cc := &v.curves[i]
		c := d.inst(cc.model)
		if cc.der {
			req, rslt, n := "AdptCrvReq", "AdptCrvRslt", "NCrv"
			if cc.model == 711 {
				req, rslt, n = "AdptCtlReq", "AdptCtlRslt", "NCtl"
			}
			if touches(touched, cc.model, req) {
				adoptResult(c, req, rslt, n, d.cfg.AdoptClearsRequest)
			}
			if touches(touched, cc.model, "Ena", "RvrtTms", req) {
				if rawOr(c, "Ena", 0) == 1 {
					cc.timer.start(now, floatOr(c, "RvrtTms", 0), ign)
				} else {
					cc.timer.stop()
				}
			}
			continue
		}
		if touches(touched, cc.model, "ModEna", "RvrtTms", "ActCrv") {
			if rawOr(c, "ModEna", 0)&1 == 1 {
				cc.timer.start(now, floatOr(c, "RvrtTms", 0), ign)
			} else {
				cc.timer.stop()
			}
		}
	}
	// 707 to 710 have adopt requests but no reversion.
	for _, id := range []uint16{707, 708, 709, 710} {
		if touches(touched, id, "AdptCrvReq") {
			adoptResult(d.inst(id), "AdptCrvReq", "AdptCrvRslt", "NCrvSet", d.cfg.AdoptClearsRequest)
		}
	}
}

// adoptResult answers a 7xx adopt request written: for the index of a
// stored curve (1..count) it copies that curve into curve 1, the one in
// effect (1 copies curve 1 onto itself), and sets the result COMPLETED;
// any other index but 0 FAILED. 0 is no request (SunSpec: "First curve
// index is 1"; 711 "0 = No active control"): nothing is adopted and the
// result of the last adoption stays. The request stays as written, unless
// clear (DeviceConfig.AdoptClearsRequest): then a device that acted on a
// request sets it back to 0, as many real ones do.
func adoptResult(c *sunspec.Instance, req, rslt, count string, clear bool) {
	if c == nil {
		return
	}
	r, n := floatOr(c, req, 0), floatOr(c, count, 0)
	if r == 0 {
		return
	}
	res := uint64(1) // COMPLETED
	if r < 0 || r > n {
		res = 2 // FAILED
	}
	_ = c.SetRaw(rslt, res)
	if res == 1 && r > 1 {
		adopt(c, int(r)-1)
	}
	if clear {
		_ = c.SetRaw(req, 0)
	}
}

// adopt copies stored curve (or control) k into the first one, the one in
// effect, which keeps its ReadOnly point.
func adopt(c *sunspec.Instance, k int) {
	for _, g := range c.Model.Group.Groups {
		gs := c.Root.Groups(g.Name)
		if k >= len(gs) || len(gs) < 2 {
			continue
		}
		to, from := gs[0], gs[k]
		ro := -1
		if i := to.Group.PointIndex("ReadOnly"); i >= 0 {
			ro = to.Offset + int(to.Group.Points[i].Offset)
		}
		keep := uint16(0)
		if ro >= 0 {
			keep = c.Regs[ro]
		}
		copy(c.Regs[to.Offset:to.Offset+to.Len], c.Regs[from.Offset:from.Offset+from.Len])
		if ro >= 0 {
			c.Regs[ro] = keep
		}
	}
}

// nextEvent is the earliest reversion or ramp end after t, or the zero
// time.
func (v *inverter) nextEvent(t time.Time) time.Time {
	var ev time.Time
	consider := func(x time.Time) {
		if !x.IsZero() && x.After(t) && (ev.IsZero() || x.Before(ev)) {
			ev = x
		}
	}
	for _, r := range []*rvrtTimer{&v.limRvrt, &v.pfRvrt, &v.pfAbsRvrt, &v.wsetRvrt, &v.connRvrt} {
		consider(r.at)
	}
	for i := range v.curves {
		consider(v.curves[i].timer.at)
	}
	consider(v.lim.end())
	consider(v.pfRamp.end())
	return ev
}

// revert applies the reversions due at t.
func (v *inverter) revert(d *Device, t time.Time) {
	if v.der {
		v.revertDER(d, t)
	} else {
		v.revertClassic(d, t)
	}
	for i := range v.curves {
		cc := &v.curves[i]
		if !cc.timer.due(t) {
			continue
		}
		cc.timer.stop()
		c := d.inst(cc.model)
		if cc.der {
			_ = c.SetRaw("Ena", 0)
			_ = c.Set("RvrtRem", 0)
		} else {
			_ = c.SetRaw("ModEna", rawOr(c, "ModEna", 0)&^1)
		}
		d.log.Info("curve mode reverted", "model", cc.model)
	}
}

func (v *inverter) revertClassic(d *Device, t time.Time) {
	c := d.inst(123)
	if v.limRvrt.due(t) {
		v.limRvrt.stop()
		_ = c.SetRaw("WMaxLim_Ena", 0)
		_ = c.Set("WMaxLimPct", 100)
		v.limEna, v.limEnaReg, v.limPct = false, false, 100
		v.lim.jump(100)
		d.log.Info("power limit reverted", "model", 123, "limitPct", 100)
	}
	if v.pfRvrt.due(t) {
		v.pfRvrt.stop()
		_ = c.SetRaw("OutPFSet_Ena", 0)
		v.pfEna = false
		v.pfRamp.jump(0)
		d.log.Info("power factor reverted", "model", 123)
	}
	if v.connRvrt.due(t) {
		v.connRvrt.stop()
		_ = c.SetRaw("Conn", 1)
		v.connected = true
		d.log.Info("connect reverted", "model", 123)
	}
}

func (v *inverter) revertDER(d *Device, t time.Time) {
	c := d.inst(704)
	if v.limRvrt.due(t) {
		v.limRvrt.stop()
		pct := floatOr(c, "WMaxLimPctRvrt", 100)
		ena := rawOr(c, "WMaxLimPctEnaRvrt", 0)
		_ = c.Set("WMaxLimPct", pct)
		_ = c.SetRaw("WMaxLimPctEna", ena)
		v.limEna, v.limEnaReg, v.limPct = ena == 1, ena == 1, pct
		v.lim.jump(v.limTarget())
		d.log.Info("power limit reverted", "model", 704, "limitPct", pct, "enabled", ena == 1)
	}
	if v.wsetRvrt.due(t) {
		v.wsetRvrt.stop()
		if w, err := c.Value("WSetRvrt"); err == nil {
			_ = c.SetRaw("WSet", w.Raw)
		}
		if w, err := c.Value("WSetPctRvrt"); err == nil {
			_ = c.SetRaw("WSetPct", w.Raw)
		}
		_ = c.SetRaw("WSetEna", rawOr(c, "WSetEnaRvrt", 0))
		v.decodeWSet(c)
		d.log.Info("active power setpoint reverted", "model", 704, "enabled", v.wsetEna)
	}
	if v.pfRvrt.due(t) {
		v.pfRvrt.stop()
		revertPFGroup(c, "PFWInjEna", "PFWInjEnaRvrt", "PFWInj", "PFWInjRvrt")
		v.pfEna, v.pf = decodePF(c, "PFWInjEna", "PFWInj")
		v.pfRamp.jump(v.pfTarget())
		d.log.Info("power factor (injection) reverted", "model", 704, "enabled", v.pfEna)
	}
	if v.pfAbsRvrt.due(t) {
		v.pfAbsRvrt.stop()
		revertPFGroup(c, "PFWAbsEna", "PFWAbsEnaRvrt", "PFWAbs", "PFWAbsRvrt")
		v.pfAbsEna, v.pfAbs = decodePF(c, "PFWAbsEna", "PFWAbs")
		d.log.Info("power factor (absorption) reverted", "model", 704, "enabled", v.pfAbsEna)
	}
}

// revertPFGroup copies a 704 power factor's reversion values into the
// control: the enable and the PF/Ext group.
func revertPFGroup(c *sunspec.Instance, ena, enaRvrt, group, rvrtGroup string) {
	_ = c.SetRaw(ena, rawOr(c, enaRvrt, 0))
	dst, src := c.Root.Groups(group), c.Root.Groups(rvrtGroup)
	if len(dst) != 1 || len(src) != 1 {
		return
	}
	n := int(dst[0].Group.FixedLen)
	copy(c.Regs[dst[0].Offset:dst[0].Offset+n], c.Regs[src[0].Offset:src[0].Offset+n])
}

// renderControls writes the reversion time remaining of every 704 control
// and 7xx curve at t.
func (v *inverter) renderControls(d *Device, t time.Time) {
	if v.der {
		h := v.dh
		d.put(h.rvrtRem, v.limRvrt.rem(t))
		d.put(h.wsetRem, v.wsetRvrt.rem(t))
		d.put(h.pfInjRem, v.pfRvrt.rem(t))
		d.put(h.pfAbsRem, v.pfAbsRvrt.rem(t))
	}
	for i := range v.curves {
		if cc := &v.curves[i]; cc.der {
			d.put(cc.rem, cc.timer.rem(t))
		}
	}
}
