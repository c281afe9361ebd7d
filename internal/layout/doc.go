// Package layout checks the import boundaries of plantd's packages: each
// package states in its package comment (doc.go) which plantd packages
// it may import, in one line of a fixed form,
//
//	// Imports: plantd/plant, plantd/plant/kind, plantd/internal/...
//
// (a comma-separated list of import paths; a path ending in /... allows
// the package and every package below it; "none" allows no plantd
// package), and its test (layout_test.go) lists the packages with the go
// command and fails naming the package and the import its line does not
// allow. Only the imports of a package's non-test files are checked: tests
// may use the simulator, the transport and helpers freely. The test also
// holds the acceptance arrows of issue 42: the domain and the packages
// above it depend on neither the Modbus transport nor goburrow, not even
// through another package.
//
// Imports: none
package layout
