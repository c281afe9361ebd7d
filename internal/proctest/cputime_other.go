//go:build !unix

package proctest

import "time"

// CPUTime is not measured here.
func CPUTime() time.Duration { return 0 }
