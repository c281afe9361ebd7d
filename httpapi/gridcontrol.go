package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"plantd/gridcontrol"
	"plantd/httpapi/oauth2"
	"plantd/plant"
	"plantd/plant/kind"
)

// schedules is GET /gridcontrol/v1/plants/{plantId}/schedules: the
// plant's schedules with the status of every command (the fallbacks that
// restore defaults are the controller's, never listed); a recurring
// command with its current window and the next ones. include=finished
// adds the audit: every window's writes (device, points written and read
// back, when) and a recurring command's finished windows with theirs.
func (s *Server) schedules(c *gin.Context) {
	p := ctxPlantOf(c)
	finished := false
	switch v := c.Query("include"); v {
	case "":
	case "finished":
		finished = true
	default:
		badParam(c, "include", fmt.Sprintf("%q: want finished", v))
		return
	}
	if s.deps.GridControl != nil {
		list, err := s.deps.GridControl.Schedules(p.ID, gridcontrol.IncludeFinished(finished))
		if err != nil {
			s.internal(c, err)
			return
		}
		if list == nil {
			list = []gridcontrol.Schedule{}
		}
		s.writeJSON(c, http.StatusOK, envelope(field("plant", plantObj(p)), field("schedules", list)), false)
		return
	}
	list, err := s.deps.History.Schedules(c.Request.Context(), p.ID)
	if err != nil {
		s.historyError(c, err)
		return
	}
	if list == nil {
		list = []plant.Schedule{}
	}
	s.writeJSON(c, http.StatusOK, envelope(field("plant", plantObj(p)), field("schedules", list)), false)
}

// postSchedules is POST /gridcontrol/v1/plants/{plantId}/schedules
// (installer or gridoperator): the grid-control package validates the
// body (strict JSON, windows, values), runs the eligibility check unless
// skipEligibilityCheck=true, stores and arms it; the answer is 201 with
// the stored schedule, whose windows say partial (with coverage and the
// inverters that act and do not) when only some of the plant's active
// inverters act on their command. requireAll=true asks all or nothing:
// such a command is refused with 422. 400: a malformed schedule; 422: a
// command the plant's devices cannot carry, with each refused command's
// reason code (reasons) and retryable when every refusal is of devices
// not reachable or not discovered yet. Without a grid-control component
// (tests of the API alone) a valid request answers 501.
func (s *Server) postSchedules(c *gin.Context) {
	p := ctxPlantOf(c)
	skip, ok := parseBool(c, "skipEligibilityCheck")
	if !ok {
		return
	}
	requireAll, ok := parseBool(c, "requireAll")
	if !ok {
		return
	}
	body, ok := readJSONBody(c)
	if !ok {
		return
	}
	if s.deps.GridControl == nil {
		fail(c, http.StatusNotImplemented, plant.CodeNotImplemented, "grid control is not running in this server: schedules cannot be stored")
		return
	}
	name, role := oauth2.Caller(c)
	sc, err := s.deps.GridControl.SubmitJSON(c.Request.Context(), p.ID, gridcontrol.Origin{Door: gridcontrol.DoorAPI, Name: name, Role: role}, body,
		gridcontrol.SkipEligibilityCheck(skip), gridcontrol.RequireAll(requireAll))
	var ve *gridcontrol.ValidationError
	switch {
	case errors.As(err, &ve):
		fes := make([]FieldError, len(ve.Fields))
		for i, f := range ve.Fields {
			fes[i] = FieldError{Field: f.Field, Message: f.Message}
		}
		if ve.NotEligible {
			pb := problem(c, http.StatusUnprocessableEntity, plant.CodeNotEligible, "the plant's devices cannot carry every command", fes...)
			pb.Reasons, pb.Retryable = refusalReasons(body, ve)
			writeProblem(c, pb)
			return
		}
		fail(c, http.StatusBadRequest, plant.CodeBadBody, "invalid schedule", fes...)
		return
	case err != nil:
		s.internal(c, err)
		return
	}
	c.Header("Location", c.Request.URL.Path+"#"+sc.ScheduleID)
	s.writeJSON(c, http.StatusCreated, envelope(field("plant", plantObj(p)), field("schedule", sc)), false)
}

