package gridcontrol

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
	"plantd/sunspec"
)

// dev is a discovered device of the given kind and models, online unless
// state says otherwise.
func dev(id string, kind kind.Kind, state plant.CommState, models ...uint16) plant.DeviceLive {
	_, platform, caps := sunspec.Classify(models)
	d := &sunspec.Device{Platform: platform, Capabilities: caps, RatedPowerW: 10000}
	for _, m := range models {
		d.Models = append(d.Models, sunspec.ModelRef{ID: m})
	}
	return plant.DeviceLive{Info: plant.DeviceInfo{ID: id, PlantID: "p", Kind: kind}, Discovered: d, Comm: plant.Communication{State: state}}
}

func TestEligible(t *testing.T) {
	on, off := plant.StateOnline, plant.StateOffline
	classic := dev("inv1", kind.Inverter, on, 1, 103, 120, 121, 123, 126, 132)
	der := dev("inv2", kind.Inverter, on, 1, 701, 702, 704, 705, 706)
	meter := dev("meter", kind.Meter, on, 1, 203)
	deadDER := dev("inv3", kind.Inverter, off, 1, 701, 702, 704)
	undiscovered := plant.DeviceLive{Info: plant.DeviceInfo{ID: "inv4", PlantID: "p", Kind: kind.Inverter}}
	// Configured without a kind, never answered (an inverter asleep at
	// night when plantd starts), or not polled yet.
	asleep := plant.DeviceLive{Info: plant.DeviceInfo{ID: "inv5", PlantID: "p"}, Comm: plant.Communication{State: off}}
	unpolled := plant.DeviceLive{Info: plant.DeviceInfo{ID: "inv6", PlantID: "p"}}
	asleepInverter := asleep
	asleepInverter.Info.Kind = kind.Inverter
	retired := classic
	retired.Info.DeactivatedAt = time.Now()
	cases := []struct {
		cmd      string
		devs     []plant.DeviceLive
		eligible bool
		devices  []string
		reason   string
	}{
		{"opModMaxLimW", []plant.DeviceLive{classic, der}, true, []string{"inv1", "inv2"}, ""},
		{"FeedInLimit", []plant.DeviceLive{classic, der}, false, nil, ReasonNoGridMeter},
		{"FeedInLimit", []plant.DeviceLive{classic, meter}, true, []string{"inv1"}, ""},
		{"OpModDisconnect", []plant.DeviceLive{der}, false, nil, ReasonClassicOnly},
		{"OpModDisconnect", []plant.DeviceLive{classic, der}, true, []string{"inv1"}, ""},
		{"opModFixedPfAbsorbW", []plant.DeviceLive{classic}, false, nil, ReasonDEROnly},
		{"opModVoltVar", []plant.DeviceLive{classic, der}, true, []string{"inv1", "inv2"}, ""},
		{"opModLvrtMustTrip", []plant.DeviceLive{classic, der}, false, nil, ReasonNotSupported},
		{"opModMaxLimW", []plant.DeviceLive{der, deadDER}, true, []string{"inv2"}, ReasonDevicesOffline},
		{"opModMaxLimW", []plant.DeviceLive{deadDER}, false, nil, ReasonDevicesOffline},
		{"opModMaxLimW", []plant.DeviceLive{undiscovered}, false, nil, ReasonNotDiscovered},
		{"opModMaxLimW", []plant.DeviceLive{asleep, meter}, false, nil, ReasonDevicesOffline},
		{"opModMaxLimW", []plant.DeviceLive{asleepInverter}, false, nil, ReasonDevicesOffline},
		{"opModMaxLimW", []plant.DeviceLive{unpolled, meter}, false, nil, ReasonNotDiscovered},
		{"opModMaxLimW", []plant.DeviceLive{meter}, false, nil, ReasonNoActiveDevices},
		{"opModMaxLimW", []plant.DeviceLive{retired, meter}, false, nil, ReasonNoActiveDevices},
	}
	for _, tc := range cases {
		cmd, _ := CommandByName(tc.cmd)
		got := Eligible(cmd, tc.devs)
		var codes []string
		for _, r := range got.Reasons {
			codes = append(codes, r.Code)
		}
		if got.Eligible != tc.eligible || !slices.Equal(got.Devices, tc.devices) || (tc.reason != "" && !slices.Contains(codes, tc.reason)) || (tc.reason == "" && len(codes) > 0) {
			t.Errorf("%s on %d devices: eligible %v devices %v reasons %v; want %v %v %q", tc.cmd, len(tc.devs), got.Eligible, got.Devices, codes, tc.eligible, tc.devices, tc.reason)
		}
	}
}

