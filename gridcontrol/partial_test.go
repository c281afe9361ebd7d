package gridcontrol_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"plantd/gridcontrol"
	"plantd/sim/simtest"
)

// TestPartialCommands: on the demo plant (inv1 classic, 10 kW; inv2 DER,
// 8 kW) OpModDisconnect reaches only inv1 and opModFixedPfAbsorbW only
// inv2. Such a window is accepted but said to be partial (coverage, which
// inverter acts and which does not and why), the plant log names the share
// of rated power it governs, and once applied it still says so while the
// other inverter keeps feeding; asked all or nothing, it is refused.
func TestPartialCommands(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{stepped: true})
	type verdict struct {
		acts bool
		code string
	}
	cases := []struct {
		name       string
		cmd        string // a window of it: {"command":cmd, start, end + extra}
		extra      string
		requireAll bool
		skipCheck  bool
		refused    bool
		partial    bool
		coverage   float64
		inverters  map[string]verdict
		logShare   string // in the plant log's CommandPartial entry
	}{
		{name: "disconnect classic only", cmd: "OpModDisconnect", partial: true, coverage: 0.556,
			inverters: map[string]verdict{"inv1": {true, ""}, "inv2": {false, gridcontrol.ReasonClassicOnly}},
			logShare:  "OpModDisconnect governs 10000 of 18000 W (56 %)"},
		{name: "absorbing PF DER only", cmd: "opModFixedPfAbsorbW", extra: `,"value":0.9`, partial: true, coverage: 0.444,
			inverters: map[string]verdict{"inv1": {false, gridcontrol.ReasonDEROnly}, "inv2": {true, ""}},
			logShare:  "opModFixedPfAbsorbW governs 8000 of 18000 W (44 %)"},
		{name: "disconnect all or nothing", cmd: "OpModDisconnect", requireAll: true, refused: true},
		{name: "absorbing PF all or nothing, check skipped", cmd: "opModFixedPfAbsorbW", extra: `,"value":0.9`, requireAll: true, skipCheck: true, refused: true},
		{name: "limit all or nothing", cmd: "opModMaxLimW", extra: `,"value":50`, requireAll: true},
		{name: "limit", cmd: "opModMaxLimW", extra: `,"value":50`},
	}
	for _, tc := range cases {
		start, end := r.window(time.Hour, time.Minute) // far enough not to run
		b := body(fmt.Sprintf(`{"command":%q,"start":%q,"end":%q%s}`, tc.cmd, ts(start), ts(end), tc.extra))
		sc, err := r.controller().SubmitJSON(context.Background(), "demo", installer, []byte(b), gridcontrol.SkipEligibilityCheck(tc.skipCheck), gridcontrol.RequireAll(tc.requireAll))
		var ve *gridcontrol.ValidationError
		if tc.refused {
			if !errors.As(err, &ve) || !ve.NotEligible || len(ve.Fields) != 1 || ve.Fields[0].Field != "commands[0].command" ||
				!strings.Contains(ve.Fields[0].Message, "not every active inverter") {
				t.Errorf("%s: %v, want refused as not eligible, naming commands[0].command", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got := sc.Commands[0]
		if got.Partial != tc.partial || got.Status != gridcontrol.StatusPending {
			t.Errorf("%s: partial %v status %s, want %v pending", tc.name, got.Partial, got.Status, tc.partial)
		}
		if !tc.partial {
			if got.Coverage != nil || got.Inverters != nil {
				t.Errorf("%s: coverage %v inverters %+v on a window the whole plant carries", tc.name, got.Coverage, got.Inverters)
			}
			continue
		}
		if got.Coverage == nil || *got.Coverage != tc.coverage {
			t.Errorf("%s: coverage %v, want %g", tc.name, got.Coverage, tc.coverage)
		}
		if len(got.Inverters) != len(tc.inverters) {
			t.Errorf("%s: inverters %+v, want %v", tc.name, got.Inverters, tc.inverters)
		}
		for _, ic := range got.Inverters {
			want := tc.inverters[ic.DeviceID]
			code := ""
			if ic.Reason != nil {
				code = ic.Reason.Code
			}
			if ic.Acts != want.acts || code != want.code || ic.RatedPowerW == 0 {
				t.Errorf("%s: %s acts %v reason %q rated %g, want %v %q", tc.name, ic.DeviceID, ic.Acts, code, ic.RatedPowerW, want.acts, want.code)
			}
		}
		// The store writes log entries in batches: wait for it.
		r.await(fmt.Sprintf("%s: a CommandPartial log entry of schedule %s saying %q", tc.name, sc.ScheduleID, tc.logShare), 5*time.Second,
			func() bool { return r.logHas("CommandPartial", sc.ScheduleID, tc.logShare) })
	}

	// Applied: inv1 disconnects, inv2 keeps feeding, and the window
	// still says it governs only part of the plant.
	start, end := r.window(time.Second, time.Hour)
	sc := r.mustSubmit(body(fmt.Sprintf(`{"command":"OpModDisconnect","start":%q,"end":%q}`, ts(start), ts(end))))
	r.await("the disconnect applied", 15*time.Second, func() bool { return r.command(sc.ScheduleID, 0).AppliedAt != nil })
	if got := r.command(sc.ScheduleID, 0); !got.Partial || got.Status != gridcontrol.StatusActive || got.Coverage == nil || *got.Coverage != 0.556 {
		t.Errorf("applied disconnect: partial %v status %s coverage %v, want partial active 0.556", got.Partial, got.Status, got.Coverage)
	}
	if s := simtest.Device(t, r.sim, "inv1").State(); s.Connected {
		t.Errorf("inv1 still connected under the disconnect")
	}
	if s := simtest.Device(t, r.sim, "inv2").State(); !s.Connected || s.PowerW <= 0 {
		t.Errorf("inv2: connected %v, %g W; want it feeding (the command does not reach it)", s.Connected, s.PowerW)
	}
}
