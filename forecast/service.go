package forecast

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"plantd/plant"
)

// History is what the forecast reads of the store: the plant's energy
// balance (pvGeneration and totalConsumption in 15-minute means, Week),
// its flexible consumers' consumption (EnergyAndPowerConsumption, Week)
// and its weather sensor's irradiance (externalInsolation by minute,
// Recent).
type History interface {
	QuerySet(ctx context.Context, q plant.SetQuery) (plant.SetResult, error)
}

// Fetcher is a forecast service (OpenMeteo).
type Fetcher interface {
	Fetch(ctx context.Context) ([]ServiceSlot, error)
}

// PlantConfig is one plant the forecast runs for.
type PlantConfig struct {
	ID   string
	Site Site
	// Zone is the plant's time zone: its days.
	Zone *time.Location
	// Sensor returns the plant's weather sensor's device id ("": none; nil:
	// never one); asked at every run, since a device's kind is known once
	// it was discovered.
	Sensor func() string
	// Service is a forecast service for the plant (nil: none), asked
	// every ServiceRefresh (default 1 h) of the wall clock.
	Service        Fetcher
	ServiceRefresh time.Duration
	// Flexible returns the consumers whose metered draw the day-ahead plan
	// places itself (its heat pump and car; nil: none): their stored
	// consumption is not base load. Asked at every fit.
	Flexible func() []string
}

// Config configures the forecast.
type Config struct {
	Plants []PlantConfig
	// HistoryDays is how many past days the fit reads (default 30).
	HistoryDays int
	// Horizon is how far a forecast reaches (default 36 h).
	Horizon time.Duration
	// Every is how often it is made on the data clock (default 15 min);
	// Tick how often the wall clock looks at the data clock (default 1 s:
	// the demo's simulated clock runs fast).
	Every, Tick time.Duration
	// StateFile keeps the day-ahead forecasts and the days' accuracy
	// across restarts ("": in memory only).
	StateFile string
	// Now is the data clock (the demo's simulated one; nil: time.Now);
	// WallNow times the service's requests (nil: time.Now).
	Now, WallNow func() time.Time
}

// Defaults of Config.
const (
	DefaultHistoryDays = 30
	DefaultHorizon     = 36 * time.Hour
	DefaultEvery       = 15 * time.Minute
	// dayAheadHour is the plant-local hour from which the forecast made is
	// recorded as the next day's day-ahead forecast (the day-ahead
	// market's gate closure is noon): the first forecast made at or after
	// it. A plantd started later records the first it makes.
	dayAheadHour = 12
	// evalDelay is how long after a day's end its measured PV is read
	// (the store rolls up a 5-minute interval about 70 s after its end).
	evalDelay = time.Hour
	// recentMaxAge is the oldest a minute of the sensor's Recent hour may
	// be to count for the clearness now.
	recentMaxAge = 2 * time.Hour
	// keepDays bounds the days of accuracy kept.
	keepDays = 60
	// minCoverage is the share of a day's daylight slots that must be
	// measured for the day to be judged.
	minCoverage = 0.8
)

// Forecast is a plant's forecast as last made.
type Forecast struct {
	PlantID string
	// Made is when (data clock).
	Made  time.Time
	Slots []Slot
	// Recent is the clearness the weather sensor measured over the last
	// hour (nil: none: no sensor, night, or no recent values).
	Recent *float64
	// Clearness is the history's mean clearness, HistoryDays the days the
	// fit read that had daylight, PeakW the plant's peak power (config, or
	// the most measured in a slot).
	Clearness   float64
	HistoryDays int
	PeakW       float64
	// ServiceAt is when the service's last good answer arrived (zero:
	// none); ServiceError the last request's error ("": it answered).
	ServiceAt    time.Time
	ServiceError string
	// LoadDays is the days of history the base-load profile was fitted
	// to (0: no profile, the slots have no LoadW); LoadSplit whether
	// weekdays and weekends have their own.
	LoadDays  int
	LoadSplit bool
}

