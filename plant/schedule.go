package plant

import (
	"maps"
	"slices"
	"time"
)

// Schedule is a plant's schedule of grid-control commands (DESIGN §6),
// the one shape of a schedule: grid control makes, checks and runs it, the
// store keeps it (as its JSON, unchanged since the store first kept
// schedules), the HTTP API answers it (POST, GET .../schedules) and the
// doors that submit commands get it back. Its JSON is the API's schedule
// object. What a schedule means (windows, precedence, channels) is grid
// control's: functions of package gridcontrol over this type.
type Schedule struct {
	ScheduleID string         `json:"scheduleId"`
	PlantID    string         `json:"plantId"`
	Commands   []ScheduledCmd `json:"commands"`
	CreatedAt  time.Time      `json:"createdAt"`
	// CreatedBy names the origin that sent the schedule (the door, the
	// identity at it and the role: gridcontrol.Origin.String).
	CreatedBy string `json:"createdBy,omitempty"`
	// Role is the role of that origin (gridoperator, installer): windows
	// of one command from different roles do not overwrite each other.
	Role string `json:"role,omitempty"`
	// Channel is the origin's own precedence channel within its role
	// ("input:<id>", "modbus:<address>"), empty for the role's shared one.
	Channel string `json:"channel,omitempty"`
}

