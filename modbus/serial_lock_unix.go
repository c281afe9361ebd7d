//go:build linux || darwin || freebsd || netbsd || openbsd

package modbus

import (
	"fmt"
	"syscall"
)

// plantd takes a serial port exclusively, in two ways, because each
// misses what the other catches:
//
//   - flock(LOCK_EX) on a descriptor of the device node of its own. The
//     lock is on the node's inode, so every name of the port
//     (/dev/ttyUSB0, /dev/serial/by-id/... links to it) shares it, the
//     kernel drops it when the descriptor is closed or plantd dies (no
//     stale lock file after a kill -9 or a power cut), and it needs no
//     writable lock directory (the packaged unit mounts /run read-only).
//     It binds every plantd (the daemon, plantd scan, a second daemon) and
//     tools that flock their port (picocom), whatever their user, root
//     included. UUCP lock files (/run/lock/LCK..ttyUSB0) were not chosen:
//     they are keyed by name, not by device, go stale, and need the lock
//     directory writable.
//   - TIOCEXCL on the port: the kernel refuses every further open of the
//     tty (EBUSY), by any program that does not lock (mbpoll, minicom
//     without lockdev, a shell's echo > /dev/ttyUSB0), except by a process
//     with CAP_SYS_ADMIN (root): those the lock catches when they are
//     plantd.
//
// Both are taken when the port is opened and given up when it is closed,
// so a poll costs nothing more.

// portLock holds a port's lock: a descriptor of the device node with
// flock(LOCK_EX) on it (-1: none).
type portLock struct{ fd int }

// lockPort opens path and locks it; a port that another process holds
// (its lock, or TIOCEXCL set by it) fails with a [*PortHeldError]. The
// error of a port that cannot be opened is the open's errno (ENOENT,
// EACCES), as goburrow/serial returns it.
func lockPort(path string) (portLock, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_RDWR|syscall.O_NOCTTY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		return err
	})
	if err == syscall.EBUSY {
		return portLock{fd: -1}, heldError(path)
	}
	if err != nil {
		return portLock{fd: -1}, err
	}
	err = retryEINTR(func() error { return syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) })
	if err != nil {
		_ = syscall.Close(fd)
		if err == syscall.EWOULDBLOCK {
			return portLock{fd: -1}, heldError(path)
		}
		return portLock{fd: -1}, fmt.Errorf("lock: %w", err)
	}
	return portLock{fd: fd}, nil
}

// exclusive sets TIOCEXCL on the port (a flag of the tty, not of the
// descriptor): later opens by other processes fail with EBUSY.
func (l portLock) exclusive() error {
	if err := ioctl(l.fd, syscall.TIOCEXCL); err != nil {
		return fmt.Errorf("TIOCEXCL: %w", err)
	}
	return nil
}

// release clears TIOCEXCL and closes the descriptor, which drops the
// lock.
func (l portLock) release() {
	if l.fd < 0 {
		return
	}
	_ = ioctl(l.fd, syscall.TIOCNXCL)
	_ = syscall.Close(l.fd)
}

func ioctl(fd int, req uint) error {
	return retryEINTR(func() error {
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(req), 0); e != 0 {
			return e
		}
		return nil
	})
}

// retryEINTR retries a system call interrupted by a signal.
func retryEINTR(call func() error) error {
	for {
		if err := call(); err != syscall.EINTR {
			return err
		}
	}
}
