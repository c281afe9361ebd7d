package forecast

import (
	"math"
	"slices"
	"time"
)

// Base-load fitting constants.
const (
	// LoadHistoryDays is how many past days the base-load profile reads.
	LoadHistoryDays = 14
	// minLoadDays is the fewest days with samples a profile needs.
	minLoadDays = 2
	// minClassDays is the fewest days each of weekdays and weekends needs
	// for their own profiles.
	minClassDays = 3
	// splitGain: weekdays and weekends get their own profiles when these
	// fit the history better than one profile does: its absolute
	// deviation from them is at least this share below that from the one
	// (on noise alone, 14 days, the split gains 2-3 %).
	splitGain = 0.1
	// loadWindow is the half-width, in quarter-hours, of the window a
	// quarter-hour's median is taken over (±1: 45 minutes).
	loadWindow = 1
)

// LoadFit is a plant's base load by quarter-hour of the plant-local day
// (its clock: the house's day follows it, not the sun), fitted to its
// history: the median of the 15-minute means of the quarter-hour and its
// neighbours (loadWindow) over the days, for weekdays and weekends apart
// when the history shows they differ.
type LoadFit struct {
	zone *time.Location
	// w is the base load by local quarter-hour: [0] weekdays (every day
	// unless split), [1] Saturdays and Sundays.
	w     [2][slotsPerDay]float64
	split bool
	days  int
}

// localQuarter is the plant-local quarter-hour of the day t lies in and
// whether its day is a weekend day.
func localQuarter(t time.Time, zone *time.Location) (q int, weekend bool) {
	l := t.In(zone)
	wd := l.Weekday()
	return l.Hour()*4 + l.Minute()/15, wd == time.Saturday || wd == time.Sunday
}

// FitLoad fits a plant's base-load profile to its measured base load
// (15-minute means, any order; negative and NaN values are left out). ok
// is false when fewer than minLoadDays days have samples. The median is
// the statistic of the absolute error by which the forecast is judged
// (it minimises it), and robust to a day's odd evening (a sauna, a
// party). Quarter-hours without a sample in their window take their
// nearest neighbour's value.
func FitLoad(zone *time.Location, samples []Sample) (f LoadFit, ok bool) {
	f.zone = zone
	// Bucket the values by class and quarter-hour in one flat slice
	// (counting sort): two allocations, whatever the history.
	type key struct{ class, q int }
	keys := make([]key, len(samples))
	var count [2][slotsPerDay]int
	var dayCount [2]int
	lastDay := [2]int64{math.MinInt64, math.MinInt64}
	days := 0
	var lastAny int64 = math.MinInt64
	for i, s := range samples {
		keys[i] = key{-1, 0}
		if s.W < 0 || math.IsNaN(s.W) {
			continue
		}
		q, we := localQuarter(s.Start, zone)
		c := 0
		if we {
			c = 1
		}
		keys[i] = key{c, q}
		count[c][q]++
		y, m, d := s.Start.In(zone).Date()
		day := int64(y)*400 + int64(m)*32 + int64(d)
		// Samples come in time order from the store; a day is counted
		// where it changes (unordered input may count a day twice, which
		// only eases the thresholds).
		if day != lastDay[c] {
			dayCount[c]++
			lastDay[c] = day
		}
		if day != lastAny {
			days++
			lastAny = day
		}
	}
	f.days = days
	if days < minLoadDays {
		return f, false
	}
	var off [2][slotsPerDay + 1]int
	n := 0
	for c := range 2 {
		for q := range slotsPerDay {
			off[c][q] = n
			n += count[c][q]
		}
		off[c][slotsPerDay] = n
	}
	flat := make([]float64, n+2*(2*loadWindow+1)*maxBucket(&count))
	scratch := flat[n:]
	flat = flat[:n]
	var fill [2][slotsPerDay]int
	for i, s := range samples {
		k := keys[i]
		if k.class < 0 {
			continue
		}
		flat[off[k.class][k.q]+fill[k.class][k.q]] = s.W
		fill[k.class][k.q]++
	}
	// median over the window of quarter-hours around q of the classes in
	// cs (around midnight it wraps to the same class's other end).
	median := func(q int, cs ...int) float64 {
		buf := scratch[:0]
		for _, c := range cs {
			for d := -loadWindow; d <= loadWindow; d++ {
				qq := (q + d + slotsPerDay) % slotsPerDay
				buf = append(buf, flat[off[c][qq]:off[c][qq]+count[c][qq]]...)
			}
		}
		if len(buf) == 0 {
			return math.NaN()
		}
		slices.Sort(buf)
		if m := len(buf) / 2; len(buf)%2 == 0 {
			return (buf[m-1] + buf[m]) / 2
		} else {
			return buf[m]
		}
	}
	var joint [slotsPerDay]float64
	for q := range slotsPerDay {
		joint[q] = median(q, 0, 1)
	}
	if !fillGaps(&joint) {
		return f, false
	}
	if dayCount[0] >= minClassDays && dayCount[1] >= minClassDays {
		for q := range slotsPerDay {
			f.w[0][q], f.w[1][q] = median(q, 0), median(q, 1)
		}
		if fillGaps(&f.w[0]) && fillGaps(&f.w[1]) {
			var devJoint, devSplit float64
			for i, s := range samples {
				if k := keys[i]; k.class >= 0 {
					devJoint += math.Abs(s.W - joint[k.q])
					devSplit += math.Abs(s.W - f.w[k.class][k.q])
				}
			}
			f.split = devSplit < (1-splitGain)*devJoint // a history both fit exactly stays one
		}
	}
	if !f.split {
		f.w[0], f.w[1] = joint, joint
	}
	return f, true
}

