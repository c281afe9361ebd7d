package forecast

import (
	"math"
	"slices"
	"time"

	"plantd/internal/solar"
)

// SlotLength is the length of a forecast slot.
const SlotLength = 15 * time.Minute

// slotsPerDay are the slots of a UTC day; the fit is indexed by the UTC
// quarter-hour, on which the sun's path depends (not the local clock,
// which jumps at DST).
const slotsPerDay = 24 * 4

// Sample is a measured mean over one 15-minute slot.
type Sample struct {
	Start time.Time
	W     float64
}

// Site is where a plant is and how large: latitude and longitude in
// degrees, the peak power in W (0: not known, the most measured in a slot
// stands in).
type Site struct {
	Lat, Lon float64
	PeakW    float64
}

// Fit is a plant's response to the clear sky, fitted to its history: per
// UTC quarter-hour of the day the ratio of its PV to the clear-sky GHI on
// its clearest days, and its mean clearness (measured PV over the
// clear-sky curve) over the whole history.
type Fit struct {
	site Site
	// ratio is W of PV per W/m² of clear-sky GHI by UTC quarter-hour.
	ratio [slotsPerDay]float64
	// clearness is the history's PV over its clear-sky PV, energy
	// weighted: the expected clearness of a day without other knowledge.
	clearness float64
	// maxW is the most PV measured in a slot of the history.
	maxW float64
	// days counts the history's days with daylight samples.
	days int
}

// Clear-sky fitting constants.
const (
	// minClearSkyGHI: slots where the clear sky gives less (dawn, dusk)
	// tell little of the plant's response and are left out of the fit.
	minClearSkyGHI = 30.0
	// clearQuantile is the quantile of a slot's ratios taken as the clear
	// sky's: the clearest days' response, robust to one odd reading.
	clearQuantile = 0.9
	// maxClearness bounds a clearness (cloud enhancement; a sensor reading
	// high).
	maxClearness = 1.3
	// recentDecay is how fast the last hour's measured clearness gives way
	// to the baseline (history or service) along the horizon: its weight
	// is exp(-ahead/recentDecay).
	recentDecay = 3 * time.Hour
)

// clearSky is the clear-sky GHI at a slot's middle.
func (s Site) clearSky(start time.Time) float64 {
	return solar.ClearSkyGHIAt(s.Lat, s.Lon, start.Add(SlotLength/2))
}

// meanClearSky is the clear-sky GHI averaged over a period (a service's
// value is the period's mean), sampled every 5 minutes.
func (s Site) meanClearSky(start time.Time, length time.Duration) float64 {
	const step = 5 * time.Minute
	n := max(int(length/step), 1)
	var sum float64
	for i := range n {
		sum += solar.ClearSkyGHIAt(s.Lat, s.Lon, start.Add(time.Duration(i)*step+step/2))
	}
	return sum / float64(n)
}

// quarter is the UTC quarter-hour of the day t lies in.
func quarter(t time.Time) int {
	t = t.UTC()
	return t.Hour()*4 + t.Minute()/15
}

// FitHistory fits a plant's clear-sky response to its measured PV (slot
// means, any order). ok is false when the history has no daylight slot
// with PV.
func FitHistory(site Site, pv []Sample) (f Fit, ok bool) {
	f.site = site
	var per [slotsPerDay][]float64
	days := map[int64]bool{}
	for _, s := range pv {
		if s.W > f.maxW {
			f.maxW = s.W
		}
		cs := site.clearSky(s.Start)
		if cs < minClearSkyGHI || s.W < 0 || math.IsNaN(s.W) {
			continue
		}
		q := quarter(s.Start)
		per[q] = append(per[q], s.W/cs)
		days[s.Start.Unix()/86400] = true
	}
	f.days = len(days)
	for q := range per {
		if len(per[q]) == 0 {
			f.ratio[q] = math.NaN()
			continue
		}
		slices.Sort(per[q])
		f.ratio[q] = per[q][int(clearQuantile*float64(len(per[q])-1)+0.5)]
	}
	if !fillGaps(&f.ratio) {
		return f, false
	}
	// The history's mean clearness against the fitted curve.
	var measured, clear float64
	for _, s := range pv {
		cs := site.clearSky(s.Start)
		if cs < minClearSkyGHI || s.W < 0 || math.IsNaN(s.W) {
			continue
		}
		measured += s.W
		clear += f.ratio[quarter(s.Start)] * cs
	}
	f.clearness = 1
	if clear > 0 {
		f.clearness = min(measured/clear, maxClearness)
	}
	return f, f.maxW > 0
}

