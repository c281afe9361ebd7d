package solar

import (
	"math"
	"time"
)

const (
	deg2rad = math.Pi / 180
	rad2deg = 180 / math.Pi
)

// Elevation returns the solar elevation angle in degrees (negative below
// the horizon) at latitude lat and longitude lon (degrees north and east)
// at time t. It uses the standard declination (Cooper) and hour-angle
// formulas with the equation of time; it is good to a degree or so.
func Elevation(lat, lon float64, t time.Time) float64 {
	t = t.UTC()
	doy := float64(t.YearDay())
	hours := float64(t.Hour()) + float64(t.Minute())/60 + (float64(t.Second())+float64(t.Nanosecond())/1e9)/3600
	b := 2 * math.Pi * (doy - 81) / 364
	eotMin := 9.87*math.Sin(2*b) - 7.53*math.Cos(b) - 1.5*math.Sin(b)
	decl := 23.44 * deg2rad * math.Sin(2*math.Pi*(284+doy)/365)
	solarHour := hours + lon/15 + eotMin/60
	ha := 15 * (solarHour - 12) * deg2rad
	phi := lat * deg2rad
	s := math.Sin(phi)*math.Sin(decl) + math.Cos(phi)*math.Cos(decl)*math.Cos(ha)
	return math.Asin(math.Max(-1, math.Min(1, s))) * rad2deg
}

// ClearSkyGHI is the Haurwitz clear-sky global horizontal irradiance in
// W/m² for a solar elevation in degrees (0 with the sun below the
// horizon).
func ClearSkyGHI(elevation float64) float64 {
	if elevation <= 0 {
		return 0
	}
	cz := math.Sin(elevation * deg2rad)
	return 1098 * cz * math.Exp(-0.057/cz)
}

// ClearSkyGHIAt is ClearSkyGHI at latitude lat, longitude lon and time t.
func ClearSkyGHIAt(lat, lon float64, t time.Time) float64 {
	return ClearSkyGHI(Elevation(lat, lon, t))
}
