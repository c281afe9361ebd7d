package httpapi

import (
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"plantd/plant"
	"plantd/plant/kind"
)

// localTime is the format of measurement-set times: plant-local, no offset.
const localTime = "2006-01-02T15:04:05"

// parsePeriod matches a period in any letter case; "" is Recent.
func parsePeriod(s string) (plant.Period, bool) {
	if s == "" {
		return plant.PeriodRecent, true
	}
	p, err := plant.ParsePeriod(s)
	return p, err == nil
}

// resolutionFor is the resolution of a period (DESIGN §4).
func resolutionFor(setType plant.SetType, period plant.Period, withTotal bool) string {
	switch period {
	case plant.PeriodRecent:
		return plant.ResolutionOneMinute
	case plant.PeriodDay:
		return plant.ResolutionFiveMinutes
	case plant.PeriodWeek:
		if setType == plant.SetEnergyBalance && withTotal {
			return plant.ResolutionOneHour
		}
		return plant.ResolutionFifteenMinutes
	case plant.PeriodMonth:
		return plant.ResolutionOneDay
	case plant.PeriodYear:
		return plant.ResolutionOneMonth
	}
	return plant.ResolutionOneYear
}

// parseBool reads an optional boolean query parameter.
func parseBool(c *gin.Context, name string) (bool, bool) {
	v := queryAny(c, name, strings.ToLower(name[:1])+name[1:])
	switch {
	case v == "":
		return false, true
	case strings.EqualFold(v, "true"):
		return true, true
	case strings.EqualFold(v, "false"):
		return false, true
	}
	badParam(c, name, "want true or false")
	return false, false
}

// setRequest is a measurement-set request: the history's query, the
// plant's zone (period boundaries, local times) and the resolution the API
// wants for the period.
type setRequest struct {
	plant.SetQuery
	Location   *time.Location
	Resolution string
}

// parseSetQuery reads {period}, Date, WithTotal and ReturnEnergyValues.
func (s *Server) parseSetQuery(c *gin.Context, p plant.Plant, setType plant.SetType) (setRequest, bool) {
	q := setRequest{SetQuery: plant.SetQuery{PlantID: p.ID, SetType: setType}, Location: plantLoc(p)}
	period, ok := parsePeriod(c.Param("period"))
	if !ok {
		badParam(c, "period", "want Recent, Day, Week, Month, Year or Total")
		return q, false
	}
	q.Period = period
	date := queryAny(c, "Date", "date")
	switch period {
	case plant.PeriodRecent, plant.PeriodTotal:
		if date != "" {
			badParam(c, "Date", "not allowed for period "+string(period))
			return q, false
		}
	default:
		layout, want := "2006-01-02", "YYYY-MM-DD"
		switch period {
		case plant.PeriodMonth:
			layout, want = "2006-01", "YYYY-MM"
		case plant.PeriodYear:
			layout, want = "2006", "YYYY"
		}
		if date == "" {
			// The current period in the plant's zone.
			date = s.now().In(q.Location).Format(layout)
		}
		d, err := time.ParseInLocation(layout, date, q.Location)
		if err != nil || len(date) != len(layout) {
			badParam(c, "Date", "want "+want+" for period "+string(period))
			return q, false
		}
		if period == plant.PeriodWeek { // the week (Monday..Sunday) holding the date
			d = d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
		}
		q.Date = d
	}
	if q.WithTotal, ok = parseBool(c, "WithTotal"); !ok {
		return q, false
	}
	if q.ReturnEnergyValues, ok = parseBool(c, "ReturnEnergyValues"); !ok {
		return q, false
	}
	q.Resolution = resolutionFor(setType, period, q.WithTotal)
	return q, true
}

// rowJSON renders a row with its plant-local time; absent values are
// absent.
// clean drops the binary noise of float arithmetic (a mean of 4.482 and
// 4.482 is 4.482000000000001) by keeping 12 significant digits, far more
// than any device measures.
func clean(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	if err != nil {
		return v
	}
	return r
}

