//go:build race

package proctest

// raceEnabled: the tests run with -race, so Build builds with it too.
const raceEnabled = true
