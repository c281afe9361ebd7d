package httpapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"plantd/httpapi/apidoc"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"plantd/httpapi/oauth2"
	"plantd/plant"
)

// Consumers is the home energy manager (a *consumer.Manager); nil: the
// plant has none, the consumer routes list nothing and PUT answers 404.
type Consumers interface {
	Consumers() []plant.ConsumerStatus
	// SetMode sets a consumer's mode; an unknown id is an error wrapping
	// plant.ErrUnknownDevice.
	SetMode(ctx context.Context, deviceID string, mode plant.ConsumerMode, by string) (plant.ConsumerStatus, error)
	// SetPlan puts a charger in mode Plan with a target; errors wrap
	// plant.ErrUnknownDevice, plant.ErrModeNotForConsumer (no charger)
	// or plant.ErrBadPlan.
	SetPlan(ctx context.Context, deviceID string, p plant.ChargePlan, by string) (plant.ConsumerStatus, error)
}

// consumerList is GET /gateway/v1/consumers[?plantId=] (standard): every
// consumer of the gateway, or of one plant; an unknown plantId is 404, a
// migrated one answers for its new id, an empty one lists all.
func (s *Server) consumerList(c *gin.Context) {
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
	out := []plant.ConsumerStatus{}
	if s.deps.Consumers != nil {
		for _, cs := range s.deps.Consumers.Consumers() {
			if !filter || cs.PlantID == pid {
				out = append(out, consumerOut(cs))
			}
		}
	}
	s.writeJSON(c, http.StatusOK, envelope(field("consumers", out)), false)
}

// consumerByID is GET /gateway/v1/consumers/{deviceId} (standard): one
// consumer, bare as in the list; 404 for a device that is none.
func (s *Server) consumerByID(c *gin.Context) {
	if redirectMigrated(c, "deviceId", s.migratedDevices) {
		return
	}
	cs, ok := s.consumer(c)
	if !ok {
		return
	}
	s.writeJSON(c, http.StatusOK, consumerOut(cs), false)
}

// consumer looks up {deviceId} among the consumers; it answers 404 and
// returns false when there is none of that id.
func (s *Server) consumer(c *gin.Context) (plant.ConsumerStatus, bool) {
	id := c.Param("deviceId")
	if s.deps.Consumers != nil {
		for _, cs := range s.deps.Consumers.Consumers() {
			if cs.DeviceID == id {
				return cs, true
			}
		}
	}
	fail(c, http.StatusNotFound, plant.CodeNotFound, fmt.Sprintf("unknown consumer %q", id), FieldError{Field: "deviceId", Message: "unknown consumer"})
	return plant.ConsumerStatus{}, false
}

// setConsumerMode is PUT /gateway/v1/consumers/{deviceId}/mode
// (installer) with {"mode": "Auto"|"On"|"Off"} (any letter case): the
// manager holds the consumer in that mode; the answer is the consumer
// after the change, as GET answers it. by is the caller's credential name.
func (s *Server) setConsumerMode(c *gin.Context) {
	if redirectMigrated(c, "deviceId", s.migratedDevices) {
		return
	}
	if _, ok := s.consumer(c); !ok {
		return
	}
	var in struct {
		Mode *string `json:"mode"`
	}
	if !decodeJSON(c, &in) {
		return
	}
	if in.Mode == nil {
		fail(c, http.StatusBadRequest, plant.CodeBadBody, "mode is required", FieldError{Field: "mode", Message: "required: Auto, On or Off (a charger: Off, Now, MinPV or PV)"})
		return
	}
	mode, ok := plant.ParseConsumerMode(*in.Mode)
	if !ok {
		fail(c, http.StatusBadRequest, plant.CodeBadBody, fmt.Sprintf("unknown mode %q", *in.Mode), FieldError{Field: "mode", Message: "want Auto, On or Off (a charger: Off, Now, MinPV or PV)"})
		return
	}
	by, _ := oauth2.Caller(c)
	cs, err := s.deps.Consumers.SetMode(c.Request.Context(), c.Param("deviceId"), mode, by)
	switch {
	case errors.Is(err, plant.ErrUnknownDevice):
		fail(c, http.StatusNotFound, plant.CodeNotFound, err.Error(), FieldError{Field: "deviceId", Message: "unknown consumer"})
		return
	case errors.Is(err, plant.ErrModeNotForConsumer):
		fail(c, http.StatusUnprocessableEntity, plant.CodeBadBody, err.Error(), FieldError{Field: "mode", Message: "MinPV is a charger's mode; this consumer takes Auto, On or Off"})
		return
	case err != nil && c.Request.Context().Err() != nil:
		fail(c, http.StatusServiceUnavailable, plant.CodeUnavailable, "request cancelled")
		return
	case err != nil:
		s.internal(c, fmt.Errorf("set mode of consumer %q to %s: %w", c.Param("deviceId"), mode, err))
		return
	}
	s.writeJSON(c, http.StatusOK, consumerOut(cs), false)
}