// intervalOf is the length of a sub-day resolution's intervals; 0 for
// OneDay, OneMonth and OneYear (and for a total).
func intervalOf(res string) time.Duration {
	switch res {
	case plant.ResolutionOneMinute:
		return time.Minute
	case plant.ResolutionFiveMinutes:
		return 5 * time.Minute
	case plant.ResolutionFifteenMinutes:
		return 15 * time.Minute
	case plant.ResolutionOneHour:
		return time.Hour
	}
	return 0
}

// label is a row's time as the cloud API writes it, plant-local without
// offset: the END of a sub-day interval (a Day of FiveMinutes runs 00:05
// .. next day 00:00), the day, month or year itself for longer ones. The
// end is the start's instant plus the interval, so a DST day keeps its 23
// or 25 hours of rows (on the 25-hour day the repeated hour's labels
// appear twice, in time order).
func label(start time.Time, res string, loc *time.Location) string {
	return start.Add(intervalOf(res)).In(loc).Format(localTime)
}

// collapseRecent merges Recent's rows (oldest first) into one: the newest
// value of every field, labelled with the newest row's interval. A client
// reads set[0] and finds every field the device measured lately.
func collapseRecent(rows []plant.SetRow) []plant.SetRow {
	if len(rows) <= 1 {
		return rows
	}
	out := plant.SetRow{Start: rows[len(rows)-1].Start, Values: map[string]float64{}}
	for _, r := range rows {
		for k, v := range r.Values {
			out.Values[k] = v
		}
		for k, iv := range r.Indexed {
			if out.Indexed == nil {
				out.Indexed = map[string][]plant.IndexedValue{}
			}
			out.Indexed[k] = iv
		}
	}
	return []plant.SetRow{out}
}

func rowJSON(r plant.SetRow, loc *time.Location, res string) map[string]any {
	m := make(map[string]any, 1+len(r.Values)+len(r.Indexed))
	m["time"] = label(r.Start, res, loc)
	for k, v := range r.Values {
		m[k] = clean(v)
	}
	for k, vs := range r.Indexed {
		list := make([]map[string]any, 0, len(vs))
		for _, iv := range vs {
			list = append(list, map[string]any{"index": iv.Index, "value": clean(iv.Value)})
		}
		m[k] = list
	}
	return m
}

// setEnvelope is the envelope of every measurement set.
type setEnvelope struct {
	Plant      plantJSON        `json:"plant"`
	Device     *deviceRefJSON   `json:"device,omitempty"`
	SetType    string           `json:"setType"`
	Resolution string           `json:"resolution,omitempty"`
	Set        []map[string]any `json:"set"`
	Total      map[string]any   `json:"total,omitempty"`
}

func (s *Server) querySet(c *gin.Context, q setRequest, p plant.Plant, dev *deviceRefJSON) {
	res, err := s.deps.History.QuerySet(c.Request.Context(), q.SetQuery)
	if q.DeviceID != "" && errors.Is(err, ErrNotFound) {
		// The API checked that the device is configured and lists the set
		// (deviceSet); the history has just not recorded the device or no
		// channel of that set yet: an empty set, not a 404 (a set listed
		// for a device must answer).
		res, err = plant.SetResult{Rows: []plant.SetRow{}}, nil
	}
	if err != nil {
		s.historyError(c, err)
		return
	}
	loc := q.Location
	env := setEnvelope{Plant: plantObj(p), Device: dev, SetType: string(q.SetType), Resolution: res.Resolution, Set: make([]map[string]any, 0, len(res.Rows))}
	if env.Resolution == "" {
		env.Resolution = q.Resolution
	}
	rows := res.Rows
	if q.Period == plant.PeriodRecent {
		rows = collapseRecent(rows)
	}
	for _, r := range rows {
		env.Set = append(env.Set, rowJSON(r, loc, env.Resolution))
	}
	if q.WithTotal && res.Total != nil {
		t := *res.Total
		if t.Start.IsZero() {
			t.Start = q.Date
		}
		if t.Start.IsZero() && len(res.Rows) > 0 { // Recent, Total
			t.Start = res.Rows[0].Start
		}
		env.Total = rowJSON(t, loc, "") // the period's start: the day, month or year it stands for
	}
	s.writeJSON(c, http.StatusOK, env, true)
}

