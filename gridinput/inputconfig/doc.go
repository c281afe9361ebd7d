// Package inputconfig is an input's section of plantd's config file
// (inputs[]) beyond the I/O module's address: [Settings] (where the
// contacts are read, their names, the pattern table of [Action] rows, the
// failsafe, the dimming contacts), their defaults and their Validate,
// which package config calls with the file's lines; config.Input embeds
// Settings inline. It is a leaf apart from package gridinput, which reads
// the module (and imports the Modbus transport): config imports this
// package, not gridinput. [Action] is also the row gridinput resolves
// closed contacts to and submits to grid control.
//
// # Import boundary
//
// It imports only the standard library and plantd/internal/confcheck.
//
// Imports: plantd/internal/confcheck
package inputconfig
