package proctest

import (
	"math/rand/v2"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
)

// FreePort returns a TCP port free on every interface a moment ago, for a
// server that binds a port number itself (mosquitto, ocpp-go's central
// system, a daemon given --listen) or binds it again after a restart. It is
// FreePorts(tb, 1).
func FreePort(tb testing.TB) int { return FreePorts(tb, 1) }

// FreePorts returns a port P with P..P+n-1 free on every interface a moment
// ago. The ports come from below the kernel's ephemeral range
// (ip_local_port_range, 32768 and up by default), which the kernel never
// hands out for ":0": a port found free with ":0" and closed again could be
// given to any parallel test's next listener before its server bound it,
// or while a broker was down for an outage test, and that server then
// failed with "address already in use" or its clients reached the other
// listener. Within a test binary the blocks are distinct (nextPort); the
// start is random, so two binaries side by side rarely try the same.
func FreePorts(tb testing.TB, n int) int {
	tb.Helper()
	for range 500 {
		p := int(nextPort.Add(int32(n))) - n + 1
		if p+n > ephemeralStart {
			nextPort.Store(lowestPort)
			continue
		}
		if blockFree(p, n) {
			return p
		}
	}
	tb.Fatalf("no block of %d free ports below %d", n, ephemeralStart)
	return 0
}

const (
	lowestPort     = 20000
	ephemeralStart = 32768
)

// nextPort is the last port FreePorts handed out.
var nextPort = func() *atomic.Int32 {
	var n atomic.Int32
	n.Store(lowestPort + rand.Int32N(10000))
	return &n
}()

// blockFree reports whether ports p..p+n-1 can be bound on every
// interface.
func blockFree(p, n int) bool {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for i := range n {
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(p+i))
		if err != nil {
			return false
		}
		lns = append(lns, ln)
	}
	return true
}
