package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"plantd/httpapi/apidoc"
	"plantd/plant"
)

// Inputs are the grid operator's inputs (cmd/plantd's, config inputs:):
// each input's contacts as last read, what they map to and what holds in
// grid control, and the §14a dimming state. Nil: the gateway has none,
// GET /gateway/v1/inputs lists nothing.
type Inputs interface {
	InputStates() []InputState
}

// EEBus is the grid operator's control box over EEBus (cmd/plantd's
// adapter of package eebus): its state now. Nil: not configured, GET
// /gateway/v1/inputs has no eebus member.
type EEBus interface {
	EEBusState() EEBusState
}

// EEBusState is the EEBus door's state: plantd's SKI, the control box
// (its SKI, connected), the failsafe state and the limits in force (nil:
// none), with the production limit's window in grid control.
type EEBusState struct {
	PlantID           string     `json:"plantId"`
	SKI               string     `json:"ski"`
	ControlBox        string     `json:"controlBox"`
	Connected         bool       `json:"connected"`
	Failsafe          bool       `json:"failsafe"`
	ConsumptionLimitW *float64   `json:"consumptionLimitW"`
	ProductionLimitW  *float64   `json:"productionLimitW"`
	ProductionWindow  string     `json:"productionWindow,omitempty"`
	LastHeartbeat     *time.Time `json:"-"`
	LastHeartbeatUtc  string     `json:"lastHeartbeatUtc,omitempty"`
}

// InputState is one input as its loop last read it.
type InputState struct {
	ID, Name, PlantID string
	// Contacts in the order of their input index.
	Contacts []InputContact
	// ReadAt is the last poll's time (zero: none yet); ReadErr its error,
	// LostSince when the polls started failing (zero: they answer).
	ReadAt, LostSince time.Time
	ReadErr           string
	// Closed are the closed pattern contacts (the dimming ones apart) as
	// last read, Since when they first read so; Action what the table
	// maps them to (nil: no limit), Invalid when the table does not list
	// them together (the most restrictive of their actions applies).
	Closed  []string
	Since   time.Time
	Action  *InputAction
	Invalid bool
	// Actions is the pattern table, Failsafe what applies when the input
	// is lost beyond its grace.
	Actions  []InputAction
	Failsafe *InputAction
	// Window is the input's window in grid control not yet ended (nil:
	// none).
	Window *InputWindow
	// Dimmed says the input asks for §14a dimming now (one of its Dimming
	// contacts closed, or lost beyond its grace), since DimmedSince.
	Dimming     []string
	Dimmed      bool
	DimmedSince time.Time
	// Consumers: the plant has consumers the dimming acts on.
	Consumers bool
}

// InputContact is one contact of an input.
type InputContact struct {
	Name    string `json:"name"`
	Input   int    `json:"input"`
	Closed  bool   `json:"closed"`
	Dimming bool   `json:"dimming,omitempty"`
}

// InputAction is a row of an input's pattern table.
type InputAction struct {
	Contacts []string `json:"contacts,omitempty"`
	Command  string   `json:"command"`
	Value    float64  `json:"value"`
	Unit     string   `json:"unit"`
}

// InputWindow is the input's window in grid control.
type InputWindow struct {
	ScheduleID, Command, Status string
	Value                       *float64
	Unit                        string
	Start, End                  time.Time
}

// inputJSON is one input of GET /gateway/v1/inputs.
type inputJSON struct {
	InputID      string         `json:"inputId"`
	Name         string         `json:"name,omitempty"`
	PlantID      string         `json:"plantId"`
	Status       string         `json:"status"`
	LastReadUtc  string         `json:"lastReadUtc,omitempty"`
	LostSinceUtc string         `json:"lostSinceUtc,omitempty"`
	LastError    string         `json:"lastError,omitempty"`
	Contacts     []InputContact `json:"contacts"`
	Closed       []string       `json:"closed"`
	SinceUtc     string         `json:"sinceUtc,omitempty"`
	Action       *InputAction   `json:"action"`
	Invalid      bool           `json:"invalidPattern"`
	Active       bool           `json:"active"`
	Window       *windowJSON    `json:"window,omitempty"`
	Actions      []InputAction  `json:"actions"`
	Failsafe     *InputAction   `json:"failsafe,omitempty"`
	Dimming      []string       `json:"dimmingContacts"`
}

type windowJSON struct {
	ScheduleID string   `json:"scheduleId"`
	Command    string   `json:"command"`
	Value      *float64 `json:"value,omitempty"`
	Unit       string   `json:"unit,omitempty"`
	Status     string   `json:"status"`
	StartUtc   string   `json:"startUtc"`
	EndUtc     string   `json:"endUtc"`
}

// dimmingJSON is a plant's §14a state: dimmed while any of its inputs
// asks for it.
type dimmingJSON struct {
	PlantID   string   `json:"plantId"`
	Dimmed    bool     `json:"dimmed"`
	SinceUtc  string   `json:"sinceUtc,omitempty"`
	Inputs    []string `json:"inputs"`
	Consumers bool     `json:"consumers"`
}

