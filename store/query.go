package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"time"

	"plantd/plant"
	"plantd/plant/kind"
)

// setOrder is the order DeviceSets lists sets in.
var setOrder = []plant.SetType{
	plant.SetEnergyAndPowerPv, plant.SetEnergyAndPowerInOut, plant.SetEnergyAndPowerConsumption,
	plant.SetEnergyAndPowerBattery, plant.SetPowerAc, plant.SetPowerDc, plant.SetEnergyDc,
	plant.SetEnergyMix, plant.SetSensor,
}

// DeviceSets returns the measurement sets a device has data for: those of
// the channels stored for it, EnergyDc when it has DC inputs, and EnergyMix
// for a meter (the plant's mix, measured at the grid connection).
func (s *Store) DeviceSets(ctx context.Context, deviceID string) ([]plant.SetType, error) {
	d := s.cat.device(deviceID)
	if d == nil {
		return nil, fmt.Errorf("sets of device %q: %w", deviceID, ErrUnknownDevice)
	}
	have := s.deviceSets(d)
	var out []plant.SetType
	for _, st := range setOrder {
		if have[st] {
			out = append(out, st)
		}
	}
	return out, nil
}

func (s *Store) deviceSets(d *device) map[plant.SetType]bool {
	have := map[plant.SetType]bool{}
	s.cat.mu.RLock()
	for k := range d.chans {
		have[k.ch.Set()] = true
		if k.ch == plant.DCPowerInput {
			have[plant.SetEnergyDc] = true
		}
	}
	s.cat.mu.RUnlock()
	if d.kind == kind.Meter {
		have[plant.SetEnergyMix] = true
	}
	return have
}

// scope is what a query is about.
type scope struct {
	plantID string
	loc     *time.Location
	dev     *device // the device of a device set; nil for a plant set
	src     *device // whose rollups answer: dev, or the plant's balance source (nil: no data yet)
	set     plant.SetType
}

func (s *Store) scopeOf(q plant.SetQuery) (scope, error) {
	sc := scope{set: q.SetType}
	plantSet := q.SetType == plant.SetEnergyBalance || q.SetType == plant.SetEnergyMix
	switch {
	case q.DeviceID != "":
		d := s.cat.device(q.DeviceID)
		if d == nil {
			return sc, fmt.Errorf("set %s of device %q: %w", q.SetType, q.DeviceID, ErrUnknownDevice)
		}
		sc.dev, sc.plantID, sc.loc = d, d.plant, s.zone(d.plant)
		if !s.deviceSets(d)[q.SetType] {
			return sc, fmt.Errorf("set %s of device %q: %w", q.SetType, q.DeviceID, ErrUnsupportedSet)
		}
		sc.src = d
		if q.SetType == plant.SetEnergyMix {
			sc.src = s.cat.plantSource(d.plant)
		}
	case q.PlantID != "":
		loc, ok := s.plants[q.PlantID]
		if !ok {
			return sc, fmt.Errorf("set %s of plant %q: %w", q.SetType, q.PlantID, ErrUnknownPlant)
		}
		if !plantSet {
			return sc, fmt.Errorf("set %s of plant %q (a device set): %w", q.SetType, q.PlantID, ErrUnsupportedSet)
		}
		sc.plantID, sc.loc = q.PlantID, loc
		sc.src = s.cat.plantSource(q.PlantID)
	default:
		return sc, fmt.Errorf("%w: plantId or deviceId is required", ErrBadQuery)
	}
	return sc, nil
}

// plantSource returns a plant's balance source, nil before its first
// rollup.
func (c *catalog) plantSource(plantID string) *device {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.plantSrc[plantID]
}

// window is the span and shape of a query.
type window struct {
	from, to int64 // [from, to) in Unix ms
	table    string
	res      string
	// group maps a row's start to its interval's start; nil keeps rows.
	group func(t int64) int64
	// width is an interval's length for W means (0: rows are in Wh).
	width int64
}

