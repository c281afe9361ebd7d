// Package forecastconfig is the PV forecast's section of plantd's config
// file (forecast; package forecast): on by default for every plant with a
// latitude and longitude (the forecast from the plant's own history needs
// nothing else), the days of history it is fitted to, and an optional
// forecast service (open-meteo's API) for one plant. It holds [Config],
// its defaults and its Validate, which package config calls with the
// file's lines; which plant the service serves is checked by config (a
// reference to another section). A leaf: config imports it, not the
// forecast.
//
// Imports: plantd/internal/confcheck
package forecastconfig