// setConsumerPlan is PUT /gateway/v1/consumers/{deviceId}/plan
// (installer) with {"energy": Wh} or {"soc": %} and {"deadline": RFC
// 3339}: the charger charges the target by the deadline in the day-ahead
// plan's cheapest slots (mode Plan, evcc's plans), on surplus otherwise;
// the answer is the consumer after the change. A mode set over
// .../mode ends the plan.
func (s *Server) setConsumerPlan(c *gin.Context) {
	if redirectMigrated(c, "deviceId", s.migratedDevices) {
		return
	}
	if _, ok := s.consumer(c); !ok {
		return
	}
	var in struct {
		Energy   *float64 `json:"energy"`
		SoC      *float64 `json:"soc"`
		Deadline *string  `json:"deadline"`
	}
	if !decodeJSON(c, &in) {
		return
	}
	var p plant.ChargePlan
	switch {
	case (in.Energy == nil) == (in.SoC == nil):
		fail(c, http.StatusBadRequest, plant.CodeBadBody, "give either energy (Wh) or soc (%)", FieldError{Field: "energy", Message: "either energy (Wh, 1..1000000) or soc (%, 1..100)"})
		return
	case in.Energy != nil && !(*in.Energy >= 1 && *in.Energy <= 1e6):
		fail(c, http.StatusBadRequest, plant.CodeBadBody, fmt.Sprintf("energy %v Wh is out of range", *in.Energy), FieldError{Field: "energy", Message: "1..1000000 Wh"})
		return
	case in.SoC != nil && !(*in.SoC >= 1 && *in.SoC <= 100):
		fail(c, http.StatusBadRequest, plant.CodeBadBody, fmt.Sprintf("soc %v %% is out of range", *in.SoC), FieldError{Field: "soc", Message: "1..100 %"})
		return
	case in.Deadline == nil:
		fail(c, http.StatusBadRequest, plant.CodeBadBody, "deadline is required", FieldError{Field: "deadline", Message: "required: RFC 3339 time"})
		return
	}
	if in.Energy != nil {
		p.EnergyWh = *in.Energy
	} else {
		p.SoCPct = *in.SoC
	}
	t, err := time.Parse(time.RFC3339, *in.Deadline)
	if err != nil {
		fail(c, http.StatusBadRequest, plant.CodeBadBody, fmt.Sprintf("deadline %q is no RFC 3339 time", *in.Deadline), FieldError{Field: "deadline", Message: "an RFC 3339 time"})
		return
	}
	p.Deadline = t
	by, _ := oauth2.Caller(c)
	cs, err := s.deps.Consumers.SetPlan(c.Request.Context(), c.Param("deviceId"), p, by)
	switch {
	case errors.Is(err, plant.ErrUnknownDevice):
		fail(c, http.StatusNotFound, plant.CodeNotFound, err.Error(), FieldError{Field: "deviceId", Message: "unknown consumer"})
		return
	case errors.Is(err, plant.ErrModeNotForConsumer):
		fail(c, http.StatusUnprocessableEntity, plant.CodeBadBody, err.Error(), FieldError{Field: "deviceId", Message: "Plan is a charger's mode"})
		return
	case errors.Is(err, plant.ErrBadPlan):
		field := "deadline"
		if p.SoCPct > 0 && !strings.Contains(err.Error(), "deadline") {
			field = "soc"
		}
		fail(c, http.StatusBadRequest, plant.CodeBadBody, err.Error(), FieldError{Field: field, Message: err.Error()})
		return
	case err != nil && c.Request.Context().Err() != nil:
		fail(c, http.StatusServiceUnavailable, plant.CodeUnavailable, "request cancelled")
		return
	case err != nil:
		s.internal(c, fmt.Errorf("set the plan of consumer %q: %w", c.Param("deviceId"), err))
		return
	}
	s.writeJSON(c, http.StatusOK, consumerOut(cs), false)
}

