package gridcontrol

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"plantd/config"
)

var t0 = time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC)

func at(min int) string { return t0.Add(time.Duration(min) * time.Minute).Format(time.RFC3339) }

func TestParseSchedule(t *testing.T) {
	lim := func(start, end string, v string) string {
		return fmt.Sprintf(`{"command":"opModMaxLimW","start":%q,"end":%q,"value":%s}`, start, end, v)
	}
	body := func(cmds ...string) string { return `{"commands":[` + strings.Join(cmds, ",") + `]}` }
	crv := func(cmd, unit, pts string) string {
		u := ""
		if unit != "" {
			u = fmt.Sprintf(`,"unit":%q`, unit)
		}
		return fmt.Sprintf(`{"command":%q,"start":%q,"end":%q%s,"curve":{"points":[%s]}}`, cmd, at(1), at(2), u, pts)
	}
	cases := []struct {
		name string
		body string
		// field and message parts of the error; "" = accepted
		field, msg string
	}{
		{name: "one window", body: body(lim(at(10), at(20), "50"))},
		{name: "back to back", body: body(lim(at(10), at(20), "50"), lim(at(20), at(30), "40"))},
		{name: "offset other than UTC", body: body(lim("2026-06-21T12:10:00+02:00", at(20), "50"))},
		{name: "in W", body: body(`{"command":"FeedInLimit","start":"` + at(1) + `","end":"` + at(2) + `","value":5000,"unit":"W"}`)},
		{name: "disconnect", body: body(`{"command":"OpModDisconnect","start":"` + at(1) + `","end":"` + at(2) + `"}`)},
		{name: "curve", body: body(`{"command":"opModVoltVar","start":"` + at(1) + `","end":"` + at(2) + `","curve":{"points":[{"x":92,"y":30},{"x":108,"y":-30}]}}`)},
		{name: "window open now", body: body(lim(at(-10), at(20), "50"))},

		{name: "overlap", body: body(lim(at(10), at(20), "50"), lim(at(15), at(30), "40")), field: "commands[1].start", msg: "overlaps commands[0]"},
		{name: "end before start", body: body(lim(at(20), at(10), "50")), field: "commands[0].end", msg: "after start"},
		{name: "end equals start", body: body(lim(at(20), at(20), "50")), field: "commands[0].end", msg: "after start"},
		{name: "in the past", body: body(lim(at(-20), at(-10), "50")), field: "commands[0].end", msg: "past"},
		{name: "year 1999", body: body(lim("1999-01-01T00:00:00Z", at(10), "50")), field: "commands[0].start", msg: "year 1999"},
		{name: "year 2101", body: body(lim(at(10), "2101-01-01T00:00:00Z", "50")), field: "commands[0].end", msg: "year 2101"},
		{name: "no offset", body: body(lim("2026-06-21T10:10:00", at(20), "50")), field: "commands[0].start", msg: "RFC 3339"},
		{name: "unknown command", body: body(`{"command":"opModMagic","start":"` + at(1) + `","end":"` + at(2) + `"}`), field: "commands[0].command", msg: "unknown command"},
		{name: "percent above 100", body: body(lim(at(10), at(20), "101")), field: "commands[0].value", msg: "outside 0..100"},
		{name: "negative", body: body(lim(at(10), at(20), "-1")), field: "commands[0].value", msg: "outside 0..100"},
		{name: "no value", body: body(`{"command":"opModMaxLimW","start":"` + at(1) + `","end":"` + at(2) + `"}`), field: "commands[0].value", msg: "required"},
		{name: "bad unit", body: body(`{"command":"opModMaxLimW","start":"` + at(1) + `","end":"` + at(2) + `","value":5,"unit":"kW"}`), field: "commands[0].unit", msg: "want % or W"},
		{name: "pf above 1", body: body(`{"command":"opModFixedPFInjectW","start":"` + at(1) + `","end":"` + at(2) + `","value":1.2}`), field: "commands[0].value", msg: "power factor 1.2"},
		{name: "disconnect with value", body: body(`{"command":"OpModDisconnect","start":"` + at(1) + `","end":"` + at(2) + `","value":1}`), field: "commands[0].value", msg: "no value"},
		{name: "curve without points", body: body(`{"command":"opModVoltVar","start":"` + at(1) + `","end":"` + at(2) + `","curve":{}}`), field: "commands[0].curve", msg: "points or params"},
		{name: "curve x not increasing", body: body(`{"command":"opModVoltVar","start":"` + at(1) + `","end":"` + at(2) + `","curve":{"points":[{"x":108,"y":30},{"x":92,"y":-30}]}}`), field: "commands[0].curve.points[1].x", msg: "increase"},
		{name: "no commands", body: `{"commands":[]}`, field: "commands", msg: "at least one"},

		// Units of curves and power factors.
		{name: "volt-var in volts without unit", body: body(crv("opModVoltVar", "", `{"x":207,"y":44},{"x":220,"y":0},{"x":240,"y":0},{"x":253,"y":-44}`)), field: "commands[0].curve.points[0]", msg: `x = 207 (voltage) outside 50..150 % of the reference voltage (VRef, 7xx VNom); for volts send "unit":"V"`},
		{name: "volt-var in volts, last point", body: body(crv("opModVoltVar", "%", `{"x":92,"y":30},{"x":253,"y":-44}`)), field: "commands[0].curve.points[1]", msg: "x = 253 (voltage) outside 50..150"},
		{name: "volt-var in volts with unit V", body: body(crv("opModVoltVar", "V", `{"x":207,"y":44},{"x":220,"y":0},{"x":240,"y":0},{"x":253,"y":-44}`))},
		{name: "volt-var var beyond 100 %", body: body(crv("opModVoltVar", "", `{"x":92,"y":130},{"x":108,"y":-30}`)), field: "commands[0].curve.points[0]", msg: "y = 130 (reactive power) outside -100..100 %"},
		{name: "volt-watt below 50 %", body: body(crv("opModVoltWatt", "", `{"x":1.0,"y":100},{"x":1.1,"y":0}`)), field: "commands[0].curve.points[0]", msg: "x = 1 (voltage) outside 50..150"},
		{name: "negative volts", body: body(crv("opModVoltVar", "V", `{"x":-5,"y":30},{"x":250,"y":0}`)), field: "commands[0].curve.points[0]", msg: "x = -5 V (voltage) outside 0..100000 V"},
		{name: "lvrt in volts without unit", body: body(crv("opModLvrtMustTrip", "", `{"x":0.16,"y":103},{"x":2,"y":202}`)), field: "commands[0].curve.points[1]", msg: "y = 202 (voltage) outside 0..100"},
		{name: "hvrt in %", body: body(crv("opModHvrtMustTrip", "", `{"x":0.16,"y":120},{"x":13,"y":110}`))},
		{name: "hvrt in volts", body: body(crv("opModHvrtMustTrip", "V", `{"x":0.16,"y":276},{"x":13,"y":253}`))},
		{name: "negative trip time", body: body(crv("opModLfrtMustTrip", "", `{"x":-1,"y":47.5},{"x":10,"y":49}`)), field: "commands[0].curve.points[0]", msg: "x = -1 (trip time) outside 0..3600 s"},
		{name: "freq-watt in per unit", body: body(crv("opModFreqWatt", "", `{"x":1.004,"y":100},{"x":1.03,"y":0}`)), field: "commands[0].curve.points[0]", msg: "x = 1.004 (frequency) outside 40..70 Hz"},
		{name: "freq-watt in volts", body: body(crv("opModFreqWatt", "V", `{"x":50.2,"y":100},{"x":51.5,"y":0}`)), field: "commands[0].unit", msg: "no voltage axis"},
		{name: "curve unit kV", body: body(crv("opModVoltVar", "kV", `{"x":92,"y":30},{"x":108,"y":-30}`)), field: "commands[0].unit", msg: `takes "%" (% of the reference voltage`},
		{name: "pf in %", body: body(`{"command":"opModFixedPFInjectW","start":"` + at(1) + `","end":"` + at(2) + `","value":95,"unit":"%"}`), field: "commands[0].unit", msg: "a power factor is a ratio without unit (cos φ)"},
		{name: "pf with unit cos", body: body(`{"command":"opModFixedPfAbsorbW","start":"` + at(1) + `","end":"` + at(2) + `","value":0.95,"unit":"cos"}`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmds, err := ParseSchedule([]byte(tc.body), t0)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(cmds) == 0 {
					t.Fatal("no commands")
				}
				return
			}
			wantFieldError(t, err, tc.field, tc.msg)
		})
	}
}

