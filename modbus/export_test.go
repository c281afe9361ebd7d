package modbus

// Benchmark loops shared with the external tests that run them against the
// simulated plant.
var (
	BenchRawLoop    = benchRawLoop
	BenchClientRead = benchClientRead
)
