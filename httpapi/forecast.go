package httpapi

import (
	"fmt"
	"math"
	"net/http"

	"github.com/gin-gonic/gin"

	"plantd/forecast"
	"plantd/httpapi/apidoc"
	"plantd/plant"
)

// Forecasts is the PV forecast (a *forecast.Service): a plant's forecast
// as last made and its days' accuracy; false for a plant it does not run
// for (one without a location, or the forecast off).
type Forecasts interface {
	Forecast(plantID string) (forecast.Forecast, []forecast.DayAccuracy, bool)
}

// forecastJSON is one plant of GET /gateway/v1/forecast.
type forecastJSON struct {
	PlantID         string             `json:"plantId"`
	MadeUtc         string             `json:"madeUtc,omitempty"`
	HistoryDays     int                `json:"historyDays"`
	Clearness       *float64           `json:"clearness,omitempty"`
	RecentClearness *float64           `json:"recentClearness,omitempty"`
	PeakW           *float64           `json:"peakW,omitempty"`
	Service         *forecastService   `json:"service,omitempty"`
	LoadDays        int                `json:"loadDays"`
	LoadSplit       bool               `json:"loadWeekendsApart"`
	Slots           []forecastSlotJSON `json:"slots"`
	Accuracy        []forecastDayJSON  `json:"accuracy"`
}

type forecastService struct {
	LastAnswerUtc string `json:"lastAnswerUtc,omitempty"`
	Error         string `json:"error,omitempty"`
}

type forecastSlotJSON struct {
	StartUtc string   `json:"startUtc"`
	PowerW   float64  `json:"powerW"`
	Source   string   `json:"source"`
	LoadW    *float64 `json:"loadW,omitempty"`
}

type forecastDayJSON struct {
	Date        string  `json:"date"`
	MadeUtc     string  `json:"madeUtc"`
	MAEW        float64 `json:"maeW"`
	MAERelative float64 `json:"maeRelative"`
	PeakW       float64 `json:"peakW"`
	Slots       int     `json:"slots"`
	ForecastWh  float64 `json:"forecastWh"`
	ActualWh    float64 `json:"actualWh"`
	// The naive forecasts' MAE over the same slots.
	PersistenceMAEW *float64 `json:"persistenceMaeW,omitempty"`
	ClearSkyMAEW    float64  `json:"clearSkyMaeW"`
	// Load: the day's base-load forecast against the measured base load.
	Load *forecast.LoadAccuracy `json:"load,omitempty"`
}

// forecastList is GET /gateway/v1/forecast[?plantId=] (standard): each
// plant's PV forecast for the next 36 h in 15-minute slots and the last
// days' accuracy, of all plants the forecast runs for or of one (404 when
// unknown; a migrated id answers for the new one).
func (s *Server) forecastList(c *gin.Context) {
	for k := range c.Request.URL.Query() {
		if k != "plantId" {
			fail(c, http.StatusBadRequest, plant.CodeBadParameter, fmt.Sprintf("unknown query parameter %q", k), FieldError{Field: k, Message: "unknown parameter; only plantId"})
			return
		}
	}
	pid := c.Query("plantId")
	if pid != "" {
		if nid, ok := s.migratedPlants[pid]; ok {
			pid = nid
		}
		if _, ok := s.deps.Live.Plant(pid); !ok {
			fail(c, http.StatusNotFound, plant.CodeNotFound, fmt.Sprintf("unknown plant %q", pid), FieldError{Field: "plantId", Message: "unknown plant"})
			return
		}
	}
	out := []forecastJSON{}
	if s.deps.Forecasts != nil {
		for _, p := range s.deps.Live.Plants() {
			if pid != "" && p.ID != pid {
				continue
			}
			if f, days, ok := s.deps.Forecasts.Forecast(p.ID); ok {
				out = append(out, forecastOut(p.ID, f, days))
			}
		}
	}
	s.writeJSON(c, http.StatusOK, envelope(field("forecasts", out)), false)
}

