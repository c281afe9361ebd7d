package gridcontrol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"plantd/config"
	"plantd/internal/jsondup"
	"plantd/plant"
)

// The schedule's shape is the domain's (package plant: one type from the
// API to the store); grid control's names for it are aliases, the same
// types, so its code and its callers read as before. What a schedule
// means (windows, precedence, channels, status) is here, as functions
// over them.
type (
	// Schedule is a plant's schedule of commands (DESIGN §6): what a
	// client POSTs (commands only) and what GET lists (with id, status
	// and time of creation).
	Schedule = plant.Schedule
	// ScheduledCmd is one command of a schedule: a window and its value.
	ScheduledCmd = plant.ScheduledCmd
	// Occurrence is one window of a recurring command.
	Occurrence = plant.Occurrence
	// AuditWrite is one write of a window to a device, read back.
	AuditWrite = plant.AuditWrite
	// AuditPoint is a point of a write: written and read back.
	AuditPoint = plant.AuditPoint
	// Curve is the value of a curve command, in the units of the SunSpec
	// model that carries it: Points for the curve models (x = V in % of
	// the reference voltage or Hz, y = var % or W % for volt-var,
	// volt-watt and freq-watt; x = trip time s, y = V in % of the
	// reference voltage or Hz for the ride-through models; the voltage
	// axis in volts with the command's unit "V"; ranges in the command
	// table: Command.Axes), Params for the parameter models (127
	// freq-watt: WGra, HzStr, HzStop...; 711 droop: DbOf, DbUf, KOf, KUf,
	// RspTms, PMin), by point name. A command may carry both, so that one
	// opModFreqWatt reaches a classic inverter with curve model 134 and a
	// newer one with 711; each device takes the part its model has.
	Curve = plant.Curve
	// CurvePoint is one point of a curve.
	CurvePoint = plant.CurvePoint
	// Status is the state of a scheduled command.
	Status = plant.WindowStatus
	// InverterCoverage is one active inverter's answer to a command.
	InverterCoverage = plant.InverterCoverage
	// Reason is why a command is not supported.
	Reason = plant.EligibilityReason
)

// The states of a scheduled command.
const (
	StatusPending    = plant.WindowPending
	StatusActive     = plant.WindowActive
	StatusDone       = plant.WindowDone
	StatusSuperseded = plant.WindowSuperseded
	// StatusOverridden: the window is open, but another role's window of
	// the same command governs (a grid operator's tighter limit, say).
	StatusOverridden = plant.WindowOverridden
	StatusFailed     = plant.WindowFailed
)

// Door is a way into control (DESIGN §6.1): the doors' rules are in the
// package doc's table.
type Door string

// The doors.
const (
	// DoorAPI is the HTTP API: a token or an OAuth client, and the
	// cloud's MQTT down/ topics, whose requests run through the API with
	// the uplink's credential "mqtt:<gatewayId>" (package mqtt).
	DoorAPI Door = "api"
	// DoorHomeAssistant is Home Assistant's command topics on the LAN
	// broker.
	DoorHomeAssistant Door = "ha"
	// DoorModbus is a master writing to the SunSpec server.
	DoorModbus Door = "modbus"
	// DoorInput is a grid operator's ripple-control receiver (package
	// gridinput): its contacts.
	DoorInput Door = "input"
	// DoorEEBus is the grid operator's control box over EEBus (package
	// eebus): its trusted SKI; its windows are a channel of their own,
	// "eebus:<ski>", held like an input's.
	DoorEEBus Door = "eebus"
)

// Origin names who sends a command: the door it came through, the
// identity at that door (a token's or OAuth client's name, a broker client
// id, a Modbus master's address, an input and its contacts), the role it
// acts with, and, for origins that are a channel of their own within the
// role (an input, a Modbus master), that channel. Within a channel the
// newest schedule wins; across channels and roles the most restrictive
// limit governs (activeAt), and a channel's schedules are ended and
// extended by that channel alone (scheduleFor).
type Origin struct {
	Door    Door
	Name    string
	Role    string
	Channel string
}

