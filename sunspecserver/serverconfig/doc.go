// Package serverconfig is the SunSpec Modbus server's section of
// plantd's config file (modbusServer): [Config], its defaults and its
// Validate, which package config calls with the file's lines; which
// plant it shows is checked by config (a reference to another section).
// It is a leaf apart from package sunspecserver (which imports grid
// control and the Modbus layer): config imports this package, not the
// server.
//
// # Import boundary
//
// It imports only the standard library and plantd/internal/confcheck.
//
// Imports: plantd/internal/confcheck
package serverconfig