// TestParseScheduleMalformed: bodies that are not a schedule are refused
// before any field is looked at.
func TestParseScheduleMalformed(t *testing.T) {
	for _, body := range []string{
		``, `null`, `[]`, `{"commands":[{"command":"opModMaxLimW"}]} {}`,
		`{"commands":[],"commands":[]}`,
		`{"commands":[{"command":"opModMaxLimW","start":"` + at(1) + `","start":"` + at(2) + `","end":"` + at(3) + `","value":5}]}`,
		`{"commands":[{"command":"opModMaxLimW","start":"` + at(1) + `","end":"` + at(3) + `","value":5,"extra":1}]}`,
		`{"commands":"x"}`,
	} {
		if _, err := ParseSchedule([]byte(body), t0); err == nil {
			t.Errorf("%s accepted", body)
		}
	}
}

func sched(id string, created int, cmds ...ScheduledCmd) *Schedule {
	return &Schedule{ScheduleID: id, CreatedAt: t0.Add(time.Duration(created) * time.Second), Commands: cmds}
}

func win(command string, from, to int, v float64) ScheduledCmd {
	return ScheduledCmd{Command: command, Start: t0.Add(time.Duration(from) * time.Minute), End: t0.Add(time.Duration(to) * time.Minute), Value: &v}
}