// String is the origin as CreatedBy and the plant log show it: "name
// (role)" for the HTTP API's credentials, "door:name (role)" for every
// other door.
func (o Origin) String() string {
	if o.Door == "" || o.Door == DoorAPI {
		return fmt.Sprintf("%s (%s)", o.Name, o.Role)
	}
	return fmt.Sprintf("%s:%s (%s)", o.Door, o.Name, o.Role)
}

// roleOf is the schedule's role; schedules stored before the field existed
// carry it only in CreatedBy, as "name (role)".
func roleOf(s *Schedule) string {
	if s.Role != "" {
		return s.Role
	}
	if i := strings.LastIndexByte(s.CreatedBy, '('); i >= 0 && strings.HasSuffix(s.CreatedBy, ")") {
		return s.CreatedBy[i+1 : len(s.CreatedBy)-1]
	}
	return ""
}

// ownChannel is the schedule's own channel within its role ("" for the
// role's shared one); schedules stored before Channel existed name an
// input's only in CreatedBy ("input:<id>/...").
func ownChannel(s *Schedule) string {
	if s.Channel != "" {
		return s.Channel
	}
	if rest, ok := strings.CutPrefix(s.CreatedBy, "input:"); ok {
		id := rest
		if i := strings.IndexAny(rest, "/ "); i >= 0 {
			id = rest[:i]
		}
		return "input:" + id
	}
	return ""
}

// channelOf is the schedule's precedence channel: its role, and for a
// schedule of an origin with a channel of its own (an input, a Modbus
// master) that channel too. Within a channel the newest schedule wins and
// supersedes the older ones' windows; across channels the most restrictive
// limit governs (activeAt). So a ripple-control receiver's limit, a
// Modbus master's and a limit the grid operator sends over the API combine
// by the most restrictive, and a newer one of any never loosens another.
func channelOf(s *Schedule) string {
	if ch := ownChannel(s); ch != "" {
		return roleOf(s) + "/" + ch
	}
	return roleOf(s)
}

// FieldError names a field of a request and what is wrong with it.
type FieldError struct {
	Field   string
	Message string
	// Code is the eligibility check's reason code when the field is a
	// command the plant's devices cannot carry (empty otherwise).
	Code string
}

func (e FieldError) Error() string { return e.Field + ": " + e.Message }

// ValidationError lists what is wrong with a schedule. NotEligible marks
// errors of the eligibility check (HTTP 422); the others are malformed
// requests (400).
type ValidationError struct {
	Fields      []FieldError
	NotEligible bool
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Error()
	}
	return "invalid schedule: " + strings.Join(parts, "; ")
}

// MaxCommands bounds the commands of one schedule (a day of 1-minute
// windows of one command fits).
const MaxCommands = 1500

// minYear and maxYear bound the dates a schedule may name.
const minYear, maxYear = 2000, 2100

// scheduleIn is the body of POST .../schedules: plant.Schedule's
// commands member as a client writes it (the same member names), read by
// ParseSchedule into ScheduledCmds. It is the decoder's view of that
// text, not a second schedule: nothing is encoded from it.
type scheduleIn struct {
	Commands []cmdIn `json:"commands"`
}

// cmdIn is one command as posted: times as text, so that a time relative
// to now ("+10s") is read and a malformed one named in the refusal.
type cmdIn struct {
	Command string   `json:"command"`
	Start   string   `json:"start"`
	End     string   `json:"end"`
	Value   *float64 `json:"value"`
	Unit    string   `json:"unit"`
	Curve   *Curve   `json:"curve"`
	// A recurring command: repeat (cron spec), duration, until.
	Repeat   string `json:"repeat"`
	Duration string `json:"duration"`
	Until    string `json:"until"`
}

