// Package consumerconfig is the home energy manager's settings in
// plantd's config file: a consumer device's settings (devices[].consumer:
// [Config], which embeds the driver's consumer/drivers.Settings inline),
// its must-run rules ([MustRun], [ParseCron]) and a plant's battery
// priority (plants[].battery: [Battery]), with their defaults and their
// Validate, which package config calls with the file's lines. The rules
// between devices (the meter a consumer names, the consumer it is part
// of, coils and charge point ids used once) stay in config.
//
// # Import boundary
//
// It imports the standard library, github.com/robfig/cron/v3 (the
// must-run specs), plantd/consumer/drivers (the drivers' settings and
// rules), plantd/plant (the modes) and plantd/internal/confcheck.
//
// Imports: plantd/consumer/drivers, plantd/internal/confcheck, plantd/plant
package consumerconfig