// forecastOut is a plant's forecast as the API writes it: powers and
// energies to the watt (hour), ratios to 0.001.
func forecastOut(plantID string, f forecast.Forecast, days []forecast.DayAccuracy) forecastJSON {
	o := forecastJSON{PlantID: plantID, HistoryDays: f.HistoryDays, LoadDays: f.LoadDays, LoadSplit: f.LoadSplit, Slots: make([]forecastSlotJSON, 0, len(f.Slots)),
		Accuracy: make([]forecastDayJSON, 0, len(days))}
	if !f.Made.IsZero() {
		o.MadeUtc = utc(f.Made)
		clearness, peak := round(f.Clearness, 1000), math.Round(f.PeakW)
		o.Clearness, o.PeakW = &clearness, &peak
	}
	if f.Recent != nil {
		recent := round(*f.Recent, 1000)
		o.RecentClearness = &recent
	}
	if !f.ServiceAt.IsZero() || f.ServiceError != "" {
		o.Service = &forecastService{LastAnswerUtc: utcOrEmpty(f.ServiceAt), Error: f.ServiceError}
	}
	for _, sl := range f.Slots {
		o.Slots = append(o.Slots, forecastSlotJSON{StartUtc: utc(sl.Start), PowerW: math.Round(sl.PowerW), Source: string(sl.Source)})
		if sl.LoadW != nil {
			w := math.Round(*sl.LoadW)
			o.Slots[len(o.Slots)-1].LoadW = &w
		}
	}
	for _, d := range days {
		o.Accuracy = append(o.Accuracy, forecastDayJSON{Date: d.Date, MadeUtc: utc(d.Made), MAEW: math.Round(d.MAEW),
			MAERelative: round(d.MAERelative, 1000), PeakW: math.Round(d.PeakW), Slots: d.Slots,
			ForecastWh: math.Round(d.ForecastWh), ActualWh: math.Round(d.ActualWh), ClearSkyMAEW: math.Round(d.ClearSkyMAEW)})
		if d.PersistenceMAEW != nil {
			p := math.Round(*d.PersistenceMAEW)
			o.Accuracy[len(o.Accuracy)-1].PersistenceMAEW = &p
		}
		if l := d.Load; l != nil {
			r := l.Rounded()
			o.Accuracy[len(o.Accuracy)-1].Load = &r
		}
	}
	return o
}

func round(v, per float64) float64 { return math.Round(v*per) / per }