// TestTimeline: newest wins per slice, the overwritten windows are
// superseded only where newer windows cover all of them, and windows of
// other commands are independent.
func TestTimeline(t *testing.T) {
	a := sched("a", 1, win("opModMaxLimW", 0, 60, 60), win("opModMaxLimW", 60, 120, 40), win("opModFixedPFInjectW", 0, 60, 0.9))
	b := sched("b", 2, win("opModMaxLimW", 30, 90, 50))
	c := sched("c", 3, win("opModMaxLimW", 55, 130, 30))
	all := []*Schedule{a, b, c}
	for _, tc := range []struct {
		min   int
		want  string // schedule/value of opModMaxLimW active, "" none
		wantP bool   // PF active
	}{
		{-1, "", false}, {0, "a/60", true}, {29, "a/60", true}, {30, "b/50", true}, {54, "b/50", true},
		{55, "c/30", true}, {60, "c/30", false}, {129, "c/30", false}, {130, "", false},
	} {
		act := activeAt(all, t0.Add(time.Duration(tc.min)*time.Minute), 0)
		got := ""
		if w, ok := act["opModMaxLimW"]; ok {
			got = fmt.Sprintf("%s/%g", w.sched.ScheduleID, *w.cmd.Value)
		}
		if got != tc.want {
			t.Errorf("minute %d: %q active, want %q", tc.min, got, tc.want)
		}
		if _, ok := act["opModFixedPFInjectW"]; ok != tc.wantP {
			t.Errorf("minute %d: PF active %v", tc.min, ok)
		}
	}
	sup := supersededSet(all)
	for _, tc := range []struct {
		s    *Schedule
		i    int
		want bool
	}{
		{a, 0, false}, // 0..30 still its own
		{a, 1, true},  // 60..120 under c
		{a, 2, false}, // another command
		{b, 0, false}, // 30..55 its own
		{c, 0, false}, // the newest
	} {
		if got := sup[&tc.s.Commands[tc.i]]; got != tc.want {
			t.Errorf("%s[%d] superseded %v, want %v", tc.s.ScheduleID, tc.i, got, tc.want)
		}
	}
	// Edges: every start and end once, in order, from now on.
	got := boundaries(all, t0.Add(45*time.Minute))
	var mins []string
	for _, b := range got {
		mins = append(mins, fmt.Sprint(b.Sub(t0).Minutes()))
	}
	if s := strings.Join(mins, " "); s != "55 60 90 120 130" {
		t.Errorf("boundaries after minute 45: %s", s)
	}
}

