//go:build !unix

package modbus

import "time"

// processCPU is not measured here.
func processCPU() time.Duration { return 0 }
