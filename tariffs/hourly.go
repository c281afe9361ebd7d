package tariffs

import (
	"time"

	"plantd/store"
)

// HourlyMeans averages prices of a finer resolution to full hours (UTC
// hours: the hours of every zone with a whole-hour offset), in time
// order: an hour's mean is over the intervals that start in it, weighted
// by their length. Hourly prices come back as they are.
func HourlyMeans(prices []store.Price) []store.Price {
	var out []store.Price
	var weight time.Duration
	for _, p := range prices {
		h := p.Start.Truncate(time.Hour)
		d := p.End.Sub(p.Start)
		if n := len(out); n > 0 && out[n-1].Start.Equal(h) {
			last := &out[n-1]
			last.EURPerMWh = (last.EURPerMWh*float64(weight) + p.EURPerMWh*float64(d)) / float64(weight+d)
			weight += d
			if p.End.After(last.End) {
				last.End = p.End
			}
			continue
		}
		out = append(out, store.Price{Source: p.Source, Start: h, End: p.End, EURPerMWh: p.EURPerMWh, FetchedAt: p.FetchedAt})
		weight = d
	}
	return out
}
