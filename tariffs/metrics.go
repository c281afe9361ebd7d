package tariffs

import "plantd/metrics"

// Collect writes the tariffs' metrics (metrics.Collector): the requests
// and failures of the market's fetcher, whether its prices are stale,
// the last successful fetch, how far the prices reach, and the prices of
// now.
func (s *Service) Collect(w *metrics.Writer) {
	st := s.Status()
	if st.Source != "" {
		w.Counter("plantd_tariff_fetches_total", "Requests to the day-ahead price provider.", float64(st.Requests), "source", st.Source)
		w.Counter("plantd_tariff_fetch_failures_total", "Requests to the day-ahead price provider that failed (down, HTTP error, malformed document).", float64(st.Failures), "source", st.Source)
		w.Gauge("plantd_tariff_stale", "1 while the last request failed and the prices held are the last good ones.", b2f(st.Stale), "source", st.Source)
		if !st.LastFetch.IsZero() {
			w.Gauge("plantd_tariff_last_fetch_timestamp_seconds", "When the provider last answered (Unix time).", float64(st.LastFetch.UnixMilli())/1000, "source", st.Source)
		}
		if !st.HeldUntil.IsZero() {
			w.Gauge("plantd_tariff_prices_until_timestamp_seconds", "The end of the last market price held (Unix time).", float64(st.HeldUntil.UnixMilli())/1000, "source", st.Source)
		}
	}
	if slot, ok := s.Current(); ok {
		w.Gauge("plantd_tariff_import_price_eur_per_kwh", "The grid price now, EUR/kWh as paid.", slot.Import, "source", slot.Source)
		w.Gauge("plantd_tariff_feed_in_price_eur_per_kwh", "The feed-in price now, EUR/kWh.", slot.FeedIn, "source", slot.Source)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
