package gridcontrol

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sunspec"
)

// SettingsTypes are the settings types of spec §4.2.
var SettingsTypes = []string{"activePowerGridSettings", "reactivePowerGridSettings",
	"frequencyFaultRideThroughSettings", "voltageFaultRideThroughSettings"}

// ErrUnknownSettingsType is returned by Settings for a type not in
// SettingsTypes.
var ErrUnknownSettingsType = errors.New("unknown settings type")

// Setting is one configuration of a settings type as the plant's inverters
// report it now. Type is the configuration's name: its active form when
// at least one inverter has the function enabled, its Deactivated form
// (spec §2.5) when none has.
type Setting struct {
	Type string `json:"type"`
	// Function names the function the configuration is, on or off: its
	// active name ("FixedPowerFactorSetting", "VoltVarCurveSetting"), so
	// that two configurations of one Deactivated form
	// (ReactivePowerGridDeactivatedSetting) are told apart. Ours, beside
	// the cloud's shape.
	Function string `json:"function"`
	// Supported says whether any active inverter offers the function;
	// Devices names them.
	Supported bool     `json:"supported"`
	Devices   []string `json:"devices"`
	// Active says whether the function is enabled on any inverter now.
	Active bool `json:"active"`
	// Values are the settings read from each inverter that offers the
	// function and answered.
	Values []DeviceSetting `json:"values"`
}

// DeviceSetting is what one inverter reports for a function.
type DeviceSetting struct {
	Device  string `json:"device"`
	Model   uint16 `json:"model"`
	Enabled bool   `json:"enabled"`
	// LimitPct is an active power limit in % of the device's maximum.
	LimitPct *float64 `json:"limitPct,omitempty"`
	// PowerFactor is a fixed displacement power factor.
	PowerFactor *float64 `json:"powerFactor,omitempty"`
	// Curve is the curve (or the parameters) in effect.
	Curve *Curve `json:"curve,omitempty"`
	// ControlledByPlantd is set while a schedule of plantd (or its
	// fallback ramp) holds the function.
	ControlledByPlantd bool `json:"controlledByPlantd"`
}

// settingDef is one configuration of a settings type: the names of its
// two forms, the capability, and the models that carry it.
type settingDef struct {
	active, deactivated string
	cap                 sunspec.Capability
	models              []uint16
	ctl                 control
	// dynamic: the FeedInLimit loop, a state of the controller rather
	// than of a device.
	dynamic bool
}

var settingDefs = map[string][]settingDef{
	"activePowerGridSettings": {
		{active: "DynamicActivePowerLimitConfig", deactivated: "DynamicActivePowerLimitDeactivatedConfig", cap: sunspec.CapPowerLimit, models: []uint16{704, 123}, ctl: ctlLimit, dynamic: true},
		{active: "FixedActivePowerLimitConfig", deactivated: "FixedActivePowerLimitDeactivatedConfig", cap: sunspec.CapPowerLimit, models: []uint16{704, 123}, ctl: ctlLimit},
		{active: "FreqWattCurveConfig", deactivated: "FreqWattCurveDeactivatedConfig", cap: sunspec.CapFreqWatt, models: []uint16{711, 134, 127}, ctl: "opModFreqWatt"},
		{active: "VoltWattCurveConfig", deactivated: "VoltWattCurveDeactivatedConfig", cap: sunspec.CapVoltWatt, models: []uint16{706, 132}, ctl: "opModVoltWatt"},
	},
	"reactivePowerGridSettings": {
		{active: "FixedPowerFactorSetting", deactivated: "ReactivePowerGridDeactivatedSetting", cap: sunspec.CapPowerFactor, models: []uint16{704, 123}, ctl: ctlPFInj},
		{active: "VoltVarCurveSetting", deactivated: "ReactivePowerGridDeactivatedSetting", cap: sunspec.CapVoltVar, models: []uint16{705, 126}, ctl: "opModVoltVar"},
	},
	"frequencyFaultRideThroughSettings": {
		{active: "LowFrequencyRideThroughCurveConfig", deactivated: "LowFrequencyRideThroughDeviceDefault", cap: sunspec.CapLFRT, models: []uint16{709, 135}, ctl: "opModLfrtMustTrip"},
		{active: "HighFrequencyRideThroughCurveConfig", deactivated: "HighFrequencyRideThroughDeviceDefault", cap: sunspec.CapHFRT, models: []uint16{710, 136}, ctl: "opModHfrtMustTrip"},
	},
	"voltageFaultRideThroughSettings": {
		{active: "LowVoltageRideThroughCurveConfig", deactivated: "LowVoltageRideThroughDeviceDefault", cap: sunspec.CapLVRT, models: []uint16{707, 129}, ctl: "opModLvrtMustTrip"},
		{active: "HighVoltageRideThroughCurveConfig", deactivated: "HighVoltageRideThroughDeviceDefault", cap: sunspec.CapHVRT, models: []uint16{708, 130}, ctl: "opModHvrtMustTrip"},
	},
}

