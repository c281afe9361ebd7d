package httpapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"plantd/httpapi/apidoc"

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

// consumerOut is cs as the API writes it: nextMustRun in UTC (every time
// outside measurement sets is RFC 3339 UTC, DESIGN §4).
func consumerOut(cs plant.ConsumerStatus) plant.ConsumerStatus {
	if cs.NextMustRun != nil {
		t := cs.NextMustRun.UTC()
		cs.NextMustRun = &t
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
			"mode": apidoc.Describe(apidoc.Enum("Auto", "On", "Off", "MinPV"), "who decides the output: Auto, the surplus controller and the must-run windows; "+
				"On and Off, the installer (held against surplus and must-run windows; the minimum on and off times still apply); "+
				"a charger's MinPV charges at its minimum current always and more with surplus. A set accepts a charger's Now (= On) and PV (= Auto) too"),
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
					"a charger's MinPV (at its minimum current), EnableDelay / DisableDelay (PV mode waits its delay to start or stop), NoVehicle (no car plugged in)"),
			"nextMustRun":        apidoc.Describe(apidoc.UTCTime(), "start of the next must-run window; absent when none"),
			"switchesLastHour":   integer(0),
			"maxSwitchesPerHour": apidoc.Describe(integer(0), "0: no bound"),
			"minOnTime":          apidoc.Describe(apidoc.Obj{"type": "number", "minimum": 0}, "s"),
			"minOffTime":         apidoc.Describe(apidoc.Obj{"type": "number", "minimum": 0}, "s"),
		}, "deviceId", "plantId", "name", "driver", "mode", "priority", "ratedPower", "consumptionEstimated", "reason",
			"switchesLastHour", "maxSwitchesPerHour", "minOnTime", "minOffTime"),
			"a consumer of the home energy manager: its settings, its output and why (plantd's)"),
		"Consumers": apidoc.Object(apidoc.Obj{"consumers": apidoc.Arr(apidoc.Ref("Consumer"))}, "consumers"),
		"ConsumerModeRequest": apidoc.Describe(apidoc.Object(apidoc.Obj{"mode": apidoc.Enum("Auto", "On", "Off")}, "mode"),
			"the mode to hold the consumer in; the words are accepted in any letter case"),
	}
}
