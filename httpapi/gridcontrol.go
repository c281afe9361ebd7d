package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"plantd/devices"
	"plantd/plant"
)

// command describes one grid-control command of spec §2.5 / DESIGN §6.
type command struct {
	Name string
	// Cap is the device capability the command needs.
	Cap devices.Capability
	// ClassicOnly: offered only for classic systems (OpModDisconnect).
	ClassicOnly bool
	// NeedsMeter: needs a grid meter (FeedInLimit controls the export).
	NeedsMeter bool
}

// commands is the table of grid-control commands.
var commands = []command{
	{Name: "FeedInLimit", Cap: devices.CapPowerLimit, NeedsMeter: true},
	{Name: "OpModDisconnect", Cap: devices.CapConnect, ClassicOnly: true},
	{Name: "opModMaxLimW", Cap: devices.CapPowerLimit},
	{Name: "opModFixedPfAbsorbW", Cap: devices.CapPowerFactor},
	{Name: "opModFixedPFInjectW", Cap: devices.CapPowerFactor},
	{Name: "opModFreqWatt", Cap: devices.CapFreqWatt},
	{Name: "opModHfrtMustTrip", Cap: devices.CapHFRT},
	{Name: "opModHvrtMustTrip", Cap: devices.CapHVRT},
	{Name: "opModLfrtMustTrip", Cap: devices.CapLFRT},
	{Name: "opModLvrtMustTrip", Cap: devices.CapLVRT},
	{Name: "opModVoltVar", Cap: devices.CapVoltVar},
	{Name: "opModVoltWatt", Cap: devices.CapVoltWatt},
}

func commandByName(n string) (command, bool) {
	for _, c := range commands {
		if c.Name == n {
			return c, true
		}
	}
	return command{}, false
}

// reasonJSON is why a command is not supported.
type reasonJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// eligibility is the result for one command.
type eligibility struct {
	Command  string       `json:"command"`
	Eligible bool         `json:"eligible"`
	Reasons  []reasonJSON `json:"reasons,omitempty"`
}

// eligible checks one command against a plant's active inverters (and its
// batteries for storage-capable controls), by their discovered models.
func eligible(cmd command, devs []plant.DeviceLive) eligibility {
	res := eligibility{Command: cmd.Name}
	var capable, unknown, classicOnlyMismatch int
	hasMeter := false
	for _, d := range devs {
		if !d.Info.Active() {
			continue
		}
		if d.Info.Kind == plant.KindMeter {
			hasMeter = true
		}
		if d.Info.Kind != plant.KindInverter {
			continue
		}
		if d.Discovered == nil {
			unknown++
			continue
		}
		if cmd.ClassicOnly && d.Discovered.Platform != devices.PlatformClassic {
			classicOnlyMismatch++
			continue
		}
		if !slices.Contains(d.Discovered.Capabilities, cmd.Cap) {
			continue
		}
		capable++
	}
	switch {
	case capable > 0 && cmd.NeedsMeter && !hasMeter:
		res.Reasons = append(res.Reasons, reasonJSON{Code: "NoGridMeter", Message: "the command needs an active grid meter"})
	case capable > 0:
		res.Eligible = true
	case classicOnlyMismatch > 0:
		res.Reasons = append(res.Reasons, reasonJSON{Code: "NotOfferedOnNewerPlatform", Message: "the command is offered only for classic systems"})
	case unknown > 0:
		res.Reasons = append(res.Reasons, reasonJSON{Code: "DevicesNotDiscovered", Message: fmt.Sprintf("%d inverter(s) not discovered yet", unknown)})
	default:
		res.Reasons = append(res.Reasons, reasonJSON{Code: "NotSupportedByDevices", Message: "no active inverter offers " + string(cmd.Cap)})
	}
	return res
}

// scheduleJSON is a schedule of GET .../schedules (DESIGN §6).
type scheduleJSON struct {
	ScheduleID string          `json:"scheduleId"`
	PlantID    string          `json:"plantId"`
	Commands   json.RawMessage `json:"commands"`
	CreatedAt  string          `json:"createdAt"`
}

// schedules is GET /gridcontrol/v1/plants/{plantId}/schedules.
func (s *Server) schedules(c *gin.Context) {
	p := ctxPlantOf(c)
	list, err := s.deps.History.Schedules(c.Request.Context(), p.ID)
	if err != nil {
		s.historyError(c, err)
		return
	}
	out := make([]scheduleJSON, 0, len(list))
	for _, sc := range list {
		cmds := json.RawMessage(sc.Body)
		if !json.Valid(cmds) {
			cmds = json.RawMessage("[]")
		}
		out = append(out, scheduleJSON{ScheduleID: sc.ID, PlantID: sc.PlantID, Commands: cmds, CreatedAt: utc(sc.CreatedAt)})
	}
	s.writeJSON(c, http.StatusOK, struct {
		Plant     plantJSON      `json:"plant"`
		Schedules []scheduleJSON `json:"schedules"`
	}{plantObj(p), out}, false)
}