// ScheduledCmd is one command of a schedule: a window and its value, and
// what became of it.
type ScheduledCmd struct {
	Command string    `json:"command"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	// Value is the limit (FeedInLimit, opModMaxLimW, in Unit) or the power
	// factor (opModFixedPF*); absent for OpModDisconnect and curves.
	Value *float64 `json:"value,omitempty"`
	// Unit is "%" (of rated power, the default) or "W" for the limits;
	// for a curve with a voltage axis (volt-var, volt-watt, LVRT, HVRT)
	// "%" (of the device's reference voltage, the default) or "V": that
	// axis in volts, converted with each device's reference voltage
	// (12x/13x: 121 VRef, 7xx: 702 VNom) when written.
	Unit  string `json:"unit,omitempty"`
	Curve *Curve `json:"curve,omitempty"`

	// Status is pending, active, done, superseded, overridden or failed
	// (answers only).
	Status WindowStatus `json:"status,omitempty"`
	// OverriddenBy names the schedule whose window governs the command
	// now instead of this one (status overridden; answers only).
	OverriddenBy string `json:"overriddenBy,omitempty"`
	// Reason says why a command failed or was late (answers only).
	Reason string `json:"reason,omitempty"`
	// AppliedAt is when the command was first written to every device
	// that carries it (answers only).
	AppliedAt *time.Time `json:"appliedAt,omitempty"`
	// Late is set when it was applied more than a few seconds after its
	// start, e.g. because a device was offline.
	Late bool `json:"late,omitempty"`
	// Partial is set when some of the plant's active inverters do not act
	// on the command (answers only): Coverage is the share (0..1) of their
	// rated power that does, Inverters says per inverter whether it acts
	// and why not. Judged when the schedule is accepted and again when the
	// window is applied. Status keeps its meaning (pending, active, ...):
	// a partial window is still pending, active or done.
	Partial   bool               `json:"partial,omitempty"`
	Coverage  *float64           `json:"coverage,omitempty"`
	Inverters []InverterCoverage `json:"inverters,omitempty"`

	// Repeat, when set, makes the command recurring: a cron spec (five
	// fields, robfig/cron's standard parser, UTC unless it starts with
	// CRON_TZ=<zone>) naming the starts of windows of Duration each, for
	// as long as the schedule stands, none starting at or after Until.
	// Start and End are then the current window (open now, or the next):
	// grid control moves them on to the next occurrence when it ends.
	Repeat   string     `json:"repeat,omitempty"`
	Duration string     `json:"duration,omitempty"`
	Until    *time.Time `json:"until,omitempty"`
	// Next are the windows of a recurring command after the current one
	// (answers only, at most three).
	Next []Occurrence `json:"next,omitempty"`
	// Finished are the ended windows of a recurring command, oldest first,
	// within the time finished schedules are kept (answers with
	// include=finished only).
	Finished []Occurrence `json:"finished,omitempty"`
	// Writes is the audit of the window: what was written to which device
	// and read back (answers with include=finished only).
	Writes []AuditWrite `json:"writes,omitempty"`
	// Cancelled is set when the schedule was cancelled before the window
	// ended (its end is then the time of cancellation, or its start).
	Cancelled bool `json:"cancelled,omitempty"`
}

// Occurrence is one window of a recurring command.
type Occurrence struct {
	Start     time.Time    `json:"start"`
	End       time.Time    `json:"end"`
	Status    WindowStatus `json:"status,omitempty"`
	Reason    string       `json:"reason,omitempty"`
	AppliedAt *time.Time   `json:"appliedAt,omitempty"`
	Late      bool         `json:"late,omitempty"`
	Writes    []AuditWrite `json:"writes,omitempty"`
}

// AuditWrite is one write of a window to a device, read back: the
// top-level points of the model the write set (or renewed) with the value
// written and the value read back right after.
type AuditWrite struct {
	DeviceID   string       `json:"deviceId"`
	Model      uint16       `json:"model"`
	What       string       `json:"what"`
	ReadBackAt time.Time    `json:"readBackAt"`
	Points     []AuditPoint `json:"points,omitempty"`
}

// AuditPoint is a point of a write: what was written and what was read
// back (equal, or the write would have failed, except for trigger points
// a device clears once it acted, such as a 7xx adopt request).
type AuditPoint struct {
	Point    string   `json:"point"`
	Value    float64  `json:"value"`
	ReadBack *float64 `json:"readBack,omitempty"`
}

// Curve is the value of a curve command, in the units of the SunSpec model
// that carries it: Points for the curve models, Params for the parameter
// models (127 freq-watt, 711 droop) by point name; a command may carry
// both, each device taking the part its model has (the units and ranges
// are grid control's: gridcontrol.Command.Axes).
type Curve struct {
	Points []CurvePoint       `json:"points,omitempty"`
	Params map[string]float64 `json:"params,omitempty"`
}

// CurvePoint is one point of a curve.
type CurvePoint struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// WindowStatus is the state of a scheduled command's window.
type WindowStatus string

// The states of a scheduled command's window.
const (
	WindowPending    WindowStatus = "pending"
	WindowActive     WindowStatus = "active"
	WindowDone       WindowStatus = "done"
	WindowSuperseded WindowStatus = "superseded"
	// WindowOverridden: the window is open, but another role's window of
	// the same command governs (a grid operator's tighter limit, say).
	WindowOverridden WindowStatus = "overridden"
	WindowFailed     WindowStatus = "failed"
)

// InverterCoverage is one active inverter's answer to a command: whether
// it acts on it and, when it does not (or acts only once it is back
// online), why.
type InverterCoverage struct {
	DeviceID    string             `json:"deviceId"`
	Acts        bool               `json:"acts"`
	Reason      *EligibilityReason `json:"reason,omitempty"`
	RatedPowerW float64            `json:"ratedPowerW,omitempty"`
	// Note says what an acting inverter cannot do for the command:
	// NoReversionToDefault for a limit on model 123.
	Note *EligibilityReason `json:"note,omitempty"`
}

// EligibilityReason is why a command is not carried (a code of grid
// control's eligibility check and the human text).
type EligibilityReason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Clone returns a copy of the schedule that shares nothing mutable with
// it: its commands, their windows, audit and coverage are copied, so the
// copy can be encoded while grid control goes on updating the original.
func (s *Schedule) Clone() Schedule {
	out := *s
	out.Commands = slices.Clone(s.Commands)
	for i := range out.Commands {
		c := &out.Commands[i]
		c.Value = clonePtr(c.Value)
		c.AppliedAt = clonePtr(c.AppliedAt)
		c.Coverage = clonePtr(c.Coverage)
		c.Until = clonePtr(c.Until)
		if c.Curve != nil {
			c.Curve = &Curve{Points: slices.Clone(c.Curve.Points), Params: maps.Clone(c.Curve.Params)}
		}
		c.Inverters = slices.Clone(c.Inverters)
		for k := range c.Inverters {
			c.Inverters[k].Reason = clonePtr(c.Inverters[k].Reason)
			c.Inverters[k].Note = clonePtr(c.Inverters[k].Note)
		}
		c.Next = cloneOccurrences(c.Next)
		c.Finished = cloneOccurrences(c.Finished)
		c.Writes = cloneWrites(c.Writes)
	}
	return out
}

func cloneOccurrences(in []Occurrence) []Occurrence {
	out := slices.Clone(in)
	for i := range out {
		out[i].AppliedAt = clonePtr(out[i].AppliedAt)
		out[i].Writes = cloneWrites(out[i].Writes)
	}
	return out
}

func cloneWrites(in []AuditWrite) []AuditWrite {
	out := slices.Clone(in)
	for i := range out {
		out[i].Points = slices.Clone(out[i].Points)
		for k := range out[i].Points {
			out[i].Points[k].ReadBack = clonePtr(out[i].Points[k].ReadBack)
		}
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