// plantSet is GET .../plants/{plantId}/measurements/sets/EnergyBalance[/{period}].
func (s *Server) plantSet(c *gin.Context) {
	p := ctxPlantOf(c)
	q, ok := s.parseSetQuery(c, p, plant.SetEnergyBalance)
	if !ok {
		return
	}
	s.querySet(c, q, p, nil)
}

// plantSetAnyCase serves .../plants/{plantId}/measurements/sets/{setType}
// for EnergyBalance written in another letter case; any other set type is
// a 404.
func (s *Server) plantSetAnyCase(c *gin.Context) {
	st := c.Param("setType")
	if !strings.EqualFold(st, string(plant.SetEnergyBalance)) {
		fail(c, http.StatusNotFound, plant.CodeNotFound, "plant "+ctxPlantOf(c).ID+" has no measurement set "+st+"; plants have EnergyBalance",
			FieldError{Field: "setType", Message: "want EnergyBalance"})
		return
	}
	s.plantSet(c)
}

// deviceSetAnyCase serves .../devices/{deviceId}/measurements/sets/{setType}
// for a set type written in another letter case ("poweraC"); an unknown
// set type is a 404.
func (s *Server) deviceSetAnyCase(c *gin.Context) {
	st := c.Param("setType")
	for _, t := range deviceSetTypes {
		if strings.EqualFold(st, string(t)) {
			s.deviceSet(t)(c)
			return
		}
	}
	fail(c, http.StatusNotFound, plant.CodeNotFound, "no measurement set type "+st, FieldError{Field: "setType", Message: "unknown set type"})
}

// deviceSetsOf lists the sets a device supports: from its discovered
// models, else from the history.
func (s *Server) deviceSetsOf(c *gin.Context, d plant.DeviceLive) ([]plant.SetType, error) {
	if d.Info.Kind == kind.Consumer {
		return plant.SetsFor(kind.Consumer, nil), nil // no SunSpec models
	}
	if d.Nameplate != nil {
		out := plant.SetsFor(d.Info.Kind, d.Nameplate)
		// The energy mix is the plant's mix seen from a device that takes
		// part in the balance (spec: classic and newer devices have it).
		switch d.Info.Kind {
		case kind.Inverter, kind.Meter, kind.Battery:
			if !slices.Contains(out, plant.SetEnergyMix) {
				out = append(out, plant.SetEnergyMix)
			}
		}
		return out, nil
	}
	sets, err := s.deps.History.DeviceSets(c.Request.Context(), d.Info.ID)
	if errors.Is(err, ErrNotFound) {
		// The device is configured; the history has nothing of it yet (not
		// discovered, or disabled before it was ever polled): no sets, not
		// a 404.
		return []plant.SetType{}, nil
	}
	return sets, err
}

// deviceSetList is GET .../devices/{deviceId}/measurements/sets.
func (s *Server) deviceSetList(c *gin.Context) {
	p, d := ctxPlantOf(c), ctxDeviceOf(c)
	sets, err := s.deviceSetsOf(c, d)
	if err != nil {
		s.historyError(c, err)
		return
	}
	if sets == nil {
		sets = []plant.SetType{}
	}
	dev := deviceObj(p, d)
	s.writeJSON(c, http.StatusOK, envelope(field("plant", plantObj(p)), field("device", dev), field("sets", sets)), true)
}

// deviceSet serves one device set type (404 when the device lacks it).
func (s *Server) deviceSet(setType plant.SetType) gin.HandlerFunc {
	return func(c *gin.Context) {
		p, d := ctxPlantOf(c), ctxDeviceOf(c)
		sets, err := s.deviceSetsOf(c, d)
		if err != nil {
			s.historyError(c, err)
			return
		}
		// PowerAc answers for every device with AC values; an unknown set
		// (device never discovered, nothing stored) is a 404.
		if !slices.Contains(sets, setType) {
			fail(c, http.StatusNotFound, plant.CodeNotFound, "device "+d.Info.ID+" has no measurement set "+string(setType))
			return
		}
		q, ok := s.parseSetQuery(c, p, setType)
		if !ok {
			return
		}
		q.DeviceID = d.Info.ID
		dev := deviceObj(p, d)
		s.querySet(c, q, p, &dev)
	}
}