// maxBucket is the largest count of a quarter-hour's values.
func maxBucket(count *[2][slotsPerDay]int) int {
	m := 0
	for c := range count {
		m = max(m, slices.Max(count[c][:]))
	}
	return m
}

// At is the base load forecast for the slot starting at start, W.
func (f LoadFit) At(start time.Time) float64 {
	q, we := localQuarter(start, f.zone)
	if we && f.split {
		return f.w[1][q]
	}
	return f.w[0][q]
}

// Days is the number of days of history the profile was fitted to.
func (f LoadFit) Days() int { return f.days }

// Split reports whether weekdays and weekends have their own profiles.
func (f LoadFit) Split() bool { return f.split }

// baseLoad is the plant's base load per 15-minute slot: its total
// consumption less the flexible consumers' metered consumption in the
// same slot (never below 0). Slots without total consumption have none.
func baseLoad(total []Sample, flex map[int64]float64) []Sample {
	out := make([]Sample, 0, len(total))
	for _, s := range total {
		out = append(out, Sample{Start: s.Start, W: max(0, s.W-flex[s.Start.Unix()])})
	}
	return out
}

// flatLoad is the flat base load a plan made at made would have taken:
// the measured base load before made smoothed exponentially with an
// hour's time constant (siteplan's smoothing of the live load), from 15-
// minute means in time order. ok is false without a sample in the 2 h
// before made.
func flatLoad(load []Sample, made time.Time) (w float64, ok bool) {
	var last time.Time
	for _, s := range load {
		end := s.Start.Add(SlotLength)
		if end.After(made) {
			break
		}
		if !ok {
			w, ok, last = s.W, true, end
			continue
		}
		w += (s.W - w) * (1 - math.Exp(-end.Sub(last).Hours()))
		last = end
	}
	return w, ok && made.Sub(last) <= recentMaxAge
}

// LoadAccuracy is how one day's day-ahead base-load forecast did against
// the measured base load over the day's measured slots, beside the flat
// base load a plan made at the same time took (flatLoad) and two naive
// forecasts: the day before's mean base load, flat, and "tomorrow =
// today" (the day before's base load at the same time).
type LoadAccuracy struct {
	// MAEW is the mean absolute error in W; FlatMAEW that of FlatW over
	// the same slots.
	MAEW     float64 `json:"maeW"`
	FlatW    float64 `json:"flatW"`
	FlatMAEW float64 `json:"flatMaeW"`
	// DayMeanMAEW is the MAE of the day before's mean base load, flat;
	// PersistenceMAEW that of the day before's at the same time (each
	// nil when the day before was measured in fewer than minCoverage of
	// the slots).
	DayMeanMAEW     *float64 `json:"dayMeanMaeW,omitempty"`
	PersistenceMAEW *float64 `json:"persistenceMaeW,omitempty"`
	Slots           int      `json:"slots"`
	// ForecastWh and ActualWh are the energies of those slots.
	ForecastWh float64 `json:"forecastWh"`
	ActualWh   float64 `json:"actualWh"`
}

// Rounded is a with its watts and watt-hours rounded to whole units, as
// the API shows them.
func (a LoadAccuracy) Rounded() LoadAccuracy {
	a.MAEW, a.FlatW, a.FlatMAEW = math.Round(a.MAEW), math.Round(a.FlatW), math.Round(a.FlatMAEW)
	a.ForecastWh, a.ActualWh = math.Round(a.ForecastWh), math.Round(a.ActualWh)
	for _, p := range []**float64{&a.DayMeanMAEW, &a.PersistenceMAEW} {
		if *p != nil {
			v := math.Round(**p)
			*p = &v
		}
	}
	return a
}

// JudgeLoad compares a day's forecast slots' base load with the measured
// one, with the flat flatW and with the day before's (previous); ok is
// false when fewer than minCoverage of the slots were measured, or the
// forecast had no base load.
func JudgeLoad(forecast []Slot, measured, previous []Sample, flatW float64) (LoadAccuracy, bool) {
	got := make(map[int64]float64, len(measured))
	for _, s := range measured {
		got[s.Start.Unix()] = s.W
	}
	before := make(map[int64]float64, len(previous))
	var prevSum float64
	for _, s := range previous {
		before[s.Start.Unix()] = s.W
		prevSum += s.W
	}
	a := LoadAccuracy{FlatW: flatW}
	var sumAbs, sumFlat, sumMean, sumPersist float64
	n, persisted := 0, 0
	for _, f := range forecast {
		if f.LoadW == nil {
			continue
		}
		n++
		w, ok := got[f.Start.Unix()]
		if !ok {
			continue
		}
		a.Slots++
		sumAbs += math.Abs(*f.LoadW - w)
		sumFlat += math.Abs(flatW - w)
		if len(previous) > 0 {
			sumMean += math.Abs(prevSum/float64(len(previous)) - w)
		}
		if p, ok := before[f.Start.Add(-24*time.Hour).Unix()]; ok {
			persisted++
			sumPersist += math.Abs(p - w)
		}
		a.ForecastWh += *f.LoadW * SlotLength.Hours()
		a.ActualWh += w * SlotLength.Hours()
	}
	if n == 0 || float64(a.Slots) < minCoverage*float64(n) {
		return a, false
	}
	a.MAEW, a.FlatMAEW = sumAbs/float64(a.Slots), sumFlat/float64(a.Slots)
	if float64(len(previous)) >= minCoverage*float64(a.Slots) {
		v := sumMean / float64(a.Slots)
		a.DayMeanMAEW = &v
	}
	if float64(persisted) >= minCoverage*float64(a.Slots) {
		v := sumPersist / float64(persisted)
		a.PersistenceMAEW = &v
	}
	return a, true
}
