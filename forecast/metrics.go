package forecast

import "plantd/metrics"

// Collect writes the forecast's metrics: per plant the last judged day's
// MAE in W and over the peak power, the mean MAE of the last 7 judged
// days, the days judged since start; the last run's duration and the
// failures (a forecast not made, a service request failed).
func (s *Service) Collect(w *metrics.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range s.ids {
		r := s.byID[id]
		w.Counter("plantd_forecast_days_judged_total", "Days whose day-ahead PV forecast was compared with the measured PV since plantd started.",
			float64(r.evaluated), "plant", id)
		if len(r.days) == 0 {
			continue
		}
		last := r.days[len(r.days)-1]
		w.Gauge("plantd_forecast_mae_watts", "Mean absolute error of the last judged day's day-ahead PV forecast over its daylight 15-minute slots, W.",
			last.MAEW, "plant", id)
		w.Gauge("plantd_forecast_mae_ratio", "The last judged day's MAE over the plant's peak power.", last.MAERelative, "plant", id)
		recent := r.days[max(0, len(r.days)-7):]
		var sum float64
		for _, d := range recent {
			sum += d.MAEW
		}
		w.Gauge("plantd_forecast_mae_7d_watts", "Mean of the daily MAE of the last 7 judged days (fewer while there are fewer), W.",
			sum/float64(len(recent)), "plant", id)
	}
	w.Gauge("plantd_forecast_run_seconds", "Duration of the last forecast run (all plants).", s.computeSeconds)
	w.Counter("plantd_forecast_failures_total", "Forecasts not made and forecast service requests that failed.", float64(s.failures))
}