// deleteSchedule is DELETE /gridcontrol/v1/plants/{plantId}/schedules/{scheduleId}
// (installer or gridoperator): the schedule is cancelled, its open windows
// end now (the controls ramp back as at any window's end), pending ones
// and every later occurrence of a recurring command never start. It stays
// listed, its windows cancelled, for the audit. 204; 404 for an unknown
// schedule.
func (s *Server) deleteSchedule(c *gin.Context) {
	p := ctxPlantOf(c)
	if s.deps.GridControl == nil {
		fail(c, http.StatusNotImplemented, plant.CodeNotImplemented, "grid control is not running in this server: schedules cannot be cancelled")
		return
	}
	name, role := oauth2.Caller(c)
	err := s.deps.GridControl.Cancel(c.Request.Context(), p.ID, c.Param("scheduleId"), gridcontrol.Origin{Door: gridcontrol.DoorAPI, Name: name, Role: role})
	var held *gridcontrol.InputHeldError
	switch {
	case errors.As(err, &held):
		fail(c, http.StatusConflict, plant.CodeHeldByInput, fmt.Sprintf("schedule %s is held by %s: a grid operator's input ends its window when its contacts release it, not a DELETE", held.ScheduleID, held.Holder))
		return
	case errors.Is(err, gridcontrol.ErrUnknownSchedule):
		fail(c, http.StatusNotFound, plant.CodeNotFound, "unknown schedule")
		return
	case errors.Is(err, gridcontrol.ErrNotPermitted):
		fail(c, http.StatusForbidden, plant.CodeForbidden, "a grid operator's schedule is cancelled by a grid operator only")
		return
	case err != nil:
		s.internal(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// commandFieldPattern is the field of an eligibility refusal.
var commandFieldPattern = regexp.MustCompile(`^commands\[(\d+)\]\.command$`)

// refusalReasons names the eligibility reason of each command of a
// refused schedule that is not eligible, as the grid-control check found
// it, and whether the refusal is retryable: every field refused is a
// command's eligibility (no value or curve refused) for a reason that
// passes once the devices answer (DevicesOffline, DevicesNotDiscovered).
func refusalReasons(body []byte, ve *gridcontrol.ValidationError) ([]plant.ProblemReason, bool) {
	var in struct {
		Commands []struct {
			Command string `json:"command"`
		} `json:"commands"`
	}
	_ = json.Unmarshal(body, &in) // parsed already by Submit
	var out []plant.ProblemReason
	seen := map[string]bool{}
	retryable := len(ve.Fields) > 0
	for _, f := range ve.Fields {
		m := commandFieldPattern.FindStringSubmatch(f.Field)
		if m == nil || f.Code == "" {
			retryable = false
			continue
		}
		if f.Code != gridcontrol.ReasonDevicesOffline && f.Code != gridcontrol.ReasonNotDiscovered {
			retryable = false
		}
		i, _ := strconv.Atoi(m[1])
		if i >= len(in.Commands) || seen[in.Commands[i].Command] {
			continue
		}
		seen[in.Commands[i].Command] = true
		out = append(out, plant.ProblemReason{Command: in.Commands[i].Command, Code: f.Code, Message: f.Message})
	}
	return out, retryable
}

// identIn identifies a plant in the body of eligibilityCheck and
// eligibleCommands: by plant id, device id, meter id or serial number.
type identIn struct {
	PlantID      string   `json:"plantId,omitempty"`
	DeviceID     string   `json:"deviceId,omitempty"`
	MeterID      string   `json:"meterId,omitempty"`
	SerialNumber string   `json:"serialNumber,omitempty"`
	Commands     []string `json:"commands,omitempty"`
}

// findPlant resolves the identifier of a body to a plant. A migrated
// plant or device id is corrected to the new one (spec §7 rule 2).
func (s *Server) findPlant(in identIn) (plant.Plant, string, []FieldError) {
	corrected := ""
	if in.PlantID != "" {
		id := in.PlantID
		if nid, ok := s.migratedPlants[id]; ok {
			id, corrected = nid, nid
		}
		p, ok := s.deps.Live.Plant(id)
		if !ok {
			return p, "", []FieldError{{Field: "plantId", Message: "unknown plant"}}
		}
		return p, corrected, nil
	}
	for _, f := range []struct{ name, v string }{{"deviceId", in.DeviceID}, {"meterId", in.MeterID}} {
		if f.v == "" {
			continue
		}
		id := f.v
		if nid, ok := s.migratedDevices[id]; ok {
			id = nid
		}
		d, ok := s.deps.Live.Device(id)
		if !ok || (f.name == "meterId" && d.Info.Kind != kind.Meter) {
			return plant.Plant{}, "", []FieldError{{Field: f.name, Message: "unknown device"}}
		}
		p, _ := s.deps.Live.Plant(d.Info.PlantID)
		return p, p.ID, nil
	}
	if in.SerialNumber != "" {
		for _, p := range s.deps.Live.Plants() {
			devs, _ := s.deps.Live.DeviceStatuses(p.ID)
			for _, d := range devs {
				if d.Nameplate != nil && d.Nameplate.Serial != "" && strings.EqualFold(d.Nameplate.Serial, in.SerialNumber) {
					return p, p.ID, nil
				}
			}
		}
		return plant.Plant{}, "", []FieldError{{Field: "serialNumber", Message: "no device with this serial number"}}
	}
	return plant.Plant{}, "", []FieldError{{Field: "plantId", Message: "one of plantId, deviceId, meterId or serialNumber is required"}}
}

// eligibilityCheck is POST /gridcontrol/v1/plants/eligibilityCheck. A
// migrated plantId in the body is corrected internally (the answer names
// the new plant), not redirected: a redirect could not carry the corrected
// body, and a 308 to the same URL would loop. Each result lists the
// plant's active inverters (inverters: whether each acts and why not),
// the share of rated power that acts (coverage) and partial; devices stays
// the list of ids that carry the command now. requireAll=true answers as
// a POST with requireAll=true would be judged: a partial command is not
// eligible (reason NotEveryInverter).
func (s *Server) eligibilityCheck(c *gin.Context) {
	requireAll, ok := parseBool(c, "requireAll")
	if !ok {
		return
	}
	var in identIn
	if !decodeJSON(c, &in) {
		return
	}
	if len(in.Commands) == 0 {
		fail(c, http.StatusBadRequest, plant.CodeBadBody, "commands are required", FieldError{Field: "commands", Message: "at least one command is required"})
		return
	}
	var errs []FieldError
	for i, n := range in.Commands {
		if _, ok := gridcontrol.CommandByName(n); !ok {
			errs = append(errs, FieldError{Field: fmt.Sprintf("commands[%d]", i), Message: "unknown command " + n})
		}
	}
	if len(errs) > 0 {
		fail(c, http.StatusBadRequest, plant.CodeBadBody, "unknown command", errs...)
		return
	}
	p, devs, ok := s.identifiedPlant(c, in)
	if !ok {
		return
	}
	res := make([]gridcontrol.Eligibility, 0, len(in.Commands))
	for _, n := range in.Commands {
		cmd, _ := gridcontrol.CommandByName(n)
		res = append(res, gridcontrol.Assess(cmd, devs).AllOrNothing(requireAll))
	}
	s.writeJSON(c, http.StatusOK, envelope(field("plant", plantObj(p)), field("checkedAt", utc(s.now())), field("results", res)), false)
}

// identifiedPlant finds the plant a grid-control body names and its
// devices; it answers the request itself when it cannot.
func (s *Server) identifiedPlant(c *gin.Context, in identIn) (plant.Plant, []plant.DeviceLive, bool) {
	p, _, ferrs := s.findPlant(in)
	if ferrs != nil {
		fail(c, http.StatusNotFound, plant.CodeNotFound, "plant not found", ferrs...)
		return plant.Plant{}, nil, false
	}
	devs, err := s.deps.Live.DeviceStatuses(p.ID)
	if err != nil {
		s.internal(c, err)
		return plant.Plant{}, nil, false
	}
	return p, devs, true
}

// eligibleCommands is the obsolete POST /gridcontrol/v1/plants/eligibleCommands.
func (s *Server) eligibleCommands(c *gin.Context) {
	var in identIn
	if !decodeJSON(c, &in) {
		return
	}
	if len(in.Commands) > 0 {
		fail(c, http.StatusBadRequest, plant.CodeBadBody, "unknown field commands", FieldError{Field: "commands", Message: "unknown field"})
		return
	}
	p, devs, ok := s.identifiedPlant(c, in)
	if !ok {
		return
	}
	out := []string{}
	for _, cmd := range gridcontrol.Commands {
		if gridcontrol.Eligible(cmd, devs).Eligible {
			out = append(out, cmd.Name)
		}
	}
	s.writeJSON(c, http.StatusOK, envelope(field("plant", plantObj(p)), field("eligibleCommands", out)), false)
}

// settingsJSON is the answer of GET .../settings/{settingsType}.
type settingsJSON struct {
	Plant          plantJSON             `json:"plant"`
	SettingsType   string                `json:"settingsType"`
	Configurations []gridcontrol.Setting `json:"configurations"`
}

// settings is GET /gridcontrol/v1/plants/{id}/settings/{settingsType}:
// each configuration of the type as the inverters report it now (read
// over Modbus for this request), in its active form when an inverter has
// it enabled, its Deactivated form otherwise. Without a grid controller
// (tests of the API alone) it answers 501.
func (s *Server) settings(c *gin.Context) {
	p := ctxPlantOf(c)
	name := c.Param("settingsType")
	if !slices.Contains(gridcontrol.SettingsTypes, name) {
		badParam(c, "settingsType", "want "+strings.Join(gridcontrol.SettingsTypes, ", "))
		return
	}
	if s.deps.GridControl == nil {
		fail(c, http.StatusNotImplemented, plant.CodeNotImplemented, "grid control is not running in this server: settings cannot be read")
		return
	}
	cfgs, err := s.deps.GridControl.Settings(c.Request.Context(), p.ID, name)
	if err != nil {
		s.internal(c, err)
		return
	}
	s.writeJSON(c, http.StatusOK, settingsJSON{plantObj(p), name, cfgs}, false)
}