// ParseSchedule decodes and checks a schedule body: strict JSON (no
// unknown fields, no duplicate keys, one value), known commands, RFC 3339
// times with offset between 2000 and 2100, end after start and not in the
// past, no overlapping windows of one command, values in range. It checks
// the body alone; Check adds what the plant's devices support.
func ParseSchedule(body []byte, now time.Time) ([]ScheduledCmd, error) {
	var de *jsondup.Error
	if err := jsondup.Check(body); errors.As(err, &de) {
		return nil, &ValidationError{Fields: []FieldError{{Field: de.Path, Message: "given more than once"}}}
	}
	var in scheduleIn
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, &ValidationError{Fields: []FieldError{{Field: "body", Message: jsonError(err)}}}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &ValidationError{Fields: []FieldError{{Field: "body", Message: "trailing data after the JSON value"}}}
	}
	return validate(in.Commands, now)
}

func jsonError(err error) string {
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		return fmt.Sprintf("field %s: want %s", ute.Field, ute.Type)
	}
	return "malformed JSON: " + strings.TrimPrefix(err.Error(), "json: ")
}

func validate(in []cmdIn, now time.Time) ([]ScheduledCmd, error) {
	if err := checkCount(len(in)); err != nil {
		return nil, err
	}
	var errs []FieldError
	out := make([]ScheduledCmd, len(in))
	for i, c := range in {
		bad := func(field, m string) { errs = append(errs, fieldError(i, c.Command, field, m)) }
		sc := ScheduledCmd{Command: c.Command, Value: c.Value, Unit: c.Unit, Curve: c.Curve}
		if _, ok := CommandByName(c.Command); !ok {
			out[i] = sc // refused by checkCommands, times unread
			continue
		}
		if c.Repeat != "" || c.Duration != "" || c.Until != "" {
			parseRepeat(c, &sc, now, bad)
		} else {
			sc.Start, _ = parseTime(c.Start, now, func(m string) { bad("start", m) })
			sc.End, _ = parseTime(c.End, now, func(m string) { bad("end", m) })
		}
		out[i] = sc
	}
	return checkCommands(out, now, errs)
}

// Order is one command as a door other than the HTTP API and the cloud
// gives it (a Modbus master's limit, an input's stage, Home Assistant's
// number): typed, never JSON. Start zero is now; End zero is Start + For.
// Submit checks it as ParseSchedule checks a posted command.
type Order struct {
	Command    string
	Start, End time.Time
	For        time.Duration
	// Value and Unit as ScheduledCmd's.
	Value *float64
	Unit  string
	Curve *Curve
}

// ordersToCommands checks orders as validate checks posted commands.
func ordersToCommands(in []Order, now time.Time) ([]ScheduledCmd, error) {
	if err := checkCount(len(in)); err != nil {
		return nil, err
	}
	out := make([]ScheduledCmd, len(in))
	for i, o := range in {
		start, end := o.Start, o.End
		if start.IsZero() {
			start = now
		}
		if end.IsZero() {
			end = start.Add(o.For)
		}
		out[i] = ScheduledCmd{Command: o.Command, Start: start.UTC().Truncate(time.Millisecond), End: end.UTC().Truncate(time.Millisecond),
			Value: o.Value, Unit: o.Unit, Curve: o.Curve}
	}
	return checkCommands(out, now, nil)
}

// checkCount bounds the number of commands of a schedule.
func checkCount(n int) error {
	switch {
	case n == 0:
		return &ValidationError{Fields: []FieldError{{Field: "commands", Message: "at least one command is required"}}}
	case n > MaxCommands:
		return &ValidationError{Fields: []FieldError{{Field: "commands", Message: fmt.Sprintf("at most %d commands", MaxCommands)}}}
	}
	return nil
}

// fieldError is a refusal of field of command i (named name).
func fieldError(i int, name, field, msg string) FieldError {
	if name != "" {
		msg = name + ": " + msg
	}
	return FieldError{Field: fmt.Sprintf("commands[%d].%s", i, field), Message: msg}
}

