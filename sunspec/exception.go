package sunspec

import "errors"

// exceptionAnswer is an error that is a device's exception answer: the
// device received the request and refused it (a Modbus exception
// response). plantd/modbus's ExceptionError is one; sunspec tells it by
// this method, so that it does not import the transport.
type exceptionAnswer interface {
	error
	ExceptionCode() byte
}

// IsException reports whether err, or an error it wraps, is a device's
// exception answer ("illegal address", "illegal value", "busy", ...) and
// returns its code. A refusal is the device's answer, not a failing link:
// the caller reports it as such and does not retry it as a link fault.
func IsException(err error) (code byte, ok bool) {
	var ex exceptionAnswer
	if !errors.As(err, &ex) {
		return 0, false
	}
	return ex.ExceptionCode(), true
}
