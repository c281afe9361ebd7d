package modbus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
)

// Sentinel errors. Test for them with errors.Is on an error returned by a
// Client.
var (
	// ErrTimeout means the device did not answer (or the connect did not
	// complete) within the request's timeout. The socket was closed, so the
	// late answer is discarded. Its method Timeout returns true, as a
	// net.Error's does for a timeout, so that a package that does not know
	// this one (plantd/plant) tells a timeout by its class, with errors.As
	// and interface{ Timeout() bool }.
	ErrTimeout error = timeoutSentinel{}
	// ErrMismatch means an answer that does not belong to the request: its
	// transaction id, unit id or function code differs, or a write answer
	// echoes another address, quantity or coil value. This is a stale or
	// crossed answer, and the socket was closed.
	ErrMismatch = errors.New("answer does not match request")
	// ErrMalformed means a frame that cannot be parsed: a bad MBAP length or
	// protocol id, a bad CRC (ErrCRC), a byte count that differs from the
	// data or from the quantity asked for, or a frame cut short. The socket
	// was closed.
	ErrMalformed = errors.New("malformed answer")
	// ErrCRC means an RTU answer whose CRC does not match its bytes. It
	// wraps ErrMalformed.
	ErrCRC = fmt.Errorf("%w: bad crc", ErrMalformed)
	// ErrClosed means the endpoint's pool was closed.
	ErrClosed = errors.New("endpoint closed")
	// ErrInvalid means an invalid request (quantity out of range, registers
	// past 0xFFFF). This is a bug in the caller, and nothing was sent.
	ErrInvalid = errors.New("invalid request")
)

// timeoutSentinel is the type of ErrTimeout.
type timeoutSentinel struct{}

func (timeoutSentinel) Error() string { return "timeout" }

// Timeout reports true: the error is a timeout (net.Error's method).
func (timeoutSentinel) Timeout() bool { return true }

// Operations named in [Error.Op].
const (
	OpRead    = "read"
	OpWrite   = "write"
	OpConnect = "connect"
)

// Error is the error returned by every Client method. It names the operation,
// the endpoint, the unit and the registers (or coils, discrete inputs).
// Err holds the cause.
type Error struct {
	// Op is [OpRead], [OpWrite] or [OpConnect]. A connect failure is
	// reported as OpConnect, and the registers are those of the request
	// that needed the connection.
	Op string
	// Function is the request's Modbus function code (0: not known).
	Function byte
	// Endpoint is the host:port or serial device path.
	Endpoint string
	// Unit is the Modbus unit id.
	Unit byte
	// Addr is the first register (coil, discrete input), and Quantity how
	// many the request covers (1 for a single coil write).
	Addr, Quantity uint16
	// Err is the cause.
	Err error
}