// checkCommands is the check every schedule's commands pass, whichever
// door they came through: known commands, each window's order (a zero
// time was already refused where it was parsed), values in range, no
// overlapping windows of one command. errs are the refusals found while
// parsing.
func checkCommands(out []ScheduledCmd, now time.Time, errs []FieldError) ([]ScheduledCmd, error) {
	for i := range out {
		sc := &out[i]
		cmd, ok := CommandByName(sc.Command)
		if !ok {
			errs = append(errs, FieldError{Field: fmt.Sprintf("commands[%d].command", i), Message: fmt.Sprintf("unknown command %q", sc.Command)})
			sc.Command = ""
			continue
		}
		bad := func(field, m string) { errs = append(errs, fieldError(i, sc.Command, field, m)) }
		if sc.Repeat == "" && !sc.Start.IsZero() && !sc.End.IsZero() {
			switch {
			case !sc.End.After(sc.Start):
				bad("end", "must be after start")
			case !sc.End.After(now):
				bad("end", fmt.Sprintf("the window ended in the past (%s)", sc.End.UTC().Format(time.RFC3339)))
			}
		}
		checkValue(cmd, sc, bad)
	}
	// Overlapping windows of one command in one schedule.
	byCmd := map[string][]int{}
	for i, sc := range out {
		if sc.Command != "" && !sc.Start.IsZero() && !sc.End.IsZero() {
			byCmd[sc.Command] = append(byCmd[sc.Command], i)
		}
	}
	for _, idx := range byCmd {
		if len(idx) > 1 {
			for _, k := range idx {
				if out[k].Repeat != "" {
					errs = append(errs, fieldError(k, out[k].Command, "repeat", "a recurring command must be the only window of its command in its schedule"))
				}
			}
		}
		sort.Slice(idx, func(a, b int) bool { return out[idx[a]].Start.Before(out[idx[b]].Start) })
		for k := 1; k < len(idx); k++ {
			prev, cur := out[idx[k-1]], out[idx[k]]
			if cur.Start.Before(prev.End) {
				errs = append(errs, fieldError(idx[k], cur.Command, "start", fmt.Sprintf("window overlaps commands[%d] (%s to %s)", idx[k-1],
					prev.Start.UTC().Format(time.RFC3339), prev.End.UTC().Format(time.RFC3339))))
			}
		}
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(a, b int) bool { return errs[a].Field < errs[b].Field })
		return nil, &ValidationError{Fields: errs}
	}
	return out, nil
}

// parseTime parses an RFC 3339 time with offset between 2000 and 2100,
// or a time relative to now, "+" and a Go duration ("+10s", "+1h30m"):
// resolved against the gateway's clock when the schedule arrives (under
// plantd demo its simulated clock) and stored as the time it names, to the
// millisecond.
func parseTime(s string, now time.Time, bad func(string)) (time.Time, bool) {
	if s == "" {
		bad("required (RFC 3339 with offset, or relative to now: +10m)")
		return time.Time{}, false
	}
	var t time.Time
	if rel, ok := strings.CutPrefix(s, "+"); ok {
		d, err := time.ParseDuration(rel)
		if err != nil || d < 0 || strings.HasPrefix(rel, "+") {
			bad(fmt.Sprintf("%q is not a time relative to now (+ and a duration such as +10s, +2m, +1h30m)", s))
			return time.Time{}, false
		}
		t = now.Add(d).UTC().Truncate(time.Millisecond)
	} else {
		var err error
		if t, err = time.Parse(time.RFC3339Nano, s); err != nil {
			bad(fmt.Sprintf("%q is not an RFC 3339 time with offset (nor relative to now: +10m)", s))
			return time.Time{}, false
		}
	}
	if y := t.UTC().Year(); y < minYear || y >= maxYear {
		bad(fmt.Sprintf("year %d outside %d..%d", y, minYear, maxYear-1))
		return time.Time{}, false
	}
	return t, true
}