// commandIn is one command of a schedule request.
type commandIn struct {
	Command string    `json:"command"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Value   *float64  `json:"value,omitempty"`
	Unit    string    `json:"unit,omitempty"`
}

// scheduleIn is the body of POST .../schedules.
type scheduleIn struct {
	Commands []commandIn `json:"commands"`
}

// validateCommands checks a schedule's commands.
func validateCommands(cmds []commandIn) []FieldError {
	var errs []FieldError
	if len(cmds) == 0 {
		return []FieldError{{Field: "commands", Message: "at least one command is required"}}
	}
	if len(cmds) > 1000 {
		return []FieldError{{Field: "commands", Message: "at most 1000 commands"}}
	}
	for i, cm := range cmds {
		f := fmt.Sprintf("commands[%d]", i)
		if _, ok := commandByName(cm.Command); !ok {
			errs = append(errs, FieldError{Field: f + ".command", Message: "unknown command " + cm.Command})
		}
		if cm.Start.IsZero() {
			errs = append(errs, FieldError{Field: f + ".start", Message: "required (RFC 3339)"})
		}
		if cm.End.IsZero() {
			errs = append(errs, FieldError{Field: f + ".end", Message: "required (RFC 3339)"})
		}
		if !cm.Start.IsZero() && !cm.End.IsZero() && !cm.End.After(cm.Start) {
			errs = append(errs, FieldError{Field: f + ".end", Message: "must be after start"})
		}
		if cm.Value != nil && (*cm.Value < 0 || *cm.Value > 1e9) {
			errs = append(errs, FieldError{Field: f + ".value", Message: "out of range"})
		}
	}
	return errs
}

// postSchedules is POST /gridcontrol/v1/plants/{plantId}/schedules
// (installer or gridoperator). It validates the body and runs the
// eligibility check (unless skipEligibilityCheck=true); storing and
// executing schedules belong to the grid-control component, not wired yet:
// a valid request answers 501.
func (s *Server) postSchedules(c *gin.Context) {
	p := ctxPlantOf(c)
	skip, ok := parseBool(c, "skipEligibilityCheck")
	if !ok {
		return
	}
	var in scheduleIn
	if !decodeJSON(c, &in) {
		return
	}
	if errs := validateCommands(in.Commands); len(errs) > 0 {
		fail(c, http.StatusBadRequest, codeBadBody, "invalid schedule", errs...)
		return
	}
	if !skip {
		devs, err := s.deps.Live.DeviceStatuses(p.ID)
		if err != nil {
			s.internal(c, err)
			return
		}
		var errs []FieldError
		for i, cm := range in.Commands {
			cmd, _ := commandByName(cm.Command)
			if e := eligible(cmd, devs); !e.Eligible {
				errs = append(errs, FieldError{Field: fmt.Sprintf("commands[%d].command", i), Message: e.Reasons[0].Code + ": " + e.Reasons[0].Message})
			}
		}
		if len(errs) > 0 {
			fail(c, http.StatusUnprocessableEntity, codeNotEligible, "the plant does not support every command", errs...)
			return
		}
	}
	fail(c, http.StatusNotImplemented, codeNotImplemented, "grid control not implemented yet: schedules cannot be stored")
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
		if !ok || (f.name == "meterId" && d.Info.Kind != plant.KindMeter) {
			return plant.Plant{}, "", []FieldError{{Field: f.name, Message: "unknown device"}}
		}
		p, _ := s.deps.Live.Plant(d.Info.PlantID)
		return p, p.ID, nil
	}
	if in.SerialNumber != "" {
		for _, p := range s.deps.Live.Plants() {
			devs, _ := s.deps.Live.DeviceStatuses(p.ID)
			for _, d := range devs {
				if d.Discovered != nil && d.Discovered.Serial != "" && strings.EqualFold(d.Discovered.Serial, in.SerialNumber) {
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
// body, and a 308 to the same URL would loop.
func (s *Server) eligibilityCheck(c *gin.Context) {
	var in identIn
	if !decodeJSON(c, &in) {
		return
	}
	if len(in.Commands) == 0 {
		fail(c, http.StatusBadRequest, codeBadBody, "commands are required", FieldError{Field: "commands", Message: "at least one command is required"})
		return
	}
	var errs []FieldError
	for i, n := range in.Commands {
		if _, ok := commandByName(n); !ok {
			errs = append(errs, FieldError{Field: fmt.Sprintf("commands[%d]", i), Message: "unknown command " + n})
		}
	}
	if len(errs) > 0 {
		fail(c, http.StatusBadRequest, codeBadBody, "unknown command", errs...)
		return
	}
	p, devs, ok := s.identifiedPlant(c, in)
	if !ok {
		return
	}
	res := make([]eligibility, 0, len(in.Commands))
	for _, n := range in.Commands {
		cmd, _ := commandByName(n)
		res = append(res, eligible(cmd, devs))
	}
	s.writeJSON(c, http.StatusOK, struct {
		Plant     plantJSON     `json:"plant"`
		CheckedAt string        `json:"checkedAt"`
		Results   []eligibility `json:"results"`
	}{plantObj(p), utc(s.now()), res}, false)
}

// identifiedPlant finds the plant a grid-control body names and its
// devices; it answers the request itself when it cannot.
func (s *Server) identifiedPlant(c *gin.Context, in identIn) (plant.Plant, []plant.DeviceLive, bool) {
	p, _, ferrs := s.findPlant(in)
	if ferrs != nil {
		fail(c, http.StatusNotFound, codeNotFound, "plant not found", ferrs...)
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
		fail(c, http.StatusBadRequest, codeBadBody, "unknown field commands", FieldError{Field: "commands", Message: "unknown field"})
		return
	}
	p, devs, ok := s.identifiedPlant(c, in)
	if !ok {
		return
	}
	out := []string{}
	for _, cmd := range commands {
		if eligible(cmd, devs).Eligible {
			out = append(out, cmd.Name)
		}
	}
	s.writeJSON(c, http.StatusOK, struct {
		Plant            plantJSON `json:"plant"`
		EligibleCommands []string  `json:"eligibleCommands"`
	}{plantObj(p), out}, false)
}

// settingsTypeNames are the settings types of spec §4.2.
var settingsTypeNames = []string{"activePowerGridSettings", "reactivePowerGridSettings",
	"frequencyFaultRideThroughSettings", "voltageFaultRideThroughSettings"}

// settingJSON is one configuration of a settings type.
type settingJSON struct {
	Type      string   `json:"type"`
	Supported bool     `json:"supported"`
	Devices   []string `json:"devices"`
}

// settings is GET /gridcontrol/v1/plants/{id}/settings/{settingsType}. No
// control is active (plantd does not execute grid control yet), so a
// feature answers its Deactivated type; supported and devices say which
// active inverters could provide it.
func (s *Server) settings(c *gin.Context) {
	p := ctxPlantOf(c)
	name := c.Param("settingsType")
	if !slices.Contains(settingsTypeNames, name) {
		badParam(c, "settingsType", "want "+strings.Join(settingsTypeNames, ", "))
		return
	}
	devs, err := s.deps.Live.DeviceStatuses(p.ID)
	if err != nil {
		s.internal(c, err)
		return
	}
	capDevs := map[devices.Capability][]string{}
	for _, d := range devs {
		if !d.Info.Active() || d.Info.Kind != plant.KindInverter || d.Discovered == nil {
			continue
		}
		for _, cp := range d.Discovered.Capabilities {
			capDevs[cp] = append(capDevs[cp], d.Info.ID)
		}
	}
	var cfgs []settingJSON
	add := func(typ string, cp devices.Capability) {
		ds := capDevs[cp]
		if ds == nil {
			ds = []string{}
		}
		cfgs = append(cfgs, settingJSON{Type: typ, Supported: len(ds) > 0, Devices: ds})
	}
	switch name {
	case "activePowerGridSettings":
		add("DynamicActivePowerLimitDeactivatedConfig", devices.CapPowerLimit)
		add("FixedActivePowerLimitDeactivatedConfig", devices.CapPowerLimit)
		add("FreqWattCurveDeactivatedConfig", devices.CapFreqWatt)
		add("VoltWattCurveDeactivatedConfig", devices.CapVoltWatt)
	case "reactivePowerGridSettings":
		add("ReactivePowerGridDeactivatedSetting", devices.CapReactivePower)
	case "frequencyFaultRideThroughSettings":
		add("LowFrequencyRideThroughDeviceDefault", devices.CapLFRT)
		add("HighFrequencyRideThroughDeviceDefault", devices.CapHFRT)
	case "voltageFaultRideThroughSettings":
		add("LowVoltageRideThroughDeviceDefault", devices.CapLVRT)
		add("HighVoltageRideThroughDeviceDefault", devices.CapHVRT)
	}
	s.writeJSON(c, http.StatusOK, struct {
		Plant          plantJSON     `json:"plant"`
		SettingsType   string        `json:"settingsType"`
		Configurations []settingJSON `json:"configurations"`
	}{plantObj(p), name, cfgs}, false)
}
