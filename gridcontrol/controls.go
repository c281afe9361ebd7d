package gridcontrol

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"plantd/sunspec"
)

// control names a set of points of one device that plantd owns while a
// command holds it and restores afterwards: the active-power limit (fed by
// FeedInLimit and opModMaxLimW), the connection, the two power-factor
// setpoints and one per curve command.
type control string

const (
	ctlLimit   control = "limit"
	ctlConnect control = "connect"
	ctlPFInj   control = "pf-inject"
	ctlPFAbs   control = "pf-absorb"
	// ctlBattery (battery.go) is the battery's setpoint.
)

// renewPoints are the points of a control written again at every renewal
// of its reversion timeout, even when they hold the value already: the
// setpoint and its RvrtTms (123 and 704 limit, 123 Conn, 123 OutPFSet and
// 704 PFWInj/PFWAbs timeouts, 12x/13x curve selection). A write that
// changes no register is no write at all, and the device's own timer would
// revert the control in the middle of its window. 7xx curves are renewed
// by their adopt request, written every time.
func renewPoints(k control) []string {
	switch k {
	case ctlLimit:
		return []string{"WMaxLimPct", "WMaxLimPct_RvrtTms", "WMaxLimPctRvrtTms"}
	case ctlConnect:
		return []string{"Conn", "Conn_RvrtTms"}
	case ctlPFInj:
		return []string{"OutPFSet", "OutPFSet_RvrtTms", "PFWInjRvrtTms"}
	case ctlPFAbs:
		return []string{"PFWAbsRvrtTms"} // 704 only
	case ctlBattery:
		return []string{"StorCtl_Mod", "InWRte", "OutWRte", "InOutWRte_RvrtTms"} // 124; 802 has no timer
	}
	return []string{"ActCrv", "RvrtTms"}
}

// errUnsupported marks a value a device cannot take (too many curve points,
// unknown parameter): the command fails on that device, nothing is written.
var errUnsupported = errors.New("not supported by the device")

// curveLayout says where a curve model keeps its curves and points.
type curveLayout struct {
	der bool
	// group holds the curves ("curve" in 12x/13x, "Crv" in 7xx); sub is,
	// for the trip models, the group inside a curve set that holds the
	// must-trip curve; pts is the 7xx point group.
	group, sub, pts string
	x, y            string
	// params lists the writable parameters of a model without curves
	// (127, 711).
	params bool
}

var curveLayouts = map[uint16]curveLayout{
	126: {group: "curve", x: "V", y: "VAr"},
	132: {group: "curve", x: "V", y: "W"},
	134: {group: "curve", x: "Hz", y: "W"},
	129: {group: "curve", x: "Tms", y: "V"},
	130: {group: "curve", x: "Tms", y: "V"},
	135: {group: "curve", x: "Tms", y: "Hz"},
	136: {group: "curve", x: "Tms", y: "Hz"},
	127: {params: true},
	705: {der: true, group: "Crv", pts: "Pt", x: "V", y: "Var"},
	706: {der: true, group: "Crv", pts: "Pt", x: "V", y: "W"},
	707: {der: true, group: "Crv", sub: "MustTrip", pts: "Pt", x: "Tms", y: "V"},
	708: {der: true, group: "Crv", sub: "MustTrip", pts: "Pt", x: "Tms", y: "V"},
	709: {der: true, group: "Crv", sub: "MustTrip", pts: "Pt", x: "Tms", y: "Hz"},
	710: {der: true, group: "Crv", sub: "MustTrip", pts: "Pt", x: "Tms", y: "Hz"},
	711: {der: true, group: "Ctl", params: true},
}

// has reports whether the top group of inst has the point.
func has(inst *sunspec.Instance, name string) bool { return inst.Model.PointIndex(name) >= 0 }

// setIf sets a top-group point when the model has it.
func setIf(inst *sunspec.Instance, name string, v float64) error {
	if !has(inst, name) {
		return nil
	}
	return inst.Set(name, v)
}

// setEach sets each value with setIf, in order, up to the first error.
func setEach(inst *sunspec.Instance, vals []sunspec.PointValue) error {
	for _, pv := range vals {
		if err := setIf(inst, pv.Point, pv.Value); err != nil {
			return err
		}
	}
	return nil
}

