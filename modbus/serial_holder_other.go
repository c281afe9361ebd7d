//go:build !linux

package modbus

// lockHolder is 0 where plantd cannot tell who holds a port's lock.
func lockHolder(string) int { return 0 }