// TestRolePrecedence: newest wins only within one role; across roles the
// most restrictive limit governs (an installer never loosens the grid
// operator's limit, in % or in W), and for commands without an order of
// values the grid operator's window governs. Another role's window never
// supersedes.
func TestRolePrecedence(t *testing.T) {
	role := func(s *Schedule, r string) *Schedule { s.Role = r; return s }
	watts := func(c ScheduledCmd) ScheduledCmd { c.Unit = "W"; return c }
	dso := role(sched("dso", 1, win("opModMaxLimW", 0, 60, 20), win("opModFixedPFInjectW", 0, 60, 0.9)), "gridoperator")
	inst := role(sched("inst", 2, win("opModMaxLimW", 10, 90, 60), win("opModFixedPFInjectW", 0, 90, 0.95)), "installer")
	instTight := role(sched("inst2", 3, win("opModMaxLimW", 40, 50, 10)), "installer")
	// Stored before the role field: the role is read from createdBy.
	old := sched("old", 4, win("opModMaxLimW", 70, 80, 50))
	old.CreatedBy = "dso2 (gridoperator)"
	instW := role(sched("instW", 5, watts(win("opModMaxLimW", 100, 110, 3000))), "installer")
	dsoPct := role(sched("dsoPct", 6, win("opModMaxLimW", 100, 110, 40)), "gridoperator")
	all := []*Schedule{dso, inst, instTight, old, instW, dsoPct}
	for _, tc := range []struct {
		min     int
		limit   string // governing opModMaxLimW
		pf      string // governing opModFixedPFInjectW
		ratedW  float64
		comment string
	}{
		{5, "dso/20", "dso/0.9", 10000, "the operator alone"},
		{15, "dso/20", "dso/0.9", 10000, "the installer's newer 60 % does not loosen the operator's 20 %"},
		{45, "inst2/10", "dso/0.9", 10000, "the installer's tighter 10 % applies"},
		{65, "inst/60", "inst/0.95", 10000, "the operator's windows ended"},
		{75, "old/50", "inst/0.95", 10000, "an operator's 50 %, stored as 'name (role)', against the installer's 60 %"},
		{105, "instW/3000", "", 10000, "3000 W of 10 kW (30 %) is tighter than the operator's 40 %"},
		{105, "dsoPct/40", "", 5000, "3000 W of 5 kW (60 %) is looser than 40 %"},
	} {
		act := activeAt(all, t0.Add(time.Duration(tc.min)*time.Minute), tc.ratedW)
		got := func(cmd string) string {
			if w, ok := act[cmd]; ok {
				return fmt.Sprintf("%s/%g", w.sched.ScheduleID, *w.cmd.Value)
			}
			return ""
		}
		if g := got("opModMaxLimW"); g != tc.limit {
			t.Errorf("minute %d (%s): limit %q, want %q", tc.min, tc.comment, g, tc.limit)
		}
		if g := got("opModFixedPFInjectW"); g != tc.pf {
			t.Errorf("minute %d (%s): PF %q, want %q", tc.min, tc.comment, g, tc.pf)
		}
	}
	// 75 overlaps 'old' (an operator's, stored before the role field) with
	// the older installer window: neither supersedes the other.
	sup := supersededSet(all)
	for _, s := range all {
		for i := range s.Commands {
			if sup[&s.Commands[i]] {
				t.Errorf("%s[%d] superseded by another role's window", s.ScheduleID, i)
			}
		}
	}
}