// TestAssess: per active inverter, whether it acts on a command and why
// not; the share of rated power that acts; partial only when the command
// is eligible and some inverter does not act.
func TestAssess(t *testing.T) {
	on, off := plant.StateOnline, plant.StateOffline
	classic := dev("inv1", kind.Inverter, on, 1, 103, 120, 121, 123, 126, 132)
	der := dev("inv2", kind.Inverter, on, 1, 701, 702, 704, 705, 706)
	sunspecOf(der.Discovered).RatedPowerW = 5000
	meter := dev("meter", kind.Meter, on, 1, 203)
	deadDER := dev("inv3", kind.Inverter, off, 1, 701, 702, 704)
	undiscovered := plant.DeviceLive{Info: plant.DeviceInfo{ID: "inv4", PlantID: "p", Kind: kind.Inverter}}
	retired := dev("inv5", kind.Inverter, on, 1, 103, 123)
	retired.Info.DeactivatedAt = time.Now()
	cases := []struct {
		cmd      string
		devs     []plant.DeviceLive
		partial  bool
		coverage float64 // -1: none
		verdicts string  // id:acts/reason, in device order
		// whole: every active inverter acts now, so all or nothing
		// (requireAll) takes it; an offline one that acts only once
		// back does not count.
		whole bool
	}{
		{"opModMaxLimW", []plant.DeviceLive{classic, der, meter}, false, 1, "inv1:true/+" + ReasonNoRevertToDefault + " inv2:true/", true},
		{"OpModDisconnect", []plant.DeviceLive{classic, der}, true, 0.667, "inv1:true/ inv2:false/" + ReasonClassicOnly, false},
		{"opModFixedPfAbsorbW", []plant.DeviceLive{classic, der}, true, 0.333, "inv1:false/" + ReasonDEROnly + " inv2:true/", false},
		{"opModFixedPfAbsorbW", []plant.DeviceLive{classic}, false, 0, "inv1:false/" + ReasonDEROnly, false},
		{"opModVoltWatt", []plant.DeviceLive{classic, deadDER}, true, 0.5, "inv1:true/ inv3:false/" + ReasonNotSupported, false},
		{"opModMaxLimW", []plant.DeviceLive{der, deadDER}, false, 1, "inv2:true/ inv3:true/" + ReasonDevicesOffline, false},
		{"opModMaxLimW", []plant.DeviceLive{classic, undiscovered, retired}, true, 1, "inv1:true/+" + ReasonNoRevertToDefault + " inv4:false/" + ReasonNotDiscovered, false},
		{"FeedInLimit", []plant.DeviceLive{classic, der}, false, 0, "inv1:false/" + ReasonNoGridMeter + " inv2:false/" + ReasonNoGridMeter, false},
		{"opModMaxLimW", []plant.DeviceLive{meter}, false, -1, "", false},
	}
	for _, tc := range cases {
		cmd, _ := CommandByName(tc.cmd)
		got := Assess(cmd, tc.devs)
		var vs []string
		for _, ic := range got.Inverters {
			code := ""
			if ic.Reason != nil {
				code = ic.Reason.Code
			}
			if ic.Note != nil {
				code += "+" + ic.Note.Code
			}
			vs = append(vs, fmt.Sprintf("%s:%v/%s", ic.DeviceID, ic.Acts, code))
		}
		cov := -1.0
		if got.Coverage != nil {
			cov = *got.Coverage
		}
		if got.Partial != tc.partial || cov != tc.coverage || strings.Join(vs, " ") != tc.verdicts {
			t.Errorf("%s: partial %v coverage %g verdicts %q; want %v %g %q", tc.cmd, got.Partial, cov, strings.Join(vs, " "), tc.partial, tc.coverage, tc.verdicts)
		}
		if e := Eligible(cmd, tc.devs); e.Eligible != got.Eligible || !slices.Equal(e.Devices, got.Devices) {
			t.Errorf("%s: Assess changed the eligibility: %+v vs %+v", tc.cmd, got, e)
		}
		refused := len(wholePlant([]ScheduledCmd{{Command: tc.cmd}}, map[string]Eligibility{tc.cmd: got}, false)) > 0
		aon := got.AllOrNothing(true)
		if refused == tc.whole || (got.Eligible && aon.Eligible != tc.whole) {
			t.Errorf("%s %s: all or nothing refused %v, eligible %v; want whole %v", tc.cmd, tc.verdicts, refused, aon.Eligible, tc.whole)
		}
		if got.Eligible && !tc.whole && (len(aon.Reasons) == 0 || aon.Reasons[0].Code != ReasonNotEveryInverter) {
			t.Errorf("%s %s: all or nothing reasons %+v, want %s first", tc.cmd, tc.verdicts, aon.Reasons, ReasonNotEveryInverter)
		}
	}
}

