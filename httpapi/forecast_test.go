package httpapi

import (
	"encoding/json"
	"testing"
	"time"

	"plantd/forecast"
)

// fakeForecasts answers Forecast with a fixed forecast for plant demo.
type fakeForecasts struct {
	f    forecast.Forecast
	days []forecast.DayAccuracy
}

func (f fakeForecasts) Forecast(plantID string) (forecast.Forecast, []forecast.DayAccuracy, bool) {
	if plantID != "demo" {
		return forecast.Forecast{}, nil, false
	}
	return f.f, f.days, true
}

// TestForecastRoute calls GET /gateway/v1/forecast without a forecast, with
// one (slots, the sensor's clearness, a failing service, a judged day) and
// before the first is made, with its filter and errors, and validates
// every answer against /openapi.json.
func TestForecastRoute(t *testing.T) {
	t.Parallel() // its own simulated plant, store and server
	e := newEnv(t, envOpts{polls: 1})
	v := newValidator(t, e)
	get := func(path, token string, want int) []byte {
		t.Helper()
		return v.get(e, path, token, want)
	}
	type answer struct {
		Forecasts []struct {
			PlantID, MadeUtc           string
			HistoryDays                int
			Clearness, RecentClearness *float64
			PeakW                      *float64
			Service                    *struct{ LastAnswerUtc, Error string }
			LoadDays                   int
			LoadWeekendsApart          bool
			Slots                      []struct {
				StartUtc string
				PowerW   float64
				Source   string
				LoadW    *float64
			}
			Accuracy []struct {
				Date, MadeUtc                            string
				MAEW                                     float64 `json:"maeW"`
				MAERelative, PeakW, ForecastWh, ActualWh float64
				Slots                                    int
				PersistenceMaeW                          *float64
				ClearSkyMaeW                             float64
				Load                                     *struct {
					MAEW     float64 `json:"maeW"`
					FlatW    float64
					FlatMAEW float64  `json:"flatMaeW"`
					DayMean  *float64 `json:"dayMeanMaeW"`
					Persist  *float64 `json:"persistenceMaeW"`
					Slots    int
				}
			}
		}
	}
	decode := func(b []byte) answer {
		t.Helper()
		var a answer
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		return a
	}
	if a := decode(get("/gateway/v1/forecast", tokStandard, 200)); len(a.Forecasts) != 0 {
		t.Errorf("without a forecast: %+v, want an empty list", a)
	}

	made := time.Date(2025, 6, 21, 10, 0, 0, 0, time.UTC)
	recent := 0.4321
	f := forecast.Forecast{PlantID: "demo", Made: made, Recent: &recent, Clearness: 0.8123, HistoryDays: 30, PeakW: 17999.6,
		ServiceAt: made.Add(-time.Hour), ServiceError: "open-meteo api.open-meteo.com: 503 Service Unavailable", LoadDays: 14, LoadSplit: true}
	loads := make([]float64, 144)
	for i := range 144 {
		src := forecast.SourceService
		if i >= 48 {
			src = forecast.SourceHistory
		}
		loads[i] = 300.6 + float64(i)
		f.Slots = append(f.Slots, forecast.Slot{Start: made.Add(time.Duration(i) * forecast.SlotLength), PowerW: 1000.4 + float64(i), Source: src, LoadW: &loads[i]})
	}
	persistence := 1500.5
	days := []forecast.DayAccuracy{{Date: "2025-06-20", Made: made.AddDate(0, 0, -2).Add(2 * time.Hour), MAEW: 812.6, MAERelative: 0.04514,
		PeakW: 18000, Slots: 66, ForecastWh: 70000.4, ActualWh: 61234.5, PersistenceMAEW: &persistence, ClearSkyMAEW: 1200.2,
		Load: &forecast.LoadAccuracy{MAEW: 120.4, FlatW: 612.7, FlatMAEW: 480.2, DayMeanMAEW: &persistence, Slots: 96, ForecastWh: 14000, ActualWh: 14500}},
		{Date: "2025-06-21", Made: made.AddDate(0, 0, -1).Add(2 * time.Hour), MAEW: 700, PeakW: 18000, Slots: 66, ClearSkyMAEW: 900}}
	e.srv.deps.Forecasts = fakeForecasts{f: f, days: days}
	a := decode(get("/gateway/v1/forecast", tokStandard, 200))
	if len(a.Forecasts) != 1 {
		t.Fatalf("forecasts %+v, want demo's", a.Forecasts)
	}
	p := a.Forecasts[0]
	if p.PlantID != "demo" || p.MadeUtc != "2025-06-21T10:00:00Z" || p.HistoryDays != 30 || *p.Clearness != 0.812 || *p.RecentClearness != 0.432 ||
		*p.PeakW != 18000 || p.Service == nil || p.Service.LastAnswerUtc != "2025-06-21T09:00:00Z" || p.Service.Error == "" {
		t.Errorf("demo: %+v", p)
	}
	if len(p.Slots) != 144 || p.Slots[0].StartUtc != "2025-06-21T10:00:00Z" || p.Slots[0].PowerW != 1000 || p.Slots[0].Source != "service" ||
		p.Slots[143].StartUtc != "2025-06-22T21:45:00Z" || p.Slots[143].Source != "history" {
		t.Errorf("slots: %d, first %+v, last %+v", len(p.Slots), p.Slots[0], p.Slots[len(p.Slots)-1])
	}
	if p.LoadDays != 14 || !p.LoadWeekendsApart || p.Slots[0].LoadW == nil || *p.Slots[0].LoadW != 301 || *p.Slots[143].LoadW != 444 {
		t.Errorf("base load: %d days, weekends apart %v, first slot %v", p.LoadDays, p.LoadWeekendsApart, p.Slots[0].LoadW)
	}
	if l := p.Accuracy[0].Load; l == nil || l.MAEW != 120 || l.FlatW != 613 || l.FlatMAEW != 480 || l.Slots != 96 || l.DayMean == nil || *l.DayMean != 1501 || l.Persist != nil || p.Accuracy[1].Load != nil {
		t.Errorf("base-load accuracy: %+v, %+v", p.Accuracy[0].Load, p.Accuracy[1].Load)
	}
	if len(p.Accuracy) != 2 || p.Accuracy[0].Date != "2025-06-20" || *p.Accuracy[0].PersistenceMaeW != 1501 || p.Accuracy[0].ClearSkyMaeW != 1200 ||
		p.Accuracy[1].PersistenceMaeW != nil || p.Accuracy[1].ClearSkyMaeW != 900 || p.Accuracy[0].MAEW != 813 || p.Accuracy[0].MAERelative != 0.045 ||
		p.Accuracy[0].Slots != 66 || p.Accuracy[0].ActualWh != 61235 || p.Accuracy[0].MadeUtc != "2025-06-19T12:00:00Z" {
		t.Errorf("accuracy: %+v", p.Accuracy)
	}
	// Before the first forecast (no history yet): the plant, no slots.
	e.srv.deps.Forecasts = fakeForecasts{}
	if a := decode(get("/gateway/v1/forecast?plantId=demo", tokInstaller, 200)); len(a.Forecasts) != 1 || a.Forecasts[0].MadeUtc != "" ||
		len(a.Forecasts[0].Slots) != 0 || a.Forecasts[0].Clearness != nil {
		t.Errorf("before the first forecast: %+v", a)
	}
	if a := decode(get("/gateway/v1/forecast?plantId=7190000", tokStandard, 200)); len(a.Forecasts) != 1 {
		t.Errorf("migrated plantId: %d forecasts, want 1", len(a.Forecasts))
	}
	for _, c := range []struct {
		path, token, field string
		want               int
	}{
		{"/gateway/v1/forecast?plantId=nope", tokStandard, "plantId", 404},
		{"/gateway/v1/forecast?date=2025-06-21", tokStandard, "date", 400},
		{"/gateway/v1/forecast", "", "", 401},
	} {
		body := get(c.path, c.token, c.want)
		var p struct {
			Status int
			Errors []struct{ Field string }
		}
		if err := json.Unmarshal(body, &p); err != nil || p.Status != c.want {
			t.Errorf("GET %s: %s, want a problem with status %d", c.path, body, c.want)
		}
		if c.field != "" && (len(p.Errors) != 1 || p.Errors[0].Field != c.field) {
			t.Errorf("GET %s: %s, want the problem to name %s", c.path, body, c.field)
		}
	}
}