// limitPoints are the points of the limit control, per model.
var limitPoints = map[uint16][]string{
	123: {"WMaxLimPct", "WMaxLimPct_WinTms", "WMaxLimPct_RvrtTms", "WMaxLimPct_RmpTms", "WMaxLim_Ena"},
	704: {"WMaxLimPctEna", "WMaxLimPct", "WMaxLimPctRvrt", "WMaxLimPctEnaRvrt", "WMaxLimPctRvrtTms"},
}

// defaultLimitPct is the limit a device had before plantd touched it: its
// WMaxLimPct when enabled, else 100.
func defaultLimitPct(snap *sunspec.Instance) float64 {
	ena := "WMaxLim_Ena"
	if snap.Model.ID == 704 {
		ena = "WMaxLimPctEna"
	}
	if e, err := snap.Float(ena); err != nil || e != 1 {
		return 100
	}
	v, err := snap.Float("WMaxLimPct")
	if err != nil {
		return 100
	}
	return v
}

// editLimit sets the active-power limit with its reversion timeout (0:
// none). On 704 the stored reversion values are programmed to the fallback
// (the device's default, or the configured default where tighter), so that
// a gateway that dies leaves the device there, not unlimited.
func editLimit(inst, snap *sunspec.Instance, fallback, pct, rvrtS float64) error {
	switch inst.Model.ID {
	case 123:
		return setEach(inst, []sunspec.PointValue{
			{Point: "WMaxLimPct", Value: pct},
			{Point: "WMaxLimPct_RvrtTms", Value: rvrtS},
			{Point: "WMaxLimPct_RmpTms", Value: 0},
			{Point: "WMaxLim_Ena", Value: 1},
		})
	case 704:
		defEna := 1.0
		if e, err := snap.Float("WMaxLimPctEna"); (err != nil || e != 1) && fallback >= 100 {
			defEna = 0
		}
		return setEach(inst, []sunspec.PointValue{
			{Point: "WMaxLimPct", Value: pct},
			{Point: "WMaxLimPctRvrtTms", Value: rvrtS},
			{Point: "WMaxLimPctRvrt", Value: fallback},
			{Point: "WMaxLimPctEnaRvrt", Value: defEna},
			{Point: "WMaxLimPctEna", Value: 1},
		})
	}
	return fmt.Errorf("model %d: %w for the power limit", inst.Model.ID, errUnsupported)
}

// editEnable writes only the enable of the limit (for devices that apply a
// new value when the enable is toggled).
func editEnable(inst *sunspec.Instance, on bool) error {
	v := 0.0
	if on {
		v = 1
	}
	if inst.Model.ID == 704 {
		return inst.Set("WMaxLimPctEna", v)
	}
	return inst.Set("WMaxLim_Ena", v)
}

// editDisconnect opens the connection (123 Conn = 0) with its reversion
// timeout.
func editDisconnect(inst *sunspec.Instance, rvrtS float64) error {
	if err := inst.Set("Conn", 0); err != nil {
		return err
	}
	return setIf(inst, "Conn_RvrtTms", rvrtS)
}

// editPF sets a fixed power factor: 123 OutPFSet (injection), or 704
// PFWInj / PFWAbs with their reversion values programmed to the default.
func editPF(inst, snap *sunspec.Instance, c control, pf, rvrtS float64) error {
	if inst.Model.ID == 123 {
		if c != ctlPFInj {
			return fmt.Errorf("model 123 has no PF setpoint while absorbing: %w", errUnsupported)
		}
		return setEach(inst, []sunspec.PointValue{
			{Point: "OutPFSet", Value: pf},
			{Point: "OutPFSet_RvrtTms", Value: rvrtS},
			{Point: "OutPFSet_RmpTms", Value: 0},
			{Point: "OutPFSet_Ena", Value: 1},
		})
	}
	pre := "PFWInj"
	if c == ctlPFAbs {
		pre = "PFWAbs"
	}
	grp := inst.Root.Groups(pre)
	rv := inst.Root.Groups(pre + "Rvrt")
	if len(grp) == 0 {
		return fmt.Errorf("model %d has no %s: %w", inst.Model.ID, pre, errUnsupported)
	}
	if err := inst.SetIn(&grp[0], "PF", pf); err != nil {
		return err
	}
	if len(rv) > 0 {
		sg := snap.Root.Groups(pre)
		if def, err := snap.FloatIn(&sg[0], "PF"); err == nil {
			if err := inst.SetIn(&rv[0], "PF", def); err != nil {
				return err
			}
		}
		if ext, err := snap.FloatIn(&sg[0], "Ext"); err == nil {
			_ = inst.SetIn(&rv[0], "Ext", ext)
		}
	}
	defEna, _ := snap.Float(pre + "Ena")
	return setEach(inst, []sunspec.PointValue{
		{Point: pre + "RvrtTms", Value: rvrtS},
		{Point: pre + "EnaRvrt", Value: defEna},
		{Point: pre + "Ena", Value: 1},
	})
}

