package poller

// MaxIdleWorkers is maxIdleWorkers, for the tests of package poller_test.
const MaxIdleWorkers = maxIdleWorkers
