// Package chargerconfig is the OCPP central system's section of plantd's
// config file (ocpp): [Config], its defaults and its Validate, which
// package config calls with the file's lines. It is a leaf apart from
// package charger (which imports the OCPP library): config imports this
// package, not charger.
//
// # Import boundary
//
// It imports only the standard library and plantd/internal/confcheck.
//
// Imports: plantd/internal/confcheck
package chargerconfig
