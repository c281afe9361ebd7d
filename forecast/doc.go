// Package forecast is plantd's PV and base-load forecasts from the
// plant's history: per plant with a location, the mean PV power and the
// house's base load of each 15-minute slot of the next 36 hours, made at
// start and every 15 minutes of the data clock, and how each day's
// forecasts did against the measured PV and base load.
//
// # The model
//
// Chosen to be cheap on an ARM gateway and to need nothing but the plant's
// own data:
//
//   - The clear sky: the Haurwitz clear-sky global horizontal irradiance
//     (GHI) at the plant's latitude and longitude (internal/solar, the
//     simulator's sun too).
//   - The plant's response (FitHistory): per UTC quarter-hour of the day
//     (the sun's path depends on UTC, not on the local clock, which jumps
//     at DST), the 90th percentile over the last historyDays days (30) of
//     measured PV / clear-sky GHI: the clearest days' ratio. Orientation,
//     shading and the inverters' limits are in it, nothing has to be
//     configured. Quarter-hours without a usable sample (the clear sky
//     below 30 W/m²) take their nearest neighbour's ratio. The fit is made
//     once a day (at the first run of a plant-local day): 30 days are 5–6
//     Week queries of the store's 15-minute energy balance.
//   - The baseline clearness: the history's measured PV over its fitted
//     clear-sky PV (energy-weighted), the expected clearness of a day
//     without other knowledge; or, when a forecast service is configured
//     and its answer covers the slot, the service's GHI over the clear
//     sky's.
//   - Recent irradiance: with a weather sensor (a device of kind sensor in
//     the plant), its externalInsolation over the last hour the store has
//     (its Recent set, minutes within 2 h of now: the store commits every
//     commitInterval) over the clear sky's is the clearness now. A slot's clearness is that, weighted
//     exp(−ahead / 3 h), plus the baseline for the rest: the last hour
//     rules the next hours and fades toward the baseline along the
//     horizon. The sensor is taken as horizontal: a plane-of-array sensor
//     reads high on a tilted plane (clearness is capped at 1.3).
//   - A slot's power is its clearness times the fitted clear-sky PV,
//     bounded by the peak power (installation.peakPowerW, else the most
//     measured in a slot). A plant without history has no forecast.
//
// Curtailed history (a FeedInLimit window) lowers the fit only where it
// curtailed on the clearest days; the 90th percentile keeps most of it
// out.
//
// # The base load
//
// The house's consumption that the day-ahead plan does not place itself
// (LoadFit): per 15-minute slot, the balance's totalConsumption less the
// stored consumption (EnergyAndPowerConsumption) of the consumers the
// plan schedules and that are metered (PlantConfig.Flexible: its heat
// pump and car; an unmetered heat pump's estimated draw stays in, as in
// siteplan's live base load), never below 0; read with the PV by the
// same Week queries, fitted at the same daily refit, over the
// LoadHistoryDays (14) days before today:
//
//   - per quarter-hour of the plant-local day (the house lives by the
//     clock; on the DST days the local quarter-hour still indexes), the
//     median of the 15-minute means of that quarter-hour and its two
//     neighbours over the days (the statistic that minimises the
//     absolute error it is judged by; a day's odd evening does not move
//     it);
//   - weekdays and Saturdays/Sundays apart when each has at least 3 days
//     and their two profiles fit the history better than one: its absolute
//     deviation from them at least 10 % below that from the one (noise
//     alone gains 2-3 %); else one profile;
//   - quarter-hours without a sample take their nearest neighbour's; with
//     fewer than 2 days of history there is no profile (Service.Load says
//     so, and the plan takes its flat live load).
//
// Each slot of the forecast carries it (LoadW; the forecast is made once
// there is PV history, Service.Load answers from the profile alone).
// The plan (siteplan) blends its first two hours toward the live load.
//
// # The service
//
// Optional, for one plant (forecast.service): open-meteo's forecast API
// (OpenMeteo), minutely_15 shortwave_radiation (GHI, the mean of the
// preceding 15 minutes; its hourly block is read too), asked every
// refresh (1 h) of the wall clock. Its GHI over the clear sky's is the
// slot's baseline clearness: the service says how cloudy, the plant's
// own fit how much PV a clear sky gives (so no tilt, azimuth or module
// data is needed). A failed request keeps its last good answer (logged
// once per episode, counted); slots beyond it take the history's.
//
// # Accuracy
//
// The first forecast made at or after 12:00 plant-local time (the
// day-ahead market's gate closure; later at a start after noon) is
// recorded as the next day's day-ahead forecast. An hour after that day
// ends its measured PV (15-minute means of the energy balance) is compared
// with it over the daylight slots (the sun above the horizon at the
// slot's middle) that were measured, at least 80 % of them: the mean
// absolute error in W and over the peak power (DayAccuracy), logged,
// kept for 60 days and on /metrics (Collect). The same day's base-load
// forecast is judged over all its measured slots (at least 80 %)
// against the measured base load, beside the flat load a plan made at
// the same time took (the base load before it smoothed with an hour's
// time constant, as siteplan smooths the live one): DayAccuracy.Load. The recorded forecasts and
// the days' accuracy are kept in forecast-state.json beside the database
// (internal/atomicfile), written when one is recorded or judged.
//
// # Readers
//
// Service.Forecast gives a plant's forecast as last made with its days'
// accuracy (GET /gateway/v1/forecast), Service.Power its powers and
// Service.Load its base load for n 15-minute slots from a time (the
// day-ahead plan), Service.Collect the metrics.
//
// # Import boundary
//
// The standard library, plant (the set queries it reads the store with,
// through the History interface), internal/solar, internal/atomicfile and
// metrics. Only cmd/plantd imports it and wires it; httpapi reads its
// Forecast.
//
// Imports: plantd/internal/atomicfile, plantd/internal/solar, plantd/metrics, plantd/plant
package forecast