// TestPrunable: finished schedules go after KeepFinished, then the oldest
// finished ones while the plant holds more than MaxSchedules; a plant full
// of schedules that have not ended refuses more.
func TestPrunable(t *testing.T) {
	c := &Controller{cfg: Config{KeepFinished: time.Hour, MaxSchedules: 3}.withDefaults()}
	now := t0.Add(3 * time.Hour)
	old := sched("old", 1, win("opModMaxLimW", 0, 60, 50))                  // ended 2 h ago
	recent := sched("recent", 2, win("opModMaxLimW", 150, 170, 50))         // ended 10 min ago
	covered := sched("covered", 3, win("opModMaxLimW", 200, 210, 50))       // superseded by open
	open := sched("open", 4, win("opModMaxLimW", 190, 240, 40))             // runs
	pending := sched("pending", 5, win("opModFixedPFInjectW", 300, 310, 1)) // later
	pc := &plantCtl{scheds: []*Schedule{old, recent, covered, open, pending}}
	drop, full := c.prunable(pc, now, 1, 3)
	var ids []string
	for _, s := range drop {
		ids = append(ids, s.ScheduleID)
	}
	// old: past KeepFinished; then, for room, the oldest finished: recent,
	// covered (superseded counts as finished).
	if got := strings.Join(ids, " "); got != "old recent covered" || full {
		t.Errorf("drop %q, full %v; want \"old recent covered\", not full", got, full)
	}
	pc = &plantCtl{scheds: []*Schedule{open, pending, sched("p2", 6, win("OpModDisconnect", 400, 410, 0))}}
	if _, full := c.prunable(pc, now, 1, 3); !full {
		t.Error("three open schedules and room for one more at most 3: not full")
	}
	// A window cancelled before its start keeps its start as its end, in
	// the future: it is over all the same, and goes to make room.
	cancelled := sched("cancelled", 7, win("opModMaxLimW", 400, 400, 50))
	cancelled.Commands[0].Cancelled = true
	pc = &plantCtl{scheds: []*Schedule{open, pending, cancelled}}
	if drop, full := c.prunable(pc, now, 1, 3); full || len(drop) != 1 || drop[0] != cancelled {
		t.Errorf("a cancelled pending window beside two open ones: drop %v, full %v; want it dropped, not full", drop, full)
	}
}

// TestCapacityReservesTheOperatorsShare: every role but the grid
// operator's may fill the plant's schedules only up to three quarters of
// MaxSchedules.
func TestCapacityReservesTheOperatorsShare(t *testing.T) {
	c := &Controller{cfg: Config{MaxSchedules: 200}.withDefaults()}
	for _, tc := range []struct {
		role string
		want int
	}{
		{config.RoleGridOperator, 200},
		{config.RoleInstaller, 150},
		{config.RoleStandard, 150},
		{"", 150},
	} {
		if got := c.capacity(tc.role); got != tc.want {
			t.Errorf("capacity(%q) = %d, want %d", tc.role, got, tc.want)
		}
	}
}

// naiveSuperseded is the definition, slice by slice: a window is
// superseded when every instant of it lies in a window of the same command
// of a newer schedule.
func naiveSuperseded(scheds []*Schedule, s *Schedule, i int) bool {
	c := s.Commands[i]
	for t := c.Start; t.Before(c.End); t = t.Add(time.Minute) {
		hit := false
		for _, o := range scheds {
			if !newer(o, s) {
				continue
			}
			for _, oc := range o.Commands {
				if oc.Command == c.Command && !t.Before(oc.Start) && t.Before(oc.End) {
					hit = true
				}
			}
		}
		if !hit {
			return false
		}
	}
	return true
}