// forecastResponse is the OpenAPI 200 response of GET /gateway/v1/forecast.
func forecastResponse() apidoc.Obj {
	slot := apidoc.Object(apidoc.Obj{
		"startUtc": apidoc.Describe(apidoc.UTCTime(), "the slot's start; it lasts 15 minutes"),
		"powerW":   apidoc.Describe(apidoc.Num(), "the mean PV power forecast over the slot, W"),
		"source": apidoc.Describe(apidoc.Enum(string(forecast.SourceHistory), string(forecast.SourceService)),
			"what the slot's clearness came from: the plant's history, or the forecast service; either pulled toward the weather sensor's last hour near now"),
		"loadW": apidoc.Describe(apidoc.Num(), "the house's base load forecast over the slot, W: the median of the plant's last 14 days at this quarter-hour of the local day (weekends apart when they differ), its total consumption less the metered draw of the heat pump and car the day-ahead plan schedules; absent without 2 days of that history"),
	}, "startUtc", "powerW", "source")
	day := apidoc.Object(apidoc.Obj{
		"date":            apidoc.Describe(apidoc.Str(), "the plant-local day, YYYY-MM-DD"),
		"madeUtc":         apidoc.Describe(apidoc.UTCTime(), "when its day-ahead forecast was made (the first at or after 12:00 plant-local the day before)"),
		"maeW":            apidoc.Describe(apidoc.Num(), "mean absolute error over the day's daylight 15-minute slots that were measured, W"),
		"maeRelative":     apidoc.Describe(apidoc.Num(), "maeW over peakW"),
		"peakW":           apidoc.Describe(apidoc.Num(), "the plant's peak power: installation.peakPowerW, else the most measured in a slot"),
		"slots":           apidoc.Describe(apidoc.Obj{"type": "integer", "minimum": 0}, "the slots compared"),
		"forecastWh":      apidoc.Describe(apidoc.Num(), "the forecast energy of those slots, Wh"),
		"actualWh":        apidoc.Describe(apidoc.Num(), "the measured energy of those slots, Wh"),
		"persistenceMaeW": apidoc.Describe(apidoc.Num(), "the MAE of a naive forecast over the same slots: the day before's measured PV at the same time (\"tomorrow = today\"); absent when the day before was not measured enough"),
		"clearSkyMaeW":    apidoc.Describe(apidoc.Num(), "the MAE of the plant's fitted clear-sky PV over the same slots, W"),
		"load": apidoc.Describe(apidoc.Object(apidoc.Obj{
			"maeW":            apidoc.Describe(apidoc.Num(), "mean absolute error of the day-ahead base-load forecast over the day's measured 15-minute slots, W"),
			"flatW":           apidoc.Describe(apidoc.Num(), "the flat base load a plan made at the same time took: the measured base load before it, smoothed over an hour, W"),
			"flatMaeW":        apidoc.Describe(apidoc.Num(), "the MAE of flatW over the same slots, W"),
			"dayMeanMaeW":     apidoc.Describe(apidoc.Num(), "the MAE of a naive forecast over the same slots: the day before's mean base load, flat, W; absent when the day before was not measured enough"),
			"persistenceMaeW": apidoc.Describe(apidoc.Num(), "the MAE of a naive forecast over the same slots: the day before's base load at the same time (\"tomorrow = today\"), W; absent when the day before was not measured enough"),
			"slots":           apidoc.Describe(apidoc.Obj{"type": "integer", "minimum": 0}, "the slots compared"),
			"forecastWh":      apidoc.Describe(apidoc.Num(), "the forecast base-load energy of those slots, Wh"),
			"actualWh":        apidoc.Describe(apidoc.Num(), "the measured base-load energy of those slots, Wh"),
		}, "maeW", "flatW", "flatMaeW", "slots", "forecastWh", "actualWh"), "the day's base-load forecast against the measured base load; absent when it had none or the day was not measured enough"),
	}, "date", "madeUtc", "maeW", "maeRelative", "peakW", "slots", "forecastWh", "actualWh", "clearSkyMaeW")
	plantForecast := apidoc.Object(apidoc.Obj{
		"plantId":           apidoc.Str(),
		"madeUtc":           apidoc.Describe(apidoc.UTCTime(), "when the forecast was made (every 15 minutes); absent before the first (a plant without history)"),
		"historyDays":       apidoc.Describe(apidoc.Obj{"type": "integer", "minimum": 0}, "the past days with daylight the plant's clear-sky response is fitted to"),
		"clearness":         apidoc.Describe(apidoc.Num(), "the history's mean clearness: measured PV over the fitted clear-sky PV"),
		"recentClearness":   apidoc.Describe(apidoc.Num(), "the weather sensor's irradiance of the last hour over the clear sky's; absent without a sensor, at night or without recent values"),
		"peakW":             apidoc.Describe(apidoc.Num(), "the plant's peak power, W (the forecast's bound)"),
		"loadDays":          apidoc.Describe(apidoc.Obj{"type": "integer", "minimum": 0}, "the past days the base-load profile is fitted to; 0: none (the slots have no loadW)"),
		"loadWeekendsApart": apidoc.Describe(apidoc.Bool(), "whether Saturdays and Sundays have their own base-load profile (the history showed they differ)"),
		"service": apidoc.Describe(apidoc.Object(apidoc.Obj{
			"lastAnswerUtc": apidoc.Describe(apidoc.UTCTime(), "the service's last good answer"),
			"error":         apidoc.Describe(apidoc.Str(), "the last request's error; absent when it answered"),
		}), "the forecast service (forecast.service); absent without one"),
		"slots":    apidoc.Describe(apidoc.Arr(slot), "the next 36 h from the slot now lies in, 144 slots"),
		"accuracy": apidoc.Describe(apidoc.Arr(day), "the last judged days (up to 60), oldest first"),
	}, "plantId", "historyDays", "loadDays", "loadWeekendsApart", "slots", "accuracy")
	return apidoc.Obj{"description": "OK", "content": apidoc.Obj{"application/json": apidoc.Obj{
		"schema": apidoc.Object(apidoc.Obj{"forecasts": apidoc.Arr(plantForecast)}, "forecasts")}}}
}