// inputList is GET /gateway/v1/inputs[?plantId=] (standard): the grid
// operator's inputs and the §14a dimming state of every plant with a
// dimming contact, of all plants or of one (404 when unknown; a migrated
// id answers for the new one).
func (s *Server) inputList(c *gin.Context) {
	for k := range c.Request.URL.Query() {
		if k != "plantId" {
			fail(c, http.StatusBadRequest, plant.CodeBadParameter, fmt.Sprintf("unknown query parameter %q", k), FieldError{Field: k, Message: "unknown parameter; only plantId"})
			return
		}
	}
	pid := c.Query("plantId")
	filter := pid != ""
	if filter {
		if nid, ok := s.migratedPlants[pid]; ok {
			pid = nid
		}
		if _, ok := s.deps.Live.Plant(pid); !ok {
			fail(c, http.StatusNotFound, plant.CodeNotFound, fmt.Sprintf("unknown plant %q", pid), FieldError{Field: "plantId", Message: "unknown plant"})
			return
		}
	}
	inputs, dimming := []inputJSON{}, []dimmingJSON{}
	if s.deps.Inputs != nil {
		dims := map[string]int{}
		for _, in := range s.deps.Inputs.InputStates() {
			if filter && in.PlantID != pid {
				continue
			}
			inputs = append(inputs, inputOut(in))
			if len(in.Dimming) == 0 {
				continue
			}
			i, ok := dims[in.PlantID]
			if !ok {
				i = len(dimming)
				dims[in.PlantID] = i
				dimming = append(dimming, dimmingJSON{PlantID: in.PlantID, Inputs: []string{}})
			}
			d := &dimming[i]
			d.Inputs = append(d.Inputs, in.ID)
			d.Consumers = d.Consumers || in.Consumers
			if in.Dimmed {
				if since := utcOrEmpty(in.DimmedSince); !d.Dimmed || (since != "" && since < d.SinceUtc) {
					d.SinceUtc = since
				}
				d.Dimmed = true
			}
		}
	}
	fields := []member{field("inputs", inputs), field("dimming", dimming)}
	if s.deps.EEBus != nil {
		if st := s.deps.EEBus.EEBusState(); !filter || st.PlantID == pid {
			if st.LastHeartbeat != nil && !st.LastHeartbeat.IsZero() {
				st.LastHeartbeatUtc = utc(*st.LastHeartbeat)
			}
			fields = append(fields, field("eebus", st))
		}
	}
	s.writeJSON(c, http.StatusOK, envelope(fields...), false)
}

// inputOut is an input as the API writes it.
func inputOut(in InputState) inputJSON {
	o := inputJSON{InputID: in.ID, Name: in.Name, PlantID: in.PlantID, Status: "Ok", LastReadUtc: utcOrEmpty(in.ReadAt),
		LostSinceUtc: utcOrEmpty(in.LostSince), LastError: in.ReadErr, Contacts: in.Contacts, Closed: in.Closed,
		SinceUtc: utcOrEmpty(in.Since), Action: in.Action, Invalid: in.Invalid, Actions: in.Actions, Failsafe: in.Failsafe,
		Dimming: in.Dimming}
	switch {
	case in.ReadAt.IsZero() && in.LostSince.IsZero():
		o.Status = "NotReadYet"
	case !in.LostSince.IsZero():
		o.Status = "Lost"
	}
	for _, p := range []*[]string{&o.Closed, &o.Dimming} {
		if *p == nil {
			*p = []string{}
		}
	}
	if o.Contacts == nil {
		o.Contacts = []InputContact{}
	}
	if o.Actions == nil {
		o.Actions = []InputAction{}
	}
	if w := in.Window; w != nil {
		o.Window = &windowJSON{ScheduleID: w.ScheduleID, Command: w.Command, Value: w.Value, Unit: w.Unit, Status: w.Status,
			StartUtc: utc(w.Start), EndUtc: utc(w.End)}
		o.Active = w.Status == "active"
	}
	return o
}

func utcOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return utc(t)
}