// consumerOut is cs as the API writes it: nextMustRun in UTC (every time
// outside measurement sets is RFC 3339 UTC, DESIGN §4).
func consumerOut(cs plant.ConsumerStatus) plant.ConsumerStatus {
	if cs.NextMustRun != nil {
		t := cs.NextMustRun.UTC()
		cs.NextMustRun = &t
	}
	if cs.Plan != nil {
		p := *cs.Plan
		p.Deadline = p.Deadline.UTC()
		cs.Plan = &p
	}
	if cs.Planned != nil {
		p := *cs.Planned
		p.Until = p.Until.UTC()
		cs.Planned = &p
	}
	return cs
}

// liveConsumer fills the consumer members of a live device list item:
// the switching state and consumption (W) of the device's last reading,
// none while the device is offline (its output may have fallen to its
// safe state since) or for a device that is no consumer.
func liveConsumer(j *liveDeviceJSON, d plant.DeviceLive) {
	r := d.Consumer
	if r == nil || offline(d) {
		return
	}
	j.SwitchingState = string(r.Switch)
	if r.HasPower && !math.IsNaN(r.PowerW) && !math.IsInf(r.PowerW, 0) {
		w := r.PowerW
		j.Consumption = &w
	}
}

// consumerSchemas are the schemas of /gateway/v1/consumers.
func consumerSchemas() apidoc.Obj {
	integer := func(min int) apidoc.Obj { return apidoc.Obj{"type": "integer", "minimum": min} }
	return apidoc.Obj{
		"Consumer": apidoc.Describe(apidoc.Object(apidoc.Obj{
			"deviceId": apidoc.Str(), "plantId": apidoc.Str(), "name": apidoc.Str(),
			"driver": apidoc.Describe(apidoc.Enum("relay", "sgready", "shelly", "ocpp"), "the hardware: a relay output of a Modbus I/O module, an SG-Ready heat pump on a relay pair, a Shelly plug or relay, an EV charger over OCPP 1.6J"),
			"mode": apidoc.Describe(apidoc.Enum("Auto", "On", "Off", "MinPV", "Plan"), "who decides the output: Auto, the surplus controller and the must-run windows "+
				"(an SG-Ready heat pump: and the day-ahead plan's state in cheap and dear hours); "+
				"On and Off, the installer (held against surplus and must-run windows; the minimum on and off times still apply); "+
				"a charger's MinPV charges at its minimum current always and more with surplus; a charger's Plan charges its target (plan) by its deadline in the day-ahead plan's cheapest slots and on surplus in the others (set with PUT .../plan). "+
				"A set accepts a charger's Now (= On) and PV (= Auto) too"),
			"plan": apidoc.Describe(apidoc.Object(apidoc.Obj{
				"energy":    apidoc.Describe(apidoc.Num(), "the target: energy to charge, Wh (absent with a SoC target)"),
				"soc":       apidoc.Describe(apidoc.Num(), "the target: the car's SoC, % (absent with an energy target)"),
				"deadline":  apidoc.UTCTime(),
				"remaining": apidoc.Describe(apidoc.Num(), "what is still to charge, Wh; absent when unknown (a SoC target while the charger reports no SoC)"),
			}, "deadline"), "a charger's target in mode Plan; absent in other modes"),
			"planned": apidoc.Describe(apidoc.Object(apidoc.Obj{
				"power":        apidoc.Describe(apidoc.Num(), "a car's planned charging power, W (0: surplus only in this slot)"),
				"sgReadyState": apidoc.Describe(apidoc.Obj{"type": "integer", "minimum": 1, "maximum": 4}, "a heat pump's planned SG-Ready state"),
				"until":        apidoc.UTCTime(),
			}, "until"), "the day-ahead plan's step for this consumer in the slot of now; absent when the plan asks nothing of it"),
			"charger": apidoc.Describe(apidoc.Object(apidoc.Obj{
				"status":     apidoc.Describe(apidoc.Str(), "the connector's OCPP 1.6 status (Available, Preparing, Charging, SuspendedEV, SuspendedEVSE, Finishing, Faulted, Unavailable); empty before the charger told it"),
				"current":    apidoc.Describe(apidoc.Num(), "the charging current per phase plantd's last accepted profile allows, A (0: paused)"),
				"phases":     apidoc.Describe(apidoc.Obj{"type": "integer", "enum": []int{1, 3}}, "phases it charges on"),
				"minCurrent": apidoc.Describe(apidoc.Num(), "A per phase"),
				"maxCurrent": apidoc.Describe(apidoc.Num(), "A per phase"),
				"vehicleSoc": apidoc.Describe(apidoc.Num(), "the car's state of charge, %; absent when the charger does not report it"),
			}, "status", "current", "phases", "minCurrent", "maxCurrent"), "an EV charger's state; absent for other consumers"),
			"priority":       apidoc.Describe(apidoc.Obj{"type": "integer"}, "order in which surplus is given to the consumers"),
			"ratedPower":     apidoc.Describe(apidoc.Num(), "the configured power while on, W"),
			"switchingState": apidoc.Describe(apidoc.Enum("On", "Off"), "the output read back from the device; absent before the first successful poll"),
			"sgReadyState": apidoc.Describe(apidoc.Obj{"type": "integer", "minimum": 1, "maximum": 4},
				"an SG-Ready heat pump's operating state read back: 1 locked (utility lock), 2 normal, 3 switch-on recommended, 4 switch-on forced; absent for other consumers"),
			"consumption":          apidoc.Describe(apidoc.Num(), "power now, W; absent when unknown"),
			"consumptionEstimated": apidoc.Describe(apidoc.Bool(), "consumption and energyToday come from ratedPower while on, not from a meter"),
			"energyToday":          apidoc.Describe(apidoc.Num(), "energy since local midnight, Wh; absent when unknown"),
			"reason": apidoc.Describe(apidoc.Enum(plant.ConsumerReasons()...),
				"why the output is what it is: Surplus (on, PV surplus), NoSurplus (off, not enough surplus), Probing (off, waits its turn to try PV a limit holds back), "+
					"NoMeter (off, no grid meter answers), MustRun (a must-run window), "+
					"Manual (mode On or Off), MinOnTime / MinOffTime (held until the minimum time passed), MaxSwitches (the switchings per hour are used up), "+
					"Offline (the device does not answer), Starting (no decision yet), Dimmed (the grid operator dims the plant, §14a EnWG); "+
					"a charger's MinPV (at its minimum current), EnableDelay / DisableDelay (PV mode waits its delay to start or stop), NoVehicle (no car plugged in); "+
					"Plan (the day-ahead plan's step: a heat pump's SG-Ready state, a car's charging power)"),
			"nextMustRun":        apidoc.Describe(apidoc.UTCTime(), "start of the next must-run window; absent when none"),
			"switchesLastHour":   integer(0),
			"maxSwitchesPerHour": apidoc.Describe(integer(0), "0: no bound"),
			"minOnTime":          apidoc.Describe(apidoc.Obj{"type": "number", "minimum": 0}, "s"),
			"minOffTime":         apidoc.Describe(apidoc.Obj{"type": "number", "minimum": 0}, "s"),
		}, "deviceId", "plantId", "name", "driver", "mode", "priority", "ratedPower", "consumptionEstimated", "reason",
			"switchesLastHour", "maxSwitchesPerHour", "minOnTime", "minOffTime"),
			"a consumer of the home energy manager: its settings, its output and why (plantd's)"),
		"Consumers": apidoc.Object(apidoc.Obj{"consumers": apidoc.Arr(apidoc.Ref("Consumer"))}, "consumers"),
		"ConsumerPlanRequest": apidoc.Describe(apidoc.Object(apidoc.Obj{
			"energy":   apidoc.Describe(apidoc.Obj{"type": "number", "minimum": 1, "maximum": 1e6}, "energy to charge, Wh; give this or soc"),
			"soc":      apidoc.Describe(apidoc.Obj{"type": "number", "minimum": 1, "maximum": 100}, "the car's target SoC, %; needs the consumer's vehicleCapacity and a charger that reports the SoC"),
			"deadline": apidoc.Describe(apidoc.Str(), "RFC 3339 time, in the future and at most 7 days ahead"),
		}, "deadline"), "a charger's Plan target: energy or soc by deadline"),
		"ConsumerModeRequest": apidoc.Describe(apidoc.Object(apidoc.Obj{"mode": apidoc.Enum("Auto", "On", "Off")}, "mode"),
			"the mode to hold the consumer in; the words are accepted in any letter case"),
	}
}