// Error formats like "modbus read 40000+2 from 127.0.0.1:1502 unit 1:
// cause"; requests for other than holding registers name their table:
// "modbus write coils 16+2 to ...".
func (e *Error) Error() string {
	table := ""
	switch e.Function {
	case fcReadCoils, fcWriteMultipleCoils:
		table = "coils "
	case fcWriteSingleCoil:
		table = "coil "
	case fcReadDiscreteInputs:
		table = "discrete inputs "
	case fcReadInputRegisters:
		table = "input registers "
	}
	switch e.Op {
	case OpConnect:
		return fmt.Sprintf("modbus connect to %s unit %d: %v", e.Endpoint, e.Unit, e.Err)
	case OpWrite:
		return fmt.Sprintf("modbus write %s%d+%d to %s unit %d: %v", table, e.Addr, e.Quantity, e.Endpoint, e.Unit, e.Err)
	default:
		return fmt.Sprintf("modbus %s %s%d+%d from %s unit %d: %v", e.Op, table, e.Addr, e.Quantity, e.Endpoint, e.Unit, e.Err)
	}
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Modbus exception codes, as carried in [ExceptionError.Code].
const (
	ExceptionIllegalFunction                    byte = 1
	ExceptionIllegalDataAddress                 byte = 2
	ExceptionIllegalDataValue                   byte = 3
	ExceptionServerDeviceFailure                byte = 4
	ExceptionAcknowledge                        byte = 5
	ExceptionServerDeviceBusy                   byte = 6
	ExceptionMemoryParityError                  byte = 8
	ExceptionGatewayPathUnavailable             byte = 10
	ExceptionGatewayTargetDeviceFailedToRespond byte = 11
)

// ExceptionError is a Modbus exception response. The device answered, the
// connection stays open. Get it with errors.As.
type ExceptionError struct {
	// Function is the function code of the request (without the 0x80 bit).
	Function byte
	// Code is the exception code, one of the Exception* constants.
	Code byte
}

// Error names the exception code, e.g. "exception 2 (illegal data address)
// on function 3".
func (e *ExceptionError) Error() string {
	return fmt.Sprintf("exception %d (%s) on function %d", e.Code, exceptionName(e.Code), e.Function)
}

// ExceptionCode returns the exception code. Packages that must not import
// the transport (plantd/sunspec and those above it) tell an exception
// answer by this method (sunspec.IsException), not by the type.
func (e *ExceptionError) ExceptionCode() byte { return e.Code }

func exceptionName(code byte) string {
	switch code {
	case ExceptionIllegalFunction:
		return "illegal function"
	case ExceptionIllegalDataAddress:
		return "illegal data address"
	case ExceptionIllegalDataValue:
		return "illegal data value"
	case ExceptionServerDeviceFailure:
		return "server device failure"
	case ExceptionAcknowledge:
		return "acknowledge"
	case ExceptionServerDeviceBusy:
		return "server device busy"
	case ExceptionMemoryParityError:
		return "memory parity error"
	case ExceptionGatewayPathUnavailable:
		return "gateway path unavailable"
	case ExceptionGatewayTargetDeviceFailedToRespond:
		return "gateway target device failed to respond"
	default:
		return "unknown exception"
	}
}

// Class tells a caller what an error means for the device and what to do next.
type Class int

// Error classes returned by [Classify].
const (
	// ClassOK: no error.
	ClassOK Class = iota
	// ClassLink: I/O error, timeout, mismatched or malformed answer. The
	// socket was closed, and the next request reconnects. Retryable: when
	// is the caller's choice (the poller's backoff).
	ClassLink
	// ClassBusy: exception 5 (acknowledge) or 6 (server device busy). Retry
	// later; the connection is fine.
	ClassBusy
	// ClassGateway: exception 10 or 11. A gateway could not reach the device
	// behind it. Retry later.
	ClassGateway
	// ClassDeviceFailure: exception 4, 8 or an unknown code. The device
	// failed to serve the request. Retryable, often transient.
	ClassDeviceFailure
	// ClassUnsupported: exception 1 (illegal function) or 2 (illegal data
	// address). The device does not have this point, so mark it unsupported
	// and do not retry it.
	ClassUnsupported
	// ClassRejected: exception 3 (illegal data value). The device refused the
	// value or the quantity. Not retryable as is.
	ClassRejected
	// ClassCanceled: the caller's context ended before or while the request
	// waited for its turn, connect delay or deadline. Nothing is known about
	// the device.
	ClassCanceled
	// ClassClosed: the pool was closed.
	ClassClosed
	// ClassInvalid: the request was invalid (a bug in the caller), and
	// nothing was sent.
	ClassInvalid
)

var classNames = [...]string{
	ClassOK:            "ok",
	ClassLink:          "link",
	ClassBusy:          "busy",
	ClassGateway:       "gateway",
	ClassDeviceFailure: "device failure",
	ClassUnsupported:   "unsupported",
	ClassRejected:      "rejected",
	ClassCanceled:      "canceled",
	ClassClosed:        "closed",
	ClassInvalid:       "invalid",
}

// String returns the class name, e.g. "busy".
func (c Class) String() string {
	if c >= 0 && int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Classify sorts an error returned by a Client into a [Class]. Errors that
// were not made by this package count as [ClassLink].
func Classify(err error) Class {
	if err == nil {
		return ClassOK
	}
	var ex *ExceptionError
	if errors.As(err, &ex) {
		switch ex.Code {
		case ExceptionAcknowledge, ExceptionServerDeviceBusy:
			return ClassBusy
		case ExceptionGatewayPathUnavailable, ExceptionGatewayTargetDeviceFailedToRespond:
			return ClassGateway
		case ExceptionIllegalFunction, ExceptionIllegalDataAddress:
			return ClassUnsupported
		case ExceptionIllegalDataValue:
			return ClassRejected
		default:
			return ClassDeviceFailure
		}
	}
	switch {
	case errors.Is(err, ErrClosed):
		return ClassClosed
	case errors.Is(err, ErrInvalid):
		return ClassInvalid
	case errors.Is(err, ErrTimeout), errors.Is(err, ErrMismatch), errors.Is(err, ErrMalformed):
		return ClassLink
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ClassCanceled
	default:
		return ClassLink
	}
}

// IsRetryable reports whether the same request may succeed later without any
// change. That holds for [ClassLink], [ClassBusy], [ClassGateway] and
// [ClassDeviceFailure]. It does not hold for unsupported points, rejected
// values, invalid requests, a closed pool, or a context the caller ended.
func IsRetryable(err error) bool {
	switch Classify(err) {
	case ClassLink, ClassBusy, ClassGateway, ClassDeviceFailure:
		return true
	default:
		return false
	}
}

// kindError attaches a sentinel (kind) to a cause, so that errors.Is finds both.
// msg, when set, replaces the cause's text (goburrow prefixes its own with
// "modbus: ", which the *Error message already says).
type kindError struct {
	kind error
	err  error
	msg  string
}

func (e *kindError) Error() string {
	if e.msg != "" {
		return e.kind.Error() + ": " + e.msg
	}
	return e.kind.Error() + ": " + e.err.Error()
}

func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// classify maps an error of the link or of goburrow's packager
// (framer.check: tcpPackager's and rtuPackager's Decode and Verify) to this
// package's errors. Timeouts wrap ErrTimeout, and an answer cut short wraps
// ErrMalformed. goburrow's errors wrap ErrMismatch (transaction, unit or
// slave id), ErrCRC or ErrMalformed (protocol id, lengths). Any other error
// (EOF, reset, or one already classified by decode or frameDone) is
// returned unchanged.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if isTimeout(err) {
		return &kindError{kind: ErrTimeout, err: err}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &kindError{kind: ErrMalformed, err: err, msg: "frame cut short: " + err.Error()}
	}
	rest, ok := strings.CutPrefix(err.Error(), "modbus: ")
	if !ok {
		return err
	}
	for _, m := range packagerErrors {
		if strings.HasPrefix(rest, m.prefix) {
			return &kindError{kind: m.kind, err: err, msg: rest}
		}
	}
	return err
}

// packagerErrors lists the errors of the Decode and Verify methods of
// tcpPackager and rtuPackager in github.com/goburrow/modbus v0.1.0, with
// their kind.
var packagerErrors = [...]struct {
	prefix string
	kind   error
}{
	{"response transaction id", ErrMismatch}, // tcpPackager.Verify
	{"response protocol id", ErrMalformed},   // tcpPackager.Verify
	{"response unit id", ErrMismatch},        // tcpPackager.Verify
	{"length in response", ErrMalformed},     // tcpPackager.Decode
	{"response crc", ErrCRC},                 // rtuPackager.Decode
	{"response length", ErrMalformed},        // rtuPackager.Verify
	{"response slave id", ErrMismatch},       // rtuPackager.Verify
}

func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
