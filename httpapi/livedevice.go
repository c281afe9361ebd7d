package httpapi

import (
	"net/http"
	"plantd/httpapi/apidoc"

	"github.com/gin-gonic/gin"

	"plantd/plant"
)

// liveDeviceValueJSON is one latest value of a device with its unit.
type liveDeviceValueJSON struct {
	// Name is the channel's name: the measurement-set field, with "Total"
	// added for lifetime counters (pvGenerationTotal, Wh).
	Name    string  `json:"name"`
	Index   string  `json:"index,omitempty"`
	Value   float64 `json:"value"`
	Unit    string  `json:"unit"`
	SetType string  `json:"setType"`
}

// liveDeviceDetailJSON is GET /live/v1/devices/{deviceId} (modelled): what
// plantd knows of one device now, for its own page and for installers.
type liveDeviceDetailJSON struct {
	Plant         plantJSON             `json:"plant"`
	Device        deviceJSON            `json:"device"`
	Platform      string                `json:"platform,omitempty"`
	Version       string                `json:"version,omitempty"`
	SunSpecModels []uint16              `json:"sunspecModels"`
	HealthStatus  string                `json:"healthStatus"`
	HealthReason  string                `json:"healthReason,omitempty"`
	Communication commJSON              `json:"communication"`
	LastUpdateUtc string                `json:"lastUpdateUtc,omitempty"`
	Values        []liveDeviceValueJSON `json:"values"`
}

// liveDevice is GET /live/v1/devices/{deviceId}: the device's latest
// values with units, health v2 and its reason, communication, and the
// SunSpec models discovery found.
func (s *Server) liveDevice(c *gin.Context) {
	p, d := ctxPlantOf(c), ctxDeviceOf(c)
	out := liveDeviceDetailJSON{Plant: plantObj(p), Device: s.deviceOf(p, d), SunSpecModels: []uint16{},
		HealthStatus: string(d.Health), HealthReason: d.HealthReason, Values: []liveDeviceValueJSON{},
		Communication: commJSON{DeviceID: d.Info.ID, Status: string(d.Comm.Status), SuccessRate: d.Comm.SuccessRate}}
	if out.HealthStatus == "" {
		out.HealthStatus = string(plant.HealthNotAvailable)
	}
	if !d.Comm.LastContact.IsZero() {
		out.Communication.LastContactUtc = utc(d.Comm.LastContact)
	}
	if d.Comm.LastError != nil {
		out.Communication.LastError = d.Comm.LastError.Error()
	}
	if !d.LastUpdate.IsZero() {
		out.LastUpdateUtc = utc(d.LastUpdate)
	}
	if d.Nameplate != nil {
		out.Platform, out.Version = d.Nameplate.Platform, d.Nameplate.Version
		out.SunSpecModels = d.Nameplate.Models
	}
	for _, r := range d.Readings {
		v := liveDeviceValueJSON{Name: r.Channel.Name(), Value: r.Value, Unit: string(r.Channel.Unit()), SetType: string(r.Channel.Set())}
		if r.Channel.Indexed() {
			v.Index = plant.IndexLabel(r.Index)
		}
		out.Values = append(out.Values, v)
	}
	s.writeJSON(c, http.StatusOK, out, false)
}

// liveDeviceSchema is the OpenAPI schema of GET /live/v1/devices/{deviceId}.
func liveDeviceSchema() apidoc.Obj {
	return apidoc.Describe(apidoc.Object(apidoc.Obj{
		"plant":         apidoc.Ref("Plant"),
		"device":        apidoc.Describe(apidoc.Obj{"type": "object"}, "the device as in GET .../plants/{plantId}/devices"),
		"platform":      apidoc.Describe(apidoc.Enum("classic", "der"), "SunSpec generation: classic (1xx models) or der (7xx)"),
		"version":       apidoc.Str(),
		"sunspecModels": apidoc.Describe(apidoc.Arr(apidoc.Obj{"type": "integer"}), "the SunSpec model ids discovery found, in chain order"),
		"healthStatus":  apidoc.Enum("Ok", "Warning", "Error", "Off", "NotAvailable"),
		"healthReason":  apidoc.Describe(apidoc.Str(), "what decided healthStatus (\"St FAULT\", \"offline\", \"stale\")"),
		"communication": apidoc.Object(apidoc.Obj{"deviceId": apidoc.Str(), "status": apidoc.Enum("Ok", "Partial", "TimedOut", "Unreachable"),
			"lastContactUtc": apidoc.UTCTime(), "lastError": apidoc.Str(), "successRate": apidoc.Obj{"type": "number", "minimum": 0, "maximum": 1}},
			"deviceId", "status", "successRate"),
		"lastUpdateUtc": apidoc.UTCTime(),
		"values": apidoc.Arr(apidoc.Object(apidoc.Obj{"name": apidoc.Describe(apidoc.Str(), "the set field; lifetime counters end in Total (Wh)"),
			"index": apidoc.Describe(apidoc.Str(), "input label of indexed channels (A, B, ...)"), "value": apidoc.Num(),
			"unit": apidoc.Describe(apidoc.Str(), "W, Wh, VA, var, V, A, Hz, Ω, %, °C, W/m², m/s; empty for a plain ratio"), "setType": apidoc.Str()},
			"name", "value", "unit", "setType")),
	}, "plant", "device", "sunspecModels", "healthStatus", "communication", "values"),
		"the latest values of one device with units, its health and communication (plantd's; the gateway page's device view)")
}