// DayAccuracy is how one day's day-ahead forecast did against the
// measured PV, over the day's daylight slots (the sun above the horizon
// at the slot's middle) that were measured.
type DayAccuracy struct {
	// Date is the plant-local day, YYYY-MM-DD.
	Date string `json:"date"`
	// Made is when its forecast was made.
	Made time.Time `json:"made"`
	// MAEW is the mean absolute error in W; MAERelative the same over
	// PeakW.
	MAEW        float64 `json:"maeW"`
	MAERelative float64 `json:"maeRelative"`
	PeakW       float64 `json:"peakW"`
	// Slots is the number of slots compared.
	Slots int `json:"slots"`
	// ForecastWh and ActualWh are the energies of those slots.
	ForecastWh float64 `json:"forecastWh"`
	ActualWh   float64 `json:"actualWh"`
	// PersistenceMAEW is the MAE of "tomorrow = today" (the day before's
	// measured PV; nil when it was not measured enough), ClearSkyMAEW
	// that of the fitted clear-sky PV: naive forecasts to measure MAEW by.
	PersistenceMAEW *float64 `json:"persistenceMaeW,omitempty"`
	ClearSkyMAEW    float64  `json:"clearSkyMaeW"`
	// Load is how the day's base-load forecast did (nil: it had none, or
	// the day's base load was not measured enough).
	Load *LoadAccuracy `json:"load,omitempty"`
}

// Service makes each plant's forecast at start and every 15 minutes,
// records the day-ahead forecast and judges it once the day is measured.
type Service struct {
	cfg  Config
	h    History
	log  *slog.Logger
	mu   sync.Mutex
	byID map[string]*plantRun
	ids  []string
	// stats for /metrics
	computeSeconds float64
	failures       uint64
}

// plantRun is one plant's state.
type plantRun struct {
	cfg    PlantConfig
	fit    Fit
	fitOK  bool
	load   LoadFit
	loadOK bool
	// fitDate is the local date the fit was made on (refitted daily).
	fitDate  string
	current  Forecast
	service  []ServiceSlot
	asked    time.Time // wall clock of the last service request
	svcErr   string
	svcAt    time.Time
	dayAhead map[string]Recorded
	days     []DayAccuracy
	// evaluated counts the days judged since start (a counter).
	evaluated uint64
}

// Recorded is a day-ahead forecast as recorded.
type Recorded struct {
	Made  time.Time `json:"made"`
	Slots []Slot    `json:"slots"`
}

