// Package tariffconfig is the tariffs' section of plantd's config file
// (tariffs): [Config], its defaults and its Validate, which package
// config calls with the file's lines, and the parsing of a time-of-use
// window's days and times ([ParseDays], [ParseTimes]) that package
// tariffs evaluates. It is a leaf apart from package tariffs (which
// fetches over HTTPS and imports the store): config imports this
// package, not tariffs.
//
// # Import boundary
//
// It imports only the standard library and plantd/internal/confcheck.
//
// Imports: plantd/internal/confcheck
package tariffconfig