// windowOf computes the span and resolution of a period.
func (s *Store) windowOf(p plant.Period, date time.Time, loc *time.Location, q plant.SetQuery) (window, error) {
	if date.IsZero() {
		date = s.cfg.Now().In(loc)
	}
	y, m, d := date.Date()
	if y < 1970 || y > 9999 {
		return window{}, fmt.Errorf("%w: date %04d-%02d-%02d out of range", ErrBadQuery, y, m, d)
	}
	day := func(y int, m time.Month, d int) int64 { return time.Date(y, m, d, 0, 0, 0, 0, loc).UnixMilli() }
	switch p {
	case plant.PeriodDay:
		return window{from: day(y, m, d), to: day(y, m, d+1), table: "r5m", res: plant.ResolutionFiveMinutes, width: bucketMs}, nil
	case plant.PeriodWeek:
		// Weeks start on Monday (ISO 8601).
		back := (int(date.Weekday()) + 6) % 7
		w := window{from: day(y, m, d-back), to: day(y, m, d-back+7)}
		if q.SetType == plant.SetEnergyBalance && q.WithTotal {
			// The spec's "hourly calls for week periods with total".
			w.table, w.res, w.width = "r1h", plant.ResolutionOneHour, hourMs
			return w, nil
		}
		w.table, w.res, w.width = "r5m", plant.ResolutionFifteenMinutes, 3*bucketMs
		w.group = func(t int64) int64 { return localFloor(t, 3*bucketMs, loc) }
		return w, nil
	case plant.PeriodMonth:
		return window{from: day(y, m, 1), to: day(y, m+1, 1), table: "r1d", res: plant.ResolutionOneDay}, nil
	case plant.PeriodYear:
		return window{from: day(y, 1, 1), to: day(y+1, 1, 1), table: "r1d", res: plant.ResolutionOneMonth,
			group: func(t int64) int64 {
				yy, mm, _ := time.UnixMilli(t).In(loc).Date()
				return time.Date(yy, mm, 1, 0, 0, 0, 0, loc).UnixMilli()
			}}, nil
	case plant.PeriodTotal:
		return window{from: math.MinInt64, to: math.MaxInt64, table: "r1d", res: plant.ResolutionOneYear,
			group: func(t int64) int64 {
				yy := time.UnixMilli(t).In(loc).Year()
				return time.Date(yy, 1, 1, 0, 0, 0, 0, loc).UnixMilli()
			}}, nil
	}
	return window{}, fmt.Errorf("%w: period %q", ErrBadQuery, p)
}

// interval is one output interval's merged aggregates, sorted by series.
type interval struct {
	start, end int64
	es         []aggEntry
}

// add merges one series' aggregate into the interval. Rows decode in
// series order, so a fresh interval appends.
func (iv *interval) add(sid int64, a agg) {
	if n := len(iv.es); n == 0 || iv.es[n-1].sid < sid {
		iv.es = append(iv.es, aggEntry{sid: sid, a: a})
		return
	}
	i, found := slices.BinarySearchFunc(iv.es, sid, func(e aggEntry, sid int64) int { return cmp.Compare(e.sid, sid) })
	if found {
		iv.es[i].a.merge(a)
		return
	}
	iv.es = slices.Insert(iv.es, i, aggEntry{sid: sid, a: a})
}