// New returns the forecast of cfg's plants; it reads the state file.
func New(cfg Config, h History, log *slog.Logger) (*Service, error) {
	if cfg.HistoryDays <= 0 {
		cfg.HistoryDays = DefaultHistoryDays
	}
	if cfg.Horizon <= 0 {
		cfg.Horizon = DefaultHorizon
	}
	if cfg.Every <= 0 {
		cfg.Every = DefaultEvery
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.WallNow == nil {
		cfg.WallNow = time.Now
	}
	s := &Service{cfg: cfg, h: h, log: log, byID: map[string]*plantRun{}}
	for _, p := range cfg.Plants {
		if p.Zone == nil {
			return nil, fmt.Errorf("forecast: plant %s: no time zone", p.ID)
		}
		if p.ServiceRefresh <= 0 {
			p.ServiceRefresh = time.Hour
		}
		s.byID[p.ID] = &plantRun{cfg: p, dayAhead: map[string]Recorded{}}
		s.ids = append(s.ids, p.ID)
	}
	st, err := loadState(cfg.StateFile)
	if err != nil {
		// A damaged state loses the accuracy record, not the forecast.
		log.Warn("forecast state unreadable: starting without the recorded forecasts and accuracy", "err", err)
	}
	for id, ps := range st.Plants {
		if r, ok := s.byID[id]; ok {
			if ps.DayAhead != nil {
				r.dayAhead = ps.DayAhead
			}
			r.days = ps.Days
		}
	}
	return s, nil
}

// Run makes the forecasts at once and then every cfg.Every of the data
// clock, until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Tick)
	defer t.Stop()
	next := time.Time{}
	for {
		// Due at the next quarter-hour of the data clock, or at once when
		// the clock went back (a wall clock set back, another demo start).
		if now := s.cfg.Now(); !now.Before(next) || now.Before(next.Add(-s.cfg.Every)) {
			s.Update(ctx, now)
			next = now.Truncate(s.cfg.Every).Add(s.cfg.Every)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Update makes every plant's forecast at now, records the day-ahead one
// and judges the days that ended.
func (s *Service) Update(ctx context.Context, now time.Time) {
	start := time.Now()
	changed := false
	for _, id := range s.ids {
		r := s.byID[id]
		c, err := s.update(ctx, r, now)
		changed = changed || c
		if err != nil && ctx.Err() == nil {
			s.mu.Lock()
			s.failures++
			s.mu.Unlock()
			s.log.Warn("forecast not made", "plant", id, "err", err)
		}
	}
	s.mu.Lock()
	s.computeSeconds = time.Since(start).Seconds()
	s.mu.Unlock()
	if changed {
		s.save()
	}
}

// update makes one plant's forecast; changed reports a new record.
func (s *Service) update(ctx context.Context, r *plantRun, now time.Time) (changed bool, err error) {
	local := now.In(r.cfg.Zone)
	today := local.Format(time.DateOnly)
	if !r.fitOK || r.fitDate != today {
		if err := s.refit(ctx, r, local); err != nil {
			return false, err
		}
	}
	if !r.fitOK {
		return false, nil // no PV history yet: nothing to forecast from
	}
	in := Inputs{Now: now, Horizon: s.cfg.Horizon}
	if r.cfg.Sensor != nil {
		if id := r.cfg.Sensor(); id != "" {
			in.Recent = s.recent(ctx, r, id, now)
		}
	}
	s.askService(ctx, r)
	in.Service = r.service
	f := Forecast{PlantID: r.cfg.ID, Made: now, Slots: r.fit.Forecast(nil, in), Recent: in.Recent,
		Clearness: r.fit.Clearness(), HistoryDays: r.fit.Days(), PeakW: r.fit.PeakW(), ServiceAt: r.svcAt, ServiceError: r.svcErr}
	if r.loadOK {
		f.LoadDays, f.LoadSplit = r.load.Days(), r.load.Split()
		loads := make([]float64, len(f.Slots))
		for i := range f.Slots {
			loads[i] = r.load.At(f.Slots[i].Start)
			f.Slots[i].LoadW = &loads[i]
		}
	}
	s.mu.Lock()
	r.current = f
	s.mu.Unlock()
	changed = s.recordDayAhead(r, f, local)
	judged, err := s.judge(ctx, r, now)
	return changed || judged, err
}

// refit fits the plant's PV to the HistoryDays before today and its base
// load to the LoadHistoryDays before today, from one read of the store.
func (s *Service) refit(ctx context.Context, r *plantRun, local time.Time) error {
	y, m, d := local.Date()
	to := time.Date(y, m, d, 0, 0, 0, 0, r.cfg.Zone)
	from := time.Date(y, m, d-max(s.cfg.HistoryDays, LoadHistoryDays), 0, 0, 0, 0, r.cfg.Zone)
	pv, load, err := s.measured(ctx, r, from, to)
	if err != nil {
		return err
	}
	pvFrom := time.Date(y, m, d-s.cfg.HistoryDays, 0, 0, 0, 0, r.cfg.Zone)
	loadFrom := time.Date(y, m, d-LoadHistoryDays, 0, 0, 0, 0, r.cfg.Zone)
	fit, ok := FitHistory(r.cfg.Site, since(pv, pvFrom))
	lf, lok := FitLoad(r.cfg.Zone, since(load, loadFrom))
	s.mu.Lock()
	r.fit, r.fitOK, r.fitDate = fit, ok, local.Format(time.DateOnly)
	r.load, r.loadOK = lf, lok
	s.mu.Unlock()
	return nil
}

// since is the samples (in time order) from from on.
func since(ss []Sample, from time.Time) []Sample {
	i, _ := slices.BinarySearchFunc(ss, from, func(s Sample, t time.Time) int { return s.Start.Compare(t) })
	return ss[i:]
}

// measured reads the plant's PV and base load (its total consumption
// less its flexible consumers' metered consumption, baseLoad) in
// 15-minute means from from to to, in time order (week by week: the
// store's Week period answers FifteenMinutes).
func (s *Service) measured(ctx context.Context, r *plantRun, from, to time.Time) (pv, load []Sample, err error) {
	var flexIDs []string
	if r.cfg.Flexible != nil {
		flexIDs = r.cfg.Flexible()
	}
	var total []Sample
	flex := map[int64]float64{}
	for day := from; day.Before(to); {
		res, err := s.h.QuerySet(ctx, plant.SetQuery{PlantID: r.cfg.ID, SetType: plant.SetEnergyBalance, Period: plant.PeriodWeek, Date: day})
		if err != nil {
			return nil, nil, fmt.Errorf("reading the energy balance of the week of %s: %w", day.Format(time.DateOnly), err)
		}
		for _, row := range res.Rows {
			if row.Start.Before(from) || !row.Start.Before(to) {
				continue
			}
			if w, ok := row.Values["pvGeneration"]; ok {
				pv = append(pv, Sample{Start: row.Start, W: w})
			}
			if w, ok := row.Values["totalConsumption"]; ok {
				total = append(total, Sample{Start: row.Start, W: w})
			}
		}
		for _, id := range flexIDs {
			res, err := s.h.QuerySet(ctx, plant.SetQuery{DeviceID: id, SetType: plant.SetEnergyAndPowerConsumption, Period: plant.PeriodWeek, Date: day})
			if err != nil {
				return nil, nil, fmt.Errorf("reading the consumption of %s in the week of %s: %w", id, day.Format(time.DateOnly), err)
			}
			for _, row := range res.Rows {
				if w, ok := row.Values["consumption"]; ok && w > 0 {
					flex[row.Start.Unix()] += w
				}
			}
		}
		// The next Monday.
		y, m, d := day.Date()
		day = time.Date(y, m, d+7-(int(day.Weekday())+6)%7, 0, 0, 0, 0, r.cfg.Zone)
	}
	return pv, baseLoad(total, flex), nil
}

// recent is the clearness the plant's weather sensor measured over the
// last hour (nil when it cannot be judged).
func (s *Service) recent(ctx context.Context, r *plantRun, sensor string, now time.Time) *float64 {
	res, err := s.h.QuerySet(ctx, plant.SetQuery{DeviceID: sensor, SetType: plant.SetSensor, Period: plant.PeriodRecent})
	if err != nil {
		if !errors.Is(err, ctx.Err()) {
			s.log.Debug("forecast: no recent irradiance", "plant", r.cfg.ID, "sensor", sensor, "err", err)
		}
		return nil
	}
	// Recent is the last hour the store has, which ends up to the commit
	// interval before now (much more on the demo's fast clock): its
	// minutes count while they lie within recentMaxAge.
	var irr []Sample
	for _, row := range res.Rows {
		v, ok := row.Values["externalInsolation"]
		if ok && !row.Start.Before(now.Add(-recentMaxAge)) && !row.Start.After(now) {
			irr = append(irr, Sample{Start: row.Start.Add(30 * time.Second), W: v})
		}
	}
	c, ok := RecentClearness(r.cfg.Site, irr)
	if !ok {
		return nil
	}
	return &c
}

// askService asks the plant's forecast service when its refresh is due;
// a failed request keeps the last good answer.
func (s *Service) askService(ctx context.Context, r *plantRun) {
	if r.cfg.Service == nil {
		return
	}
	wall := s.cfg.WallNow()
	if !r.asked.IsZero() && wall.Sub(r.asked) < r.cfg.ServiceRefresh {
		return
	}
	r.asked = wall
	slots, err := r.cfg.Service.Fetch(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if r.svcErr == "" {
			s.log.Warn("forecast service failed: keeping its last answer, else the history alone", "plant", r.cfg.ID, "err", err)
		}
		r.svcErr = err.Error()
		s.failures++
		return
	}
	if r.svcErr != "" {
		s.log.Info("forecast service answers again", "plant", r.cfg.ID)
	}
	r.service, r.svcErr, r.svcAt = slots, "", wall
}

// recordDayAhead records the forecast for tomorrow once the plant-local
// time is past dayAheadHour (or at the first forecast plantd makes
// after it).
func (s *Service) recordDayAhead(r *plantRun, f Forecast, local time.Time) bool {
	if local.Hour() < dayAheadHour {
		return false
	}
	y, m, d := local.Date()
	from := time.Date(y, m, d+1, 0, 0, 0, 0, r.cfg.Zone)
	to := time.Date(y, m, d+2, 0, 0, 0, 0, r.cfg.Zone)
	date := from.Format(time.DateOnly)
	if _, ok := r.dayAhead[date]; ok {
		return false
	}
	var slots []Slot
	for _, sl := range f.Slots {
		if !sl.Start.Before(from) && sl.Start.Before(to) {
			slots = append(slots, sl)
		}
	}
	s.mu.Lock()
	r.dayAhead[date] = Recorded{Made: f.Made, Slots: slots}
	s.mu.Unlock()
	return true
}

// judge compares each recorded day that ended (evalDelay ago) with its
// measured PV.
func (s *Service) judge(ctx context.Context, r *plantRun, now time.Time) (bool, error) {
	var due []string
	for date := range r.dayAhead {
		day, err := time.ParseInLocation(time.DateOnly, date, r.cfg.Zone)
		if err != nil {
			continue
		}
		if end := day.AddDate(0, 0, 1); !now.Before(end.Add(evalDelay)) {
			due = append(due, date)
		}
	}
	slices.Sort(due)
	changed := false
	for _, date := range due {
		day, _ := time.ParseInLocation(time.DateOnly, date, r.cfg.Zone)
		pv, load, err := s.measured(ctx, r, day.AddDate(0, 0, -1), day.AddDate(0, 0, 1))
		if err != nil {
			return changed, err
		}
		split, _ := slices.BinarySearchFunc(pv, day, func(s Sample, t time.Time) int { return s.Start.Compare(t) })
		rec := r.dayAhead[date]
		acc, ok := Judge(r.fit, rec.Slots, pv[split:], pv[:split])
		if flat, fok := flatLoad(load, rec.Made); ok && fok {
			lsplit, _ := slices.BinarySearchFunc(load, day, func(s Sample, t time.Time) int { return s.Start.Compare(t) })
			if la, lok := JudgeLoad(rec.Slots, load[lsplit:], load[:lsplit], flat); lok {
				acc.Load = &la
			}
		}
		s.mu.Lock()
		delete(r.dayAhead, date)
		if ok {
			acc.Date, acc.Made = date, rec.Made
			r.days = append(r.days, acc)
			if len(r.days) > keepDays {
				r.days = slices.Delete(r.days, 0, len(r.days)-keepDays)
			}
			r.evaluated++
		}
		s.mu.Unlock()
		changed = true
		if ok {
			s.log.Info("PV forecast judged", "plant", r.cfg.ID, "date", date, "mae_w", math.Round(acc.MAEW),
				"mae_pct_of_peak", math.Round(1000*acc.MAERelative)/10, "forecast_wh", math.Round(acc.ForecastWh), "actual_wh", math.Round(acc.ActualWh),
				"clear_sky_mae_w", math.Round(acc.ClearSkyMAEW))
			if la := acc.Load; la != nil {
				s.log.Info("base-load forecast judged", "plant", r.cfg.ID, "date", date, "mae_w", math.Round(la.MAEW),
					"flat_mae_w", math.Round(la.FlatMAEW), "flat_w", math.Round(la.FlatW), "day_mean_mae_w", roundOrNaN(la.DayMeanMAEW),
					"persistence_mae_w", roundOrNaN(la.PersistenceMAEW), "forecast_wh", math.Round(la.ForecastWh), "actual_wh", math.Round(la.ActualWh))
			}
		} else {
			s.log.Info("PV forecast not judged: the day's PV was not measured enough", "plant", r.cfg.ID, "date", date)
		}
	}
	return changed, nil
}

// Judge compares a day's forecast slots with the measured ones over the
// daylight slots (the sun above the horizon at the slot's middle) that
// were measured; ok is false when fewer than minCoverage of them were.
// Beside it, two naive forecasts over the same slots, so that the figure
// means something: the day before's measured PV at the same time
// (previous; "tomorrow = today", over the slots it has, when it has
// minCoverage of them) and the fitted clear-sky PV.
func Judge(fit Fit, forecast []Slot, measured, previous []Sample) (DayAccuracy, bool) {
	byTime := func(ss []Sample) map[int64]float64 {
		m := make(map[int64]float64, len(ss))
		for _, s := range ss {
			m[s.Start.Unix()] = s.W
		}
		return m
	}
	got, before := byTime(measured), byTime(previous)
	var a DayAccuracy
	daylight, persisted := 0, 0
	var sumAbs, sumPersist, sumClear float64
	for _, f := range forecast {
		if fit.site.clearSky(f.Start) <= 0 {
			continue
		}
		daylight++
		w, ok := got[f.Start.Unix()]
		if !ok {
			continue
		}
		a.Slots++
		sumAbs += math.Abs(f.PowerW - w)
		sumClear += math.Abs(fit.ClearSkyW(f.Start) - w)
		if p, ok := before[f.Start.Add(-24*time.Hour).Unix()]; ok {
			persisted++
			sumPersist += math.Abs(p - w)
		}
		a.ForecastWh += f.PowerW * SlotLength.Hours()
		a.ActualWh += w * SlotLength.Hours()
	}
	if daylight == 0 || float64(a.Slots) < minCoverage*float64(daylight) {
		return a, false
	}
	a.MAEW = sumAbs / float64(a.Slots)
	a.ClearSkyMAEW = sumClear / float64(a.Slots)
	if float64(persisted) >= minCoverage*float64(a.Slots) {
		v := sumPersist / float64(persisted)
		a.PersistenceMAEW = &v
	}
	a.PeakW = fit.PeakW()
	if a.PeakW > 0 {
		a.MAERelative = a.MAEW / a.PeakW
	}
	return a, true
}

// roundOrNaN is *v rounded, NaN for nil (a log value).
func roundOrNaN(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return math.Round(*v)
}

// Forecast returns a plant's forecast as last made (Made zero: none yet,
// as without history) and its days' accuracy, oldest first; false for a
// plant the forecast does not run for.
func (s *Service) Forecast(plantID string) (Forecast, []DayAccuracy, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.byID[plantID]
	if !ok {
		return Forecast{}, nil, false
	}
	return r.current, slices.Clone(r.days), true
}

// Power is a plant's forecast PV power, W, for n 15-minute slots from
// from (each the mean of the forecast slot the time from + i × 15 min lies
// in), for the day-ahead plan; shorter when the forecast ends first, ok
// false when there is no forecast covering from (none made yet, an unknown
// plant).
func (s *Service) Power(plantID string, from time.Time, n int) (w []float64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, known := s.byID[plantID]
	if !known || len(r.current.Slots) == 0 {
		return nil, false
	}
	slots := r.current.Slots
	first := slots[0].Start
	for i := range n {
		d := from.Add(time.Duration(i) * SlotLength).Sub(first)
		k := int(d / SlotLength)
		if d < 0 || k >= len(slots) {
			break
		}
		w = append(w, slots[k].PowerW)
	}
	return w, len(w) > 0
}

// Load is a plant's base-load forecast, W, for n 15-minute slots from
// from (each the profile's value of the quarter-hour from + i × 15 min
// lies in), for the day-ahead plan; ok false without a profile (too
// little history, an unknown plant). Unlike Power it answers for any
// time: the profile is by quarter-hour of the local day.
func (s *Service) Load(plantID string, from time.Time, n int) (w []float64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, known := s.byID[plantID]
	if !known || !r.loadOK {
		return nil, false
	}
	w = make([]float64, n)
	for i := range w {
		w[i] = r.load.At(from.Add(time.Duration(i) * SlotLength))
	}
	return w, true
}

// Plants are the ids of the plants the forecast runs for.
func (s *Service) Plants() []string { return slices.Clone(s.ids) }