// TestCommandTable walks the command table for every command on both
// generations: each names one control; a command that drives the limit
// is a power value, the curves carry their axes and a layout for each
// model; each generation has a model for the command unless the command
// is for the other one only; and every model is read by the control code
// (a curve layout, or held points for the limit, connect and PF).
func TestCommandTable(t *testing.T) {
	classic := map[uint16]bool{123: true, 126: true, 127: true, 129: true, 130: true, 132: true, 134: true, 135: true, 136: true}
	der := map[uint16]bool{704: true, 705: true, 706: true, 707: true, 708: true, 709: true, 710: true, 711: true}
	names := map[string]bool{}
	for _, cmd := range Commands {
		if names[cmd.Name] {
			t.Errorf("%s: twice in the table", cmd.Name)
		}
		names[cmd.Name] = true
		if got, ok := CommandByName(cmd.Name); !ok || got.Name != cmd.Name {
			t.Errorf("%s: not found by name", cmd.Name)
		}
		if cmd.Control == "" {
			t.Errorf("%s: drives no control", cmd.Name)
		}
		if (cmd.Control == ctlLimit) != (cmd.Value == ValuePower) {
			t.Errorf("%s: control %s with value kind %d: a limit is a power value and the only one", cmd.Name, cmd.Control, cmd.Value)
		}
		if (cmd.Value == ValueCurve) != (cmd.Axes != nil) {
			t.Errorf("%s: value kind %d with axes %v: curves, and only curves, have axes", cmd.Name, cmd.Value, cmd.Axes)
		}
		for gen, models := range map[string]map[uint16]bool{"classic": classic, "DER": der} {
			n := 0
			for _, m := range cmd.Models {
				if !models[m] {
					continue
				}
				n++
				_, curve := curveLayouts[m]
				held := len(heldPoints[cmd.Control][m]) > 0
				if cmd.Value == ValueCurve && !curve || cmd.Value != ValueCurve && !held {
					t.Errorf("%s on %s model %d: no curve layout (%v) or held points (%v) for it", cmd.Name, gen, m, curve, held)
				}
			}
			other := (gen == "classic" && cmd.DEROnly) || (gen == "DER" && cmd.ClassicOnly)
			if (n == 0) != other {
				t.Errorf("%s: %d %s models, offered only for the other generation %v", cmd.Name, n, gen, other)
			}
		}
	}
	for _, c := range []string{CmdFeedInLimit, CmdDisconnect, CmdMaxLimW, CmdPFAbsorb, CmdPFInject, CmdFreqWatt, CmdHfrtMustTrip,
		CmdHvrtMustTrip, CmdLfrtMustTrip, CmdLvrtMustTrip, CmdVoltVar, CmdVoltWatt} {
		if !names[c] {
			t.Errorf("name constant %q is not in the table", c)
		}
	}
	if len(names) != 12 {
		t.Errorf("%d commands, the spec's §2.5 has 12", len(names))
	}
}