// fillGaps gives the quarter-hours without a ratio their nearest
// neighbour's (around the clock); false when none has one.
func fillGaps(r *[slotsPerDay]float64) bool {
	first := -1
	for q, v := range r {
		if !math.IsNaN(v) {
			first = q
			break
		}
	}
	if first < 0 {
		return false
	}
	var filled [slotsPerDay]float64
	for q := range r {
		if !math.IsNaN(r[q]) {
			filled[q] = r[q]
			continue
		}
		for d := 1; d <= slotsPerDay/2; d++ {
			if v := r[(q+d)%slotsPerDay]; !math.IsNaN(v) {
				filled[q] = v
				break
			}
			if v := r[(q-d+slotsPerDay)%slotsPerDay]; !math.IsNaN(v) {
				filled[q] = v
				break
			}
		}
	}
	*r = filled
	return true
}

// Clearness is the history's mean clearness (PV over the fitted
// clear-sky PV).
func (f Fit) Clearness() float64 { return f.clearness }

// Days is the number of history days with daylight samples.
func (f Fit) Days() int { return f.days }

// PeakW is the plant's peak power: the site's, else the most PV measured
// in a slot of the history.
func (f Fit) PeakW() float64 {
	if f.site.PeakW > 0 {
		return f.site.PeakW
	}
	return f.maxW
}

// ClearSkyW is the plant's PV under a clear sky in the slot starting at
// start.
func (f Fit) ClearSkyW(start time.Time) float64 {
	return f.ratio[quarter(start)] * f.site.clearSky(start)
}

// ServiceSlot is a forecast service's irradiance for one period: the mean
// global horizontal irradiance in W/m² from Start for Length.
type ServiceSlot struct {
	Start  time.Time
	Length time.Duration
	GHI    float64
}

// Inputs are what a forecast is made of besides the fit.
type Inputs struct {
	// Now is when the forecast is made; its first slot is the one Now
	// lies in.
	Now time.Time
	// Horizon is how far it reaches (36 h).
	Horizon time.Duration
	// Recent is the clearness measured over the last hour by the plant's
	// weather sensor (nil: none).
	Recent *float64
	// Service is a forecast service's irradiance, sorted by Start (nil:
	// none).
	Service []ServiceSlot
}

// Source says what a slot's clearness came from.
type Source string

// The sources of a slot.
const (
	// SourceHistory: the plant's mean clearness over its history.
	SourceHistory Source = "history"
	// SourceService: the forecast service's irradiance.
	SourceService Source = "service"
)

// Slot is one 15-minute slot of a forecast: its start, the mean PV power
// forecast in W, the source of its clearness, and the house's base load
// forecast in W (LoadFit; nil without a base-load profile).
type Slot struct {
	Start  time.Time
	PowerW float64
	Source Source
	LoadW  *float64 `json:",omitempty"`
}

// Forecast returns the slots from the one in.Now lies in to in.Now +
// in.Horizon, appended to dst. A slot's power is its clearness times the
// fitted clear-sky PV, the clearness the baseline (the service's
// irradiance over the clear sky's mean over its period, when it covers
// the slot, else the
// history's mean) pulled toward the last hour's measured clearness with a
// weight that decays along the horizon (recentDecay). Powers are bounded
// by the peak power.
func (f Fit) Forecast(dst []Slot, in Inputs) []Slot {
	start := in.Now.Truncate(SlotLength)
	n := int((in.Horizon + SlotLength - 1) / SlotLength)
	peak := f.PeakW()
	si, svcAt, svcClear := 0, -1, 0.0
	for i := range n {
		t := start.Add(time.Duration(i) * SlotLength)
		cs := f.site.clearSky(t)
		clearW := f.ratio[quarter(t)] * cs
		base, src := f.clearness, SourceHistory
		for si < len(in.Service) && !in.Service[si].Start.Add(in.Service[si].Length).After(t) {
			si++
		}
		if si < len(in.Service) && !in.Service[si].Start.After(t) && cs >= minClearSkyGHI {
			if si != svcAt {
				svcAt, svcClear = si, f.site.meanClearSky(in.Service[si].Start, in.Service[si].Length)
			}
			if svcClear >= minClearSkyGHI {
				base, src = min(in.Service[si].GHI/svcClear, maxClearness), SourceService
			}
		}
		c := base
		if in.Recent != nil {
			ahead := t.Add(SlotLength / 2).Sub(in.Now)
			w := math.Exp(-max(ahead, 0).Seconds() / recentDecay.Seconds())
			c = w*(*in.Recent) + (1-w)*base
		}
		dst = append(dst, Slot{Start: t, PowerW: min(max(c*clearW, 0), peak), Source: src})
	}
	return dst
}

// RecentClearness is the clearness of irradiance samples (W/m², any
// order) against the clear sky at their times; ok is false when the clear
// sky gives too little light over them to judge (night, dawn).
func RecentClearness(site Site, samples []Sample) (c float64, ok bool) {
	var measured, clear float64
	for _, s := range samples {
		measured += max(s.W, 0)
		clear += solar.ClearSkyGHIAt(site.Lat, site.Lon, s.Start)
	}
	if len(samples) == 0 || clear/float64(len(samples)) < minClearSkyGHI*2 {
		return 0, false
	}
	return min(measured/clear, maxClearness), true
}
