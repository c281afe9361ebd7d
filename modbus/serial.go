package modbus

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/goburrow/serial"
)

// A serial line (TransportRTU). github.com/goburrow/serial opens the port
// with the settings that the endpoint's goburrow RTU client handler holds
// (serial.Config: path, baud, data bits, parity, stop bits, and its read
// timeout, serialPoll) and drives it: each Read waits for the port to
// become readable (select on unix, the port's timeouts on windows) for at
// most serialPoll. The request's own timeout is kept by the loop around
// those reads. goburrow's RTU transporter (rtuSerialTransporter.Send) is
// not used: after its write it sleeps for the time it expects the request
// and answer to take on the line (15 bit times per byte at the baud, plus
// 35), takes its timeout per read rather than per request, and never drops
// the late answer of a unit that timed out (see doc.go).

// serialPoll is the longest a read of a serial port waits: how far a
// request's timeout may be overshot, and how long the line must be silent
// before a request after a failure (drain).
const serialPoll = 20 * time.Millisecond

// ErrPortHeld means the serial port is held by another process (another
// plantd, a plantd scan, a terminal program): plantd takes a port
// exclusively, and so does every other plantd. Test for it with errors.Is;
// the error is a [*PortHeldError] naming the holder when it can be told.
var ErrPortHeld = errors.New("serial port held by another process")

// PortHeldError says which process holds a serial port.
type PortHeldError struct {
	// Path is the port's path as configured.
	Path string
	// PID is the process that holds the port's lock, and Command its name
	// (/proc/PID/comm); 0 and "" when it cannot be told (another OS, a
	// process in another PID namespace, or a holder that set the port
	// exclusive without a lock).
	PID     int
	Command string
}

func (e *PortHeldError) Error() string {
	switch {
	case e.PID != 0 && e.Command != "":
		return fmt.Sprintf("%s is held by %s (pid %d)", e.Path, e.Command, e.PID)
	case e.PID != 0:
		return fmt.Sprintf("%s is held by pid %d", e.Path, e.PID)
	}
	return fmt.Sprintf("%s is held by another process", e.Path)
}

// Is makes errors.Is(err, ErrPortHeld) true.
func (e *PortHeldError) Is(target error) bool { return target == ErrPortHeld }

// heldError is the error for a port another process holds, naming the
// holder when it can be found.
func heldError(path string) error {
	pid := lockHolder(path)
	e := &PortHeldError{Path: path, PID: pid}
	if pid != 0 {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
			e.Command = strings.TrimSpace(string(b))
		}
	}
	return e
}

// openSerial opens the serial port that f's RTU handler names, exclusively
// (serial_lock_unix.go): first its lock, then the port, then the port is
// made exclusive; a port another process holds fails with a
// [*PortHeldError].
func openSerial(f *framer) (link, error) {
	cfg := f.rtu.Config // a copy: the port keeps nothing of it
	lk, err := lockPort(cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("open serial port %s: %w", cfg.Address, err)
	}
	port, err := serial.Open(&cfg)
	if err != nil {
		lk.release()
		if errors.Is(err, syscall.EBUSY) {
			err = heldError(cfg.Address)
		}
		return nil, fmt.Errorf("open serial port %s: %w", cfg.Address, err)
	}
	if err := lk.exclusive(); err != nil {
		_ = port.Close()
		lk.release()
		return nil, fmt.Errorf("open serial port %s: exclusive: %w", cfg.Address, err)
	}
	return &serialLink{port: port, path: cfg.Address, lock: lk}, nil
}

// serialLink is an open serial port.
type serialLink struct {
	port serial.Port
	path string
	lock portLock
	// dirty is set by a failed exchange whose answer may still come:
	// the next exchange first drops what the line carries.
	dirty bool
}

func (l *serialLink) exchange(x *exchange) error {
	if l.dirty {
		l.dirty = false
		n, err := l.drain(x.deadline, x.buf)
		x.discarded = n
		if err != nil {
			return err
		}
	}
	for off := 0; off < len(x.req); {
		m, err := l.port.Write(x.req[off:])
		off += max(m, 0)
		switch {
		case err == nil:
		case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR):
			// The port is non-blocking and its output buffer full.
			if time.Now().After(x.deadline) {
				return fmt.Errorf("write %s: %w", l.path, os.ErrDeadlineExceeded)
			}
			time.Sleep(time.Millisecond)
		default:
			return fmt.Errorf("write %s: %w", l.path, err)
		}
	}
	for {
		m, err := l.port.Read(x.buf[x.n:])
		if done, ferr := x.received(m); done || ferr != nil {
			return ferr
		}
		switch {
		case err == serial.ErrTimeout || errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR):
			if !time.Now().Before(x.deadline) {
				return fmt.Errorf("read %s: %w", l.path, os.ErrDeadlineExceeded)
			}
		case err != nil:
			return fmt.Errorf("read %s: %w", l.path, err)
		case m == 0:
			// Readable but nothing to read: the line hung up (an adapter
			// unplugged, the other end of a pty closed).
			if x.n > 0 {
				return fmt.Errorf("read %s: %w", l.path, io.ErrUnexpectedEOF)
			}
			return fmt.Errorf("read %s: %w", l.path, io.EOF)
		}
	}
}

// drain reads and drops what the line carries until it has been silent for
// serialPoll, or until the deadline. It returns the bytes dropped.
func (l *serialLink) drain(deadline time.Time, buf []byte) (int, error) {
	n := 0
	for time.Now().Before(deadline) {
		m, err := l.port.Read(buf)
		n += max(m, 0)
		switch {
		case err == serial.ErrTimeout:
			return n, nil
		case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR):
		case err != nil:
			return n, fmt.Errorf("read %s: %w", l.path, err)
		case m == 0:
			return n, fmt.Errorf("read %s: %w", l.path, io.EOF)
		}
	}
	return n, nil
}

// keep keeps the port open after a timeout, a mismatched or a malformed
// answer: the line is shared, and closing the port would not stop a late
// answer on the wire. The next exchange drains the line first. Any other
// error (the port failed: an adapter unplugged) closes it, and the next
// request opens it again.
func (l *serialLink) keep(err error) bool {
	if errors.Is(err, ErrTimeout) || errors.Is(err, ErrMismatch) || errors.Is(err, ErrMalformed) {
		l.dirty = true
		return true
	}
	return false
}

// close closes the port, then gives up its lock.
func (l *serialLink) close() error {
	err := l.port.Close()
	l.lock.release()
	return err
}