// checkValue checks a command's value by its kind; the device-dependent
// limits (rated power, curve points) are checked by Check.
func checkValue(cmd Command, sc *ScheduledCmd, bad func(field, msg string)) {
	if sc.Value != nil && (math.IsNaN(*sc.Value) || math.IsInf(*sc.Value, 0)) {
		bad("value", "not a number")
		return
	}
	switch cmd.Value {
	case ValueNone:
		if sc.Value != nil || sc.Unit != "" || sc.Curve != nil {
			bad("value", "the command takes no value")
		}
	case ValuePower:
		if sc.Curve != nil {
			bad("curve", "the command takes a value, not a curve")
		}
		switch sc.Unit {
		case "":
			sc.Unit = "%"
			fallthrough
		case "%":
			if sc.Value == nil {
				bad("value", "required (% of rated power, 0..100)")
			} else if *sc.Value < 0 || *sc.Value > 100 {
				bad("value", fmt.Sprintf("%g %% outside 0..100", *sc.Value))
			}
		case "W":
			if sc.Value == nil {
				bad("value", "required (W)")
			} else if *sc.Value < 0 || *sc.Value > 1e9 {
				bad("value", fmt.Sprintf("%g W outside 0..1e9", *sc.Value))
			}
		default:
			bad("unit", fmt.Sprintf("%q: want %% or W", sc.Unit))
		}
	case ValuePF:
		switch {
		case sc.Curve != nil:
			bad("curve", "the command takes a power factor as value, not a curve")
		case sc.Unit != "" && sc.Unit != "cos":
			bad("unit", fmt.Sprintf("%q: a power factor is a ratio without unit (cos φ): leave unit out (or \"cos\") and send value 0 < PF <= 1, e.g. 0.95", sc.Unit))
		}
		sc.Unit = ""
		if sc.Value == nil {
			bad("value", "required (displacement power factor, 0 < PF <= 1)")
		} else if *sc.Value <= 0 || *sc.Value > 1 {
			bad("value", fmt.Sprintf("power factor %g outside 0 < PF <= 1", *sc.Value))
		}
	case ValueCurve:
		ax := cmd.Axes
		if sc.Value != nil {
			bad("value", "the command takes a curve, not a value")
		}
		switch sc.Unit {
		case "", "%":
		case "V":
			if !ax.x.volts && !ax.y.volts {
				bad("unit", fmt.Sprintf("\"V\": the curve has no voltage axis (x in %s, y in %s); leave unit out", ax.x.unit, ax.y.unit))
			}
		default:
			if ax.x.volts || ax.y.volts {
				bad("unit", fmt.Sprintf("%q: the voltage axis of a curve takes %q (%s, the default) or \"V\" (volts, converted with each device's reference voltage)", sc.Unit, "%", ax.voltage().unit))
			} else {
				bad("unit", fmt.Sprintf("%q: the curve takes no unit (x in %s, y in %s)", sc.Unit, ax.x.unit, ax.y.unit))
			}
		}
		switch {
		case sc.Curve == nil:
			bad("curve", "required: {\"points\": [{\"x\", \"y\"}, ...]} or {\"params\": {...}}")
		case len(sc.Curve.Points) == 0 && len(sc.Curve.Params) == 0:
			bad("curve", "needs points or params")
		}
		if sc.Curve != nil {
			volts := sc.Unit == "V"
			for k, p := range sc.Curve.Points {
				if math.IsNaN(p.X) || math.IsNaN(p.Y) || math.Abs(p.X) > 1e6 || math.Abs(p.Y) > 1e6 {
					bad(fmt.Sprintf("curve.points[%d]", k), "out of range")
				} else if msg := ax.check(p, volts); msg != "" {
					bad(fmt.Sprintf("curve.points[%d]", k), msg)
				}
				if k > 0 && p.X <= sc.Curve.Points[k-1].X {
					bad(fmt.Sprintf("curve.points[%d].x", k), "x must increase from point to point")
				}
			}
			for name, v := range sc.Curve.Params {
				if math.IsNaN(v) || math.Abs(v) > 1e6 {
					bad("curve.params."+name, "out of range")
				}
			}
		}
	}
}

