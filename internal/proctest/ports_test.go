package proctest

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePorts: blocks come from below the ephemeral range, never
// overlap within the binary, and can be bound when handed out.
func TestFreePorts(t *testing.T) {
	seen := map[int]bool{}
	for _, n := range []int{1, 3, 1, 5} {
		p := FreePorts(t, n)
		if p < lowestPort || p+n > ephemeralStart {
			t.Fatalf("FreePorts(%d) = %d, want a block within [%d, %d)", n, p, lowestPort, ephemeralStart)
		}
		for i := range n {
			if seen[p+i] {
				t.Fatalf("port %d handed out twice", p+i)
			}
			seen[p+i] = true
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+i))
			if err != nil {
				t.Fatalf("port %d of FreePorts(%d): %v", p+i, n, err)
			}
			ln.Close()
		}
	}
}
