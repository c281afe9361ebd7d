package proctest

import (
	"flag"
	"strconv"
	"testing"
)

// RunParallel is a TestMain's body for such a package: it parses the
// flags, sets DefaultParallel(n) and runs the tests, returning the exit
// code for os.Exit.
func RunParallel(m *testing.M, n int) int {
	flag.Parse()
	DefaultParallel(n)
	return m.Run()
}

// DefaultParallel sets -test.parallel to n unless the command line gave
// it. For a TestMain (after flag.Parse) of a package whose parallel tests
// mostly wait (on the wall clock, a broker, a device or a process) rather
// than compute: go test's default, one at a time per core, would run them
// two at a time on a 2-core machine.
func DefaultParallel(n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); f != nil && !set {
		_ = f.Value.Set(strconv.Itoa(n))
	}
}

// Race reports whether the tests run with -race (and Build builds with
// it).
func Race() bool { return raceEnabled }