// curveAxis is one axis of a curve command's points: what it is, its unit
// in the SunSpec models that carry the command and the range that is
// plausible there (the model definitions give none).
type curveAxis struct {
	name, point string // "voltage", "x"
	unit        string
	min, max    float64
	// volts: a voltage in % of the device's reference voltage (12x/13x
	// "% VRef": 121 VRef; 7xx "VNomPct": 702 VNom), which a command may
	// send in volts instead (unit "V").
	volts bool
	// minV, maxV bound a voltage sent in volts before it is converted.
	minV, maxV float64
}

// curveAxes are the axes of a curve command's points.
type curveAxes struct{ x, y curveAxis }

// voltage returns the voltage axis (zero when there is none).
func (a curveAxes) voltage() curveAxis {
	if a.y.volts {
		return a.y
	}
	return a.x
}

func voltAxis(point string, minPct, maxPct float64) curveAxis {
	return curveAxis{name: "voltage", point: point, unit: "% of the reference voltage (VRef, 7xx VNom)", min: minPct, max: maxPct, volts: true, minV: 0, maxV: 100000}
}

var (
	tripTime = curveAxis{name: "trip time", point: "x", unit: "s", min: 0, max: 3600}
	tripHz   = curveAxis{name: "frequency", point: "y", unit: "Hz", min: 40, max: 70}
	pctOfMax = func(what string) curveAxis { return curveAxis{name: what, point: "y", unit: "%", min: -100, max: 100} }
)

// check returns what is wrong with a point ("" when nothing): a value
// outside its axis's range, the voltage axis in volts when volts is set.
func (a curveAxes) check(p CurvePoint, volts bool) string {
	var msgs []string
	for _, c := range []struct {
		ax curveAxis
		v  float64
	}{{a.x, p.X}, {a.y, p.Y}} {
		ax := c.ax
		switch {
		case ax.name == "":
		case ax.volts && volts:
			if c.v < ax.minV || c.v > ax.maxV {
				msgs = append(msgs, fmt.Sprintf("%s = %g V (%s) outside %g..%g V", ax.point, c.v, ax.name, ax.minV, ax.maxV))
			}
		case c.v < ax.min || c.v > ax.max:
			m := fmt.Sprintf("%s = %g (%s) outside %g..%g %s", ax.point, c.v, ax.name, ax.min, ax.max, ax.unit)
			if ax.volts && c.v > ax.max {
				m += `; for volts send "unit":"V" with the command`
			}
			msgs = append(msgs, m)
		}
	}
	return strings.Join(msgs, "; ")
}

// window is one command's window on a plant's timeline.
type window struct {
	sched *Schedule
	idx   int // index into sched.Commands
	cmd   *ScheduledCmd
}

// newer orders schedules: later creation wins, then the larger id.
func newer(a, b *Schedule) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.ScheduleID > b.ScheduleID
}

// activeAt returns, per command name, the window that governs at t. Within
// one role the newest schedule's window holding t ([start, end)) wins.
// Across roles, for the limits (opModMaxLimW, FeedInLimit) the most
// restrictive wins (the lowest, compared in W with ratedW, the rated power
// of the inverters carrying limits), so an installer never loosens a grid
// operator's limit nor the other way round; for the other commands, whose
// values have no order, the grid operator's window wins over the
// installer's. Back-to-back windows join without a gap, since a window
// holds its start and not its end.
func activeAt(scheds []*Schedule, t time.Time, ratedW float64) map[string]window {
	type roleCmd struct{ cmd, role string }
	newest := map[roleCmd]window{}
	for _, s := range scheds {
		for i := range s.Commands {
			c := &s.Commands[i]
			if t.Before(c.Start) || !t.Before(c.End) {
				continue
			}
			k := roleCmd{c.Command, channelOf(s)}
			if cur, ok := newest[k]; !ok || newer(s, cur.sched) {
				newest[k] = window{sched: s, idx: i, cmd: c}
			}
		}
	}
	out := map[string]window{}
	for k, w := range newest {
		cur, ok := out[k.cmd]
		if !ok || governs(w, cur, ratedW) {
			out[k.cmd] = w
		}
	}
	return out
}