// TestSupersededAgainstTheDefinition compares supersededSet with the
// minute-by-minute definition on random schedules of whole minutes.
func TestSupersededAgainstTheDefinition(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		var all []*Schedule
		for k := range 1 + rnd.IntN(6) {
			var cmds []ScheduledCmd
			at := rnd.IntN(30)
			for range rnd.IntN(4) + 1 {
				cmd := []string{"opModMaxLimW", "opModVoltVar"}[rnd.IntN(2)]
				from := at + rnd.IntN(3)
				to := from + 1 + rnd.IntN(20)
				cmds = append(cmds, win(cmd, from, to, 50))
				at = to
			}
			all = append(all, sched(fmt.Sprint(k), rnd.IntN(4), cmds...))
		}
		sup := supersededSet(all)
		for _, s := range all {
			for i := range s.Commands {
				if got, want := sup[&s.Commands[i]], naiveSuperseded(all, s, i); got != want {
					t.Fatalf("round %d: schedule %s (created %s) command %d %v: superseded %v, want %v", round, s.ScheduleID,
						s.CreatedAt.Format(time.TimeOnly), i, s.Commands[i], got, want)
				}
			}
		}
	}
}

// TestParseRecurring: a recurring command's spec, duration, start and
// until; its first window is the one open at t0 or the next.
func TestParseRecurring(t *testing.T) {
	rep := func(extra string) string {
		return `{"commands":[{"command":"opModMaxLimW","value":60` + extra + `}]}`
	}
	cases := []struct {
		name       string
		body       string
		start, end string // the first window, when accepted
		field, msg string
	}{
		{name: "daily, next", body: rep(`,"repeat":"0 11 * * *","duration":"4h"`), start: "2026-06-21T11:00:00Z", end: "2026-06-21T15:00:00Z"},
		{name: "daily, open now", body: rep(`,"repeat":"0 8 * * *","duration":"4h"`), start: "2026-06-21T08:00:00Z", end: "2026-06-21T12:00:00Z"},
		{name: "from a start", body: rep(`,"repeat":"0 8 * * *","duration":"4h","start":"2026-06-22T00:00:00Z"`), start: "2026-06-22T08:00:00Z", end: "2026-06-22T12:00:00Z"},
		{name: "in a zone", body: rep(`,"repeat":"CRON_TZ=Europe/Berlin 0 22 * * *","duration":"8h"`), start: "2026-06-21T20:00:00Z", end: "2026-06-22T04:00:00Z"},
		{name: "duration of the period", body: rep(`,"repeat":"*/15 * * * *","duration":"15m"`), start: "2026-06-21T10:00:00Z", end: "2026-06-21T10:15:00Z"},

		{name: "bad spec", body: rep(`,"repeat":"0 25 * * *","duration":"1h"`), field: "commands[0].repeat", msg: "not a cron spec"},
		{name: "six fields", body: rep(`,"repeat":"0 0 11 * * *","duration":"1h"`), field: "commands[0].repeat", msg: "not a cron spec"},
		{name: "no duration", body: rep(`,"repeat":"0 11 * * *"`), field: "commands[0].duration", msg: "required"},
		{name: "zero duration", body: rep(`,"repeat":"0 11 * * *","duration":"0s"`), field: "commands[0].duration", msg: "at least 1s"},
		{name: "negative duration", body: rep(`,"repeat":"0 11 * * *","duration":"-1h"`), field: "commands[0].duration", msg: "at least 1s"},
		{name: "not a duration", body: rep(`,"repeat":"0 11 * * *","duration":"4 hours"`), field: "commands[0].duration", msg: "not a Go duration"},
		{name: "longer than the period", body: rep(`,"repeat":"0 * * * *","duration":"2h"`), field: "commands[0].duration", msg: "longer than the period"},
		{name: "with end", body: rep(`,"repeat":"0 11 * * *","duration":"1h","end":"` + at(60) + `"`), field: "commands[0].end", msg: "not end"},
		{name: "duration without repeat", body: rep(`,"duration":"1h"`), field: "commands[0].repeat", msg: "required"},
		{name: "until before the first", body: rep(`,"repeat":"0 11 * * *","duration":"1h","until":"` + at(30) + `"`), field: "commands[0].repeat", msg: "no start before until"},
		{name: "until in the past", body: rep(`,"repeat":"0 11 * * *","duration":"1h","until":"` + at(-30) + `"`), field: "commands[0].until", msg: "after start and now"},
		{name: "beside another window", body: `{"commands":[{"command":"opModMaxLimW","value":60,"repeat":"0 11 * * *","duration":"1h"},` +
			`{"command":"opModMaxLimW","value":50,"start":"` + at(10) + `","end":"` + at(20) + `"}]}`, field: "commands[0].repeat", msg: "only window"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmds, err := ParseSchedule([]byte(tc.body), t0)
			wantFirstWindow(t, cmds, err, tc.start, tc.end, tc.field, tc.msg)
		})
	}
}

