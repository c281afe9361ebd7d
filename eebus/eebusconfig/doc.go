// Package eebusconfig is the EEBus section of plantd's config file
// (eebus): plantd as the controllable system of the grid operator's
// control box (§14a EnWG, use cases LPC and LPP; package eebus). It
// holds [Config], its defaults and its Validate, which package config
// calls with the file's lines; which plant the limits act on is checked
// by config (a reference to another section). It is a leaf apart from
// package eebus, which imports the EEBus stack: config imports this
// package, not the service.
//
// # Import boundary
//
// It imports only the standard library and plantd/internal/confcheck.
//
// Imports: plantd/internal/confcheck
package eebusconfig
