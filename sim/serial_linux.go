//go:build linux

package sim

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// cbaud masks the speed bits of termios' c_cflag (CBAUD | CBAUDEX).
const cbaud = 0o10017

// baudBits are the termios speed codes of the standard rates.
var baudBits = map[int]uint32{
	1200: syscall.B1200, 2400: syscall.B2400, 4800: syscall.B4800, 9600: syscall.B9600,
	19200: syscall.B19200, 38400: syscall.B38400, 57600: syscall.B57600, 115200: syscall.B115200,
}

// openSerial opens a serial line's device for reading and writing (not as
// the controlling terminal) and sets it raw, 8 data bits, with the line's
// rate, parity and stop bits. A pty accepts the settings and ignores the
// rate. The file is non-blocking underneath, so read deadlines work.
func openSerial(c SerialConfig) (*os.File, error) {
	f, err := os.OpenFile(c.Path, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	if err := setLine(f, c); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

func setLine(f *os.File, c SerialConfig) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("set line: %w", err)
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		var t syscall.Termios
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCGETS, uintptr(unsafe.Pointer(&t))); e != 0 {
			if e == syscall.ENOTTY {
				serr = errNotTTY
			} else {
				serr = fmt.Errorf("get line settings: %w", e)
			}
			return
		}
		t.Iflag &^= syscall.IGNBRK | syscall.BRKINT | syscall.PARMRK | syscall.ISTRIP | syscall.INLCR |
			syscall.IGNCR | syscall.ICRNL | syscall.IXON | syscall.IXOFF | syscall.INPCK
		t.Oflag &^= syscall.OPOST
		t.Lflag &^= syscall.ECHO | syscall.ECHONL | syscall.ICANON | syscall.ISIG | syscall.IEXTEN
		t.Cflag &^= syscall.CSIZE | syscall.PARENB | syscall.PARODD | syscall.CSTOPB | cbaud
		t.Cflag |= syscall.CS8 | syscall.CREAD | syscall.CLOCAL | baudBits[c.Baud]
		switch c.Parity {
		case "E":
			t.Cflag |= syscall.PARENB
		case "O":
			t.Cflag |= syscall.PARENB | syscall.PARODD
		}
		if c.StopBits == 2 {
			t.Cflag |= syscall.CSTOPB
		}
		t.Ispeed, t.Ospeed = baudBits[c.Baud], baudBits[c.Baud]
		t.Cc[syscall.VMIN], t.Cc[syscall.VTIME] = 1, 0
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCSETS, uintptr(unsafe.Pointer(&t))); e != 0 {
			serr = fmt.Errorf("set line settings: %w", e)
		}
	})
	return errors.Join(err, serr)
}