// writableIndex returns the curve (or control) to write: the last one the
// device does not mark read-only.
func writableIndex(gs []sunspec.GroupInstance, inst *sunspec.Instance) (int, bool) {
	for k := len(gs) - 1; k >= 0; k-- {
		ro, err := inst.FloatIn(&gs[k], "ReadOnly")
		if err != nil || ro == 0 {
			return k, true
		}
	}
	return 0, false
}

// editCurve writes a curve (or parameters) into the writable curve of a
// curve model and makes it active. A 12x/13x model takes data and header
// in one write (ActCrv, ModEna, RvrtTms). A 7xx model is written in two
// steps, so that a device never adopts a half-written curve: adopt=false
// writes the curve data, adopt=true the adopt request (AdptCrvReq or
// AdptCtlReq), Ena and RvrtTms.
func editCurve(inst *sunspec.Instance, cv *Curve, rvrtS float64, adopt bool) error {
	lay, ok := curveLayouts[inst.Model.ID]
	if !ok {
		return fmt.Errorf("model %d: %w for curves", inst.Model.ID, errUnsupported)
	}
	if lay.group == "" {
		// 127: parameters in the top group.
		if len(cv.Params) == 0 {
			return fmt.Errorf("model %d takes params, not points: %w", inst.Model.ID, errUnsupported)
		}
		for name, v := range cv.Params {
			if p := inst.Model.Point(name); p == nil || !p.Writable {
				return fmt.Errorf("model %d has no writable parameter %s: %w", inst.Model.ID, name, errUnsupported)
			}
			if err := inst.Set(name, v); err != nil {
				return err
			}
		}
		return setIf(inst, "ModEna", 1)
	}
	gs := inst.Root.Groups(lay.group)
	k, ok := writableIndex(gs, inst)
	if !ok {
		return fmt.Errorf("model %d: every curve is read-only: %w", inst.Model.ID, errUnsupported)
	}
	if !lay.der || !adopt {
		if err := writeCurveData(inst, lay, &gs[k], cv); err != nil {
			return err
		}
	}
	switch {
	case !lay.der:
		if err := inst.Set("ActCrv", float64(k+1)); err != nil {
			return err
		}
		if err := setIf(inst, "RvrtTms", rvrtS); err != nil {
			return err
		}
		return inst.Set("ModEna", 1)
	case adopt:
		if err := adoptCurve(inst, lay, k); err != nil {
			return err
		}
		if err := setIf(inst, "RvrtTms", rvrtS); err != nil {
			return err
		}
		return inst.Set("Ena", 1)
	}
	return nil
}

// adoptCurve requests a 7xx device to adopt curve (or control) k.
func adoptCurve(inst *sunspec.Instance, lay curveLayout, k int) error {
	return inst.Set(adoptReq(lay), float64(k+1))
}

// writeCurveData stores points or parameters into curve gi.
func writeCurveData(inst *sunspec.Instance, lay curveLayout, gi *sunspec.GroupInstance, cv *Curve) error {
	if lay.params {
		if len(cv.Params) == 0 {
			return fmt.Errorf("model %d takes params, not points: %w", inst.Model.ID, errUnsupported)
		}
		for name, v := range cv.Params {
			i := gi.Group.PointIndex(name)
			if i < 0 || !gi.Group.Points[i].Writable {
				return fmt.Errorf("model %d has no writable parameter %s: %w", inst.Model.ID, name, errUnsupported)
			}
			if err := inst.SetIn(gi, name, v); err != nil {
				return err
			}
		}
		return nil
	}
	if len(cv.Points) == 0 {
		return fmt.Errorf("model %d takes points: %w", inst.Model.ID, errUnsupported)
	}
	curve := gi
	if lay.sub != "" {
		subs := gi.Groups(lay.sub)
		if len(subs) == 0 {
			return fmt.Errorf("model %d has no %s curve: %w", inst.Model.ID, lay.sub, errUnsupported)
		}
		curve = &subs[0]
	}
	max := maxPoints(inst, lay, curve)
	if len(cv.Points) > max {
		return fmt.Errorf("model %d holds at most %d points per curve, got %d: %w", inst.Model.ID, max, len(cv.Points), errUnsupported)
	}
	if err := inst.SetIn(curve, "ActPt", float64(len(cv.Points))); err != nil {
		return err
	}
	for j, p := range cv.Points {
		if lay.der {
			pts := curve.Groups(lay.pts)
			if err := inst.SetIn(&pts[j], lay.x, p.X); err != nil {
				return fmt.Errorf("point %d: %w", j+1, err)
			}
			if err := inst.SetIn(&pts[j], lay.y, p.Y); err != nil {
				return fmt.Errorf("point %d: %w", j+1, err)
			}
			continue
		}
		n := fmt.Sprint(j + 1)
		if err := inst.SetIn(curve, lay.x+n, p.X); err != nil {
			return fmt.Errorf("point %d: %w", j+1, err)
		}
		if err := inst.SetIn(curve, lay.y+n, p.Y); err != nil {
			return fmt.Errorf("point %d: %w", j+1, err)
		}
	}
	return nil
}