// Settings reads, from every active inverter of the plant that answers,
// the configuration of one settings type in effect now.
func (c *Controller) Settings(ctx context.Context, plantID, settingsType string) ([]Setting, error) {
	defs, ok := settingDefs[settingsType]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownSettingsType, settingsType)
	}
	devs, err := c.live.DeviceStatuses(plantID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	feeding := false
	if pc := c.plants[plantID]; pc != nil {
		feeding = pc.feed.active
	}
	c.mu.Unlock()
	out := make([]Setting, len(defs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, def := range defs {
		out[i] = Setting{Type: def.deactivated, Function: def.active, Devices: []string{}, Values: []DeviceSetting{}}
		for _, d := range devs {
			if d.Info.Kind != kind.Inverter || !d.Info.Active() || sunspecOf(d.Discovered) == nil || !slices.Contains(sunspecOf(d.Discovered).Capabilities, def.cap) {
				continue
			}
			ref, ok := firstRef(sunspecOf(d.Discovered), def.models...)
			if !ok {
				continue
			}
			out[i].Devices = append(out[i].Devices, d.Info.ID)
			if !reachable(d) {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ds, err := c.readSetting(ctx, d, ref, def)
				if err != nil {
					c.log.Debug("read setting", "device", d.Info.ID, "model", ref.ID, "err", err)
					return
				}
				if def.dynamic {
					// The dynamic limit is the FeedInLimit loop's.
					ds.Enabled = feeding && ds.ControlledByPlantd
				} else if def.ctl == ctlLimit && feeding && ds.ControlledByPlantd {
					ds.Enabled = false // the limit is the dynamic one
				}
				mu.Lock()
				out[i].Values = append(out[i].Values, ds)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	for i := range out {
		out[i].Supported = len(out[i].Devices) > 0
		// sort.Slice: no sort instantiated for this struct (binary size).
		vs := out[i].Values
		sort.Slice(vs, func(a, b int) bool { return cmpString(vs[a].Device, vs[b].Device) < 0 })
		for _, v := range out[i].Values {
			if v.Enabled {
				out[i].Active, out[i].Type = true, defs[i].active
			}
		}
	}
	return out, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// readSetting reads one function of one inverter.
func (c *Controller) readSetting(ctx context.Context, d plant.DeviceLive, ref sunspec.ModelRef, def settingDef) (DeviceSetting, error) {
	rw, ok := c.conns(d.Info.ID)
	if !ok {
		return DeviceSetting{}, fmt.Errorf("device %s: no connection", d.Info.ID)
	}
	inst, err := sunspec.ReadModel(ctx, rw, ref)
	if err != nil {
		return DeviceSetting{}, err
	}
	ds := DeviceSetting{Device: d.Info.ID, Model: ref.ID}
	c.mu.Lock()
	if dc := c.devs[d.Info.ID]; dc != nil {
		for _, k := range []control{def.ctl, ctlPFAbs} {
			if st := dc.ctl[k]; st != nil && (k == def.ctl || def.ctl == ctlPFInj) {
				ds.ControlledByPlantd = ds.ControlledByPlantd || st.owned
			}
		}
	}
	c.mu.Unlock()
	on := func(name string) bool {
		v, err := inst.Float(name)
		return err == nil && int(v)&1 == 1
	}
	num := func(name string) *float64 {
		if v, err := inst.Float(name); err == nil {
			return &v
		}
		return nil
	}
	switch def.ctl {
	case ctlLimit:
		ds.LimitPct = num("WMaxLimPct")
		ds.Enabled = on("WMaxLim_Ena") || on("WMaxLimPctEna")
	case ctlPFInj:
		if ref.ID == 123 {
			ds.Enabled, ds.PowerFactor = on("OutPFSet_Ena"), num("OutPFSet")
			break
		}
		for _, pre := range []string{"PFWInj", "PFWAbs"} {
			if on(pre+"Ena") && !ds.Enabled {
				ds.Enabled = true
				if g := inst.Root.Groups(pre); len(g) > 0 {
					if v, err := inst.FloatIn(&g[0], "PF"); err == nil {
						ds.PowerFactor = &v
					}
				}
			}
		}
	default:
		ds.Enabled = on("ModEna") || on("Ena")
		ds.Curve = readCurve(inst)
	}
	return ds, nil
}

// readCurve returns the curve in effect on a curve model: 12x/13x the
// curve ActCrv names, 7xx curve 1 (the adopted one), 127 and 711 their
// parameters.
func readCurve(inst *sunspec.Instance) *Curve {
	lay, ok := curveLayouts[inst.Model.ID]
	if !ok {
		return nil
	}
	params := func(gi *sunspec.GroupInstance) *Curve {
		cv := &Curve{Params: map[string]float64{}}
		for _, p := range gi.Group.Points {
			if p.Writable && p.Name != "ModEna" && p.Name != "HysEna" {
				if v, err := inst.FloatIn(gi, p.Name); err == nil {
					cv.Params[p.Name] = v
				}
			}
		}
		return cv
	}
	if lay.group == "" {
		return params(&inst.Root)
	}
	gs := inst.Root.Groups(lay.group)
	if len(gs) == 0 {
		return nil
	}
	k := 0
	if !lay.der {
		if a, err := inst.Float("ActCrv"); err == nil && int(a) >= 1 && int(a) <= len(gs) {
			k = int(a) - 1
		}
	}
	if lay.params {
		return params(&gs[k])
	}
	curve := &gs[k]
	if lay.sub != "" {
		subs := curve.Groups(lay.sub)
		if len(subs) == 0 {
			return nil
		}
		curve = &subs[0]
	}
	n, err := inst.FloatIn(curve, "ActPt")
	if err != nil {
		return nil
	}
	cv := &Curve{}
	for j := range int(n) {
		var x, y float64
		var ex, ey error
		if lay.der {
			pts := curve.Groups(lay.pts)
			if j >= len(pts) {
				break
			}
			x, ex = inst.FloatIn(&pts[j], lay.x)
			y, ey = inst.FloatIn(&pts[j], lay.y)
		} else {
			x, ex = inst.FloatIn(curve, fmt.Sprint(lay.x, j+1))
			y, ey = inst.FloatIn(curve, fmt.Sprint(lay.y, j+1))
		}
		if ex != nil || ey != nil {
			break
		}
		cv.Points = append(cv.Points, CurvePoint{X: x, Y: y})
	}
	return cv
}
