package sim

import (
	"math"
	"time"

	"plantd/internal/solar"
)

// The physics are pure functions of the plant's location and the simulated
// time: no state, no randomness. Every value is deterministic, so a test at a
// fixed clock sees the same plant every run.

// weather is the environment of the plant at one instant.
type weather struct {
	elevation float64 // solar elevation, degrees
	ghi       float64 // W/m²
	ambientC  float64
	moduleC   float64
	windMS    float64
	hz        float64    // grid frequency
	phaseV    [3]float64 // grid phase voltages at the connection point
}

// dayHash maps a local calendar day to a number in [0, 1): each day has its
// own, repeatable, weather.
func dayHash(local time.Time) float64 {
	y, m, d := local.Date()
	// FNV-1a over year, month and day, inlined to stay allocation-free.
	h := uint64(14695981039346656037)
	for _, b := range [4]byte{byte(y >> 8), byte(y), byte(m), byte(d)} {
		h ^= uint64(b)
		h *= 1099511628211
	}
	// Mix the low bits up before taking the top 53.
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 32
	return float64(h>>11) / (1 << 53)
}

// secondsOfDay is the local time of day in seconds.
func secondsOfDay(local time.Time) float64 {
	return float64(local.Hour()*3600+local.Minute()*60+local.Second()) + float64(local.Nanosecond())/1e9
}

// environment computes the weather and grid at time t.
func (p *Plant) environment(t time.Time) weather {
	local := t.In(p.loc)
	u := dayHash(local)
	s := secondsOfDay(local)
	var w weather
	w.elevation = solar.Elevation(p.cfg.Latitude, p.cfg.Longitude, t)
	w.ghi = solar.ClearSkyGHI(w.elevation)
	if !p.cfg.ClearSky {
		// Cloud cover of the day (most days fairly clear), modulated by
		// slow passing clouds.
		cover := 0.45 * u * u
		pass := 0.5 + 0.5*(0.6*math.Sin(2*math.Pi*s/2820+7*u)+0.4*math.Sin(2*math.Pi*s/1090+13*u))
		w.ghi *= 1 - cover*pass
	}
	w.ghi *= p.cloud // SetCloudFactor
	// Ambient temperature: a seasonal mean (flipped south of the equator),
	// a daily swing peaking mid-afternoon, and the day's own offset.
	doy := float64(local.YearDay())
	season := math.Sin(2 * math.Pi * (doy - 110) / 365)
	if p.cfg.Latitude < 0 {
		season = -season
	}
	solarHour := math.Mod(float64(t.UTC().Hour())+float64(t.UTC().Minute())/60+p.cfg.Longitude/15+24, 24)
	w.ambientC = 10 + 9*season + 5*math.Cos(2*math.Pi*(solarHour-15)/24) + 4*(u-0.5)
	w.windMS = math.Max(0, 2.5+1.2*math.Sin(2*math.Pi*s/19080+3*u)+0.4*math.Sin(2*math.Pi*s/660)+2*(u-0.5))
	// Module temperature: NOCT-like heating by irradiance, cooled by wind.
	w.moduleC = w.ambientC + w.ghi*0.031*4/(3+w.windMS)
	// The grid: 50 Hz and 230.9 V phase (400 V line) with small drifts.
	w.hz = 50 + 0.02*math.Sin(2*math.Pi*s/97) + 0.01*math.Sin(2*math.Pi*s/13)
	for i := range w.phaseV {
		w.phaseV[i] = 230.9 + 1.8*math.Sin(2*math.Pi*s/1020+float64(i)*2.1) + 0.4*float64(i-1)
	}
	return w
}

// loadW is the plant's consumption at time t: a household with a few
// hundred watts of base load, a morning and a larger evening peak, and a
// midday bump; weekends start later. Deterministic.
func (p *Plant) loadW(t time.Time) float64 {
	local := t.In(p.loc)
	h := secondsOfDay(local) / 3600
	gauss := func(x, mu, sigma float64) float64 {
		d := (x - mu) / sigma
		return math.Exp(-0.5 * d * d)
	}
	morning, midday := 7.0, 12.5
	middayW := 450.0
	if wd := local.Weekday(); wd == time.Saturday || wd == time.Sunday {
		morning, middayW = 9.0, 750
	}
	s := secondsOfDay(local)
	w := 320 +
		900*gauss(h, morning, 0.8) +
		middayW*gauss(h, midday, 1.2) +
		1700*gauss(h, 19, 1.5) +
		60*math.Sin(2*math.Pi*s/600) + 40*math.Sin(2*math.Pi*s/173)
	return math.Max(150, w)
}

// PV model constants.
const (
	dcACRatio      = 1.1     // array peak power per inverter AC rating
	tempCoeff      = -0.0037 // per °C above 25
	systemLoss     = 0.98    // wiring, soiling
	invEfficiency  = 0.97
	sleepThreshold = 15.0  // W: below this an inverter sleeps
	dcVoltageMPP   = 620.0 // V at 25 °C
)

// pvAvailable is the AC power a PV array of peakW could deliver into an
// inverter at the weather w, before the inverter's own limits.
func pvAvailable(peakW float64, w weather) float64 {
	dc := peakW * w.ghi / 1000 * (1 + tempCoeff*(w.moduleC-25)) * systemLoss
	return math.Max(0, dc*invEfficiency)
}
