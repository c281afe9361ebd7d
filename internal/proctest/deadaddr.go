package proctest

import (
	"fmt"
	"syscall"
	"testing"
)

// DeadAddr returns a loopback address where nothing listens and nothing
// else can: a TCP socket bound to it, never listening, held until the test
// ends, so a connection is refused. (A port merely found free and closed
// again may be taken by another parallel test's listener before it is
// dialled.)
func DeadAddr(tb testing.TB) string {
	tb.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}