// inputsResponse is the OpenAPI 200 response of GET /gateway/v1/inputs.
func inputsResponse() apidoc.Obj {
	action := func() apidoc.Obj { // a new map each time: Describe writes into it
		return apidoc.Object(apidoc.Obj{"contacts": apidoc.Arr(apidoc.Str()), "command": apidoc.Enum("FeedInLimit", "opModMaxLimW"),
			"value": apidoc.Num(), "unit": apidoc.Enum("%", "W")}, "command", "value", "unit")
	}
	nullable := apidoc.Obj{"oneOf": []any{action(), apidoc.Obj{"type": "null"}}}
	input := apidoc.Object(apidoc.Obj{
		"inputId": apidoc.Str(), "name": apidoc.Str(), "plantId": apidoc.Str(),
		"status":       apidoc.Describe(apidoc.Enum("Ok", "Lost", "NotReadYet"), "Ok: the last poll answered; Lost: polls fail (the last valid state holds for the loss grace, then the failsafe); NotReadYet: no poll yet"),
		"lastReadUtc":  apidoc.Describe(apidoc.UTCTime(), "the last poll that answered"),
		"lostSinceUtc": apidoc.Describe(apidoc.UTCTime(), "when the polls started failing; absent while they answer"),
		"lastError":    apidoc.Str(),
		"contacts": apidoc.Arr(apidoc.Object(apidoc.Obj{"name": apidoc.Str(), "input": apidoc.Obj{"type": "integer", "minimum": 0},
			"closed": apidoc.Describe(apidoc.Bool(), "as last read"), "dimming": apidoc.Describe(apidoc.Bool(), "a §14a dimming contact")}, "name", "input", "closed")),
		"closed":         apidoc.Describe(apidoc.Arr(apidoc.Str()), "the closed pattern contacts as last read (dimming contacts apart), sorted; empty: all open"),
		"sinceUtc":       apidoc.Describe(apidoc.UTCTime(), "since when the contacts read as they do now"),
		"action":         apidoc.Describe(nullable, "what the table maps the closed contacts to; null: no limit (all open, or a 100 % row)"),
		"invalidPattern": apidoc.Describe(apidoc.Bool(), "the closed contacts are no row of the table: the most restrictive of their actions applies"),
		"active":         apidoc.Describe(apidoc.Bool(), "the input's window governs its command in grid control now"),
		"window": apidoc.Describe(apidoc.Object(apidoc.Obj{"scheduleId": apidoc.Str(), "command": apidoc.Str(), "value": apidoc.Num(), "unit": apidoc.Str(),
			"status": apidoc.Enum("pending", "active", "overridden", "failed"), "startUtc": apidoc.UTCTime(), "endUtc": apidoc.UTCTime()},
			"scheduleId", "command", "status", "startUtc", "endUtc"), "the input's window in grid control not yet ended (renewed while the contacts hold); absent: none"),
		"actions":         apidoc.Describe(apidoc.Arr(action()), "the pattern table: closed contacts → limit"),
		"failsafe":        apidoc.Describe(action(), "what applies when the input is lost beyond its grace"),
		"dimmingContacts": apidoc.Describe(apidoc.Arr(apidoc.Str()), "the contacts of a §14a control box"),
	}, "inputId", "plantId", "status", "contacts", "closed", "action", "invalidPattern", "active", "actions", "dimmingContacts")
	dimming := apidoc.Object(apidoc.Obj{"plantId": apidoc.Str(),
		"dimmed":    apidoc.Describe(apidoc.Bool(), "the grid operator dims the plant's controllable consumers now (§14a EnWG)"),
		"sinceUtc":  apidoc.UTCTime(),
		"inputs":    apidoc.Describe(apidoc.Arr(apidoc.Str()), "the inputs with a dimming contact"),
		"consumers": apidoc.Describe(apidoc.Bool(), "the plant has consumers the dimming acts on (without, the signal is logged only)")},
		"plantId", "dimmed", "inputs", "consumers")
	limitW := func(d string) apidoc.Obj {
		return apidoc.Describe(apidoc.Obj{"oneOf": []any{apidoc.Num(), apidoc.Obj{"type": "null"}}}, d)
	}
	eebus := apidoc.Object(apidoc.Obj{"plantId": apidoc.Str(),
		"ski":               apidoc.Describe(apidoc.Str(), "plantd's SKI (plantd eebus ski)"),
		"controlBox":        apidoc.Describe(apidoc.Str(), "the trusted control box's SKI (the last connected, else the first configured)"),
		"connected":         apidoc.Describe(apidoc.Bool(), "the control box is connected over SHIP"),
		"failsafe":          apidoc.Describe(apidoc.Bool(), "the failsafe limits apply (at start until the box speaks, or its heartbeat was lost)"),
		"consumptionLimitW": limitW("the consumption limit on the controllable consumers in force (LPC or failsafe); null: none"),
		"productionLimitW":  limitW("the production limit in force (LPP or failsafe); null: none"),
		"productionWindow":  apidoc.Describe(apidoc.Str(), "the grid-control schedule holding the production limit"),
		"lastHeartbeatUtc":  apidoc.Describe(apidoc.UTCTime(), "the control box's last heartbeat"),
	}, "plantId", "ski", "controlBox", "connected", "failsafe", "consumptionLimitW", "productionLimitW")
	return apidoc.Obj{"description": "OK", "content": apidoc.Obj{"application/json": apidoc.Obj{"schema": apidoc.Object(apidoc.Obj{
		"inputs":  apidoc.Arr(input),
		"dimming": apidoc.Describe(apidoc.Arr(dimming), "the §14a state of every plant with a dimming contact"),
		"eebus":   apidoc.Describe(eebus, "the grid operator's control box over EEBus (§14a LPC and LPP); absent unless eebus.enabled"),
	}, "inputs", "dimming")}}}
}
