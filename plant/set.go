package plant

import (
	"fmt"
	"strings"
	"time"
)

// SetResult is a measurement set over one period, as the store answers
// it and the API renders it.
type SetResult struct {
	// Resolution the rows have ("FiveMinutes", "OneHour", ...); "" means
	// the one asked for.
	Resolution string
	// Rows are the measured intervals in chronological order; an interval
	// without data has no row, a field without data no value. For Recent
	// they are the complete intervals of the latest hour (the API merges
	// them into the one row the cloud answers).
	Rows []SetRow
	// Total (with WithTotal) sums the energies of the whole period in Wh
	// and averages the rest; nil without WithTotal or without data.
	Total *SetRow
}

// SetRow is one interval of a measurement set.
type SetRow struct {
	// Start is the UTC instant the interval starts; the API renders it in
	// the plant's zone (the interval's end for sub-day resolutions, the
	// day, month or year for longer ones). On the day with 25 hours the
	// repeated local hour appears twice, told apart by this instant.
	Start time.Time
	// Values maps API field names ("activePower", "pvGeneration", ...) to
	// values; only measured fields are present.
	Values map[string]float64
	// Indexed holds the per-input fields (dcPowerInput, batteryVoltage,
	// ...), inputs in order; nil when there are none.
	Indexed map[string][]IndexedValue
}

// IndexedValue is one input's value of an indexed field.
type IndexedValue struct {
	Index string
	Value float64
}

// Period is the period of a measurement set (DESIGN §4).
type Period string

// The periods.
const (
	PeriodRecent Period = "Recent"
	PeriodDay    Period = "Day"
	PeriodWeek   Period = "Week"
	PeriodMonth  Period = "Month"
	PeriodYear   Period = "Year"
	PeriodTotal  Period = "Total"
)

var periods = []Period{PeriodRecent, PeriodDay, PeriodWeek, PeriodMonth, PeriodYear, PeriodTotal}

// ParsePeriod parses a period name in any letter case ("day", "DAY").
func ParsePeriod(s string) (Period, error) {
	for _, p := range periods {
		if strings.EqualFold(s, string(p)) {
			return p, nil
		}
	}
	return "", fmt.Errorf("period %q: want Recent, Day, Week, Month, Year or Total", s)
}

// The resolutions of measurement sets (DESIGN §4), the values of
// [SetResult.Resolution].
const (
	ResolutionOneMinute      = "OneMinute"
	ResolutionFiveMinutes    = "FiveMinutes"
	ResolutionFifteenMinutes = "FifteenMinutes"
	ResolutionOneHour        = "OneHour"
	ResolutionOneDay         = "OneDay"
	ResolutionOneMonth       = "OneMonth"
	ResolutionOneYear        = "OneYear"
)

// SetQuery asks for one measurement set over one period: what the HTTP
// API asks its history for and the store answers.
type SetQuery struct {
	// PlantID asks for a plant set (EnergyBalance, EnergyMix); DeviceID
	// for a device set. When both are given DeviceID decides.
	PlantID, DeviceID string
	SetType           SetType
	// Period is the period ("" means Recent, as the spec's paths without
	// a period answer).
	Period Period
	// Date is the plant-local calendar date the period contains; only its
	// year, month and day count (as Date.Date() gives them). Day: that
	// day; Week: the Monday-to-Sunday week containing it; Month and Year:
	// the month or year containing it. Zero means today in the plant's
	// zone. Recent and Total ignore it.
	Date time.Time
	// WithTotal adds Total; ReturnEnergyValues gives Wh per interval
	// instead of mean W for the EnergyAndPower* sets of Recent, Day and
	// Week.
	WithTotal, ReturnEnergyValues bool
}
