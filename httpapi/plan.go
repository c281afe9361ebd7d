package httpapi

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"plantd/httpapi/apidoc"
	"plantd/plan"
	"plantd/plant"
	"plantd/siteplan"
)

// Planner is the day-ahead plan's runner (a *siteplan.Runner); nil: no
// plan (no tariffs: section), GET /gateway/v1/plan says so.
type Planner interface {
	Snapshot() siteplan.Snapshot
}

// planJSON is the answer of GET /gateway/v1/plan.
type planJSON struct {
	Configured bool   `json:"configured"`
	PlantID    string `json:"plantId,omitempty"`
	// Fallback says why control is surplus-only (no plan); absent while
	// a plan governs.
	Fallback        string   `json:"fallback,omitempty"`
	BaseLoadSource  string   `json:"baseLoadSource,omitempty"`
	StartUtc        string   `json:"startUtc,omitempty"`
	SlotMinutes     float64  `json:"slotMinutes,omitempty"`
	CostEur         *float64 `json:"costEur,omitempty"`
	BaselineCostEur *float64 `json:"baselineCostEur,omitempty"`
	SavingEur       *float64 `json:"savingEur,omitempty"`
	// HeatPumpID and CarID are the consumers planned as the heat pump
	// and the car; CarShortWh what the car's target misses (best effort).
	HeatPumpID string         `json:"heatPumpId,omitempty"`
	CarID      string         `json:"carId,omitempty"`
	CarShortWh *float64       `json:"carShortWh,omitempty"`
	Steps      []planStepJSON `json:"steps"`
}

// planStepJSON is one slot of the plan.
type planStepJSON struct {
	StartUtc         string  `json:"startUtc"`
	ImportEurPerKWh  float64 `json:"importEurPerKWh"`
	FeedInEurPerKWh  float64 `json:"feedInEurPerKWh"`
	PVW              float64 `json:"pvW"`
	BaseLoadW        float64 `json:"baseLoadW"`
	Battery          string  `json:"battery"`
	BatteryW         float64 `json:"batteryW"`
	BatteryFromGridW float64 `json:"batteryFromGridW"`
	SoCPct           float64 `json:"socPct"`
	ImportW          float64 `json:"importW"`
	ExportW          float64 `json:"exportW"`
	CurtailedW       float64 `json:"curtailedW"`
	CostEur          float64 `json:"costEur"`
	Reason           string  `json:"reason"`
	// SGReady and HeatPumpW: the heat pump's state and draw; CarW the
	// car's charging power (absent when not planned).
	SGReady   int      `json:"sgReadyState,omitempty"`
	HeatPumpW *float64 `json:"heatPumpW,omitempty"`
	CarW      *float64 `json:"carW,omitempty"`
}

// planShow is GET /gateway/v1/plan (standard): the day-ahead plan in
// force, slot by slot, with its cost against no plan; or why there is
// none (control surplus-only).
func (s *Server) planShow(c *gin.Context) {
	for k := range c.Request.URL.Query() {
		fail(c, http.StatusBadRequest, plant.CodeBadParameter, fmt.Sprintf("unknown query parameter %q", k), FieldError{Field: k, Message: "unknown parameter; none taken"})
		return
	}
	if s.deps.Planner == nil {
		s.writeJSON(c, http.StatusOK, planJSON{Steps: []planStepJSON{}}, false)
		return
	}
	snap := s.deps.Planner.Snapshot()
	out := planJSON{Configured: true, PlantID: snap.PlantID, Fallback: snap.Fallback, Steps: []planStepJSON{}}
	if p := snap.Plan; p != nil {
		out.Fallback, out.BaseLoadSource = "", string(snap.BaseLoadSource)
		out.StartUtc, out.SlotMinutes = utc(p.Start), p.Slot.Minutes()
		out.CostEur, out.BaselineCostEur, out.SavingEur = &p.CostEUR, &p.BaselineCostEUR, &p.SavingEUR
		out.Steps = make([]planStepJSON, len(p.Steps))
		for i, st := range p.Steps {
			var in plan.Slot
			if i < len(snap.Input.Slots) {
				in = snap.Input.Slots[i]
			}
			out.Steps[i] = planStepJSON{StartUtc: utc(st.Start), ImportEurPerKWh: in.ImportEURPerKWh, FeedInEurPerKWh: in.FeedInEURPerKWh,
				PVW: in.PVW, BaseLoadW: in.BaseLoadW, Battery: string(st.Battery), BatteryW: st.BatteryW, BatteryFromGridW: st.BatteryFromGridW,
				SoCPct: st.SoCPct, ImportW: st.ImportW, ExportW: st.ExportW, CurtailedW: st.CurtailedW, CostEur: st.CostEUR, Reason: st.Reason}
			if snap.Input.HeatPump != nil {
				out.Steps[i].SGReady, out.Steps[i].HeatPumpW = st.SGReady, &p.Steps[i].HeatPumpW
			}
			if snap.Input.Car != nil {
				out.Steps[i].CarW = &p.Steps[i].CarW
			}
		}
		out.HeatPumpID, out.CarID = snap.HeatPumpID, snap.CarID
		if snap.Input.Car != nil {
			out.CarShortWh = &p.CarShortWh
		}
	}
	s.writeJSON(c, http.StatusOK, out, false)
}