// QuerySet answers a measurement set (see SetQuery, plant.SetResult and doc.go,
// "Queries"). Errors: ErrUnknownPlant, ErrUnknownDevice, ErrUnsupportedSet,
// ErrBadQuery (naming the parameter), or the storage's.
func (s *Store) QuerySet(ctx context.Context, q plant.SetQuery) (plant.SetResult, error) {
	db := s.rdb.Load()
	if db == nil {
		return plant.SetResult{}, ErrClosed
	}
	if !validSet(q.SetType) {
		return plant.SetResult{}, fmt.Errorf("%w: setType %q", ErrBadQuery, q.SetType)
	}
	p := plant.PeriodRecent
	if q.Period != "" {
		var err error
		if p, err = plant.ParsePeriod(string(q.Period)); err != nil {
			return plant.SetResult{}, fmt.Errorf("%w: %v", ErrBadQuery, err)
		}
	}
	sc, err := s.scopeOf(q)
	if err != nil {
		return plant.SetResult{}, err
	}
	if p == plant.PeriodRecent {
		return s.recent(ctx, db, sc, q)
	}
	w, err := s.windowOf(p, q.Date, sc.loc, q)
	if err != nil {
		return plant.SetResult{}, err
	}
	res := plant.SetResult{Resolution: w.res}
	var ivs []*interval
	if sc.src != nil {
		ivs, err = s.readIntervals(ctx, db, sc.src, w)
		if err != nil {
			return plant.SetResult{}, err
		}
	}
	wh := w.width == 0 || (q.ReturnEnergyValues && energyAndPowerSet(q.SetType))
	res.Rows = make([]plant.SetRow, 0, len(ivs))
	for _, iv := range ivs {
		hours := float64(iv.end-iv.start) / 3.6e6
		r := s.buildRow(sc, iv.es, iv.start, hours, wh)
		if len(r.Values) > 0 || len(r.Indexed) > 0 {
			res.Rows = append(res.Rows, r)
		}
	}
	if q.WithTotal {
		start := w.from
		if p == plant.PeriodTotal {
			// From the first year with data (or this year).
			start = time.Date(s.cfg.Now().In(sc.loc).Year(), 1, 1, 0, 0, 0, 0, sc.loc).UnixMilli()
			if len(ivs) > 0 {
				start = ivs[0].start
			}
		}
		all := &interval{}
		for _, iv := range ivs {
			for _, e := range iv.es {
				all.add(e.sid, e.a)
			}
		}
		t := s.buildRow(sc, all.es, start, 0, true)
		res.Total = &t
	}
	return res, nil
}

func validSet(st plant.SetType) bool {
	return st == plant.SetEnergyBalance || slices.Contains(setOrder, st)
}

func energyAndPowerSet(st plant.SetType) bool {
	switch st {
	case plant.SetEnergyAndPowerPv, plant.SetEnergyAndPowerInOut, plant.SetEnergyAndPowerConsumption, plant.SetEnergyAndPowerBattery:
		return true
	}
	return false
}

