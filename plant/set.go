package plant

import "time"

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