// TestInputChannel: a grid operator's input (ripple-control receiver) and
// the grid operator's own API schedules are separate channels: a newer
// API window at 60 % does not loosen the receiver's 30 %, nor a newer
// receiver window the API's tighter limit; within one channel the newest
// wins as before.
func TestInputChannel(t *testing.T) {
	t0 := time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC)
	pct := func(v float64) *float64 { return &v }
	sched := func(id, by string, at time.Duration, v float64) *Schedule {
		return &Schedule{ScheduleID: id, CreatedBy: by, Role: "gridoperator", CreatedAt: t0.Add(at),
			Commands: []ScheduledCmd{{Command: "opModMaxLimW", Start: t0, End: t0.Add(time.Hour), Value: pct(v), Unit: "%"}}}
	}
	for _, tt := range []struct {
		name   string
		scheds []*Schedule
		want   string
	}{
		{"newer API window does not loosen the input", []*Schedule{
			sched("in", "input:rcr/K3 (gridoperator)", 0, 30), sched("api", "dso (gridoperator)", time.Minute, 60)}, "in"},
		{"newer input window does not loosen the API", []*Schedule{
			sched("api", "dso (gridoperator)", 0, 20), sched("in", "input:rcr/K2 (gridoperator)", time.Minute, 60)}, "api"},
		{"within the API channel the newest wins", []*Schedule{
			sched("old", "dso (gridoperator)", 0, 20), sched("new", "dso (gridoperator)", time.Minute, 60)}, "new"},
		{"within the input channel the newest wins", []*Schedule{
			sched("k3", "input:rcr/K3 (gridoperator)", 0, 30), sched("k2", "input:rcr/K2 (gridoperator)", time.Minute, 60)}, "k2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, ok := activeAt(tt.scheds, t0.Add(time.Second), 18000)["opModMaxLimW"]
			if !ok || w.sched.ScheduleID != tt.want {
				t.Errorf("governing schedule %v (%v), want %s", w.sched, ok, tt.want)
			}
		})
	}
}

// wantFieldError fails t unless err is a ValidationError naming field
// with a message containing msg.
func wantFieldError(t *testing.T, err error, field, msg string) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v, want a ValidationError on %s", err, field)
	}
	for _, f := range ve.Fields {
		if f.Field == field && strings.Contains(f.Message, msg) {
			return
		}
	}
	t.Errorf("errors %v, want %s: …%s…", ve.Fields, field, msg)
}

// wantFirstWindow checks a parsed recurring command: its first window
// from start to end (RFC 3339, UTC), or, with field set, a refusal of
// that field saying msg.
func wantFirstWindow(t *testing.T, cmds []ScheduledCmd, err error, start, end, field, msg string) {
	t.Helper()
	if field != "" {
		wantFieldError(t, err, field, msg)
		return
	}
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	if got := cmds[0].Start.UTC().Format(time.RFC3339); got != start {
		t.Errorf("first start %s, want %s", got, start)
	}
	if got := cmds[0].End.UTC().Format(time.RFC3339); got != end {
		t.Errorf("first end %s, want %s", got, end)
	}
}
