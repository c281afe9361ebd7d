//go:build !linux

package sim

import "os"

// openSerial opens a serial line's device for reading and writing. Line
// settings are set on Linux only: elsewhere the device (a pty) is used as
// it is.
func openSerial(c SerialConfig) (*os.File, error) {
	return os.OpenFile(c.Path, os.O_RDWR, 0)
}