// planResponse is the OpenAPI 200 response of GET /gateway/v1/plan.
func planResponse() apidoc.Obj {
	num := func(d string) apidoc.Obj { return apidoc.Describe(apidoc.Num(), d) }
	reasons := apidoc.Obj{"type": "string", "enum": plan.Reasons()}
	step := apidoc.Object(apidoc.Obj{
		"startUtc": apidoc.UTCTime(), "importEurPerKWh": num("the slot's import price, EUR/kWh"), "feedInEurPerKWh": num("the slot's feed-in price, EUR/kWh"),
		"pvW": num("the PV forecast, W"), "baseLoadW": num("the house's load the plan assumes, W"),
		"battery": apidoc.Describe(apidoc.Obj{"type": "string", "enum": plan.BatteryActions()},
			"the battery's action: hold keeps its energy (no discharge; PV surplus the forecast missed may still charge it), keepRoom keeps it at 0 W both ways (the forecast PV surplus exported to keep room for later, e.g. before negative feed-in prices), chargePV charges from PV surplus, chargeGrid partly from the grid, discharge covers the house"),
		"batteryW":         num("the battery's power, W: positive charging, negative discharging"),
		"batteryFromGridW": num("the part of the charging taken from the grid, W"), "socPct": num("the battery's SoC at the slot's end, %"),
		"importW": num("W"), "exportW": num("W"), "curtailedW": num("PV held back (export held at 0 W below the feed-in floor), W"),
		"costEur": num("the slot's cost, EUR"), "reason": reasons,
		"sgReadyState": apidoc.Describe(apidoc.Obj{"type": "integer", "minimum": 1, "maximum": 4}, "the heat pump's planned SG-Ready state; absent without a planned heat pump"),
		"heatPumpW":    num("the heat pump's expected draw, W; absent without a planned heat pump"),
		"carW":         num("the car's planned charging power, W (0: on surplus only); absent without a car in Plan mode"),
	}, "startUtc", "battery", "batteryW", "socPct", "importW", "exportW", "costEur", "reason")
	body := apidoc.Object(apidoc.Obj{
		"configured": apidoc.Describe(apidoc.Bool(), "false: no tariffs: section, no plan (the other members are absent, steps empty)"),
		"plantId":    apidoc.Str(),
		"fallback":   apidoc.Describe(apidoc.Str(), "why control is surplus-only (no plan: prices stale or missing); absent while a plan governs"),
		"baseLoadSource": apidoc.Describe(apidoc.Obj{"type": "string", "enum": []string{string(siteplan.BaseLoadHistory), string(siteplan.BaseLoadLive), string(siteplan.BaseLoadNone)}},
			"where the steps' baseLoadW came from: history (the forecast from the plant's last 14 days, its first two hours blended toward the live load), live (the smoothed live load, flat: too little history), none (no load known yet: 0); absent without a plan"),
		"startUtc":        apidoc.UTCTime(),
		"slotMinutes":     apidoc.Num(),
		"costEur":         num("the plan's expected cost over the horizon, EUR (the battery's end energy valued)"),
		"baselineCostEur": num("the same horizon without a plan (surplus-only self-consumption), EUR"),
		"savingEur":       num("baselineCostEur − costEur"),
		"heatPumpId":      apidoc.Describe(apidoc.Str(), "the SG-Ready heat pump the plan schedules (the first in mode Auto); absent: none"),
		"carId":           apidoc.Describe(apidoc.Str(), "the charger in mode Plan the plan schedules; absent: none"),
		"carShortWh":      num("what the car's target misses by its deadline, Wh (the plan charges what it can); absent without a car"),
		"steps":           apidoc.Describe(apidoc.Arr(step), "the plan slot by slot; the first is followed now"),
	}, "configured", "steps")
	return apidoc.Obj{"description": "the day-ahead plan (plantd's)", "content": apidoc.Obj{"application/json": apidoc.Obj{"schema": body}}}
}
