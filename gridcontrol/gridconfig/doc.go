// Package gridconfig is grid control's section of plantd's config file
// (gridControl): [Config] and its [Defaults], their defaults and their
// Validate, which package config calls with the file's lines. It is a
// leaf apart from package gridcontrol, which drives devices (and imports
// the Modbus layer and the store): config imports this package, not
// gridcontrol.
//
// # Import boundary
//
// It imports only the standard library and plantd/internal/confcheck.
//
// Imports: plantd/internal/confcheck
package gridconfig