// readIntervals reads a source's rows of w and groups them into intervals.
func (s *Store) readIntervals(ctx context.Context, db *sql.DB, src *device, w window) ([]*interval, error) {
	rows, err := db.QueryContext(ctx, `SELECT t, v FROM `+w.table+` WHERE src = ? AND t >= ? AND t < ? ORDER BY t`, src.id, w.from, w.to)
	if err != nil {
		return nil, fmt.Errorf("store: query %s: %w", src.name, classify(err))
	}
	defer rows.Close()
	var out []*interval
	var cur *interval
	for rows.Next() {
		var t int64
		var v []byte
		if err := rows.Scan(&t, &v); err != nil {
			return nil, fmt.Errorf("store: query %s: %w", src.name, err)
		}
		start := t
		if w.group != nil {
			start = w.group(t)
		}
		if cur == nil || cur.start != start {
			cur = &interval{start: start, end: start + w.width}
			out = append(out, cur)
		}
		if _, err := decodeAggs(v, s.cat, cur.add); err != nil {
			continue
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: query %s: %w", src.name, err)
	}
	return out, nil
}

// buildRow turns an interval's aggregates into a plant.SetRow. hours is the
// interval's length for W means; wh gives energies in Wh instead.
func (s *Store) buildRow(sc scope, es []aggEntry, start int64, hours float64, wh bool) plant.SetRow {
	r := plant.SetRow{Start: time.UnixMilli(start).UTC(), Values: make(map[string]float64, 8)}
	if sc.set == plant.SetEnergyBalance || sc.set == plant.SetEnergyMix {
		var b balRow
		s.cat.mu.RLock()
		for _, e := range es {
			if se := s.cat.seriesIDs[e.sid]; se != nil && se.bf >= 0 && se.bf < numBal {
				b[se.bf].merge(e.a)
			}
		}
		s.cat.mu.RUnlock()
		if sc.set == plant.SetEnergyBalance {
			balanceValues(r.Values, &b, hours, wh)
		} else {
			mixValues(r.Values, &b, hours, wh)
		}
		return r
	}
	ch := make([]chAgg, 0, len(es))
	s.cat.mu.RLock()
	for i := range es {
		if se := s.cat.seriesIDs[es[i].sid]; se != nil && se.ch != 0 {
			ch = append(ch, chAgg{chKey{se.ch, int32(se.idx)}, &es[i].a})
		}
	}
	s.cat.mu.RUnlock()
	deviceValues(&r, sc.set, ch, hours, wh)
	return r
}

// chAgg is one channel's aggregate in an interval.
type chAgg struct {
	k chKey
	a *agg
}

// energyValue converts an energy to the row's unit.
func energyValue(e, hours float64, wh bool) float64 {
	if wh || hours <= 0 {
		return e
	}
	return e / hours
}

// balanceValues fills the EnergyBalance fields.
func balanceValues(v map[string]float64, b *balRow, hours float64, wh bool) {
	for f := range balSoC {
		if b[f].hasE {
			v[balNames[f]] = energyValue(b[f].e, hours, wh)
		}
	}
	if b[balPV].hasE {
		v["totalGeneration"] = energyValue(b[balPV].e, hours, wh)
		if b[balSelfCons].hasE && b[balPV].e > 0 {
			v["selfConsumptionRate"] = clamp(b[balSelfCons].e/b[balPV].e, 0, 1)
		}
	}
	if b[balSoC].n > 0 {
		v[balNames[balSoC]] = b[balSoC].mean()
	}
	if b[balTotalCons].hasE && b[balSelfSupply].hasE && b[balTotalCons].e > 0 {
		v["autarkyRate"] = clamp(b[balSelfSupply].e/b[balTotalCons].e, 0, 1)
	}
}

// mixValues fills the EnergyMix fields: each source's share of the
// consumption (PV used directly, battery discharge, grid) and the
// consumption.
func mixValues(v map[string]float64, b *balRow, hours float64, wh bool) {
	if !b[balTotalCons].hasE {
		return
	}
	v["totalConsumption"] = energyValue(b[balTotalCons].e, hours, wh)
	if !b[balGridCons].hasE {
		return
	}
	direct, dis, grid := b[balDirectCons].e, b[balDischarging].e, b[balGridCons].e
	sum := direct + dis + grid
	if sum <= 0 {
		return
	}
	if b[balDirectCons].hasE {
		v["pvConsumptionRate"] = direct / sum
	}
	if b[balDischarging].hasE {
		v["batteryConsumptionRate"] = dis / sum
	}
	v["gridConsumptionRate"] = grid / sum
}

// deviceValues fills a device set's fields: the energy fields of the
// EnergyAndPower* sets from energies, EnergyDc's dcEnergyInput in Wh, and
// every other channel of the set (Channel.Set) as its sample mean; inputs
// of indexed fields in input order.
func deviceValues(r *plant.SetRow, set plant.SetType, ch []chAgg, hours float64, wh bool) {
	type input struct {
		field string
		idx   int32
		v     float64
	}
	var inputs []input
	for _, e := range ch {
		c, a := e.k.ch, e.a
		switch {
		case set == plant.SetEnergyDc && c == plant.DCEnergyInput:
			if a.hasE {
				inputs = append(inputs, input{c.Field(), e.k.idx, a.e}) // Wh in every period
			}
		case c.Set() != set || c.Counter():
		case c.EnergyField():
			if a.hasE {
				r.Values[c.Field()] = energyValue(a.e, hours, wh)
			}
		case a.n == 0:
		case c.Indexed():
			inputs = append(inputs, input{c.Field(), e.k.idx, a.mean()})
		default:
			r.Values[c.Field()] = a.mean()
		}
	}
	if len(inputs) > 0 {
		slices.SortFunc(inputs, func(a, b input) int { return cmp.Or(cmp.Compare(a.field, b.field), cmp.Compare(a.idx, b.idx)) })
		r.Indexed = map[string][]plant.IndexedValue{}
		for _, in := range inputs {
			r.Indexed[in.field] = append(r.Indexed[in.field], plant.IndexedValue{Index: plant.IndexLabel(max(1, int(in.idx))), Value: in.v})
		}
	}
	if set == plant.SetPowerAc {
		powerAcFallback(r.Values)
	}
}

// powerAcFallback fills PowerAc fields a device did not measure from the
// ones it did (doc.go, "PowerAc fallback"): a missing total power is the
// sum of its phases; a missing phase voltage is the line-to-line voltage
// it starts divided by √3; a missing line-to-line voltage comes from its
// two measured phase voltages, √(a² + b² + ab) (phases 120° apart).
func powerAcFallback(v map[string]float64) {
	for _, p := range phasePowers {
		if _, ok := v[p[0]]; ok {
			continue
		}
		sum, n := 0.0, 0
		for _, ph := range p[1:] {
			if x, ok := v[ph]; ok {
				sum += x
				n++
			}
		}
		if n > 0 {
			v[p[0]] = sum
		}
	}
	var phase [3]float64
	var measured [3]bool
	for i, p := range phaseVoltages {
		phase[i], measured[i] = v[p[0]]
	}
	for i, p := range phaseVoltages {
		if ll, ok := v[p[2]]; ok && !measured[i] {
			v[p[0]] = ll / math.Sqrt(3)
		}
	}
	for i, p := range phaseVoltages {
		j := (i + 1) % 3
		if _, ok := v[p[2]]; !ok && measured[i] && measured[j] {
			a, b := phase[i], phase[j]
			v[p[2]] = math.Sqrt(a*a + b*b + a*b)
		}
	}
}

// The fields powerAcFallback derives: total and phases; phase voltage,
// the next phase's, and the line-to-line voltage between them.
var (
	phasePowers = [3][4]string{
		{"activePower", "activePowerPhaseA", "activePowerPhaseB", "activePowerPhaseC"},
		{"reactivePower", "reactivePowerPhaseA", "reactivePowerPhaseB", "reactivePowerPhaseC"},
		{"apparentPower", "apparentPowerPhaseA", "apparentPowerPhaseB", "apparentPowerPhaseC"},
	}
	phaseVoltages = [3][3]string{
		{"voltagePhaseA", "voltagePhaseB", "voltagePhaseA2B"},
		{"voltagePhaseB", "voltagePhaseC", "voltagePhaseB2C"},
		{"voltagePhaseC", "voltagePhaseA", "voltagePhaseC2A"},
	}
)

// Recent is the last hour of data, in minutes.
const (
	minuteMs    = 60 * 1000
	recentSpan  = 60 * minuteMs
	recentLook  = 24 * hourMs // how far back Recent looks for a device's last sample
	recentWidth = minuteMs
)

// recent answers Recent: the complete OneMinute intervals of the hour up
// to the scope's newest sample (the running minute only when there is no
// other), computed from raw samples with the same bucket engine as the
// rollups. The API merges them into one row of the newest values.
func (s *Store) recent(ctx context.Context, db *sql.DB, sc scope, q plant.SetQuery) (plant.SetResult, error) {
	res := plant.SetResult{Resolution: plant.ResolutionOneMinute}
	want := map[int64]*device{}
	if sc.dev != nil && sc.set != plant.SetEnergyMix {
		want[sc.dev.id] = sc.dev
	} else {
		for _, d := range s.cat.devices() {
			if d.kind != kindPlant && d.plant == sc.plantID {
				want[d.id] = d
			}
		}
	}
	if len(want) == 0 {
		return res, nil
	}
	latest, ok, err := s.newestOf(ctx, db, want)
	if err != nil || !ok {
		return res, err
	}
	to := floorDiv(latest, recentWidth) + recentWidth
	from := to - recentSpan
	plantSet := sc.set == plant.SetEnergyBalance || sc.set == plant.SetEnergyMix
	// Per minute: the plant's devices' intervals, or the device's
	// aggregates.
	var minutes map[int64][]devInterval
	var buckets map[int64]*devBucket
	if plantSet {
		devs := make([]*device, 0, len(want))
		for _, d := range want {
			devs = append(devs, d)
		}
		if minutes, err = s.recentMinutes(ctx, db, devs, from, to, false); err != nil {
			return res, fmt.Errorf("store: recent: %w", classify(err))
		}
	} else {
		cd, err := readWindow(ctx, db, s, nil, from, to, devRange{}, func(d *device) bool { return want[d.id] != nil }, nil, nil, nil)
		if err != nil {
			return res, fmt.Errorf("store: recent: %w", classify(err))
		}
		if ds := cd.devs[sc.dev.id]; ds != nil {
			buckets = aggregate(ds.prev, ds.samples, nil, from, to, recentWidth, nil, nil, nil)
		}
	}
	starts := make([]int64, 0, max(len(minutes), len(buckets)))
	for b := range minutes {
		starts = append(starts, b)
	}
	for b := range buckets {
		starts = append(starts, b)
	}
	slices.Sort(starts)
	wh := q.ReturnEnergyValues && energyAndPowerSet(q.SetType)
	hours := float64(recentWidth) / 3.6e6
	totalBal := balRow{}
	totalDev := map[chKey]*agg{}
	for _, b := range starts {
		r := plant.SetRow{Start: time.UnixMilli(b).UTC(), Values: map[string]float64{}}
		if plantSet {
			bal, ok := computeBalance(minutes[b])
			if !ok {
				continue
			}
			for f := range numBal {
				totalBal[f].merge(bal[f])
			}
			if sc.set == plant.SetEnergyBalance {
				balanceValues(r.Values, &bal, hours, wh)
			} else {
				mixValues(r.Values, &bal, hours, wh)
			}
		} else {
			db := buckets[b]
			for k, a := range db.aggs {
				x := totalDev[k]
				if x == nil {
					x = &agg{}
					totalDev[k] = x
				}
				x.merge(*a)
			}
			deviceValues(&r, sc.set, chAggs(db.aggs), hours, wh)
		}
		if len(r.Values) > 0 || len(r.Indexed) > 0 {
			res.Rows = append(res.Rows, r)
		}
	}
	// The minute of the newest sample is still running: its values are
	// partial (an energy of a few seconds). Recent is the latest complete
	// values, so it goes unless it is all there is.
	if n := len(res.Rows); n > 1 && res.Rows[n-1].Start.UnixMilli()+recentWidth > latest {
		res.Rows = res.Rows[:n-1]
	}
	if q.WithTotal {
		t := plant.SetRow{Start: time.UnixMilli(from).UTC(), Values: map[string]float64{}}
		switch sc.set {
		case plant.SetEnergyBalance:
			balanceValues(t.Values, &totalBal, 0, true)
		case plant.SetEnergyMix:
			mixValues(t.Values, &totalBal, 0, true)
		default:
			deviceValues(&t, sc.set, chAggs(totalDev), 0, true)
		}
		res.Total = &t
	}
	return res, nil
}

// newestOf returns the time of the newest sample of the devices (ok
// false: none), looking back recentLook from the newest sample stored,
// or the newest the writer holds in their open minutes (its last
// commit's): a device's complete minutes are stored once its next one
// began, so the stored samples alone would end a minute early, and the
// last complete minute would look like the running one. A sample stamped
// in the clock's future (taken while the clock was ahead) never hides
// the present.
func (s *Store) newestOf(ctx context.Context, db *sql.DB, want map[int64]*device) (int64, bool, error) {
	limit := s.futureLimit()
	newest, ok, err := newestSample(ctx, db, oldestMs, limit, nil)
	if err != nil || !ok {
		return 0, false, classify(err)
	}
	ids := make([]int64, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return 0, false, nil
	}
	latest, ok, err := newestSample(ctx, db, newest-recentLook, limit, ids)
	if err != nil {
		return 0, false, fmt.Errorf("store: recent: %w", classify(err))
	}
	if open := s.openNewest.Load(); open != nil {
		for _, id := range ids {
			if t, has := (*open)[id]; has && t <= limit && (!ok || t > latest) {
				latest, ok = t, true
			}
		}
	}
	return latest, ok, nil
}

// chAggs lists a map of channel aggregates.
func chAggs(m map[chKey]*agg) []chAgg {
	out := make([]chAgg, 0, len(m))
	for k, a := range m {
		out = append(out, chAgg{k, a})
	}
	return out
}