// governs reports whether window a governs over window b of the same
// command and another role (see activeAt); ties go to the newer schedule,
// so the choice never depends on map order.
func governs(a, b window, ratedW float64) bool {
	if cmd, _ := commandNamed(a.cmd.Command); cmd.Value == ValuePower && a.cmd.Value != nil && b.cmd.Value != nil {
		wa, wb := limitW(a.cmd, ratedW), limitW(b.cmd, ratedW)
		if wa != wb {
			return wa < wb
		}
	} else if ra, rb := config.RoleRank(roleOf(a.sched)), config.RoleRank(roleOf(b.sched)); ra != rb {
		return ra > rb
	}
	return newer(a.sched, b.sched)
}

// limitW is a limit command's value in W (in % when the rating is
// unknown, which orders windows of one unit alike).
func limitW(c *ScheduledCmd, ratedW float64) float64 {
	if c.Unit == "W" || ratedW <= 0 {
		return *c.Value
	}
	return *c.Value / 100 * ratedW
}

// supersededSet returns the commands that newer schedules of the same
// role cover entirely (their window split by the newer windows of the same
// command and role leaves no slice of their own). Per command and role,
// windows are taken newest first into a sorted set of disjoint intervals:
// a window the set already covers is superseded. O(n log n) for n windows, however many overlap.
func supersededSet(scheds []*Schedule) map[*ScheduledCmd]bool {
	order := slices.Clone(scheds)
	slices.SortStableFunc(order, func(a, b *Schedule) int {
		switch {
		case newer(a, b):
			return -1
		case newer(b, a):
			return 1
		}
		return 0
	})
	// Per command and role: another role's window never supersedes (it
	// may override while it governs, see activeAt).
	type roleCmd struct{ cmd, role string }
	covered := map[roleCmd]*intervals{}
	out := map[*ScheduledCmd]bool{}
	for _, s := range order {
		role := channelOf(s)
		// A schedule's own windows of one command never overlap: check
		// them all before adding them.
		for i := range s.Commands {
			c := &s.Commands[i]
			if iv := covered[roleCmd{c.Command, role}]; iv != nil && iv.covers(c.Start, c.End) {
				out[c] = true
			}
		}
		for i := range s.Commands {
			c := &s.Commands[i]
			k := roleCmd{c.Command, role}
			if covered[k] == nil {
				covered[k] = &intervals{}
			}
			covered[k].add(c.Start, c.End)
		}
	}
	return out
}

// intervals is a set of disjoint half-open time intervals, sorted.
type intervals struct{ iv [][2]time.Time }

// covers reports whether [from, to) lies inside one interval of the set.
func (s *intervals) covers(from, to time.Time) bool {
	// The last interval starting at or before from.
	i, _ := slices.BinarySearchFunc(s.iv, from, func(x [2]time.Time, t time.Time) int {
		if x[0].After(t) {
			return 1
		}
		return -1
	})
	return i > 0 && !s.iv[i-1][1].Before(to)
}

// add merges [from, to) into the set.
func (s *intervals) add(from, to time.Time) {
	// First interval ending at or after from, last starting at or before to.
	lo, _ := slices.BinarySearchFunc(s.iv, from, func(x [2]time.Time, t time.Time) int {
		if x[1].Before(t) {
			return -1
		}
		return 1
	})
	hi := lo
	for hi < len(s.iv) && !s.iv[hi][0].After(to) {
		from, to = minTime(from, s.iv[hi][0]), maxTime(to, s.iv[hi][1])
		hi++
	}
	s.iv = slices.Replace(s.iv, lo, hi, [2]time.Time{from, to})
}

// boundaries returns the future starts and ends of every window, sorted
// and without duplicates.
func boundaries(scheds []*Schedule, now time.Time) []time.Time {
	var ts []time.Time
	for _, s := range scheds {
		for _, c := range s.Commands {
			for _, t := range []time.Time{c.Start, c.End} {
				if t.After(now) {
					ts = append(ts, t)
				}
			}
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) }) // no sort instantiated for time.Time (binary size)
	return slices.CompactFunc(ts, func(a, b time.Time) bool { return a.Equal(b) })
}
