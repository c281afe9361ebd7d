// Package proxyconfig is a device's Modbus TCP proxy in plantd's config
// file (devices[].proxy): [Settings], their defaults and their Validate,
// which package config calls with the file's lines ([Others] is what the
// rules need of the rest of the file). It is a leaf apart from package
// modbusproxy, which serves the proxy (and imports the Modbus transport):
// config imports this package, not modbusproxy; cmd/plantd makes a
// modbusproxy.Config of the Settings.
//
// # Import boundary
//
// It imports only the standard library and plantd/internal/confcheck.
//
// Imports: plantd/internal/confcheck
package proxyconfig
