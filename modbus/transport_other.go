//go:build !unix

package modbus

import "net"

// newTCPLink returns the portable socket loop: plantd's own loop
// (transport_unix.go) uses unix system calls.
func newTCPLink(conn *net.TCPConn) (link, error) {
	return &connLink{conn: conn}, nil
}