// refVoltage reads the voltage a device's curve points are a percentage
// of: 12x/13x "% VRef" is 121 VRef, 7xx "VNomPct" 702 VNom (else its
// rating VNomRtg).
func refVoltage(ctx context.Context, rw sunspec.ReadWriter, d *sunspec.Device, der bool) (float64, error) {
	id, names := uint16(121), []string{"VRef"}
	if der {
		id, names = 702, []string{"VNom", "VNomRtg"}
	}
	ref, ok := d.Ref(id)
	if !ok {
		return 0, fmt.Errorf("no model %d, so no reference voltage to convert volts with: %w", id, errUnsupported)
	}
	inst, err := sunspec.ReadModel(ctx, rw, ref)
	if err != nil {
		return 0, err
	}
	for _, n := range names {
		if v, err := inst.Float(n); err == nil && v > 0 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("model %d reports no %s, so no reference voltage to convert volts with: %w", id, strings.Join(names, " or "), errUnsupported)
}

// pointError says what is wrong with point j of a curve.
type pointError struct {
	j   int
	msg string
}

func (e *pointError) Error() string { return fmt.Sprintf("point %d: %s", e.j+1, e.msg) }

// deviceCurve returns the curve of a command as a device takes it: with
// unit "V" its voltage axis converted to % of the device's reference
// voltage and range-checked there (a *pointError wrapped with
// errUnsupported when out of range); otherwise the command's curve.
func deviceCurve(ctx context.Context, rw sunspec.ReadWriter, d *sunspec.Device, ref sunspec.ModelRef, sc *ScheduledCmd) (*Curve, error) {
	cmd, _ := CommandByName(sc.Command)
	ax := cmd.Axes
	if sc.Unit != "V" || ax == nil || len(sc.Curve.Points) == 0 {
		return sc.Curve, nil
	}
	lay, ok := curveLayouts[ref.ID]
	if !ok || lay.params {
		return sc.Curve, nil // parameters only: nothing in volts
	}
	vref, err := refVoltage(ctx, rw, d, lay.der)
	if err != nil {
		return nil, err
	}
	out := &Curve{Points: slices.Clone(sc.Curve.Points), Params: sc.Curve.Params}
	vax := ax.voltage()
	for j := range out.Points {
		v := &out.Points[j].X
		if ax.y.volts {
			v = &out.Points[j].Y
		}
		volts := *v
		*v = volts / vref * 100
		if *v < vax.min || *v > vax.max {
			return nil, fmt.Errorf("%w: %w", &pointError{j: j, msg: fmt.Sprintf("%s = %g V is %.4g %% of the device's reference voltage %g V, outside %g..%g %%",
				vax.point, volts, *v, vref, vax.min, vax.max)}, errUnsupported)
		}
	}
	return out, nil
}

// maxPoints is how many points a curve of the device holds: the model's
// NPt where implemented, bounded by the registers of the layout.
func maxPoints(inst *sunspec.Instance, lay curveLayout, curve *sunspec.GroupInstance) int {
	limit := 0
	if lay.der {
		limit = len(curve.Groups(lay.pts))
	} else {
		for limit < 100 && curve.Group.PointIndex(lay.x+fmt.Sprint(limit+1)) >= 0 {
			limit++
		}
	}
	if n, err := inst.Float("NPt"); err == nil && n >= 0 && int(n) < limit {
		limit = int(n)
	}
	return limit
}

// restore copies, from the default image snap, the registers of the points
// a control owns: the limit, connection or PF points, or for a 12x/13x
// curve model every writable register (header and curves). Registers that
// are not part of writable points are never touched. A 7xx curve model is
// restored by restoreDER instead, in three writes.
func restore(inst, snap *sunspec.Instance, c control) error {
	if len(snap.Regs) != len(inst.Regs) {
		return fmt.Errorf("model %d changed length since its default was read (%d, now %d registers)", inst.Model.ID, len(snap.Regs), len(inst.Regs))
	}
	var names []string
	switch c {
	case ctlLimit:
		names = limitPoints[inst.Model.ID]
	case ctlConnect:
		names = []string{"Conn", "Conn_WinTms", "Conn_RvrtTms"}
	case ctlBattery:
		names = heldPoints[ctlBattery][inst.Model.ID]
	case ctlPFInj, ctlPFAbs:
		if inst.Model.ID == 123 {
			names = []string{"OutPFSet", "OutPFSet_WinTms", "OutPFSet_RvrtTms", "OutPFSet_RmpTms", "OutPFSet_Ena"}
			break
		}
		pre := "PFWInj"
		if c == ctlPFAbs {
			pre = "PFWAbs"
		}
		names = []string{pre + "Ena", pre + "EnaRvrt", pre + "RvrtTms"}
		for _, g := range []string{pre, pre + "Rvrt"} {
			for _, gi := range inst.Root.Groups(g) {
				copyGroup(inst, snap, &gi, nil)
			}
		}
	default:
		if lay, ok := curveLayouts[inst.Model.ID]; ok && lay.der {
			return fmt.Errorf("model %d: a 7xx curve is restored by adoption", inst.Model.ID)
		}
		copyWritable(inst, snap, &inst.Root)
		return nil
	}
	copyGroup(inst, snap, &inst.Root, names)
	return nil
}

// adoptReq is the adopt request point of a 7xx layout.
func adoptReq(lay curveLayout) string {
	if lay.params {
		return "AdptCtlReq"
	}
	return "AdptCrvReq"
}

// restoreDER brings a 7xx curve model back to its default image snap, bit
// for bit, every stored curve and the adopt request included. A 7xx
// device keeps the settings in effect in curve 1 (read-only on most
// devices) and takes others into it only by adoption, so:
//
//  1. curve 1 as first read is written into a writable curve a: the one
//     the adopt request read at first contact names, when that is a
//     writable curve other than 1, else the one plantd writes into;
//  2. curve a is adopted, with the header's writable points (Ena, RvrtTms,
//     RvrtCrv...) as they were: curve 1 is the default again;
//  3. curve a gets its own default contents back (it held curve 1's only
//     to be adopted), and the adopt request its default value when
//     writing that adopts nothing unwanted: 0 (no request), or an index
//     whose curve now equals curve 1. A device that clears the request
//     itself after adopting is left to do so; a default request that
//     would adopt other contents is left as the adoption set it, and
//     the note says so.
//
// Each write is read back. A failure leaves the control owned, and the
// next attempt starts over at step 1.
func restoreDER(ctx context.Context, rw sunspec.ReadWriter, ref sunspec.ModelRef, snap *sunspec.Instance) (note string, err error) {
	lay := curveLayouts[ref.ID]
	req := adoptReq(lay)
	sg := snap.Root.Groups(lay.group)
	if len(sg) == 0 {
		return "", fmt.Errorf("model %d: no %s group to restore: %w", ref.ID, lay.group, errUnsupported)
	}
	a, ok := writableIndex(sg, snap)
	if !ok {
		return "", fmt.Errorf("model %d: no writable curve to restore into: %w", ref.ID, errUnsupported)
	}
	defReq, err := snap.Float(req)
	if err != nil {
		return "", fmt.Errorf("model %d %s: %w", ref.ID, req, err)
	}
	if r := int(defReq); float64(r) == defReq && r >= 2 && r <= len(sg) {
		if ro, err := snap.FloatIn(&sg[r-1], "ReadOnly"); err != nil || ro == 0 {
			a = r - 1
		}
	}
	same := func(inst *sunspec.Instance) error {
		if len(snap.Regs) != len(inst.Regs) {
			return fmt.Errorf("model %d changed length since its default was read (%d, now %d registers)", ref.ID, len(snap.Regs), len(inst.Regs))
		}
		return nil
	}
	// 1. Curve 1's default into curve a.
	if _, err := sunspec.WriteModel(ctx, rw, ref, func(inst *sunspec.Instance) error {
		if err := same(inst); err != nil {
			return err
		}
		copyInto(inst, snap, &inst.Root.Groups(lay.group)[a], &sg[0])
		return nil
	}); err != nil {
		return "", err
	}
	// 2. Adopt it, the header as it was.
	if _, err := adopt(ctx, rw, ref, nil, func(inst *sunspec.Instance) error {
		if err := same(inst); err != nil {
			return err
		}
		for _, p := range inst.Model.Group.Points {
			if p.Writable && p.Name != req {
				copyGroup(inst, snap, &inst.Root, []string{p.Name})
			}
		}
		return inst.Set(req, float64(a+1))
	}); err != nil {
		return "", err
	}
	// 3. Curve a's own default, and the request's.
	_, err = sunspec.WriteModel(ctx, rw, ref, func(inst *sunspec.Instance) error {
		if err := same(inst); err != nil {
			return err
		}
		gs := inst.Root.Groups(lay.group)
		copyInto(inst, snap, &gs[a], &sg[a])
		cur, err := inst.Float(req)
		if err != nil || cur == defReq {
			return err
		}
		if cur != float64(a+1) {
			note = fmt.Sprintf("%s reads %g after the adoption (the device sets it itself), %g before", req, cur, defReq)
			return nil
		}
		r := int(defReq)
		if defReq == 0 || (float64(r) == defReq && r >= 1 && r <= len(gs) && sameWritable(inst, &gs[r-1], inst, &gs[0])) {
			return inst.Set(req, defReq)
		}
		note = fmt.Sprintf("%s left at %d: writing %g, as read before, would adopt curve contents other than the default", req, a+1, defReq)
		return nil
	})
	return note, err
}

// sameWritable reports whether the writable points of two groups of the
// same layout (and their sub-groups) hold the same registers.
func sameWritable(x *sunspec.Instance, gx *sunspec.GroupInstance, y *sunspec.Instance, gy *sunspec.GroupInstance) bool {
	for _, p := range gx.Group.Points {
		if !p.Writable {
			continue
		}
		i, j := gx.Offset+int(p.Offset), gy.Offset+int(p.Offset)
		if !slices.Equal(x.Regs[i:i+int(p.Size)], y.Regs[j:j+int(p.Size)]) {
			return false
		}
	}
	for i := range gx.Sub {
		if i >= len(gy.Sub) || len(gx.Sub[i]) != len(gy.Sub[i]) {
			return false
		}
		for j := range gx.Sub[i] {
			if !sameWritable(x, &gx.Sub[i][j], y, &gy.Sub[i][j]) {
				return false
			}
		}
	}
	return true
}

// copyGroup copies the named writable points of gi (all when names is nil).
func copyGroup(inst, snap *sunspec.Instance, gi *sunspec.GroupInstance, names []string) {
	for _, p := range gi.Group.Points {
		if !p.Writable || (names != nil && !slices.Contains(names, p.Name)) {
			continue
		}
		from := gi.Offset + int(p.Offset)
		copy(inst.Regs[from:from+int(p.Size)], snap.Regs[from:from+int(p.Size)])
	}
}

// copyInto copies the writable points of the group from (of snap) into the
// group to (of inst), which has the same layout; ReadOnly is kept.
func copyInto(inst, snap *sunspec.Instance, to, from *sunspec.GroupInstance) {
	for _, p := range to.Group.Points {
		if !p.Writable {
			continue
		}
		a, b := to.Offset+int(p.Offset), from.Offset+int(p.Offset)
		copy(inst.Regs[a:a+int(p.Size)], snap.Regs[b:b+int(p.Size)])
	}
	for i := range to.Sub {
		for j := range to.Sub[i] {
			if i < len(from.Sub) && j < len(from.Sub[i]) {
				copyInto(inst, snap, &to.Sub[i][j], &from.Sub[i][j])
			}
		}
	}
}

// copyWritable copies every writable point of gi and its sub-groups.
func copyWritable(inst, snap *sunspec.Instance, gi *sunspec.GroupInstance) {
	copyGroup(inst, snap, gi, nil)
	for _, occ := range gi.Sub {
		for i := range occ {
			copyWritable(inst, snap, &occ[i])
		}
	}
}

// pctOfRated converts a limit in W to % of a rating, clamped to 0..100.
func pctOfRated(w, ratedW float64) float64 {
	if ratedW <= 0 {
		return 100
	}
	return math.Min(100, math.Max(0, w/ratedW*100))
}
